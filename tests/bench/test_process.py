"""benchmarks/run.py in a subprocess against the loopback fake server: SIGKILL mid-run, resume, exit codes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from selfrag.cli import bench
from selfrag.fake_server import FakeOpenAIServer

from .fixtures import write_hotpot

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
