"""Does the fan-out fit a server that serves few calls at once?

Starts the loopback server in its llama.cpp-like mode (`--slots N` calls served at once, the rest queued, each
call `--latency` seconds), runs `selfrag ask --json` against it in a subprocess with a short request timeout,
and prints per run: exit code, wall time, the requests the server saw, the engine's own count, the requests that
gave up while queued (timed out, so the SDK sent them again), and what the engine learned about the server. Runs
once with the slot count reported at /props and once with a nonsense count (0), so it is learned from latency.

    python benchmarks/slots.py [--slots 1] [--latency 1] [--timeout 3] [--ndocs 5]
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

from selfrag.testing.fake_server import FakeOpenAIServer

QUESTION = "How many days for refunds?"
DOCS = {
    "refunds.md": "Refunds are accepted within 30 days of purchase. A receipt is required for refunds.",
    "members.md": "Members get free express shipping and 60 days for refunds.",
    "returns.md": "Returned items must be unused. Refunds for returns go to the original card.",
    "sales.md": "Sale items can be refunded within 14 days. Refunds on sale items need a receipt.",
    "gifts.md": "Gift cards are not refunded. Refunds for gifts go to the giver within 30 days.",
    "shipping.md": "Refunds do not cover shipping costs. Shipping refunds take 5 days.",
}


def run(index: Path, args: argparse.Namespace, reported: object) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SELFRAG_"))}
    with FakeOpenAIServer(slots=args.slots, reported_slots=reported, latency=args.latency) as server:
        argv = [sys.executable, "-m", "selfrag", "ask", QUESTION, "--index", str(index), "--base-url"]
        argv += [server.base_url, "--json", "--timeout", str(args.timeout), "--ndocs", str(args.ndocs)]
        started = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)
        wall = time.monotonic() - started
        stats = server.stats
    result = json.loads(done.stdout) if done.returncode == 0 else {}
    capabilities = result.get("trace", {}).get("capabilities", {})
    return {
        "reported": reported,
        "exit": done.returncode,
        "wall s": round(wall, 1),
        "server requests": len(stats.authorizations),
        "engine calls": result.get("usage", {}).get("llm_calls"),
        "timed out in queue": stats.abandoned,
        "peak in flight": stats.max_in_flight,
        "calls at once": capabilities.get("parallel"),
        "why": str(capabilities.get("parallel_reason", done.stderr.strip()[-160:]))[:160],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slots", type=int, default=1, help="calls the server serves at once")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per call")
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds per HTTP request")
    parser.add_argument("--ndocs", type=int, default=5, help="chunks per step = candidates per step")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        index = index_of(Path(tmp), DOCS)
        rows = [run(index, args, reported) for reported in (args.slots, 0)]
    print_table(
        f"slots: {args.slots} at once, {args.latency}s per call, timeout {args.timeout}s, ndocs {args.ndocs}", rows
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
