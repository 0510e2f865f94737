"""The generalisation set (`examples/generalisation/`): corpora the engine was not written on, questions with gold.

`load_set` reads the corpora (one folder of Markdown files each) and the question files (one JSONL file per
corpus) and checks every question: its fields and their types, its kind, and that each supporting clause is
found in the document it names. A question that fails is refused with one line naming it and the field.

`judge` reads one answer against its question's gold, with no model: the short answer the answer opens with
(or, with none, what its sentences say), whether it abstained, and whether a printed short answer that is wrong
cites a document holding a gold clause (the sources contradict it). `tally` counts judged answers into rows.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..engine.state import UNSETTLED
from ..errors import InputError
from .metrics import answer_in, normalize_answer

KINDS = ("yes_no", "choice", "factoid", "list", "explanation")
TRAPS = ("negation", "exception", "condition", "version")
PHRASINGS = ("question", "keywords", "title")
SPLITS = ("dev", "test")
GROUPS = ("all", "kind", "rule", "trap", "lang", "corpus")  # the tables `tally` makes
NOT_IN_DOCUMENTS = "not in the documents"
FIELDS: dict[str, type | tuple[type, ...]] = {
    "id": str,
    "corpus": str,
    "question": str,
    "kind": str,
    "answerable": bool,
    "gold": str,
    "aliases": list,
    "must_include": list,
    "support": list,
    "traps": list,
    "lang": str,
    "phrasing": str,
    "split": str,
}
OPTIONAL = {"note"}


@dataclass(frozen=True, slots=True)
class Clause:
    doc: str  # a file name inside the question's corpus folder
    text: str  # copied verbatim from that document


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    corpus: str
    question: str
    kind: str
    answerable: bool
    gold: str
    aliases: tuple[str, ...]
    must_include: tuple[str, ...]
    support: tuple[Clause, ...]
    traps: tuple[str, ...]
    lang: str
    phrasing: str
    split: str

    @property
    def golds(self) -> list[str]:
        return [self.gold, *self.aliases]


@dataclass(frozen=True, slots=True)
class GeneralSet:
    root: Path
    corpora: dict[str, Path]  # corpus id -> its folder of documents
    questions: tuple[Question, ...]


def load_set(root: Path) -> GeneralSet:
    """The corpora under `root/corpora/` and every question of `root/questions/*.jsonl`, checked (InputError
    naming the file, the line, the question and the field)."""
    corpora = {folder.name: folder for folder in sorted((root / "corpora").glob("*")) if folder.is_dir()}
    files = sorted((root / "questions").glob("*.jsonl"))
    if not files:
        raise InputError(f"{root}: no question files under questions/ (one JSONL file per corpus)")
    questions: list[Question] = []
    seen: set[str] = set()
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            where = f"{path.name}:{number}"
            question = _question(_row(line, where), where, corpora)
            if question.id in seen:
                raise InputError(f"{where}: question {question.id}: field 'id' repeats an earlier question's id")
            seen.add(question.id)
            questions.append(question)
    return GeneralSet(root, corpora, tuple(questions))


def _row(line: str, where: str) -> dict[str, Any]:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as error:
        raise InputError(f"{where}: not a JSON object ({error.msg})") from None
    if not isinstance(row, dict):
        raise InputError(f"{where}: not a JSON object")
    return row


def _question(row: dict[str, Any], where: str, corpora: dict[str, Path]) -> Question:
    name = row.get("id") if isinstance(row.get("id"), str) else "?"

    def refuse(field: str, why: str) -> InputError:
        return InputError(f"{where}: question {name}: field '{field}' {why}")

    for field, kind in FIELDS.items():
        if field not in row:
            raise refuse(field, "is missing")
        if not isinstance(row[field], kind) or (kind is str and not row[field].strip()):
            raise refuse(field, f"must be a non-empty {kind.__name__}" if kind is str else f"must be a {kind.__name__}")
    if extra := sorted(set(row) - set(FIELDS) - OPTIONAL):
        raise refuse(extra[0], "is not a field of the set")
    for field, allowed in (("kind", KINDS), ("phrasing", PHRASINGS), ("split", SPLITS)):
        if row[field] not in allowed:
            raise refuse(field, f"is {row[field]!r}, not one of {', '.join(allowed)}")
    if bad := [trap for trap in row["traps"] if trap not in TRAPS]:
        raise refuse("traps", f"holds {bad[0]!r}, not one of {', '.join(TRAPS)}")
    for field in ("aliases", "must_include"):
        if not all(isinstance(item, str) and item.strip() for item in row[field]):
            raise refuse(field, "must hold non-empty strings")
    if row["corpus"] not in corpora:
        raise refuse("corpus", f"names {row['corpus']!r}, which has no folder under corpora/")
    if row["answerable"] != (row["gold"] != NOT_IN_DOCUMENTS):
        raise refuse("gold", f"must be {NOT_IN_DOCUMENTS!r} exactly when the question is not answerable")
    if row["answerable"] == (not row["support"]):
        raise refuse("support", "must name a clause for an answerable question and none for another")
    if row["kind"] in ("list", "explanation") and row["answerable"] and not row["must_include"]:
        raise refuse("must_include", "must name what a right answer holds (list and explanation questions)")
    return Question(
        id=row["id"], corpus=row["corpus"], question=row["question"], kind=row["kind"], answerable=row["answerable"],
        gold=row["gold"], aliases=tuple(row["aliases"]), must_include=tuple(row["must_include"]),
        support=tuple(_clause(item, corpora[row["corpus"]], refuse) for item in row["support"]),
        traps=tuple(row["traps"]), lang=row["lang"], phrasing=row["phrasing"], split=row["split"],
    )  # fmt: skip


def _clause(item: object, folder: Path, refuse: Any) -> Clause:
    if not isinstance(item, dict) or not isinstance(item.get("doc"), str) or not isinstance(item.get("clause"), str):
        raise refuse("support", "must hold objects with a 'doc' and a 'clause'")
    path = folder / item["doc"]
    if "/" in item["doc"] or not path.is_file():
        raise refuse("support", f"names the document {item['doc']!r}, which is not in corpora/{folder.name}/")
    if squash(item["clause"]) not in squash(path.read_text(encoding="utf-8")):
        raise refuse("support", f"quotes a clause that {item['doc']} does not hold: {item['clause'][:60]!r}")
    return Clause(item["doc"], item["clause"])


def squash(text: str) -> str:
    """Text with Markdown emphasis dropped and runs of white space made one space, for finding a clause."""
    return " ".join(text.replace("**", "").replace("__", "").split())


# -- reading one answer ----------------------------------------------------------------------------------

_YES_NO = re.compile(r"^\W*(yes|no)\b(?![-'])", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Said:
    """What an answer said, as the judge reads it (built from a `Result` at the edge)."""

    answer: str  # the whole printed answer
    lead: str | None  # the short answer it opens with, if any
    lead_from: str | None  # what gave the short answer (the model, or a rule that decided it)
    abstained: bool  # the engine declined: "The documents do not say."
    cited: tuple[str, ...]  # the texts of the sources the answer cites
    calls: int


@dataclass(frozen=True, slots=True)
class Verdict:
    right: bool
    declined: bool  # abstained, or the short answer says the documents don't settle it
    printed_lead: bool  # a short answer other than "don't settle it" was printed
    lead_right: bool | None  # that short answer against the gold (None: none printed)
    contradicted: bool  # a printed short answer is wrong and the answer cites a document holding a gold clause


def yes_or_no(text: str | None) -> str | None:
    """Yes or no where the text opens with that word alone ("No, the Lite is not ..."); else None."""
    match = _YES_NO.match(text or "")
    return match.group(1).lower() if match else None


def judge(question: Question, said: Said) -> Verdict:
    """One answer read against its question's gold."""
    unsettled = said.lead is not None and said.lead.startswith(UNSETTLED)
    declined = said.abstained or unsettled
    lead = said.lead if said.lead and not unsettled else None
    lead_right = _matches(question, lead) if lead is not None and question.answerable else None
    if lead is not None and not question.answerable:
        lead_right = False
    if not question.answerable:
        right = declined
    elif declined:
        right = False
    elif question.kind in ("list", "explanation"):
        right = _holds_all(said.answer, question.must_include)
    elif lead is not None:
        right = bool(lead_right)
    else:
        right = _matches(question, said.answer)
    cited = squash(" ".join(said.cited))
    holds_gold = any(squash(clause.text) in cited for clause in question.support)
    return Verdict(right, declined, lead is not None, lead_right, lead_right is False and holds_gold)


