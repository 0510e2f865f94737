"""The `ground` policy: a sentence states only what its documents hold (evidence scorer, no call).

    unstated          what a sentence states of its own: the numbers, dates and names its source does not hold
                      ("born in 1985" from a chunk that says 1850), or, where the source lacks more than half of
                      the words it adds, those words
    source_sentence   the sentence of the chunk a written sentence was drawn from, which replaces it
    grounded          a candidate stating what its documents do not is replaced by that sentence (`quoted`), or
                      declined (`unstated`) where the chunk has none
    unstated_verdict  a bare "Yes." or "No." to a yes/no question is declined too: no document's word states it

`critic.tidy` runs `grounded` and `unstated_verdict` after the filters (`Config.ground`); why: docs/decisions.md
(`ground`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from ..schema import Candidate, Flag
from .evidence import FACT, asks_yes_no, drawn_on, facts_held, sentences, share, terms, words
from .filters import degeneracy

DRAWN_SHARE = 0.5  # a sentence holding less of a written one's words was not its source
UNHELD_SHARE = 0.5  # a sentence whose source lacks more than this share of the words it adds states them itself


def unstated(sentence: str, source: str, question: str = "", *, words: bool = True) -> tuple[str, ...]:
    """What a sentence states of its own: the numbers, dates and names that neither its source nor the question
    holds, in the sentence's order ("born in 1985" from a chunk that says 1850); with `words`, also the words it
    adds to the question that the source lacks, when they are more than `UNHELD_SHARE` of those it adds ("jerde";
    "Dolvaren Forte 400 mg, a medication that can help prevent blood clots" from a chunk that names only the
    Forte). Empty for a sentence drawn from its source."""
    stated = [key for key in dict.fromkeys(map(_fact_key, FACT.findall(sentence.strip()))) if key]
    held = facts_held(stated, _dashes(source)) | facts_held(stated, _dashes(question))
    if unheld := tuple(fact for fact in stated if fact not in held):
        return unheld
    added = terms(sentence) - terms(question)
    lacked = added - terms(source)
    return tuple(sorted(lacked)) if words and added and len(lacked) > UNHELD_SHARE * len(added) else ()


def _fact_key(fact: str) -> str:
    """A fact as `facts` reads it, with dashes made plain and a possessive taken off ("Madigan's" -> "madigan")."""
    return re.sub(r"['’]s$", "", _dashes(fact).lower().rstrip(".,:/-"))


def _dashes(text: str) -> str:
    return text.replace("–", "-").replace("—", "-").replace("‐", "-")


def source_sentence(question: str, sentence: str, text: str, draft: Sequence[str] = ()) -> str | None:
    """The sentence of `text` a written sentence was drawn from: the one holding the largest share of its
    content words, at least `DRAWN_SHARE` (ties: the one sharing more with the question, then the earlier);
    None when no sentence of the text holds that much, or the one that does is degenerate itself."""
    said, asked = terms(sentence), terms(question)
    best, best_key = None, (DRAWN_SHARE, -1.0, 0)
    for position, part in enumerate(sentences(text)):
        key = (share(said, terms(part)), share(asked, terms(part)), -position)
        if key >= best_key:
            best, best_key = part, key
    if best is None or degeneracy(question, best, draft, text) is not None:
        return None
    return best


def grounded(candidate: Candidate, question: str, draft: Sequence[str]) -> tuple[Candidate, Flag | None]:
    """A sentence stating a number, date or name its documents do not hold, or adding to the question words they
    mostly do not hold (`unstated`: "Her father was born in 1985." from a chunk that says 1850), is
    replaced by the sentence of its chunk it was drawn from, as the chunk words it (`quoted`: "Her father,
    Frederik Madigan, was born in 1850 in Copenhagen."), or declined (`unstated`) when no sentence of the chunk
    holds half its words. A pooled sentence's documents are the chunks it cites (`evidence.drawn_on`: the one its
    quote is in and the one holding most of what that one lacks); its quote comes from the first. A sentence
    written without a chunk is left as it is."""
    if candidate.chunk is None:
        return candidate, None
    chunk_text = sources = candidate.chunk.text
    if candidate.pooled:  # the chunks it will cite (`sourced`): a fact only a third chunk holds is cited by none
        texts = [chunk.text for chunk in candidate.evidence]
        sources = "\n\n".join(texts[i] for i in drawn_on(question, candidate.text, texts, candidate.index))
    if not unstated(candidate.text, sources, question):
        return candidate, None
    quote = source_sentence(question, candidate.text, chunk_text, draft)
    if quote is None:
        return candidate, Flag.UNSTATED
    return replace(candidate, text=quote, flag=Flag.QUOTED, written=candidate.text), None


def unstated_verdict(candidate: Candidate, question: str) -> Flag | None:
    """`unstated` for a bare yes or no to a yes/no question: "Yes.", "No, they are not." (no content word), the
    model's own verdict, which no document's word states; None otherwise."""
    said = words(candidate.text)
    bare = bool(said) and said[0] in ("yes", "no") and not terms(candidate.text)
    return Flag.UNSTATED if bare and asks_yes_no(question) else None
