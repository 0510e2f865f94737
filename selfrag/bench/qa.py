"""The QA systems (no-retrieval, plain RAG, the Self-RAG engine) and critic agreement, one function each."""

from __future__ import annotations

from ..engine.beam import s_rel, s_sup
from ..engine.calibration import CandidateView
from ..errors import ConfigError
from ..schema import Critique, Meter
from .claims import REFUTES_CUT
from .datasets import Example
from .shortform import closed_vote
from .systems import ClaimRater, Context, Outcome, System, ask_over_top_chunks, judge_pair, usage_of


async def qa_direct(system: System, example: Example, ctx: Context) -> Outcome:
    meter = Meter()
    run = ctx.run(system, example.question, meter)
    parsed = await run.ask("answer_direct", logprobs=False, question=example.question)
    text = parsed.value.answer.strip()  # type: ignore[attr-defined]
    return Outcome(text, text, stop_reason="final", usage=usage_of(meter, rounds=1, retrieval_frequency=0.0))


async def qa_rag(system: System, example: Example, ctx: Context) -> Outcome:
    reply, chunks, cited, usage = await ask_over_top_chunks(
        system, example, ctx, "rag_answer", question=example.question
    )
    text = reply.answer.strip()
    markers = "".join(f"[{chunks.index(c) + 1}]" for c in cited)
    return Outcome(
        text,
        f"{text} {markers}".strip(),
        citations=[c.key for c in cited],
        cited_texts=[text] * len(cited),
        retrieved=[c.key for c in chunks],
        usage=usage,
    )


async def qa_selfrag(system: System, example: Example, ctx: Context) -> Outcome:
    from ..api import SelfRAG
    from .oracle import NoisyOracle

    rater = ctx.rater if system.oracle_flip is None else NoisyOracle(example, system.oracle_flip)
    rag = SelfRAG(
        ctx.index,
        system.config,
        chat=ctx.chat,
        critic_chat=ctx.critic_chat,
        prompts=ctx.prompts,
        environ={},
        rater=rater,
    )
    result = await rag.aanswer(example.question)
    retrieved: dict[str, None] = {}
    queries: dict[str, None] = {}
    for step in result.trace.steps:
        for beam in step.beams:
            retrieved.update(dict.fromkeys(beam.chunks))
            if beam.decision == "yes":
                queries[beam.query or example.question] = None
    cited = [s for s in result.segments if s.chunk is not None]
    usage = result.usage
    candidates = [
        {
            "step": step.step,
            "parent": c.parent,
            "query": next((b.query for b in step.beams if b.beam == c.parent), ""),
            "chunk": c.chunk,
            "rank": c.rank,
            "retrieval_score": c.retrieval_score,
            "text": c.text,
            "critique": c.critique.model_dump() if c.critique else None,
            "status": c.status,
            "flag": c.flag,
            "pooled": c.pooled,
            "also": c.also,
            "extracted": c.extracted,
            "asked_again": c.asked_again,
        }
        for step in result.trace.steps
        for c in step.candidates
    ]
    said = [s.text for s in result.segments]
    prediction = " ".join([result.lead, *said] if result.lead else said)  # as shown: the short answer first
    if example.meta.get("closed"):  # short-form closed set: f summed per answer across the passages
        votes = [(c.text, c.score) for step in result.trace.steps for c in step.candidates if not c.error]
        prediction = closed_vote(votes) or prediction
    return Outcome(
        prediction,
        result.answer,
        citations=[key for s in cited for key in (s.chunk, *s.also_chunks)],  # a two-source sentence cites both
        cited_texts=[s.text for s in cited for _ in (s.chunk, *s.also_chunks)],
        retrieved=list(retrieved),
        queries=list(queries),
        confidence=result.confidence,
        segments=[
            {
                "text": s.text,
                "chunk": s.chunk,
                "relevance": s.critique.relevance,
                "support": s.critique.support,
                "utility": s.critique.utility,
                "score": s.score,
                "status": s.critique.status,
                "pooled": s.pooled,
                "also": s.also_chunks,
            }
            for s in result.segments
        ],
        candidates=candidates,
        stop_reason=result.stop_reason,
        abstained=result.abstention is not None,
        lead_from=result.lead_from,
        lead_reply=result.trace.lead_reply,
        lead_held=result.trace.lead_held,
        answer_check=result.trace.answer_check,
        usage={
            "llm_calls": usage.llm_calls,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.prompt_tokens + usage.completion_tokens,
            "rounds": usage.rounds,
            "retrieval_frequency": usage.retrieval_frequency,
            "steps": usage.steps,
            "reasks": usage.reasks,
            "parse_failures": usage.parse_failures,
            "by_prompt": {name: [u.calls, u.tokens] for name, u in usage.by_prompt.items()},
        },
    )


