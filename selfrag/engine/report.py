"""Turns the engine's frozen values into the typed output: trace steps, citations, the final Result.
Pure functions; the controller calls them after each step and at the end.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from enum import Enum

from ..config import Config, config_dict
from ..labels import Decision
from ..result import (
    ABSTAIN_ANSWER,
    Abstention,
    CritiqueOut,
    PromptUsage,
    Result,
    SegmentEvent,
    SegmentOut,
    Source,
    Trace,
    TraceBeam,
    TraceCandidate,
    TraceStep,
    Usage,
)
from ..schema import Beam, Candidate, Chunk, Critique, Flag, Meter, Segment
from ..text import looks_like_injection
from .beam import s_sup
from .calibration import PaperRater, Rater, answer_support
from .policies import explain
from .state import Checked, Lead, RunInfo, StepOutcome, StopReason


def critique_out(critique: Critique) -> CritiqueOut:
    def plain(dist: Mapping | None) -> dict[str, float]:
        return {str(label.value): round(p, 6) for label, p in dist.items()} if dist else {}

    probs = {"utility": plain(critique.utility)}
    if critique.relevance is not None:
        probs["relevance"] = plain(critique.relevance)
    if critique.support is not None:
        probs["support"] = plain(critique.support)
    top = Critique.top
    return CritiqueOut(
        relevance=_value(top(critique.relevance)),
        support=_value(top(critique.support)),
        utility=int(top(critique.utility)),
        is_final=critique.is_final,
        probs=probs,
        estimator=critique.estimator,
        truncated=critique.truncated,
        quote_ok=critique.quote_ok,
        seq_prob=critique.seq_prob,
        status=critique.status,
        p_relevant=None if critique.p_relevant is None else round(critique.p_relevant, 6),
        p_supported=None if critique.p_supported is None else round(critique.p_supported, 6),
        answer_support=None if critique.answer_support is None else round(critique.answer_support, 6),
        features={k: round(v, 6) for k, v in critique.features.items()} if critique.features else None,
    )


def _value(label: Enum | None) -> str | None:
    return None if label is None else str(label.value)


def trace_step(step: int, outcome: StepOutcome, frontier: Sequence[Beam], meter: Meter, elapsed: float) -> TraceStep:
    """The trace of step `step`: each live beam's decision and evidence, each candidate's fate."""
    kept = {beam.id for beam in frontier}
    beams = [
        TraceBeam(
            beam=beam.id,
            decision=plan.decision.value,
            p_retrieve=plan.p_retrieve,
            raw_label=plan.raw_label,
            query=plan.query,
            chunks=[chunk.key for chunk in evidence],
            queries=list(evidence.queries),
            retrieval_note=evidence.note,
            suspicious=_suspicious(evidence),
        )
        for beam, plan, evidence in zip(outcome.live, outcome.plans, outcome.evidence, strict=True)
    ]
    candidates = [_trace_candidate(candidate, child, kept) for candidate, child in outcome.outcomes]
    return TraceStep(
        step=step, beams=beams, candidates=candidates, kept=sorted(kept), llm_calls=meter.llm_calls, elapsed=elapsed
    )


def hop_taken(steps: Sequence[TraceStep], hop: Candidate) -> list[TraceStep]:
    """The trace with the candidate the second hop added (`engine.hops`) kept and marked `second_hop`: pruned
    in its step, it is in the answer."""
    chunk = hop.chunk.key if hop.chunk else None

    def mark(c: TraceCandidate) -> TraceCandidate:
        same = c.parent == hop.parent.id and c.chunk == chunk and c.text == hop.text
        taken = same and c.status in ("pruned", "gated")
        return c.model_copy(update={"status": "kept", "second_hop": True, "flag": None}) if taken else c

    return [step.model_copy(update={"candidates": [mark(c) for c in step.candidates]}) for step in steps]


def _suspicious(chunks: Sequence[Chunk]) -> dict[str, list[str]]:
    """Chunk key -> the injection markers in its text, for the chunks that have any (flagged, not filtered)."""
    found = {chunk.key: list(looks_like_injection(chunk.text)) for chunk in chunks}
    return {key: reasons for key, reasons in found.items() if reasons}


def _trace_candidate(candidate: Candidate, child: Beam | None, kept: set[str]) -> TraceCandidate:
    if candidate.error is not None:
        status = "failed"
    elif candidate.gated:
        status = "gated"
    else:
        status = "kept" if child is not None and child.id in kept else "pruned"
    return TraceCandidate(
        parent=candidate.parent.id,
        child=child.id if child else None,
        chunk=candidate.chunk.key if candidate.chunk else None,
        rank=candidate.index if candidate.chunk else None,
        retrieval_score=candidate.retrieval_score,
        text=candidate.text,
        critique=critique_out(candidate.critique) if candidate.critique else None,
        score=child.segments[-1].score if child else None,
        aggregate=child.aggregate if child else None,
        status=status,
        flag=None if candidate.flag is Flag.GATED else candidate.flag,  # a gate's drop is its status alone
        fallback=candidate.index < 0,
        pooled=candidate.pooled,
        also=[chunk.key for chunk in candidate.also],
        written=candidate.written,
        extracted=candidate.extracted,
        asked_again=candidate.asked_again,
        error=candidate.error,
        suspicious=list(looks_like_injection(candidate.chunk.text)) if candidate.chunk else [],
    )


class Citations:
    """Numbers sources in order of first citation; a sentence repeated in one answer is shown once."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}
        self.chunks: dict[str, Chunk] = {}
        self.seen_texts: set[str] = set()

    def cite(self, segment: Segment) -> int | None:
        return self._number(segment.chunk) if segment.chunk is not None else None

    def _number(self, chunk: Chunk) -> int:
        if chunk.key not in self.numbers:
            self.numbers[chunk.key] = len(self.numbers) + 1
            self.chunks[chunk.key] = chunk
        return self.numbers[chunk.key]

    def event(self, index: int, segment: Segment) -> SegmentEvent | None:
        folded = " ".join(segment.text.lower().split())
        if folded in self.seen_texts:
            return None
        self.seen_texts.add(folded)
        n = self.cite(segment)
        source = self.source(segment.chunk.key) if segment.chunk and n else None
        also = [self._number(chunk) for chunk in segment.also]  # only a pooled sentence, which has a chunk, has any
        return SegmentEvent(index=index, text=segment.text, citation=n, source=source, also=also)

    def source(self, key: str) -> Source:
        chunk = self.chunks[key]
        return Source(
            n=self.numbers[key],
            doc_id=chunk.doc_id,
            chunk_id=chunk.chunk_id,
            title=chunk.title,
            source=chunk.source,
            text=chunk.text,
            date=chunk.date,
            superseded_by=list(chunk.version.newer) if chunk.version else [],
            current=chunk.version.current if chunk.version else None,
        )

    def marked(self, text: str, chunks: Sequence[Chunk]) -> str:
        """`text` citing `chunks` ("No." -> "No [1, 2]."), numbered in order; unchanged without any."""
        numbers = [self._number(chunk) for chunk in chunks]
        return with_marker(text, numbers[0], numbers[1:]) if numbers else text

    def sources(self) -> list[Source]:
        return [self.source(key) for key in self.numbers]


