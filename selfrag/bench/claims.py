"""Closed-label claim verification (SciFact, CLIMATE-FEVER) with the paper's closed-set protocol.

Self-RAG on closed-set tasks (paper §3.3 and App. A.3, ARC and PubHealth) is the depth-1 case of the search:
one retrieval, one candidate per passage, each scored f = w_rel*s_rel + w_sup*s_sup + w_use*s_use
(`engine.beam.score`), and the scores are **summed per answer option across the passages; the largest sum
wins**. Here a candidate is a verdict (supports / refutes / nei) written from one chunk with its critique in
one call (`verify_claim`, the fused arrangement); with `--critic separate` the engine's own critic prompt
(`critique_candidate`) judges a sentence stating the verdict instead, and the writer's labels are ignored.

- mode `adaptive` asks `retrieve_decide` first; a "no" answers from the model's knowledge alone
  (`verify_claim_direct`), as the paper's no-retrieval path. `always` skips the decision; `never` never retrieves.
- beam width has no effect at depth 1 (one step, all candidates kept for the vote): greedy and beam agree.
- ties between label sums break on the number of votes, then SUPPORT, CONTRADICT, NEI.
- confidence: the mean s_sup of the candidates that voted for the winning label (critique, not similarity).

With the evidence scorer (`selfrag+evidence`; weights `critic-claims-<dataset>-v1.json`, fitted on the
dataset's training claims only by `selfrag bench fit-claims`) the critic is evidence-aware and weights the vote:

- each chunk is rated P(on topic) (ISREL: the chunk is about the claim) and P(settles) (ISSUP: it holds
  evidence that supports or refutes the claim) from the evidence features (`engine.evidence`) and the model's
  labels; its weight is `settles = P(on topic) * P(settles)`, the QA scorer's answer support;
- the verdicts are summed by that weight; when no chunk settles the claim well enough (the largest weight is
  under the weights' `abstain_threshold`), the answer is NEI: the documents do not settle it, as the QA engine
  abstains when nothing supports a sentence;
- where the weights carry a polarity head (`refutes`, fitted on the training claims' supporting and refuting
  evidence), a chunk's verdict is that head's, P(refutes) over 0.5 voting CONTRADICT and the rest SUPPORT, and the
  writer's own verdict is kept as `model_label` (a small model's verdicts carry nothing on CLIMATE-FEVER: the
  seventh round in docs/archive/benchmark-rounds.md);
- confidence: the weights' calibration map of the largest weight for a verdict, of one minus it for NEI.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..engine.beam import Weights, s_rel, s_sup, s_use, score
from ..engine.calibration import CandidateView, answer_support
from ..engine.context import Run, run_all
from ..errors import FatalLLMError, LLMError
from ..labels import CriticMode, Decision, Mode, Relevance, Support, Utility
from ..llm.logprobs import label_distribution
from ..llm.replies import check_quote, plan_from
from ..llm.structured import Parsed
from ..schema import Chunk, Critique, Hit, Meter
from .datasets import CLAIM_LABELS, Example
from .systems import LABELS, ClaimRater, Context, Outcome, System, ask_over_top_chunks, judge_pair, usage_of

VERDICT_SENTENCE = {
    "supports": "{claim}",
    "refutes": "It is not true that {claim}",
    "nei": "The document does not say whether {claim}",
}


def claim_question(claim: str) -> str:
    return f"Is this claim true? {claim}"


async def direct(system: System, example: Example, ctx: Context, meter: Meter | None = None) -> Outcome:
    meter = meter or Meter()
    run = ctx.run(system, example.question, meter)
    parsed = await run.ask("verify_claim_direct", logprobs=False, claim=example.question)
    label = LABELS[parsed.value.label]  # type: ignore[attr-defined]
    return Outcome(
        label, label, label=label, stop_reason="final", usage=usage_of(meter, rounds=1, retrieval_frequency=0.0)
    )


async def rag(system: System, example: Example, ctx: Context) -> Outcome:
    reply, chunks, cited, usage = await ask_over_top_chunks(
        system, example, ctx, "rag_verify_claim", claim=example.question
    )
    label = LABELS[reply.label]
    return Outcome(
        label,
        label,
        label=label,
        citations=[c.key for c in cited],
        cited_texts=[example.question] * len(cited),
        retrieved=[c.key for c in chunks],
        usage=usage,
    )


async def closed_set(system: System, example: Example, ctx: Context) -> Outcome:
    config = system.config
    meter = Meter()
    run = ctx.run(system, example.question, meter)
    rounds = 0
    if config.mode is Mode.NEVER:
        return await direct(system, example, ctx, meter)
    decision = "always"
    if config.mode is Mode.ADAPTIVE:
        rounds += 1
        decision = await _decide(run, example.question)
        if decision == Decision.NO.value:
            outcome = await direct(system, example, ctx, meter)
            outcome.usage = usage_of(meter, rounds=rounds + 1, retrieval_frequency=0.0)
            outcome.stop_reason = "no_retrieval"
            return outcome
    hits = ctx.index.find_relevant_chunks(example.question, config.ndocs)
    chunks = [hit.chunk for hit in hits]
    rounds += 1 + (config.critic is CriticMode.SEPARATE)
    candidates = await run_all(_candidate(run, system, example.question, chunk) for chunk in chunks)
    usable = [c for c in candidates if c["status"] != "failed"]  # defaulted critiques still vote, weakly
    if not usable:
        raise LLMError(f"every candidate failed for claim {example.id} ({len(chunks)} chunks retrieved)")
    stop, confidence = f"decision={decision}", None
    if config.scorer == "evidence":
        usable = rate_candidates(ctx.rater, example.question, usable, hits)
        rated = {c["chunk"]: c for c in usable}
        candidates = [rated.get(c["chunk"], c) for c in candidates]  # failed ones as they were
        sums = label_sums(usable, weight="settles")
        winner, confidence, settled = settled_vote(usable, ctx.rater)
        stop = stop if settled else "unsettled"
    else:
        sums = label_sums(usable)
        winner = pick_label(sums, usable)
    voters = [c for c in usable if c["label"] == winner]
    if confidence is None:  # the paper's: the mean support credit of the winning label's voters
        confidence = sum(c["s_sup"] for c in voters) / len(voters)
    by_key = {c.key: c for c in chunks}
    cited = [by_key[c["chunk"]] for c in voters]
    return Outcome(
        winner,
        winner,
        label=winner,
        citations=[c.key for c in cited],
        cited_texts=[c["evidence"] or example.question for c in voters],
        retrieved=[c.key for c in chunks],
        confidence=round(confidence, 6),
        segments=candidates,
        label_scores={label: round(value, 6) for label, value in sums.items()},
        stop_reason=stop,
        usage=usage_of(meter, rounds=rounds, retrieval_frequency=1.0),
    )


UNSETTLED = "NEI"  # what the evidence-scored vote answers when no chunk settles the claim
REFUTES_CUT = 0.5  # a settling chunk whose P(refutes) is over this votes CONTRADICT (the polarity head's MAP)


def claim_weights(dataset: str) -> str:
    """The shipped evidence-scorer weights of the claim protocol on a dataset (selfrag/data): one per dataset,
    since how well a chunk settles a claim reads differently in an abstract than in one sentence."""
    return f"critic-claims-{dataset}-v1.json"


def rate_candidates(
    rater: ClaimRater, claim: str, candidates: list[dict[str, Any]], hits: list[Hit]
) -> list[dict[str, Any]]:
    """The (not failed) candidates with the evidence scorer's P(on topic), P(settles) and their product
    `settles`: each rated as the claim itself against its chunk, with the chunk's rank and relative score in
    the retrieval. With a polarity head, each also carries `p_refutes` and the head's verdict as its `label`
    (the writer's in `model_label`); without one, `label` is the writer's verdict, also for a record that was
    voted with a head before (re-voted by `fit-claims`)."""
    place = {hit.chunk.key: (rank, hit) for rank, hit in enumerate(hits)}
    top = hits[0].score if hits and hits[0].score > 0 else None
    views = []
    for candidate in candidates:
        rank, hit = place[candidate["chunk"]]
        score_rel = hit.score / top if top else None
        model = (candidate["s_rel"], candidate["s_sup"])
        views.append(
            CandidateView(claim, hit.chunk.text, hit.chunk.key, rank, score_rel, candidate["quote_ok"], *model, ())
        )
    out = []
    for candidate, view, r in zip(candidates, views, rater.rate(claim_question(claim), views), strict=True):
        settles = answer_support(r.p_relevant, r.p_supported)
        writer = candidate.get("model_label", candidate["label"])
        rated = {**candidate, "label": writer, "p_relevant": round(r.p_relevant, 6),
                 "p_supported": round(r.p_supported, 6), "settles": round(settles, 6)}  # fmt: skip
        rated.pop("model_label", None)
        refutes = rater.refutes(claim, view.chunk_text)
        if refutes is not None:
            verdict = "CONTRADICT" if refutes > REFUTES_CUT else "SUPPORT"
            rated.update(model_label=writer, label=verdict, p_refutes=round(refutes, 6))
        out.append(rated)
    return out


def settled_vote(candidates: list[dict[str, Any]], rater: ClaimRater) -> tuple[str, float, bool]:
    """The evidence-scored closed-set vote (pure): verdicts summed by `settles`; NEI when no candidate's
    `settles` reaches the rater's cut. Returns the label, its calibrated confidence, and whether the
    documents settled the claim."""
    best = max(c["settles"] for c in candidates)
    if best < rater.threshold:
        return UNSETTLED, rater.confidence([1.0 - best]), False
    winner = pick_label(label_sums(candidates, weight="settles"), candidates)
    return winner, rater.confidence([1.0 - best if winner == UNSETTLED else best]), True


def label_sums(candidates: list[dict[str, Any]], weight: str = "f") -> dict[str, float]:
    """The closed-set protocol: f (or another weight) summed per label across passages (every label present,
    0 when unvoted)."""
    sums = dict.fromkeys(CLAIM_LABELS, 0.0)
    for candidate in candidates:
        sums[candidate["label"]] += candidate[weight]
    return sums


def pick_label(sums: Mapping[str, float], candidates: list[dict[str, Any]]) -> str:
    """The best label by sum among labels that got at least one vote; ties: more votes, then label order."""
    votes = {label: sum(c["label"] == label for c in candidates) for label in CLAIM_LABELS}
    voted = [label for label in CLAIM_LABELS if votes[label]]
    return max(voted, key=lambda label: (sums[label], votes[label], -CLAIM_LABELS.index(label)))


async def _decide(run: Run, claim: str) -> str:
    try:
        parsed = await run.ask(
            "retrieve_decide", conversation=run.history(), question=claim_question(claim), draft=run.draft("")
        )
    except FatalLLMError:
        raise
    except LLMError:
        return Decision.YES.value  # no usable decision: retrieve, as the engine's rules lean
    return plan_from(parsed, "retrieve", "query", run.config.threshold, has_cache=False).decision.value


async def _candidate(run: Run, system: System, claim: str, chunk: Chunk) -> dict[str, Any]:
    """One verdict from one chunk with its critique and score f; status `failed` when the call failed."""
    config = system.config
    try:
        parsed = await run.ask("verify_claim", claim=claim, **run.document_values("claim", chunk))
    except FatalLLMError:
        raise
    except LLMError as error:
        return {"chunk": chunk.key, "status": "failed", "error": f"{type(error).__name__}: {error}"}
    reply = parsed.value
    critique = critique_of(parsed)
    critique = check_quote(critique, reply.evidence, chunk.text)  # type: ignore[attr-defined]
    if config.critic is CriticMode.SEPARATE:
        sentence = VERDICT_SENTENCE[reply.label].format(claim=claim)  # type: ignore[attr-defined]
        critique, _ = await judge_pair(run, claim_question(claim), sentence, chunk)
    weights = Weights(config.w_rel, config.w_sup, config.w_use, config.use_seqscore)
    return {
        "chunk": chunk.key,
        "status": "ok" if critique.status == "ok" else critique.status,
        "label": LABELS[reply.label],  # type: ignore[attr-defined]
        "evidence": reply.evidence,  # type: ignore[attr-defined]
        "relevance": Critique.top(critique.relevance).value,  # type: ignore[union-attr]
        "support": Critique.top(critique.support).value,  # type: ignore[union-attr]
        "utility": int(Critique.top(critique.utility)),  # type: ignore[arg-type]
        "s_rel": round(s_rel(critique.relevance), 6),  # type: ignore[arg-type]
        "s_sup": round(s_sup(critique.support), 6),  # type: ignore[arg-type]
        "s_use": round(s_use(critique.utility), 6),
        "f": round(score(critique, weights), 6),  # type: ignore[arg-type]
        "estimator": critique.estimator,
        "quote_ok": critique.quote_ok,
    }


def critique_of(parsed: Parsed) -> Critique:
    """ISREL, ISSUP and ISUSE of a `verify_claim` reply: from logprobs when present, else one-hot labels."""
    value, used_logprobs, truncated = parsed.value, False, False

    def dist(field: str, kind: type, chosen: object) -> dict:
        nonlocal used_logprobs, truncated
        response = parsed.response
        if response.tokens is not None:
            found = label_distribution(response.text, response.tokens, field, [str(m.value) for m in kind])
            if found is not None:
                used_logprobs, truncated = True, truncated or found.truncated
                return {kind(int(k) if kind is Utility else k): p for k, p in found.probs.items()}
        return {member: float(member == kind(chosen)) for member in kind}

    critique = Critique(
        utility=dist("utility", Utility, value.utility),  # type: ignore[attr-defined]
        is_final=True,
        relevance=dist("relevance", Relevance, value.relevance),  # type: ignore[attr-defined]
        support=dist("support", Support, value.support),  # type: ignore[attr-defined]
    )
    return replace(critique, estimator="logprobs" if used_logprobs else "labels", truncated=truncated)
