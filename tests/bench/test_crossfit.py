"""benchmarks/crossfit.py against the loopback fake server: each fold's answers scored under a map fitted on
the other folds, the same answers as the run, and a whole that score --check recomputes."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from helpers import SHIPPED_WEIGHTS

from selfrag.bench.score import score_run
from selfrag.cli import main
from selfrag.engine.calibration import load_critic_model
from selfrag.testing.fake_server import FakeOpenAIServer

from .fixtures import many_hotpot_questions, write_hotpot

ROOT = Path(__file__).resolve().parents[2]


def crossfit_module():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location("crossfit", ROOT / "benchmarks" / "crossfit.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_each_fold_is_scored_by_a_map_fitted_on_the_others(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SELFRAG_HOME", str(tmp_path / "home"))
    questions = [dict(q, answer="Zurich") if n % 3 else q for n, q in enumerate(many_hotpot_questions(8))]
    data = write_hotpot(tmp_path / "data", questions)  # a third of the answers right, the rest wrong
    with FakeOpenAIServer() as server:
        flags = ["--dataset", "hotpotqa_smoke", "--data", str(data), "--system", "selfrag+evidence+abstain0",
                 "--base-url", server.base_url, "--model", "fake", "--cache", str(tmp_path / "cache.sqlite3"),
                 "--no-progress"]  # fmt: skip
        # the shipped weights named: at an endpoint, the evidence scorer takes only weights named or fitted for it
        first = [*flags, "--scorer-weights", SHIPPED_WEIGHTS, "--run-dir", str(tmp_path / "run")]
        assert main(["bench", "run", *first]) == 0
        sent = len(server.stats.bodies)
        crossfit = crossfit_module()
        assert crossfit.main([str(tmp_path / "run"), "--out", str(tmp_path / "cf"), "--", *flags]) == 0
        assert len(server.stats.bodies) == sent  # the map changes no decision: every answer came from the cache
    said = capsys.readouterr().out
    assert "fold 0: map" in said and "fold 1: map" in said
    run = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    whole = [json.loads(line) for line in (tmp_path / "cf" / "crossfit" / "samples.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in whole) == sorted(r["id"] for r in run)
    assert {r["id"]: r["prediction"] for r in whole} == {r["id"]: r["prediction"] for r in run}
    folds = crossfit.folds_of([r["id"] for r in run], 2, 0)
    assert sorted(folds.values()).count(0) == 24
    maps = [load_critic_model(tmp_path / "cf" / f"fold{n}.json") for n in (0, 1)]
    by_fold = [
        {r["id"]: r["confidence"] for r in map(json.loads, (tmp_path / "cf" / f"fold{n}" / "run" / "samples.jsonl")
                                                          .read_text().splitlines())}
        for n in (0, 1)
    ]  # fmt: skip
    for record in whole:  # each answer's confidence is its own fold's map's, never the other's
        assert record["confidence"] == by_fold[folds[record["id"]]][record["id"]]
        assert record["confidence"] != by_fold[1 - folds[record["id"]]][record["id"]]
    assert maps[0].fitted_on["confidence_map"] != maps[1].fitted_on["confidence_map"]
    stored = json.loads((tmp_path / "cf" / "crossfit" / "results.json").read_text())["summary"]
    assert json.loads(json.dumps(score_run(tmp_path / "cf" / "crossfit")["summary"])) == stored


def test_bad_use_gets_one_line(tmp_path, capsys):
    crossfit = crossfit_module()
    assert crossfit.main([str(tmp_path), "--out", str(tmp_path / "cf")]) == 2
    assert "give the run's own flags" in capsys.readouterr().err
    assert crossfit.main([str(tmp_path), "--out", str(tmp_path / "cf"), "--folds", "1", "--", "--x"]) == 2
    assert "--folds must be at least 2" in capsys.readouterr().err