def with_marker(text: str, n: int | None, also: Sequence[int] = ()) -> str:
    """'Paris is the capital.' + 1 -> 'Paris is the capital [1].'; with `also` [3]: '... capital [1, 3].' The marker
    goes before the sentence's own end and after a title or an aside that closes before it ('... "Tiny Dancer"
    [1].', '... (since 2026) [1].'), never inside them; after a quote that closes round the end ('He said
    "Go." [1]')."""
    if n is None:
        return text
    stripped = text.rstrip()
    end = len(stripped)
    while end > 0 and stripped[end - 1] in ".!?…":
        end -= 1
    numbers = ", ".join(str(number) for number in (n, *also))
    return f"{stripped[:end]} [{numbers}]{stripped[end:]}"


def committed_prefix(frontier: Sequence[Beam]) -> int:
    """How many leading segments every kept beam shares (they will be in the final answer)."""
    if not frontier:
        return 0
    shortest = min(len(beam.segments) for beam in frontier)
    first = frontier[0].segments
    for i in range(shortest):
        if any(beam.segments[i] is not first[i] for beam in frontier):
            return i
    return shortest


def build_result(
    question: str,
    best: Beam,
    stop_reason: StopReason,
    steps: list[TraceStep],
    meter: Meter,
    wall_time: float,
    config: Config,
    info: RunInfo,
    *,
    rater: Rater | None = None,
    abstention: Abstention | None = None,
    short: Lead | None = None,
    short_kind: str | None = None,
    checked: Checked | None = None,
) -> Result:
    """The answer and its trace. `short`: the short answer as the finishing policies left it (printed first where
    it has text; its call's reply, held answer, clause and refusal go to the trace either way); `short_kind`:
    the kind whose rate the confidence takes for it (`lead.counted_kind`); `checked`: the model's check of the
    sentences, which the confidence reads where the weights do (`engine.check`)."""
    citations = Citations()
    said = short.text if short is not None and short.text else None
    shown = citations.marked(said, short.cites) if short is not None and said else None  # alone, it cites its clause
    segments, parts = [], []
    for index, segment in enumerate(best.segments):
        event = citations.event(index, segment)
        if event is None:
            continue
        segments.append(
            SegmentOut(
                text=segment.text,
                citation=event.citation,
                chunk=segment.chunk.key if segment.chunk else None,
                critique=critique_out(segment.critique),
                score=segment.score,
                pooled=segment.pooled,
                also=event.also,
                also_chunks=[chunk.key for chunk in segment.also],
            )
        )
        parts.append(with_marker(segment.text, event.citation, event.also))
    beam_steps = [b for s in steps for b in s.beams]
    retrieved = sum(1 for b in beam_steps if b.decision != Decision.NO.value and b.chunks)
    rater = rater or PaperRater()
    if abstention is not None:  # as sure as its best declined candidate's P(relevant)·P(supported), whatever the cut
        sure = rater.confidence([_best_seen(steps, _product) or 0.0])
    else:
        rated = [s.critique for s in best.segments]
        words = sum(len(s.text.split()) for s in best.segments)
        supports = [_answer_support(c) for c in rated if c.p_relevant is not None and c.p_supported is not None]
        credit = checked.credit if checked else None
        sure = rater.answer_confidence([_support(c) for c in rated], supports, words, credit)
    confidence = rater.with_lead(sure, short_kind, alone=bool(said) and not best.segments)
    usage = Usage(
        llm_calls=meter.llm_calls,
        prompt_tokens=meter.prompt_tokens,
        completion_tokens=meter.completion_tokens,
        cached_tokens=meter.cached_tokens,
        total_tokens=meter.prompt_tokens + meter.completion_tokens,
        rounds=meter.rounds,
        steps=len(steps),
        retrieval_steps=retrieved,
        retrieval_frequency=retrieved / len(beam_steps) if beam_steps else 0.0,
        reasks=meter.reasks,
        parse_failures=meter.parse_failures,
        failed_calls=meter.failed_calls,
        wall_time=round(wall_time, 4),
        estimated=meter.estimated_usage,
        by_prompt={
            name: PromptUsage(calls=calls, tokens=tokens) for name, (calls, tokens) in sorted(meter.by_prompt.items())
        },
    )
    path = best.id.split(".")
    trace = Trace(
        steps=steps,
        prompts=dict(info.prompts),
        capabilities=dict(info.capabilities),
        final_path=[".".join(path[: i + 1]) for i in range(len(path))],
        lead_reply=short.reply if short else None,
        lead_held=short.held if short else None,
        lead_clause=short.clause if short and said else None,
        lead_refused=short.refused if short else None,
        lead_confirm=short.confirm if short else None,
        answer_check=checked.credit if checked else None,
        answer_check_reply=checked.said if checked else None,
        policies=explain(config, evidence=rater.from_documents, fitted_for=info.fitted_for, checks=rater.reads_check),
        weights_warning=info.weights_warning,
    )
    return Result(
        question=question,
        answer=ABSTAIN_ANSWER if abstention is not None else " ".join([shown, *parts] if shown else parts),
        segments=segments,
        sources=citations.sources(),
        confidence=round(confidence, 6),
        stop_reason=stop_reason.value,
        abstention=abstention,
        lead=said,
        lead_from=short.source if short and said else None,
        usage=usage,
        trace=trace,
        model=info.model,
        config=config_dict(config),
    )


