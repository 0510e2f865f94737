"""The `extract` policy: each chunk's own sentence, the one sharing most with the question, is extracted to stand
beside the model's and is rated like any other (evidence scorer, no call). `critic.assess` runs it after the
filters and the grounding (`Config.extract`); `ask_plainly` runs it where a sentence restated the question twice.
Why: docs/decisions.md (`extract`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..schema import Candidate, Flag
from .evidence import sentences, spaced, terms
from .filters import best_sentence, degeneracy, draft_of


def extract(candidates: Sequence[Candidate], question: str, *, alone: bool = False) -> list[Candidate]:
    """The document's own sentence, extracted to stand beside the model's (`extracted`, no call): for each chunk of
    several sentences that a candidate was written from, the sentence sharing most with the question
    (`filters.best_sentence`), where it is not degenerate and says something else than the model's sentence.
    It shares its chunk's critique (its quote is itself) and is rated with the others. A small writer given a
    paragraph mostly copies its first sentence, while the question's answer is often in another
    (docs/decisions.md, `extract`). One is extracted from a chunk once per
    beam (a sentence asked for again was written from the same chunk). `alone`: the model wrote nothing worth
    keeping from the chunk, so from a chunk of one sentence that one is extracted too."""
    out: list[Candidate] = []
    seen = {(c.parent.id, c.chunk.key) for c in candidates if c.extracted and c.chunk is not None}
    for candidate in candidates:
        chunk, critique = candidate.chunk, candidate.critique
        if candidate.pooled or candidate.error or chunk is None or critique is None or not critique.support:
            continue
        if candidate.flag is Flag.SUPERSEDED or candidate.extracted:  # its document yields to a newer one, and so do
            continue  # its sentences; nothing is extracted from an extracted sentence
        if (candidate.parent.id, chunk.key) in seen:
            continue
        text = spaced(chunk.text)
        several = len(sentences(text)) >= 2
        if not several and not alone:
            continue  # one sentence: what the writer read and wrote from
        draft = draft_of(candidate)
        best = best_sentence(question, text, draft)
        if (several and best == text) or degeneracy(question, best, draft, text) is not None:
            continue  # none worth keeping
        if terms(best) in (terms(candidate.text), terms(candidate.written or "")):
            continue  # the model wrote it already (or it stands quoted)
        quoted = replace(critique, quote_ok=True)
        seen.add((candidate.parent.id, chunk.key))
        out.append(
            replace(
                candidate, text=best, critique=quoted, flag=None, written=None, extracted=True,
                asked_again=False,
            )
        )  # fmt: skip
    return out
