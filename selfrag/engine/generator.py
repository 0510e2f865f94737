"""③ Fan-out: one candidate next sentence per (live beam, chunk), all in flight at once.

- With chunks, `fused` mode asks `generate_fused` (sentence + labels + next decision in one call);
  `separate` mode asks `generate_segment` (sentence only) and leaves judging to the critic stage.
- With `pooled` on and two or more chunks, one more candidate per beam: `generate_pooled` writes one sentence
  from all the chunks together (what plain RAG reads), with the same fused reply; it cites the chunk its
  evidence quote is found in, else the one whose words the sentence shares most (`cited_rank`), and from there
  on it is judged, rated, tidied and pruned as a candidate written from that chunk. In `separate` mode only its
  sentence and citation are kept, and the critic judges it against the cited chunk like the others.
- Without chunks, one `generate_plain` sentence per beam.
- A failed call becomes a Candidate with `error` set (recorded, then dropped); only fatal endpoint errors and
  exhausted budgets escape, cancelling the siblings.
- `ask_plainly`: a candidate whose sentence restated the question is asked for once more, the question placed
  after the document with a plain instruction to answer it (the critic stage decides which, `Config.ask_plainly`).
- `fallback`: a beam left with no usable candidate (all failed, or all gated) gets one sentence written
  without evidence that asserts no corpus facts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import replace

from pydantic import BaseModel

from ..errors import MODEL_FAILURES, ContextLengthError, FatalLLMError, LLMError, PromptNotSupportedError
from ..labels import CriticMode
from ..llm.replies import FusedReply, PlainReply, WriteReply, check_quote, critique_from, plan_from, quote_found
from ..llm.structured import Parsed
from ..schema import Beam, Candidate, Chunk, Plan
from .context import Run, run_all
from .evidence import terms

FALLBACK_NOTE = (
    "No retrieved document supported a sentence here. Write a sentence that asserts no facts you would need "
    "documents for: say briefly what could not be found."
)


async def expand(
    live: Sequence[Beam], plans: Sequence[Plan], evidence: Sequence[tuple[Chunk, ...]], run: Run
) -> tuple[Candidate, ...]:
    """Every candidate of every live beam for this step, in beam then chunk-rank order (a beam's pooled
    candidate after its single-chunk ones)."""
    jobs = []
    for beam, chunks in zip(live, evidence, strict=True):
        if chunks:
            scores = getattr(chunks, "scores", ()) or (None,) * len(chunks)
            jobs += [
                _from_chunk(Candidate(beam, rank, chunk, score, chunks), run)
                for rank, (chunk, score) in enumerate(zip(chunks, scores, strict=True))
            ]
            if run.config.pooled and len(chunks) >= 2:
                jobs.append(_guard(Candidate(beam, 0, evidence=chunks, pooled=True), _write_pooled(beam, chunks, run)))
        else:
            jobs.append(_plain(Candidate(beam, 0), run, note=""))
    if not jobs:
        return ()
    run.meter.rounds += 1
    return tuple(await run_all(jobs))


async def _guard(candidate: Candidate, job: Awaitable[Candidate]) -> Candidate:
    try:
        return await job
    except FatalLLMError:
        raise
    except LLMError as error:  # the model's failures included (MODEL_FAILURES)
        return replace(candidate, error=f"{type(error).__name__}: {error}", botched=isinstance(error, MODEL_FAILURES))


async def _from_chunk(candidate: Candidate, run: Run) -> Candidate:
    return await _guard(candidate, _write_from_chunk(candidate, run))


async def ask_plainly(candidate: Candidate, run: Run) -> Candidate:
    """A candidate whose sentence restated the question, asked for once more from the same chunk, with the question
    after the document and a plain instruction to answer it (`generate_direct`; `generate_direct_segment` in
    separate mode, judged by the critic stage after): a new candidate of the same beam and chunk, `asked_again`;
    a failed call is recorded on it, as any candidate's, and so is a writer that has no form for that prompt (a
    Self-RAG checkpoint behind a separate critic: its prompt is fixed)."""
    fresh = Candidate(
        candidate.parent, candidate.index, candidate.chunk, candidate.retrieval_score, candidate.evidence,
        asked_again=True,
    )  # fmt: skip
    try:
        return await _guard(fresh, _write_from_chunk(fresh, run))
    except PromptNotSupportedError as error:
        return replace(fresh, error=f"{type(error).__name__}: {error}")


async def _write_from_chunk(candidate: Candidate, run: Run) -> Candidate:
    """Write (and, fused, judge) from the chunk; if the prompt is too long for the model, once more with the
    chunk cut to half."""
    try:
        return await _write_with(candidate, run, None)
    except ContextLengthError:
        return await _write_with(candidate, run, run.config.max_chunk_chars // 2)


async def _write_with(candidate: Candidate, run: Run, max_chars: int | None) -> Candidate:
    beam, chunk = candidate.parent, candidate.chunk
    assert chunk is not None
    document = run.document_values(beam.id, chunk, max_chars)
    values = dict(
        conversation=run.history(),
        question=run.question,
        draft=run.draft(beam.text),
        **document,
        **run.version_values(chunk, document["nonce"]),
    )
    plainly = candidate.asked_again  # the question after the document, and asked to be answered
    if run.config.critic is CriticMode.SEPARATE:
        logprobs = run.config.use_seqscore
        if plainly:
            parsed = await run.ask("generate_direct_segment", logprobs=logprobs, **values)
        else:
            parsed = await run.ask("generate_segment", logprobs=logprobs, **values)
        assert isinstance(parsed.value, WriteReply)
        return replace(candidate, text=parsed.value.sentence)
    if plainly:
        parsed = await run.ask("generate_direct", **values)
    else:
        parsed = await run.ask("generate_fused", **values)
    reply = parsed.value
    assert isinstance(reply, FusedReply)
    critique = critique_from(parsed, with_evidence=True, sentence_field="sentence")
    critique = check_quote(critique, reply.evidence, chunk.text)
    plan = plan_from(parsed, "retrieve_next", "next_query", run.config.threshold, has_cache=True)
    return replace(candidate, text=reply.sentence, critique=critique, plan=plan)


async def _write_pooled(beam: Beam, chunks: Sequence[Chunk], run: Run) -> Candidate:
    """One sentence from all the chunks at once; if the prompt is too long for the model, once more with the
    chunks cut to one chunk's length together."""
    try:
        parsed = await _ask_pooled(beam, chunks, run, None)
    except ContextLengthError:
        parsed = await _ask_pooled(beam, chunks, run, max(100, run.config.max_chunk_chars // len(chunks)))
    reply = parsed.value
    assert isinstance(reply, FusedReply)
    rank = cited_rank(reply.sentence, reply.evidence, [chunk.text for chunk in chunks])
    scores = getattr(chunks, "scores", ())
    candidate = Candidate(
        beam, rank, chunks[rank], scores[rank] if scores else None, chunks, text=reply.sentence, pooled=True
    )
    if run.config.critic is CriticMode.SEPARATE:
        return candidate  # the critic stage judges it against the chunk it cites
    critique = critique_from(parsed, with_evidence=True, sentence_field="sentence")
    critique = check_quote(critique, reply.evidence, chunks[rank].text)
    plan = plan_from(parsed, "retrieve_next", "next_query", run.config.threshold, has_cache=True)
    return replace(candidate, critique=critique, plan=plan)


async def _ask_pooled(beam: Beam, chunks: Sequence[Chunk], run: Run, max_chars: int | None) -> Parsed[BaseModel]:
    return await run.ask(
        "generate_pooled",
        logprobs=run.config.critic is CriticMode.FUSED or run.config.use_seqscore,
        conversation=run.history(),
        question=run.question,
        draft=run.draft(beam.text),
        documents=run.documents(beam.id, chunks, max_chars),
    )


def cited_rank(sentence: str, quote: str, texts: Sequence[str]) -> int:
    """Which of a pooled sentence's chunks it cites (their index): among the chunks the evidence quote is
    found in (all of them when it is found in none), the one holding the largest share of the sentence's
    words; ties go to the better-ranked chunk. Always a real chunk, never a made-up key."""
    holding = [i for i, text in enumerate(texts) if quote.strip() and quote_found(quote, text)]
    said = terms(sentence)

    def shared(i: int) -> float:
        return len(said & terms(texts[i])) / len(said) if said else 0.0

    return max(holding or range(len(texts)), key=lambda i: (shared(i), -i))


async def _plain(candidate: Candidate, run: Run, *, note: str) -> Candidate:
    return await _guard(candidate, _write_plain(candidate, run, note))


async def _write_plain(candidate: Candidate, run: Run, note: str) -> Candidate:
    beam = candidate.parent
    parsed = await run.ask(
        "generate_plain", conversation=run.history(), question=run.question, draft=run.draft(beam.text), note=note
    )
    assert isinstance(parsed.value, PlainReply)
    critique = critique_from(parsed, with_evidence=False, sentence_field="sentence")
    plan = plan_from(parsed, "retrieve_next", "next_query", run.config.threshold, has_cache=False)
    return replace(candidate, text=parsed.value.sentence, critique=critique, plan=plan)


def usable(candidate: Candidate) -> bool:
    return candidate.error is None and candidate.critique is not None and not candidate.gated


async def fallback(live: Sequence[Beam], candidates: Sequence[Candidate], run: Run) -> tuple[Candidate, ...]:
    """One evidence-free sentence for each live beam that was left with no usable candidate because its calls
    failed or a hard gate dropped them all. A beam whose candidates were declined (unsupported, degenerate)
    gets none: it stops, or the answer abstains (controller)."""
    stranded = [b for b in live if not any(usable(c) or c.by_rule for c in candidates if c.parent.id == b.id)]
    if not stranded:
        return ()
    had_chunks = {c.parent.id for c in candidates if c.chunk is not None}
    run.meter.rounds += 1
    return tuple(
        await run_all(_plain(Candidate(b, -1), run, note=FALLBACK_NOTE if b.id in had_chunks else "") for b in stranded)
    )
