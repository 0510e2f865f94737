"""What a one-shot `selfrag ask` process costs beyond its answer: process wall time beside the engine's own.

Starts the loopback server (selfrag.testing.fake_server, its own process, a fixed latency L per chat call) and
runs `python -m selfrag ask ... --json` as a user would, one process per question: the first with a fresh cache
folder ($SELFRAG_HOME, so the endpoint is probed), then later ones sharing it (the capabilities remembered).
Per process it prints the process wall time, the answer's own wall time (`usage.wall_time`, from the first
search to the answer), their difference (interpreter start, imports, index load, the identity check or the
probe, printing), the requests the server saw (chat calls, probe calls among them, GETs), and the sequential
rounds per step counting every request the server saw (requests starting within L/2 of a round's first join it).

    python benchmarks/process_overhead.py --latencies 0.5 1 --later 2
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

from overhead import TOPICS, ServerProcess, corpus, rounds

from selfrag.retrieval.index import Index


class Server(ServerProcess):
    """The fake server in its own process, closed by `close()`."""

    def close(self) -> None:
        self.__exit__()


def ask(index: Path, server: Server, home: Path, question: str, extra: list[str]) -> tuple[float, dict]:
    env = {**os.environ, "SELFRAG_HOME": str(home)}
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SELFRAG_API_KEY", "SELFRAG_CONFIG"):
        env.pop(name, None)
    argv = [sys.executable, "-m", "selfrag", "ask", question, "--index", str(index), "--base-url", server.base_url,
            "--model", "fake-model", "--json", *extra]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"selfrag ask failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return wall, json.loads(done.stdout)


def import_floor() -> float:
    """The wall time of a process that only starts Python and imports the command line (no index, no call)."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "import selfrag.cli"], check=True)
    return time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latencies", type=float, nargs="+", default=[0.5, 1.0], help="seconds per chat call (L)")
    parser.add_argument("--later", type=int, default=2, help="processes after the first, sharing its cache")
    parser.add_argument("--final-after", type=int, default=3, help="sentences before the server says final")
    parser.add_argument("ask_args", nargs="*", help="extra `selfrag ask` flags, after --")
    args = parser.parse_args(argv)

    rows = []
    with tempfile.TemporaryDirectory(prefix="selfrag-process-") as work:
        index = Path(work) / "index"
        Index.build(corpus()).save(index)
        floor = import_floor()
        for latency in args.latencies:
            home = Path(work) / f"home-{latency:g}"  # fresh per latency: its first process probes
            server = Server(latency, args.final_after)
            try:
                for number in range(1 + args.later):
                    before = server.stats()
                    question = f"How many days does the {TOPICS[number % len(TOPICS)]} rule take?"
                    wall, result = ask(index, server, home, question, args.ask_args)
                    after = server.stats()
                    spans = after["spans"][len(before["spans"]) :]
                    gets = after["get_starts"][len(before["get_starts"]) :]
                    starts = [(start, 0.0) for start, _, _ in spans] + [(start, 0.0) for start in gets]
                    usage = result["usage"]
                    rows.append({
                        "L": latency, "run": "first" if number == 0 else f"later {number}", "process": wall,
                        "engine": usage["wall_time"], "chat": len(spans), "probes": after["probes"] - before["probes"],
                        "gets": len(gets), "rounds": rounds(starts, latency / 2), "steps": usage["steps"],
                    })  # fmt: skip
            finally:
                server.close()
    print(f"# process overhead: one `selfrag ask` process per question, loopback server in its own process, "
          f"python {sys.version.split()[0]}, {os.cpu_count()} cores; python + `import selfrag.cli` alone: "
          f"{floor:.2f} s")  # fmt: skip
    print("| L s | run | process wall s | answer wall s | process - answer s | chat requests | probe calls "
          "| GETs | rounds (all requests) | steps | rounds/step |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['L']:g} | {r['run']} | {r['process']:.2f} | {r['engine']:.2f} | {r['process'] - r['engine']:.2f} "
              f"| {r['chat']} | {r['probes']} | {r['gets']} | {r['rounds']} | {r['steps']} "
              f"| {r['rounds'] / max(r['steps'], 1):.2f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
