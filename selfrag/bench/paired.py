"""Two runs of the same questions compared question by question (`selfrag bench compare A B`).

Totals hide what changed: 23 right with the abstention cut against 25 without it may be 2 lost, or 4 lost and
2 gained. The abstention test's figure (right answers the cut loses, of those right without it) and a change's
gains and losses are read here, from the runs' records, with `correct` as `score` counts it (a failed question
is wrong).

    paired      the two runs' right answers, the questions lost (right in A, not in B) and gained, and how many
                of the lost B answered "The documents do not say."
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from .score import is_correct


@dataclass(frozen=True, slots=True)
class Paired:
    questions: int
    right_a: int
    right_b: int
    lost: tuple[str, ...]  # ids right in A and not in B, in A's order
    gained: tuple[str, ...]  # ids right in B and not in A
    lost_abstained: int  # of the lost, those B abstained on

    @property
    def lost_share(self) -> float | None:
        """The share of A's right answers that B lost (the abstention test's figure when B adds the cut)."""
        return len(self.lost) / self.right_a if self.right_a else None


def paired(a: Mapping[str, dict[str, Any]], b: Mapping[str, dict[str, Any]], task: str) -> Paired:
    """Records by id of two runs over the same questions; InputError when they hold different ones."""
    if set(a) != set(b):
        common = len(set(a) & set(b))
        raise InputError(
            f"the two runs hold different questions ({common} in common of {len(a)} and {len(b)}); "
            "compare runs of the same dataset, sample and limit"
        )
    right_a = {i for i, record in a.items() if is_correct(record, task)}
    right_b = {i for i, record in b.items() if is_correct(record, task)}
    lost = tuple(i for i in a if i in right_a and i not in right_b)
    return Paired(
        questions=len(a),
        right_a=len(right_a),
        right_b=len(right_b),
        lost=lost,
        gained=tuple(i for i in a if i in right_b and i not in right_a),
        lost_abstained=sum(1 for i in lost if b[i].get("abstained")),
    )
