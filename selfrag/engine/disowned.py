"""The `disowned` policy (paper's scorer): a sentence the model itself calls irrelevant and unsupported is declined
where its beam has no other sentence left, so utility 5 never makes it the answer alone; the answer abstains
instead (no call). `critic.assess` runs it after the other rules on written sentences (`Config.disowned`). Why:
docs/decisions.md (`disowned`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from ..labels import Relevance, Support
from ..schema import Candidate, Critique, Flag
from . import generator


def disowned(candidates: Sequence[Candidate], *, gated: Callable[[Candidate], bool]) -> list[Candidate]:
    """Sentences written from chunks that the model itself calls irrelevant and unsupported (the top label of
    both) are declined, flagged `disowned`, where no other usable sentence of their beam is left: with the
    paper's scorer such a sentence would otherwise be kept alone (utility 5 outweighs both labels), and the
    answer abstains instead. Beside a sentence the model owns, a disowned one stays and ranks below it. One the
    hard gates drop (`gated`: `critic.gate`'s verdict) is left to them (their beam falls back to a sentence
    written without evidence)."""
    live = [c for c in candidates if generator.usable(c) and not gated(c)]
    owned = {c.parent.id for c in live if not disowns(c)}
    dropped = {id(c) for c in live if c.parent.id not in owned}
    return [replace(c, flag=Flag.DISOWNED) if id(c) in dropped else c for c in candidates]


def disowns(candidate: Candidate) -> bool:
    """The model's own critique calls the sentence's chunk irrelevant and the sentence unsupported (the top label
    of both); never for a sentence written without documents or one whose critic call failed."""
    critique = candidate.critique
    if critique is None or critique.relevance is None or critique.support is None:
        return False  # written without documents: no verdict on any
    if critique.status == "defaulted":
        return False  # the critic's call failed: its labels are the engine's caution, not the model's verdict
    irrelevant = Critique.top(critique.relevance) is Relevance.IRRELEVANT
    return irrelevant and Critique.top(critique.support) is Support.NO
