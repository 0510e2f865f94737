"""The question sets over the sample corpus hold what they claim, and the script that reads them counts right."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))  # the script imports its sibling _cli
_SPEC = importlib.util.spec_from_file_location("sample_questions", ROOT / "benchmarks" / "sample_questions.py")
assert _SPEC and _SPEC.loader
sample_questions = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(sample_questions)


@pytest.mark.parametrize("name", sorted(sample_questions.SETS))
def test_every_gold_answer_is_stated_where_the_set_says(name):
    rows = [json.loads(line) for line in sample_questions.SETS[name].read_text().splitlines()]
    assert len(rows) >= 40  # enough questions to count on
    for row in rows:
        if row["answer"] == "unsettled":
            assert row["doc"] == "" and row["evidence"] == ""
            continue
        text = (ROOT / "examples" / "corpus" / row["doc"]).read_text()
        assert row["evidence"] and row["evidence"] in text, row["question"]
    if name.startswith("yes-no"):
        assert {row["answer"] for row in rows} == {"yes", "no", "unsettled"}


def test_a_short_answer_is_counted_against_its_gold():
    verdict = sample_questions.verdict
    no, unsettled = {"answer": "no"}, {"answer": "unsettled"}
    assert verdict(no, "No.", True) == "right" and verdict(no, "Yes [1].", True) == "wrong"
    assert verdict(no, "The documents don't settle it.", True) == "unsettled (gold settled)"
    assert verdict(unsettled, "The documents don't settle it.", True) == "right"
    assert verdict(unsettled, None, True, abstained=True) == "right" and verdict(no, None, True) == "no lead"
    fee = {"answer": "$6.00", "aliases": ["6 dollars"]}
    assert verdict(fee, "$6.00.", False) == "right" and verdict(fee, "6 dollars.", False) == "right"
    assert verdict(fee, "$5.00.", False) == "wrong"
    assert verdict(unsettled | {"aliases": []}, None, False) == "right"  # no value given where none is stated


def test_the_script_reports_what_the_documents_decide_with_no_model(capsys):
    assert sample_questions.main(["--set", "yes-no-dev"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[1].startswith("| set | how | questions | read as its kind | right | wrong")
    header, first = ([cell.strip() for cell in line.strip().strip("|").split("|")] for line in (table[1], table[3]))
    row = dict(zip(header, first, strict=True))
    assert row["set"] == "yes-no-dev" and int(row["questions"]) == 48
    assert int(row["right"]) >= 1 and int(row["wrong"]) == 0  # "Are the loan helmets free?": helmets.md says so


def test_the_script_reports_the_values_the_documents_state_with_no_model(capsys):
    assert sample_questions.main(["--set", "factoid-dev"]) == 0
    table = capsys.readouterr().out.splitlines()
    header, first = ([cell.strip() for cell in line.strip().strip("|").split("|")] for line in (table[1], table[3]))
    row = dict(zip(header, first, strict=True))
    assert row["set"] == "factoid-dev" and row["how"] == "documents, no model"
    assert int(row["from value"]) >= 1 and int(row["wrong"]) == 0  # "Day pass price?": "A day pass costs $6.00"
