"""How the command line behaves when the endpoint misbehaves.

For each fault mode of the loopback fake server (selfrag.testing.fake_server.FAULTS), runs
`selfrag ask --json` in a subprocess against it and prints: exit code, whether an answer came back,
HTTP requests the server saw, the engine's own count, wall time, and the first line of stderr.

    python benchmarks/faults.py [--timeout 2] [--deadline 20]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _cli import index_of, print_table

from selfrag.testing.fake_server import FAULTS, FakeOpenAIServer

DOCS = {
    "refunds.md": "Refunds are accepted within 30 days of purchase. A receipt is required.",
    "members.md": "Members get free express shipping and 60 days for refunds.",
}


def run_fault(fault: str, index: Path, args: argparse.Namespace) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SELFRAG_"))}
    with FakeOpenAIServer(fault=fault) as server:
        argv = [
            sys.executable,
            "-m",
            "selfrag",
            "ask",
            "How many days for refunds?",
            "--index",
            str(index),
            "--base-url",
            server.base_url,
            "--json",
            "--timeout",
            str(args.timeout),
            "--deadline",
            str(args.deadline),
        ]
        started = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=args.deadline + 60)
        wall = time.monotonic() - started
        seen = len(server.stats.authorizations)
    answer, calls = "", None
    if done.returncode == 0:
        result = json.loads(done.stdout)
        answer, calls = result["answer"], result["usage"]["llm_calls"]
    err = (done.stderr.strip().splitlines() or [""])[-1]
    return {
        "fault": fault,
        "exit": done.returncode,
        "answered": bool(answer),
        "server requests": seen,
        "engine calls": calls,
        "wall s": round(wall, 2),
        "stderr": err.removeprefix("selfrag: error: ")[:220],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds per HTTP request")
    parser.add_argument("--deadline", type=float, default=20.0, help="seconds per answer")
    parser.add_argument("--only", nargs="*", help="fault modes to run (default: all)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        index = index_of(Path(tmp), DOCS)
        rows = [run_fault(fault, index, args) for fault in (args.only or ("none", *FAULTS))]
    print_table(f"faults: timeout {args.timeout}s per request, deadline {args.deadline}s per answer", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