def _support(critique: Critique) -> float:
    """A segment's P(supported): the rater's when rated, else the label credit; 0 without evidence."""
    if critique.p_supported is not None:
        return critique.p_supported
    return s_sup(critique.support) if critique.support else 0.0


def _answer_support(critique: Critique) -> float:
    """A rated segment's answer support: the rater's own, else P(relevant)·P(supported)."""
    if critique.answer_support is not None:
        return critique.answer_support
    return answer_support(critique.p_relevant or 0.0, critique.p_supported or 0.0)


def abstention_from(steps: Sequence[TraceStep], threshold: float) -> Abstention:
    """The abstention of an answer whose every candidate was declined, with the best support seen (or, when no
    sentence was rated, why they were declined before: "declined: 2 unstated, 1 restates_question")."""
    best = _best_seen(steps, lambda critique: critique.answer_support)
    if best is None:
        flags = Counter(c.flag for step in steps for c in step.candidates if c.flag)
        why = "; declined: " + ", ".join(f"{n} {flag}" for flag, n in sorted(flags.items())) if flags else ""
        message = f"No retrieved document supports an answer (no sentence was rated{why})."
        return Abstention(best_support=None, threshold=threshold, message=message)
    shown, cut = _apart(best, threshold)
    found = f"the best sentence reached {shown}, below {cut}"
    return Abstention(
        best_support=best,
        threshold=threshold,
        message=f"No retrieved document supports an answer well enough ({found}).",
    )


def _best_seen(steps: Sequence[TraceStep], value: Callable[[CritiqueOut], float | None]) -> float | None:
    """The highest `value` among the steps' rated candidates (to 6 places); None where none was rated."""
    rated = (c.critique for step in steps for c in step.candidates if c.critique is not None)
    seen = [v for v in map(value, rated) if v is not None]
    return round(max(seen), 6) if seen else None


def _product(critique: CritiqueOut) -> float | None:
    """A rated candidate's P(relevant)·P(supported)."""
    if critique.p_relevant is None or critique.p_supported is None:
        return None
    return answer_support(critique.p_relevant, critique.p_supported)


def _apart(value: float, limit: float) -> tuple[str, str]:
    """Both numbers with the fewest decimals (2 to 4) that tell them apart: "0.087, below 0.091", not "0.09, below
    0.09"."""
    for places in (2, 3):
        shown = f"{value:.{places}f}", f"{limit:.{places}f}"
        if shown[0] != shown[1]:
            return shown
    return f"{value:.4f}", f"{limit:.4f}"
