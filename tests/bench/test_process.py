"""benchmarks/run.py in a subprocess against the loopback fake server: SIGKILL mid-run, resume, exit codes;
an endpoint that dies (all 500, or hangs mid-run), Ctrl-C, and two processes on one run folder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from helpers import SHIPPED_WEIGHTS, default_ctrl_c

from selfrag.bench.samples import read_samples
from selfrag.cli import bench
from selfrag.engine.fitted import place
from selfrag.testing.fake_server import FakeOpenAIServer

from .fixtures import many_hotpot_questions, write_hotpot

ROOT = Path(__file__).resolve().parents[2]


def command(tmp_path, server, out, *extra):
    return [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--dataset", "hotpotqa_smoke",
            "--data", str(tmp_path / "data"), "--system", "no-retrieval", "--base-url", server.base_url,
            "--model", "fake-model", "--out", str(out), "--cache", str(tmp_path / "cache.sqlite3"),
            "--no-progress", *extra]  # fmt: skip


def environment(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SELFRAG_", "OPENAI_"))}
    return {**env, "SELFRAG_HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config")}


def in_process(argv: list[str]) -> int:
    """`selfrag bench ...` in this process (what benchmarks/run.py does, without the interpreter start-up)."""
    import argparse

    parser = argparse.ArgumentParser()
    bench.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["bench", *argv])
    return int(args.run(args))


def samples(folder: Path) -> list[dict]:
    files = list(folder.glob("hotpotqa_smoke/no-retrieval/*/samples.jsonl"))
    return [json.loads(line) for line in files[0].read_text().splitlines()] if files else []


def run_folder(folder: Path) -> Path:
    (found,) = folder.glob("hotpotqa_smoke/no-retrieval/*")
    return found


def results(folder: Path) -> dict:
    return json.loads((run_folder(folder) / "results.json").read_text())


def answers_sent(server, since: int) -> int:
    """Chat requests after the first `since` that were answer calls, not capability probes (max_tokens 1 or 16)."""
    return sum(1 for body in server.stats.bodies[since:] if body.get("max_tokens") not in (1, 16))


def wait_for(condition, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def test_a_killed_run_resumes_without_counting_anything_twice(tmp_path):
    write_hotpot(tmp_path / "data")
    env, out = environment(tmp_path), tmp_path / "runs"
    with FakeOpenAIServer(latency=0.15) as server:
        process = subprocess.Popen(command(tmp_path, server, out), cwd=ROOT, env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        deadline = time.monotonic() + 30
        while len(samples(out)) < 2 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        assert process.returncode == -signal.SIGKILL
        before = len(samples(out))
        assert 2 <= before < 6
        sent = server.stats.requests
        resumed = subprocess.run(command(tmp_path, server, out, "--resume"), cwd=ROOT, env=env, capture_output=True,
                                 text=True, timeout=60)  # fmt: skip
        assert resumed.returncode == 0, resumed.stderr
        answers = [b for b in server.stats.bodies[sent:] if b.get("max_tokens") not in (1, 16)]  # probes: 1 or 16
        assert len(answers) <= 6 - before  # only unfinished questions are asked again (one may hit the cache)
        records = samples(out)
        assert sorted(r["id"] for r in records) == sorted({r["id"] for r in records}) and len(records) == 6
        assert "| no-retrieval | 6 | 0 |" in resumed.stdout

        whole_argv = command(tmp_path, server, tmp_path / "whole")[2:]
        assert in_process(["run", *whole_argv]) == 0
        results = [json.loads(next(d.glob("hotpotqa_smoke/no-retrieval/*/results.json")).read_text()) for d in
                   (out, tmp_path / "whole")]  # fmt: skip
        timing = ("wall_time", "model_seconds")
        a, b = ({k: v for k, v in r["summary"]["metrics"].items() if k not in timing} for r in results)
        assert a == b
        assert results[1]["summary"]["cache_hits"] == 6  # the uninterrupted rerun was answered from the cache
        assert in_process(["score", str(next(out.glob("hotpotqa_smoke/no-retrieval/*"))), "--check"]) == 0


def test_exit_codes_for_usage_errors_and_an_unreachable_endpoint(tmp_path, monkeypatch):
    write_hotpot(tmp_path / "data")
    for name, value in environment(tmp_path).items():
        monkeypatch.setenv(name, value)
    with FakeOpenAIServer() as server:
        argv = command(tmp_path, server, tmp_path / "runs")[2:]
    assert in_process(["run", *argv, "--system", "nonsense"]) == 2
    assert in_process(["run", *argv[:3], str(tmp_path / "nowhere"), *argv[4:]]) == 2
    assert in_process(["run", *argv, "--timeout", "1"]) == 1  # the server is gone


# The runner aborts after 10 endpoint-level failures in a row (RunOptions.max_consecutive_failures); the
# endpoint's breaker opens after 8 (breaker_threshold). SELFRAG_MAX_RETRIES=0 keeps one request per call.
STREAK, BREAKER = 10, 8


def test_an_endpoint_failing_every_call_aborts_the_run_within_bounds_and_resume_finishes_it(tmp_path):
    write_hotpot(tmp_path / "data", many_hotpot_questions(2))  # 12 questions: more than the abort streak
    env, out = {**environment(tmp_path), "SELFRAG_MAX_RETRIES": "0"}, tmp_path / "runs"
    with FakeOpenAIServer(fault="500") as server:
        started = time.monotonic()
        dead = subprocess.run(command(tmp_path, server, out, "--timeout", "2"), cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        elapsed, sent = time.monotonic() - started, server.stats.requests
        assert dead.returncode == 1, dead.stderr
        assert elapsed < 20
        report = results(out)
        assert report["status"] == "aborted" and f"{STREAK} questions in a row failed" in report["message"]
        assert "Traceback" not in dead.stderr
        records = samples(out)
        assert len(records) == STREAK and {r["status"] for r in records} == {"failed"}  # the rest never started
        per_question = [r["usage"]["requests_sent"] for r in records]
        assert sum(per_question) == BREAKER and per_question[BREAKER:] == [0] * (STREAK - BREAKER)  # breaker open
        # every request the server saw: the probe's (its GETs for the server's identity and slots too), the questions'
        assert sent + len(server.stats.gets) == report["endpoint"]["probe_requests"] + BREAKER

        server.fault = None  # the endpoint comes back
        resumed = subprocess.run(command(tmp_path, server, out, "--resume"), cwd=ROOT, env=env,
                                 capture_output=True, text=True, timeout=60)  # fmt: skip
    # questions that failed at the endpoint say nothing about themselves: a plain --resume asks them again
    # along with the two never started, and the run completes with no failure
    assert resumed.returncode == 0, resumed.stderr
    assert answers_sent(server, sent) == 12
    final, _ = read_samples(run_folder(out) / "samples.jsonl", repair=False)
    assert len(final) == 12 and {r["status"] for r in final.values()} == {"ok"}
    assert results(out)["status"] == "complete" and results(out)["summary"]["failed"] == 0


def test_an_endpoint_that_hangs_mid_run_aborts_it_and_resume_completes(tmp_path):
    write_hotpot(tmp_path / "data", many_hotpot_questions(3))  # 18 questions
    env, out = {**environment(tmp_path), "SELFRAG_MAX_RETRIES": "0"}, tmp_path / "runs"
    with FakeOpenAIServer(latency=0.05) as server:
        process = subprocess.Popen(command(tmp_path, server, out, "--timeout", "0.3"), cwd=ROOT, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        wait_for(lambda: len(samples(out)) >= 2 or process.poll() is not None)
        server.fault, hung_at, before = "hang", time.monotonic(), server.stats.requests
        _, err = process.communicate(timeout=60)
        assert process.returncode == 1, err
        assert time.monotonic() - hung_at < 15  # per-request timeout x breaker threshold, not 18 x anything
        assert server.stats.requests - before <= BREAKER + 1  # + the call that may have been in flight
        assert server.stats.abandoned >= BREAKER - 1  # the client hung up on each stuck call
        report, records = results(out), samples(out)
        assert report["status"] == "aborted" and f"{STREAK} questions in a row failed" in report["message"]
        assert [r["status"] for r in records[-STREAK:]] == ["failed"] * STREAK
        assert "did not answer in time" in records[-STREAK]["error"]  # timed out, until the breaker opened
        done_before = sum(r["status"] == "ok" for r in records)
        assert 2 <= done_before and len(records) == done_before + STREAK < 18

        server.fault, sent = None, server.stats.requests
        resumed = subprocess.run(command(tmp_path, server, out, "--resume"), cwd=ROOT, env=env,
                                 capture_output=True, text=True, timeout=60)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert answers_sent(server, sent) == 18 - done_before  # no finished question is asked again
    lines = samples(out)
    ok_ids = [r["id"] for r in lines if r["status"] == "ok"]
    assert len(ok_ids) == len(set(ok_ids)) == 18  # each question answered once; failed lines are superseded
    final, _ = read_samples(run_folder(out) / "samples.jsonl", repair=False)
    assert len(final) == 18 and {r["status"] for r in final.values()} == {"ok"}
    assert results(out)["status"] == "complete" and results(out)["summary"]["failed"] == 0


def test_ctrl_c_stops_the_run_with_whole_lines_and_resume_finishes_it(tmp_path):
    write_hotpot(tmp_path / "data", many_hotpot_questions(3))  # 18: the signal lands well before the end
    env, out = environment(tmp_path), tmp_path / "runs"
    with FakeOpenAIServer(latency=0.3) as server:
        process = subprocess.Popen(command(tmp_path, server, out), cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, preexec_fn=default_ctrl_c)  # fmt: skip
        wait_for(lambda: (len(samples(out)) >= 2 and server.stats.in_flight >= 1) or process.poll() is not None)
        process.send_signal(signal.SIGINT)  # the question in flight is cancelled
        _, err = process.communicate(timeout=20)
        assert process.returncode == 1, err
        assert "Traceback" not in err and "(interrupted)" in err
        report = results(out)
        assert report["status"] == "interrupted" and "--resume" in report["message"]
        data = (run_folder(out) / "samples.jsonl").read_bytes()
        assert data.endswith(b"\n")  # no torn line
        before = len(samples(out))
        assert 2 <= before < 18
        assert report["summary"]["n"] == before  # what was written is what was counted
        sent = server.stats.requests
        resumed = subprocess.run(command(tmp_path, server, out, "--resume"), cwd=ROOT, env=env,
                                 capture_output=True, text=True, timeout=60)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert "repaired" not in resumed.stderr
    assert answers_sent(server, sent) == 18 - before
    ids = [r["id"] for r in samples(out)]
    assert len(ids) == len(set(ids)) == 18
    assert results(out)["status"] == "complete"


def test_a_second_process_on_the_same_run_folder_is_refused_and_the_first_completes(tmp_path):
    write_hotpot(tmp_path / "data")
    env, out = environment(tmp_path), tmp_path / "runs"
    with FakeOpenAIServer(latency=0.05) as server:
        first = subprocess.Popen(command(tmp_path, server, out), cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)  # fmt: skip
        wait_for(lambda: len(samples(out)) >= 1 or first.poll() is not None)
        server.latency = 4  # the first process now waits on its next answer, holding the folder
        second = subprocess.run(command(tmp_path, server, out, "--resume"), cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=60)  # fmt: skip
        server.latency = 0.05
        assert first.poll() is None  # the refusal came while the first was still running
        _, first_err = first.communicate(timeout=60)
    assert second.returncode == 1
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and f"is in use by pid {first.pid}" in lines[0] and "Traceback" not in lines[0]
    assert second.stdout == ""
    assert first.returncode == 0, first_err
    ids = [r["id"] for r in samples(out)]
    assert len(ids) == len(set(ids)) == 6
    assert results(out)["status"] == "complete"


def test_a_run_at_an_endpoint_rates_with_the_weights_calibrated_or_named_for_its_model(tmp_path, monkeypatch):
    """As `selfrag ask` does: scorer auto (the benchmarks' default is the paper's) takes weights named by
    --scorer-weights, or those `selfrag calibrate` left for this endpoint and model, and is the paper's without."""
    write_hotpot(tmp_path / "data")
    monkeypatch.setenv("SELFRAG_HOME", str(tmp_path / "home"))
    with FakeOpenAIServer() as server:

        def scorer(run: str, *extra: str) -> tuple[str, str | None]:
            argv = command(tmp_path, server, tmp_path / run, "--limit", "1", "--scorer", "auto", *extra)[2:]
            argv[argv.index("no-retrieval")] = "selfrag"
            assert in_process(["run", *argv]) == 0
            (folder,) = (tmp_path / run).glob("hotpotqa_smoke/*/*")
            config = json.loads((folder / "config.json").read_text())["system"]["config"]
            return config["scorer"], config["scorer_weights"]

        assert scorer("none") == ("paper", None)
        assert scorer("named", "--scorer-weights", SHIPPED_WEIGHTS) == ("evidence", SHIPPED_WEIGHTS)
        calibrated = place(dict(os.environ), server.base_url, "fake-model", "fake-model")
        calibrated.parent.mkdir(parents=True)
        calibrated.write_bytes(Path(SHIPPED_WEIGHTS).read_bytes())
        assert scorer("calibrated") == ("evidence", str(calibrated))
        assert scorer("told", "--scorer", "paper")[0] == "paper"
