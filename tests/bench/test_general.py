"""The generalisation set keeps its shape, its runner refuses a bad set in one line, and answers are judged right."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from selfrag.bench.general import KINDS, Clause, Question, Said, judge, load_set, tally
from selfrag.errors import InputError
from selfrag.testing.fake_server import FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[2]
SET = ROOT / "examples" / "generalisation"
sys.path.insert(0, str(ROOT / "benchmarks"))  # the script imports its sibling _cli
_SPEC = importlib.util.spec_from_file_location("generalisation", ROOT / "benchmarks" / "generalisation.py")
assert _SPEC and _SPEC.loader
runner = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(runner)


# -- the set itself -------------------------------------------------------------------------------------


def test_the_set_has_the_questions_it_promises():
    full = load_set(SET)  # every field, kind, trap and supporting clause checked on the way in
    questions = full.questions
    assert len(full.corpora) >= 5 and len(questions) >= 150
    for corpus, folder in full.corpora.items():
        assert 8 <= len(list(folder.glob("*.md"))) <= 20, corpus
        assert {q.split for q in questions if q.corpus == corpus} == {"dev", "test"}, corpus
    kinds = Counter(q.kind for q in questions)
    assert set(kinds) == set(KINDS) and min(kinds.values()) >= 10
    assert sum(bool({"negation", "exception", "condition"} & set(q.traps)) for q in questions) >= 40
    assert sum(not q.answerable for q in questions) >= 20
    assert sum(q.lang != "en" for q in questions) >= 10
    assert {"keywords", "title"} <= {q.phrasing for q in questions}
    dev = sum(q.split == "dev" for q in questions) / len(questions)
    assert 0.25 <= dev <= 0.40  # about a third to build on; the rest is only measured


def test_every_supporting_clause_is_in_the_document_it_names():
    for question in load_set(SET).questions:
        for clause in question.support:
            text = (SET / "corpora" / question.corpus / clause.doc).read_text()
            assert " ".join(clause.text.split()) in " ".join(text.replace("**", "").split()), question.id


# -- a bad set is refused in one line -------------------------------------------------------------------

GOOD = {
    "id": "t-001", "corpus": "tiny", "question": "Is the Vela Lite waterproof?", "kind": "yes_no", "answerable": True,
    "gold": "no", "aliases": [], "must_include": [], "traps": ["negation"], "lang": "en", "phrasing": "question",
    "split": "dev", "support": [{"doc": "lite.md", "clause": "The Vela Lite is not waterproof."}],
}  # fmt: skip


def tiny_set(folder: Path, *rows: dict) -> Path:
    corpus = folder / "corpora" / "tiny"
    corpus.mkdir(parents=True)
    (corpus / "lite.md").write_text("# Vela Lite\n\nThe Vela Lite is not waterproof. Keep it away from rain.\n")
    (corpus / "pro.md").write_text("# Vela Pro\n\nThe Vela Pro is waterproof to 10 metres.\n")
    (folder / "questions").mkdir()
    (folder / "questions" / "tiny.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return folder


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"kind": None}, "kind"),  # missing
        ({"kind": "riddle"}, "kind"),
        ({"support": [{"doc": "gone.md", "clause": "x"}]}, "support"),
        ({"support": [{"doc": "lite.md", "clause": "The Vela Lite is waterproof."}]}, "support"),
        ({"traps": ["sarcasm"]}, "traps"),
        ({"answerable": False}, "gold"),
    ],
)
def test_the_runner_names_the_question_and_field_of_a_bad_set_and_exits_2(tmp_path, capsys, change, field):
    row = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    folder = tiny_set(tmp_path, row)
    assert runner.main(["--set-dir", str(folder), "--split", "all", "--no-model"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "question t-001" in err and f"field '{field}'" in err


def test_a_set_with_no_question_files_is_refused(tmp_path):
    (tmp_path / "corpora").mkdir()
    with pytest.raises(InputError, match="no question files"):
        load_set(tmp_path)


# -- judging one answer ---------------------------------------------------------------------------------


def question(**values) -> Question:
    base = dict(GOOD, aliases=(), must_include=(), traps=("negation",))
    base["support"] = (Clause("lite.md", "The Vela Lite is not waterproof."),)
    return Question(**{**base, **values})


def said(answer: str, lead: str | None = None, *, by: str | None = None, cited=(), abstained=False) -> Said:
    return Said(answer, lead, by, abstained, tuple(cited), 3)


def test_a_no_that_rests_on_a_negation_is_right():
    verdict = judge(question(), said("No, the Vela Lite is not waterproof [1].", "No."))
    assert verdict.right and verdict.lead_right and not verdict.contradicted


def test_a_wrong_short_answer_over_the_clause_that_denies_it_is_counted_contradicted():
    verdict = judge(question(), said("Yes [1].", "Yes.", by="stated", cited=["The Vela Lite is not waterproof."]))
    assert not verdict.right and verdict.lead_right is False and verdict.contradicted
    uncited = judge(question(), said("Yes [1].", "Yes.", cited=["The Vela Pro is waterproof to 10 metres."]))
    assert not uncited.contradicted  # wrong, but no cited source holds the clause


def test_a_declined_answer_is_right_only_where_the_documents_do_not_say():
    unanswerable = question(answerable=False, gold="not in the documents", support=())
    assert judge(unanswerable, said("The documents do not say.", abstained=True)).right
    assert judge(unanswerable, said("The documents don't settle it.", "The documents don't settle it.")).right
    assert not judge(unanswerable, said("Yes [1].", "Yes.")).right
    declined = judge(question(), said("The documents do not say.", abstained=True))
    assert declined.declined and not declined.right


def test_list_and_explanation_answers_must_hold_every_item():
    listed = question(kind="list", gold="fever, rash", must_include=("fever", "rash"))
    assert judge(listed, said("Side effects include fever and a rash [1].")).right
    assert not judge(listed, said("Side effects include fever [1].")).right


def test_a_factoid_without_a_short_answer_is_read_from_its_sentences():
    fee = question(kind="factoid", gold="$40", aliases=("40 dollars",), traps=())
    assert judge(fee, said("The fee is $40 per month [1].")).right
    assert not judge(fee, said("$30.", "$30.")).right  # the short answer, when printed, is what counts


def test_tally_counts_decided_answers_apart_from_the_models():
    pairs = []
    for lead, by in (("No.", "stated"), ("Yes.", "stated"), ("No.", "model")):
        s = said(f"{lead} [1]", lead, by=by, cited=["The Vela Lite is not waterproof."])
        pairs.append((question(), s, judge(question(), s)))
    (row,) = tally(pairs, "all")
    assert row["decided right/printed"] == "1/2" and row["short answers right/printed"] == "2/3"
    assert row["contradicted by a cited clause"] == 1 and row["accuracy"] == "66.7"
    rules = {r["rule"]: r for r in tally(pairs, "rule")}
    assert rules["stated"]["right (answerable)"] == "1/2" and rules["model"]["right (answerable)"] == "1/1"


# -- the runner end to end ------------------------------------------------------------------------------


def test_the_runner_answers_through_an_endpoint_and_prints_json(tmp_path, capsys, monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SELFRAG_API_KEY", "SELFRAG_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    unanswerable = {**GOOD, "id": "t-002", "question": "How much does the Vela Lite cost?", "answerable": False,
                    "gold": "not in the documents", "support": [], "traps": [], "kind": "factoid"}  # fmt: skip
    folder = tiny_set(tmp_path / "set", GOOD, unanswerable)
    details = tmp_path / "details.jsonl"
    with FakeOpenAIServer() as server:
        argv = ["--set-dir", str(folder), "--split", "dev", "--base-url", server.base_url, "--json", "--no-progress"]
        assert runner.main([*argv, "--details", str(details)]) == 0
    out = json.loads(capsys.readouterr().out)
    (everything,) = out["all"]
    assert everything["questions"] == 2 and everything["calls per question"] > 0
    assert {row["kind"] for row in out["kind"]} == {"yes_no", "factoid"}
    records = [json.loads(line) for line in details.read_text().splitlines()]
    assert [r["id"] for r in records] == ["t-001", "t-002"] and all(r["answer"] for r in records)
