"""Fusion of ranked lists, the one place lists of hits become one list: reciprocal rank fusion and the
weighted sum of min-max normalised scores. Deterministic: ties break on the best rank of first appearance,
then the list it appeared in, then the chunk key.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..schema import Chunk, Hit


def rrf(lists: Sequence[Sequence[Hit]], *, k: int = 60, weights: Sequence[float] | None = None) -> list[Hit]:
    """Reciprocal rank fusion: each chunk scores sum(w_i / (k + rank_i)), ranks from 1."""
    weights = weights or [1.0] * len(lists)
    return _combine(
        lists, [[w / (k + rank) for rank in range(1, len(hits) + 1)] for hits, w in zip(lists, weights, strict=True)]
    )


def weighted_fusion(lists: Sequence[Sequence[Hit]], weights: Sequence[float] | None = None) -> list[Hit]:
    """Weighted sum of each list's min-max normalised scores (a chunk missing from a list gets 0 there)."""
    weights = weights or [1.0] * len(lists)
    return _combine(lists, [[w * x for x in normalised(hits)] for hits, w in zip(lists, weights, strict=True)])


def _combine(lists: Sequence[Sequence[Hit]], contributions: Sequence[Sequence[float]]) -> list[Hit]:
    total: dict[str, float] = {}
    first: dict[str, tuple[int, int, Chunk]] = {}
    for list_no, (hits, gains) in enumerate(zip(lists, contributions, strict=True)):
        for rank, (hit, gain) in enumerate(zip(hits, gains, strict=True)):
            key = hit.chunk.key
            total[key] = total.get(key, 0.0) + gain
            if key not in first or (rank, list_no) < first[key][:2]:
                first[key] = (rank, list_no, hit.chunk)
    order = sorted(total, key=lambda key: (-total[key], first[key][0], first[key][1], key))
    return [Hit(first[key][2], total[key]) for key in order]


def normalised(hits: Sequence[Hit]) -> list[float]:
    """Each hit's score min-max normalised to [0, 1] (all 1.0 when the scores are equal)."""
    if not hits:
        return []
    high, low = max(h.score for h in hits), min(h.score for h in hits)
    return [1.0 if high == low else (h.score - low) / (high - low) for h in hits]
