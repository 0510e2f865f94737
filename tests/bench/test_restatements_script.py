"""benchmarks/restatements.py: restated questions per 100 written candidates, before and after they are asked
again; a run from before candidates carried `asked_again` is one line and exit 2."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def restatements():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("restatements", ROOT / "benchmarks" / "restatements.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def candidate(flag: str | None = None, *, asked_again: bool = False, extracted: bool = False) -> dict:
    return {"text": "...", "flag": flag, "asked_again": asked_again, "extracted": extracted}


def run(folder: Path, records: list[dict]) -> Path:
    folder.mkdir()
    (folder / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def test_restatements_before_and_after_asking_again(tmp_path, capsys):
    records = [
        {"id": "a", "status": "ok", "candidates": [
            candidate("restates_question"), candidate(asked_again=True),  # restated, then written plainly
            candidate(), candidate(extracted=True),  # the chunk's own sentence is not the model's
        ]},
        {"id": "b", "status": "ok", "candidates": [
            candidate("restates_question"), candidate("restates_question", asked_again=True),  # restated twice
            candidate("repeats_draft"),
        ]},
    ]  # fmt: skip
    assert restatements().main([str(run(tmp_path / "r1", records))]) == 0
    row = capsys.readouterr().out.splitlines()[-1]
    assert row == "| r1 | 2 | 4 | 50.0 | 25.0 |"  # 2 of 4 written restate; 1 is still restating after asking


def test_a_run_recorded_before_asked_again_is_refused_in_one_line(tmp_path, capsys):
    old = [{"id": "a", "status": "ok", "candidates": [{"text": "...", "flag": None}]}]
    assert restatements().main([str(run(tmp_path / "old", old))]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "asked_again" in err
