"""⑤ Scoring and pruning. Pure functions: no I/O, no awaiting.

The one table from labels to numbers (paper, Appendix A.3):

    s_rel = P(relevant)                                   normalised over {relevant, irrelevant}
    s_sup = P(fully) + 0.5 * P(partially)                 normalised over {fully, partially, no}
    s_use = sum_i u_i * P(i),  u = (-1, -0.5, 0, 0.5, 1)  normalised over {1..5}
    f     = w_rel * s_rel + w_sup * s_sup + w_use * s_use  (+ S_LM when use_seqscore and logprobs exist)

Discrete labels are the one-hot special case. When the scorer rated the candidate (engine.calibration),
its P(relevant) and P(supported) stand in for s_rel and s_sup; with the paper's scorer they are equal. The
evidence scorer leaves s_use out (the controller passes w_use = 0 when the rater does not weigh utility): the
135M model's ISUSE label ranks candidates at chance, and at w_use 0.5 it outweighed the rated probabilities.

A beam's aggregate is the MEAN of f over its segments written from evidence, so longer drafts are not
favoured (the reference code multiplied by the parent's score; an API port summed). A segment written without
evidence has no f: it leaves the aggregate unchanged, and a beam with no evidence-backed segment at all ranks by
w_use * mean s_use of its segments.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from ..labels import Relevance, Support, Utility
from ..schema import Beam, Candidate, Critique, Segment

SUPPORT_CREDIT = {Support.FULLY: 1.0, Support.PARTIALLY: 0.5, Support.NO: 0.0}
UTILITY_VALUE = {Utility.U1: -1.0, Utility.U2: -0.5, Utility.U3: 0.0, Utility.U4: 0.5, Utility.U5: 1.0}


@dataclass(frozen=True, slots=True)
class Weights:
    w_rel: float = 1.0
    w_sup: float = 1.0
    w_use: float = 0.5
    use_seqscore: bool = False


def _normalised(dist: Mapping[object, float]) -> dict[object, float]:
    total = sum(dist.values())
    return {label: p / total for label, p in dist.items()} if total > 0 else dict(dist)


def s_rel(dist: Mapping[Relevance, float]) -> float:
    return _normalised(dist).get(Relevance.RELEVANT, 0.0)


def s_sup(dist: Mapping[Support, float]) -> float:
    norm = _normalised(dist)
    return sum(SUPPORT_CREDIT[label] * norm.get(label, 0.0) for label in Support)


def s_use(dist: Mapping[Utility, float]) -> float:
    norm = _normalised(dist)
    return sum(UTILITY_VALUE[label] * norm.get(label, 0.0) for label in Utility)


def score(critique: Critique, weights: Weights) -> float | None:
    """f(y_t, d) for a segment written from a chunk; None for one written without evidence."""
    if critique.relevance is None or critique.support is None:
        return None
    relevant = s_rel(critique.relevance) if critique.p_relevant is None else critique.p_relevant
    supported = s_sup(critique.support) if critique.p_supported is None else critique.p_supported
    value = weights.w_rel * relevant + weights.w_sup * supported + weights.w_use * s_use(critique.utility)
    if weights.use_seqscore and critique.seq_prob is not None:
        value += critique.seq_prob
    return value


def aggregate(segments: Sequence[Segment], weights: Weights) -> float:
    """Length-aware score of a draft: mean f over evidence-backed segments (see module docstring)."""
    scored = [segment.score for segment in segments if segment.score is not None]
    if scored:
        return sum(scored) / len(scored)
    if not segments:
        return 0.0
    return weights.w_use * sum(s_use(segment.critique.utility) for segment in segments) / len(segments)


def extend(candidate: Candidate, child_no: int, weights: Weights) -> Beam:
    """The beam a successful candidate makes: its parent plus one scored segment."""
    assert candidate.critique is not None and candidate.error is None
    segment = Segment(
        candidate.text,
        candidate.critique,
        candidate.chunk,
        score(candidate.critique, weights),
        candidate.pooled,
        candidate.also,
    )
    parent = candidate.parent
    segments = (*parent.segments, segment)
    return replace(
        parent,
        id=f"{parent.id}.{child_no}",
        segments=segments,
        evidence=candidate.evidence,
        plan=candidate.plan,
        final=candidate.critique.is_final,
        aggregate=aggregate(segments, weights),
    )


def draft_key(beam: Beam) -> str:
    """Identity of a draft for deduplication: its text, case and spacing folded."""
    return " ".join(beam.text.lower().split())


def prune(pool: Iterable[Beam], width: int) -> tuple[Beam, ...]:
    """Keep the best `width` beams: identical drafts collapse to the better one; ties break on a stable key.

    Finished beams are in the pool with the new children and compete with them on the same aggregate.
    """
    best: dict[str, Beam] = {}
    for beam in pool:
        key = draft_key(beam)
        if key not in best or _rank_key(beam) < _rank_key(best[key]):
            best[key] = beam
    return tuple(sorted(best.values(), key=_rank_key)[:width])


def _rank_key(beam: Beam) -> tuple[float, int, tuple[tuple[int, str], ...]]:
    """Best aggregate first, then the shorter draft, then the earlier candidate: its id's numbers compared as
    numbers ("0.2" before "0.10"; a step's candidates are numbered in chunk-rank order)."""
    return (-beam.aggregate, len(beam.segments), tuple((len(part), part) for part in beam.id.split(".")))


def is_finished(frontier: Sequence[Beam], max_depth: int) -> bool:
    return all(beam.final or len(beam.segments) >= max_depth for beam in frontier)


def best(frontier: Sequence[Beam]) -> Beam:
    return min(frontier, key=_rank_key)
