"""How much wall time does the engine add on top of the model's latency?

Starts a loopback OpenAI-compatible server (selfrag.testing.fake_server, in its own process, as a real endpoint would
be) that waits a fixed latency L before every reply, answers a few questions with the real engine and the real
AsyncOpenAI client over HTTP, and prints per question: wall time, LLM calls, sequential rounds (counted by the
engine and observed by the server), peak requests in flight, and ratio = wall / (rounds x L). A ratio near 1
means every call of a round was in flight together; rounds per step shows whether the next decision rides on
the candidates (fused mode: one round per step, plus the first decision).

    python benchmarks/overhead.py --latency 0.2 --beam-width 4 --ndocs 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from selfrag import Chunk, Config, EndpointConfig, SelfRAG
from selfrag.retrieval.index import Index

TOPICS = ["refund", "shipping", "warranty", "battery", "screen", "keyboard", "invoice", "account", "login", "delivery"]


def corpus(n_docs: int = 60) -> list[Chunk]:
    chunks = []
    for i in range(n_docs):
        topic = TOPICS[i % len(TOPICS)]
        text = " ".join(f"The {topic} rule number {i}.{j} says step {j} takes {i + j} days." for j in range(4))
        chunks.append(Chunk(f"doc-{i:03d}", 0, text, title=f"{topic.title()} note {i}"))
    return chunks


class ServerProcess:
    """`python -m selfrag.testing.fake_server` in a subprocess; `spans()` asks it for every request's (start, end)."""

    def __init__(self, latency: float, final_after: int) -> None:
        argv = [sys.executable, "-m", "selfrag.testing.fake_server", "--latency", str(latency),
                "--final-after", str(final_after)]  # fmt: skip
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.process.stdin and self.process.stdout
        self.stdin, self.stdout = self.process.stdin, self.process.stdout
        self.base_url = self.stdout.readline().strip()

    def stats(self) -> dict:
        """Everything the server recorded so far."""
        self.stdin.write("stats\n")
        self.stdin.flush()
        return json.loads(self.stdout.readline())

    def spans(self) -> list[tuple[float, float]]:
        return [(start, end) for start, end, _ in self.stats()["spans"]]

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stdin.close()
        self.process.wait(10)


def rounds(spans: list[tuple[float, float]], gap: float) -> int:
    """Requests starting within `gap` of a round's first request belong to that round."""
    count, first = 0, None
    for start, _ in sorted(spans):
        if first is None or start - first > gap:
            count, first = count + 1, start
    return count


def peak_in_flight(spans: list[tuple[float, float]]) -> int:
    return max(sum(1 for s, e in spans if s <= start < e) for start, _ in spans)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the server waits per call (L)")
    parser.add_argument("--beam-width", type=int, default=4)
    parser.add_argument("--ndocs", type=int, default=5)
    parser.add_argument("--max-depth", type=int, default=4, help="sentences per answer (the server never ends early)")
    parser.add_argument("--critic", choices=["fused", "separate"], default="fused")
    parser.add_argument("--questions", type=int, default=3)
    args = parser.parse_args(argv)

    index = Index.build(corpus())
    rows = []
    with ServerProcess(args.latency, args.max_depth + 1) as server:
        endpoint = EndpointConfig(base_url=server.base_url, model="fake-model", max_concurrency=64)
        config = Config(beam_width=args.beam_width, ndocs=args.ndocs, max_depth=args.max_depth, critic=args.critic,
                        endpoint=endpoint)  # fmt: skip
        with SelfRAG(index, config, environ={}) as rag:
            for q in range(args.questions):
                seen = len(server.spans())
                started = time.monotonic()
                result = rag.answer(f"How many days does the {TOPICS[q % len(TOPICS)]} rule take?")
                wall = time.monotonic() - started
                spans = server.spans()[seen:]
                observed = rounds(spans, args.latency / 2)
                rows.append((q, wall, result.usage.llm_calls, result.usage.rounds, observed, peak_in_flight(spans),
                             result.usage.steps, wall / (observed * args.latency)))  # fmt: skip
    print(f"# overhead: latency L={args.latency}s, beam_width={args.beam_width}, ndocs={args.ndocs}, "
          f"max_depth={args.max_depth}, critic={args.critic}, python {sys.version.split()[0]}")  # fmt: skip
    print("| question | wall s | LLM calls | rounds (engine) | rounds (server) | peak in flight | steps "
          "| rounds/step | wall/(rounds x L) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for q, wall, calls, engine_rounds, observed, peak, steps, ratio in rows:
        print(f"| {q} | {wall:.3f} | {calls} | {engine_rounds} | {observed} | {peak} | {steps} "
              f"| {engine_rounds / steps:.2f} | {ratio:.3f} |")  # fmt: skip
    ratios = [row[-1] for row in rows]
    print(f"\nmedian wall/(rounds x L) = {statistics.median(ratios):.3f} (target <= 1.15); question 0 includes "
          "the one-time capability probe")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