def _matches(question: Question, text: str) -> bool:
    if question.kind == "yes_no":
        return yes_or_no(text) == question.gold.lower()
    return bool(answer_in(text, question.golds))


def _holds_all(text: str, items: Sequence[str]) -> bool:
    said = f" {normalize_answer(text)} "
    return all(f" {normalize_answer(item)} " in said for item in items)


# -- counting --------------------------------------------------------------------------------------------


def tally(pairs: Iterable[tuple[Question, Said, Verdict]], group: str) -> list[dict[str, object]]:
    """Rows of figures per value of `group` (kind, rule, trap, lang, corpus or all), in a stable order."""
    counts: dict[str, Counter[str]] = {}
    for question, said, verdict in pairs:
        for key in _groups(question, said, group):
            row = counts.setdefault(key, Counter())
            row["questions"] += 1
            row["answerable"] += question.answerable
            row["right"] += verdict.right and question.answerable
            row["short answers printed"] += verdict.printed_lead
            row["short answers right"] += bool(verdict.lead_right)
            decided = said.lead_from not in (None, "model") and verdict.printed_lead
            row["decided printed"] += decided
            row["decided right"] += decided and bool(verdict.lead_right)
            row["contradicted by a cited clause"] += verdict.contradicted
            row["declined, unanswerable"] += verdict.declined and not question.answerable
            row["declined, answerable"] += verdict.declined and question.answerable
            row["calls"] += said.calls
    rows = []
    for key in sorted(counts, key=lambda k: (k == "all", k)):
        row = counts[key]
        unanswerable = row["questions"] - row["answerable"]
        rows.append(
            {
                group: key,
                "questions": row["questions"],
                "right (answerable)": f"{row['right']}/{row['answerable']}",
                "accuracy": _share(row["right"], row["answerable"]),
                "short answers right/printed": f"{row['short answers right']}/{row['short answers printed']}",
                "decided right/printed": f"{row['decided right']}/{row['decided printed']}",
                "contradicted by a cited clause": row["contradicted by a cited clause"],
                "declined, unanswerable": f"{row['declined, unanswerable']}/{unanswerable}",
                "declined, answerable": f"{row['declined, answerable']}/{row['answerable']}",
                "calls per question": round(row["calls"] / row["questions"], 1),
            }
        )
    return rows


def _groups(question: Question, said: Said, group: str) -> list[str]:
    if group == "kind":
        return [question.kind]
    if group == "rule":
        return [said.lead_from or "no short answer"]
    if group == "trap":
        return list(question.traps) or ["none"]
    if group == "lang":
        return ["en" if question.lang == "en" else "other"]
    if group == "corpus":
        return [question.corpus]
    return ["all"]


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}" if whole else "-"
