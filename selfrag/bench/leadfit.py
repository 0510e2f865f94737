"""How often the short answer (`engine.lead`) is right where the sentences after it are not, from training runs.

The answer's confidence is calibrated on its sentences (`engine.calibration`); a short answer read off the
documents can be right where they are not ("No." to a yes/no question that a copied sentence does not decide).
`selfrag bench fit-lead` counts, per question kind, the training answers that stated a short answer (not "the
documents don't settle it") saying more than their sentences (`engine.lead.counted_kind`: a name the sentences already
hold is right or wrong with them; a short answer the documents decided counts apart, by what decided it) and whose
sentences held no gold answer, and how many of those short answers did;
the engine then reads the confidence as c + (1 - c) · q_kind (`CriticModel.lead_rate`). Run records keep the
short answer as the start of `prediction`, before the sentences' text.

The two are fitted apart, and the answer's confidence is what they give together; `answer_map_rows` reads each
training answer's confidence as the engine would compute it with the new counts (from the P(supported) values
its record keeps, `supports`) beside whether the answer was right, and `fit-lead` fits the answer map (one
more Platt map, `CriticModel.answer_map`) on them.

A choice or a yes/no question the documents decide (`engine.compare`) needs no model, so its rate is counted over
a dataset's whole training pool instead (`decided_counts`, `fit-lead --decided-on`): every training choice or
yes/no question about two names, its BM25 top chunks as the documents, how often what the documents pick (an
option, "Yes" or "No") is a gold answer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..engine.calibration import CriticModel
from ..engine.lead import counted_kind, documents_decide
from ..engine.questions import question_kind
from .metrics import answer_in

MIN_MAP_ANSWERS = 50  # training answers the answer map is fitted on, at least: two numbers from fewer are noise


def _sentences(record: Mapping[str, Any]) -> str:
    return " ".join(str(s.get("text", "")) for s in record.get("segments") or [])


def lead_of(record: Mapping[str, Any]) -> str:
    """The short answer a QA record's prediction opens with ("" when it has none); with no sentences, a short
    answer standing alone is the whole prediction."""
    prediction, sentences = str(record.get("prediction") or ""), _sentences(record)
    if not sentences:
        return prediction.strip() if record.get("lead_from") else ""
    if not prediction.endswith(sentences):
        return ""
    return prediction[: len(prediction) - len(sentences)].strip()


def _kind(record: Mapping[str, Any]) -> str | None:
    """The kind whose rate the confidence added for the record's short answer (`engine.lead.counted_kind`)."""
    source = record.get("lead_from") or "model"
    return counted_kind(question_kind(str(record.get("question", ""))), lead_of(record), [_sentences(record)], source)


def lead_counts(records: Iterable[Mapping[str, Any]]) -> dict[str, tuple[int, int]]:
    """kind -> (short answers right, short answers stated) over answered records whose sentences were wrong."""
    right: Counter[str] = Counter()
    stated: Counter[str] = Counter()
    for record in records:
        lead, gold, sentences, kind = lead_of(record), record.get("answers") or [], _sentences(record), _kind(record)
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


def answer_map_rows(records: Iterable[Mapping[str, Any]], model: CriticModel) -> tuple[list[float], list[bool]]:
    """Each answered training record's confidence as `model` computes it before its answer map (the sentences'
    map over the mean of the record's `supports`, then the short answer's rate), and whether the answer was
    right; records without `supports` (runs made before they were kept) are left out."""
    confidence, right = [], []
    for record in records:
        supports, gold = record.get("supports"), record.get("answers") or []
        if record.get("status") != "ok" or not gold or not isinstance(supports, list) or not supports:
            continue
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in supports):
            continue
        sentences = model.confidence.probability(sum(supports) / len(supports))
        rate = model.lead_rate(_kind(record))
        confidence.append(sentences if rate is None else sentences + (1 - sentences) * rate)
        right.append(bool(answer_in(str(record.get("prediction") or ""), gold)))
    return confidence, right
