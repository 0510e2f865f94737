"""The second hop: a two-hop question's answer often sits in a chunk about something the first chunk names.
Pure functions: no I/O, no awaiting.

"Which Sun Belt Conference team did Wil Lutz play for?" is read in two chunks: "Wil Lutz ... He played college
football at Georgia State." and "The Georgia State Panthers football team ... is a member of the Sun Belt
Conference." The search keeps the sentence that matches the question best, the first hop, and the sentence
written from the second chunk, which holds the answer, is pruned: it shares fewer of the question's words. Once
the search ends, `second_hop` adds it to the answer where the two chunks link up:

    linked   the other chunk opens with a name (its subject: "The Georgia State Panthers ...") whose first words
             the kept sentence's chunk states ("at Georgia State"), and the question does not: the first hop
             names the second one's subject, the bridge
    covers   the other chunk holds words of the question the kept one lacks ("Sun Belt Conference")
    adds     its sentence says at least two things the kept sentence does not, none of it a repeat of the draft

Only a candidate of the same step and draft, from a chunk of its own, that no rule declined, is taken (one the
abstention cut alone declined is, unless the model disowns it: `cut_alone`);
the one covering the most of the question, then the better ranked, then the one the model wrote over the
chunk's own sentence extracted beside it (`engine.extract`). What it changed on training and test questions:
docs/decisions.md (`hops`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..schema import Beam, Candidate, Flag
from .disowned import disowns
from .evidence import terms
from .filters import degeneracy

MIN_ADDED = 2  # content words the second sentence must add to the kept one
MIN_NAME_CHARS = 6  # a one-word subject shorter than this ("Mary") links too much to be a bridge
_SUBJECT = re.compile(r"\W*(?:(?:The|A|An)\s+)?((?:[A-Z][\w'./&-]*\s?)+)")


def second_hop(question: str, best: Beam, written: Sequence[Candidate]) -> Candidate | None:
    """The candidate that adds the second hop to `best`'s last sentence, or None (see the module)."""
    if not best.segments or best.segments[-1].chunk is None:
        return None
    last = best.segments[-1]
    first = last.chunk.text
    draft = tuple(best.segments[:-1])
    asked, kept, before = terms(question), terms(last.text), [s.text for s in best.segments]
    found: list[tuple[int, int, Candidate]] = []
    for candidate in written:
        chunk = candidate.chunk
        usable = candidate.critique is not None and not (candidate.error or candidate.pooled)
        if not usable or (candidate.gated and not cut_alone(candidate)):
            continue
        if chunk is None or chunk.key == last.chunk.key or candidate.parent.segments != draft:
            continue
        bridge = subject_named(chunk.text, first, question)
        covers = (asked & terms(chunk.text)) - terms(first)
        said = terms(candidate.text)
        if not bridge or not covers or not said & (covers | terms(bridge)) or len(said - kept) < MIN_ADDED:
            continue
        if degeneracy(question, candidate.text, before) is None:
            found.append((-len(covers), candidate.index, candidate))
    return min(found, key=lambda item: item[:2])[2] if found else None


def cut_alone(candidate: Candidate) -> bool:
    """Declined only by the abstention cut (no rule flagged it), with a chunk, and not disowned by the model's own
    critique (`disowned.disowns`): a second hop's sentence is about the bridge, not what the question names, so
    its support for the question is low by construction, and the first sentence cleared the cut."""
    return candidate.flag is Flag.UNSUPPORTED and candidate.chunk is not None and not disowns(candidate)


def subject_named(text: str, first: str, question: str) -> str | None:
    """The longest opening of `text`'s leading name ("Georgia State Panthers") that `first` states as whole
    words ("Georgia State") and `question` does not; None when there is none, or it is one short word."""
    match = _SUBJECT.match(text)
    if match is None:
        return None
    name = match.group(1).split()
    for size in range(len(name), 0, -1):
        opening = " ".join(name[:size]).rstrip(".,;:").lower()
        if size == 1 and len(opening) < MIN_NAME_CHARS:
            return None
        if re.search(rf"(?<!\w){re.escape(opening)}(?!\w)", first.lower()):
            return None if re.search(rf"(?<!\w){re.escape(opening)}(?!\w)", question.lower()) else opening
    return None