# -- critic agreement ----------------------------------------------------------------------------------


def pair_verdict(rater: ClaimRater, claim: str | None, text: str, p_supported: float) -> tuple[float, bool]:
    """A judged pair's P(supported) and verdict: P(supported) at or over the rater's verdict cut. For a claim,
    with a rater that has a polarity head (claim weights), the supported head says whether the text settles the
    claim, which a refuting text does too: the text supports it when it settles it and does not refute it
    (P(refutes) at most `REFUTES_CUT`), and its P(supported) is P(settles) · (1 - P(refutes))."""
    refutes = rater.refutes(claim, text) if claim is not None else None
    if refutes is None:
        return p_supported, p_supported >= rater.verdict_cut
    return p_supported * (1 - refutes), p_supported >= rater.verdict_cut and refutes <= REFUTES_CUT


PAIR_RANK_DEPTH = 100  # a pair's chunk is looked for in the question's top 100 BM25 hits (its rank feature)


async def critic_agreement(system: System, example: Example, ctx: Context) -> Outcome:
    """ISSUP of the engine's critic prompt (`critique_candidate`) on each gold-labelled pair of the example."""
    if not example.pairs:
        raise ConfigError(f"dataset {ctx.dataset.name} has no gold-labelled pairs for the critic system")
    meter = Meter()
    run = ctx.run(system, example.question, meter)
    rater = ctx.rater
    question = example.question if ctx.dataset.task == "qa" else f"Is this claim true? {example.question}"
    claim = example.question if ctx.dataset.task == "claim" else None  # judged with its polarity, if the rater has one
    hits = ctx.index.find_relevant_chunks(example.question, PAIR_RANK_DEPTH)
    places = {
        hit.chunk.key: (rank, hit.score / hits[0].score if hits[0].score > 0 else 0.0) for rank, hit in enumerate(hits)
    }
    pairs = []
    for pair in example.pairs:
        chunk = ctx.chunks[pair.chunk]
        critique, raw = await judge_pair(run, question, pair.statement, chunk)
        rank, score_rel = places.get(pair.chunk, (PAIR_RANK_DEPTH, 0.0))
        view = CandidateView(
            pair.statement,
            chunk.text,
            chunk.key,
            rank,
            score_rel,
            critique.quote_ok,
            s_rel(critique.relevance),
            s_sup(critique.support),
            (),  # type: ignore[arg-type]
        )
        estimate = rater.rate(question, [view])[0]
        p_supported, supported = pair_verdict(rater, claim, chunk.text, estimate.p_supported)
        pairs.append(
            {
                "rank": rank,
                "score_rel": round(score_rel, 6),
                "p_supported": round(p_supported, 6),
                "supported": supported,
                "chunk": pair.chunk,
                "statement": pair.statement,
                "gold_supported": pair.supported,
                "gold_label": pair.gold_label,
                "support": Critique.top(critique.support).value,  # type: ignore[union-attr]
                "relevance": Critique.top(critique.relevance).value,  # type: ignore[union-attr]
                "s_sup": round(s_sup(critique.support), 6),  # type: ignore[arg-type]
                "s_rel": round(s_rel(critique.relevance), 6),  # type: ignore[arg-type]
                "estimator": critique.estimator,
                "quote_ok": critique.quote_ok,
                "status": critique.status,
                "raw_support": raw,
            }
        )
    return Outcome(pairs=pairs, usage=usage_of(meter, rounds=len(pairs), retrieval_frequency=0.0))
