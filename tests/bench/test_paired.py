"""Two runs of the same questions compared question by question: what one lost and gained against the other (the
abstention test's figure), read from the run folders with no model."""

from __future__ import annotations

import json

from factories import write_run

from selfrag.bench.paired import paired
from selfrag.cli import main


def qa(question: str, gold: str, prediction: str, *, abstained: bool = False, status: str = "ok") -> dict:
    return {"status": status, "question": question, "answers": [gold], "prediction": prediction, "abstained": abstained}


WITHOUT_CUT = {
    "1": qa("Who wrote Jaws?", "Peter Benchley", "Peter Benchley wrote it."),
    "2": qa("When was it filmed?", "1974", "It was filmed in 1974."),
    "3": qa("Who directed it?", "Steven Spielberg", "Spielberg."),  # wrong: not the whole name
    "4": qa("Where is Amity?", "New England", "Amity is in New England."),
}
WITH_CUT = {
    "1": qa("Who wrote Jaws?", "Peter Benchley", "Peter Benchley wrote it."),
    "2": qa("When was it filmed?", "1974", "", abstained=True),  # lost to the cut
    "3": qa("Who directed it?", "Steven Spielberg", "Steven Spielberg directed it."),  # gained
    "4": qa("Where is Amity?", "New England", "", status="failed"),  # a failed question is wrong
}


def test_lost_and_gained_are_counted_question_by_question():
    result = paired(WITHOUT_CUT, WITH_CUT, "qa")
    assert (result.questions, result.right_a, result.right_b) == (4, 3, 2)
    assert result.lost == ("2", "4") and result.gained == ("3",) and result.lost_abstained == 1
    assert result.lost_share == 2 / 3


def test_compare_prints_the_loss_and_lists_each_changed_question(tmp_path, capsys):
    a = compared(tmp_path / "a", WITHOUT_CUT, label="selfrag+evidence+abstain0")
    b = compared(tmp_path / "b", WITH_CUT)
    assert main(["bench", "compare", a, b, "--list"]) == 0
    out = capsys.readouterr().out
    assert "lost (right in A, not in B): 2 of 3 (66.7 %), 1 of them abstained in B" in out
    assert "gained (right in B, not in A): 1" in out
    assert "lost   2  When was it filmed?" in out and "B: (abstained)" in out
    assert "gained 3  Who directed it?" in out
    assert main(["bench", "compare", a, b, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["lost"] == ["2", "4"]


def test_runs_of_other_questions_or_datasets_are_refused_in_one_line(tmp_path, capsys):
    a = compared(tmp_path / "a", WITHOUT_CUT)
    fewer = compared(tmp_path / "fewer", {k: v for k, v in WITH_CUT.items() if k != "4"})
    other = compared(tmp_path / "other", WITH_CUT, dataset="hotpotqa_smoke")
    for b, message in (
        (fewer, "different questions (3 in common of 4 and 3)"),
        (other, "ran on different datasets"),
        (str(tmp_path / "missing"), "not a run folder"),
    ):
        assert main(["bench", "compare", a, b]) == 1
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1


def compared(folder, records, *, dataset="halueval", label="selfrag+evidence"):
    """A test-split run folder of `label`, as `bench compare` reads it."""
    system = {"kind": "selfrag", "label": label, "config": {}}
    return str(write_run(folder, records, dataset=dataset, split="test", system=system, seed=0))
