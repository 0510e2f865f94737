"""benchmarks/answers_head.py: the two abstention rules fitted on one judgments file and counted on another, or
cross-validated; a held question the fit also drew is left out, and a bad file is one line and a non-zero exit."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHUNK = "Refunds are accepted within 30 days of purchase."


def script_main(argv: list[str]) -> int:
    spec = importlib.util.spec_from_file_location("answers_head", ROOT / "benchmarks" / "answers_head.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    old = sys.argv
    sys.argv = ["answers_head.py", *argv]
    try:
        return module.main()
    finally:
        sys.argv = old


def judged(path: Path, tag: str, answerable: int, unanswerable: int) -> Path:
    """Right answers copied from their chunk and, for questions made unanswerable, sentences about something else."""
    rows = []
    for i in range(answerable):
        rows.append({"question": f"How long for refunds ({tag}{i})?", "sentence": CHUNK, "chunk": CHUNK,
                     "relevant": True, "supported": True, "correct": True, "extracted": True})  # fmt: skip
    for i in range(unanswerable):
        rows.append({"question": f"How long for returns ({tag}{i})?", "sentence": "Gift cards are sold online.",
                     "chunk": "Gift cards are sold online.", "relevant": False, "supported": False,
                     "correct": False, "answerable": False, "rank": 2, "score_rel": 0.4})  # fmt: skip
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_fitted_on_one_file_and_counted_on_another_leaving_out_what_both_hold(tmp_path, capsys):
    fit = judged(tmp_path / "fit.jsonl", "a", 40, 25)
    held = judged(tmp_path / "held.jsonl", "b", 10, 6)
    both = tmp_path / "both.jsonl"
    both.write_text(held.read_text() + fit.read_text())  # the fit's own questions are not held apart
    assert script_main([str(fit), str(both)]) == 0
    out = capsys.readouterr().out
    assert "16 questions held apart" in out
    assert "answers head" in out and "right answers lost 0 of 10" in out and "abstained 6 of 6" in out


def test_cross_validation_and_bad_input(tmp_path, capsys):
    fit = judged(tmp_path / "fit.jsonl", "a", 75, 45)  # each fit of three folds holds the 36 the default cut needs
    assert script_main([str(fit), "--folds", "3", "--repeats", "1"]) == 0
    assert "right answers lost 0 of 75" in capsys.readouterr().out  # each question counted once per shuffle
    assert script_main([str(judged(tmp_path / "few.jsonl", "c", 40, 5)), str(fit)]) == 2
    assert "too few for the head" in capsys.readouterr().err
    assert script_main([str(tmp_path / "missing.jsonl"), "--folds", "2"]) == 2
    assert "cannot read" in capsys.readouterr().err
