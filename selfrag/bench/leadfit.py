"""How often the short answer (`engine.lead`) is right where the sentences after it are not, from training runs.

The answer's confidence is calibrated on its sentences (`engine.calibration`); a short answer read off the
documents can be right where they are not ("No." to a yes/no question that a copied sentence does not decide).
`selfrag bench fit-lead` counts, per question kind, the training answers that stated a short answer (not "the
documents don't settle it") saying more than their sentences (`engine.lead.counted_kind`: a name the sentences already
hold is right or wrong with them; a short answer the documents decided counts apart, by what decided it) and whose
sentences held no gold answer, and how many of those short answers did;
the engine then reads the confidence as c + (1 - c) · q_kind (`CriticModel.lead_rate`). Run records keep the
short answer as the start of `prediction`, before the sentences' text.

A choice or a yes/no question the documents decide (`engine.compare`) needs no model, so its rate is counted over
a dataset's whole training pool instead (`decided_counts`, `fit-lead --decided-on`): every training choice or
yes/no question about two names, its BM25 top chunks as the documents, how often what the documents pick (an
option, "Yes" or "No") is a gold answer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..engine.lead import counted_kind, documents_decide
from ..engine.questions import question_kind
from .metrics import answer_in


def _sentences(record: Mapping[str, Any]) -> str:
    return " ".join(str(s.get("text", "")) for s in record.get("segments") or [])


def lead_of(record: Mapping[str, Any]) -> str:
    """The short answer a QA record's prediction opens with ("" when it has none); with no sentences, a short
    answer standing alone (`engine.lead.standing`) is the whole prediction."""
    prediction, sentences = str(record.get("prediction") or ""), _sentences(record)
    if not sentences:
        return prediction.strip() if record.get("lead_from") else ""
    if not prediction.endswith(sentences):
        return ""
    return prediction[: len(prediction) - len(sentences)].strip()


def lead_counts(records: Iterable[Mapping[str, Any]]) -> dict[str, tuple[int, int]]:
    """kind -> (short answers right, short answers stated) over answered records whose sentences were wrong."""
    right: Counter[str] = Counter()
    stated: Counter[str] = Counter()
    for record in records:
        lead, gold, sentences = lead_of(record), record.get("answers") or [], _sentences(record)
        source = record.get("lead_from") or "model"
        kind = counted_kind(question_kind(str(record.get("question", ""))), lead, [sentences], source)
        if record.get("status") != "ok" or kind is None or not gold or answer_in(sentences, gold):
            continue
        stated[kind] += 1
        right[kind] += bool(answer_in(lead, gold))
    return {kind: (right[kind], stated[kind]) for kind in sorted(stated)}


def decided_counts(questions: Iterable[tuple[str, Sequence[str], Sequence[str]]]) -> dict[str, tuple[int, int]]:
    """What decided it (`result.DECIDED`) -> (right, decided) over (question, gold answers, texts read) of training
    questions: how often what the documents pick names a gold answer (as the metric reads it)."""
    right: Counter[str] = Counter()
    decided: Counter[str] = Counter()
    for question, gold, texts in questions:
        decision = documents_decide(question, question_kind(question), texts) if gold else None
        if decision is not None:
            decided[decision.by] += 1
            right[decision.by] += bool(answer_in(decision.option, gold))
    return {by: (right[by], decided[by]) for by in sorted(decided)}
