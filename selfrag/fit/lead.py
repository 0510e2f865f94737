"""How often the short answer (`engine.lead`) is right where the sentences after it are not, from training runs.

The answer's confidence is calibrated on its sentences (`engine.calibration`); a short answer read off the
documents can be right where they are not ("No." to a yes/no question that a copied sentence does not decide).
`selfrag bench fit-lead` counts, per question kind, the training answers that stated a short answer (not "the
documents don't settle it") saying more than their sentences (`engine.lead.counted_kind`: a name the sentences already
hold is right or wrong with them; a short answer the documents decided counts apart, by what decided it) and whose
sentences held no gold answer, and how many of those short answers did;
the engine then reads the confidence as c + (1 - c) · q_kind (`CriticModel.lead_rate`). Run records keep the
short answer as the start of `prediction`, before the sentences' text. An answer opening "The documents don't
settle it." states no answer: such answers are counted whole (`UNSETTLED_KINDS`: how often the answer was right),
and that rate is its confidence. A short answer the rater does not trust is not printed (`EvidenceRater.trusts`:
behind a yes/no question "The documents don't settle it.", for a factoid nothing), and the record keeps it as
checked (`lead_held`; for a yes/no record from before that field, the model's own reply, `lead_reply`): it is
counted under its kind as if stated (`held_back`), so whether the model is right more often than wrong can still
be fitted once its answer is no longer printed.

A choice or a yes/no question the documents decide (`engine.decide`) needs no model, so its rate is counted over
a dataset's whole training pool instead (`decided_counts`, `fit-lead --decided-on`): every training choice or
yes/no question about two names, its BM25 top chunks as the documents, how often what the documents pick (an
option, "Yes" or "No") is a gold answer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..bench.metrics import answer_in
from ..engine.lead import counted_kind, documents_decide, lead_text
from ..engine.questions import question_kind
from ..engine.state import UNSETTLED
from ..labels import QuestionKind
from ..result import UNSETTLED_KINDS


def sentences_of(record: Mapping[str, Any]) -> str:
    """The text of a run record's sentences, without the short answer before them."""
    return " ".join(str(s.get("text", "")) for s in record.get("segments") or [])


def lead_of(record: Mapping[str, Any]) -> str:
    """The short answer a QA record's prediction opens with ("" when it has none); with no sentences, a short
    answer standing alone (`engine.lead.standing`) is the whole prediction."""
    prediction, sentences = str(record.get("prediction") or ""), sentences_of(record)
    if not sentences:
        return prediction.strip() if record.get("lead_from") else ""
    if not prediction.endswith(sentences):
        return ""
    return prediction[: len(prediction) - len(sentences)].strip()


def lead_counts(records: Iterable[Mapping[str, Any]]) -> dict[str, tuple[int, int]]:
    """kind -> (right, counted) over answered records: a stated short answer where the sentences were wrong; an
    answer opening "The documents don't settle it." whole (`UNSETTLED_KINDS`), and the model's short answer held
    back where the sentences were wrong (`held_back`), so the rate that decides whether it is trusted can still be
    counted once it is not printed."""
    counted: Counter[str] = Counter()
    right: Counter[str] = Counter()
    for record in records:
        gold, sentences = record.get("answers") or [], sentences_of(record)
        if record.get("status") != "ok" or not gold:
            continue
        asked, lead = question_kind(str(record.get("question", ""))), lead_of(record)
        wrong = not answer_in(sentences, gold)
        kind = counted_kind(asked, lead, [sentences], record.get("lead_from") or "model")
        said: list[tuple[str, str]] = []
        if kind in UNSETTLED_KINDS.values():
            said.append((kind, str(record.get("prediction") or "")))
        elif kind is not None and wrong:
            said.append((kind, lead))
        held = held_back(record, lead, asked) if wrong else None
        if held is not None and counted_kind(asked, held, [sentences]) == asked:
            said.append((asked, held))
        for kind, text in said:
            counted[kind] += 1
            right[kind] += bool(answer_in(text, gold))
    return {kind: (right[kind], counted[kind]) for kind in sorted(counted)}


def held_back(record: Mapping[str, Any], lead: str, asked: str | None) -> str | None:
    """The model's short answer where the answer did not print it (`lead`, as `lead_of` reads it): as checked and
    held back (`lead_held`), or, in a yes/no record from before that field, its own "Yes." or "No." where the
    answer printed "The documents don't settle it." instead (an untrusted or contradicted reply, `engine.lead`);
    None where it printed its reply or had none."""
    if record.get("lead_held"):
        return str(record["lead_held"])
    if asked != "yes_no" or lead != UNSETTLED or record.get("lead_from") != "model":
        return None
    said = lead_text(QuestionKind.YES_NO, str(record.get("lead_reply") or ""), ())
    return said if said != UNSETTLED else None


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
