"""How much wall time does the engine add on top of the model's latency?

Starts a loopback OpenAI-compatible server (selfrag.fake_server) that waits a fixed latency L before every
reply, answers a few questions with the real engine and the real AsyncOpenAI client over HTTP, and prints per
question: wall time, LLM calls, sequential rounds (counted by the engine and observed by the server), peak
requests in flight, and ratio = wall / (rounds x L). A ratio near 1 means every call of a round was in flight
together; rounds per step shows whether the next decision rides on the candidates (fused mode: 1 per step).

    python benchmarks/overhead.py --latency 0.2 --beam-width 4 --ndocs 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from functools import partial

from selfrag import Chunk, Config, EndpointConfig, SelfRAG
from selfrag.fake_server import FakeOpenAIServer, echo_responder
from selfrag.index import Index

TOPICS = ["refund", "shipping", "warranty", "battery", "screen", "keyboard", "invoice", "account", "login", "delivery"]


def corpus(n_docs: int = 60) -> list[Chunk]:
    chunks = []
    for i in range(n_docs):
        topic = TOPICS[i % len(TOPICS)]
        text = " ".join(f"The {topic} rule number {i}.{j} says step {j} takes {i + j} days." for j in range(4))
        chunks.append(Chunk(f"doc-{i:03d}", 0, text, title=f"{topic.title()} note {i}"))
    return chunks


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
    responder = partial(echo_responder, final_after=args.max_depth + 1)
    rows = []
    with FakeOpenAIServer(latency=args.latency, responder=responder) as server:
        config = Config(
            beam_width=args.beam_width,
            ndocs=args.ndocs,
            max_depth=args.max_depth,
            critic=args.critic,
            endpoint=EndpointConfig(base_url=server.base_url, model="fake-model", max_concurrency=64),
        )
        rag = SelfRAG(index, config, environ={})
        for q in range(args.questions):
            topic = TOPICS[q % len(TOPICS)]
            before_spans = len(server.stats.spans)
            server.stats.max_in_flight = 0
            started = time.monotonic()
            result = rag.answer(f"How many days does the {topic} rule take?")
            wall = time.monotonic() - started
            spans = server.stats.spans[before_spans:]
            observed = _rounds(spans, args.latency / 2)
            rows.append(
                (
                    q,
                    wall,
                    result.usage.llm_calls,
                    result.usage.rounds,
                    observed,
                    server.stats.max_in_flight,
                    result.usage.steps,
                    wall / (observed * args.latency),
                )
            )
    print(
        f"# overhead: latency L={args.latency}s, beam_width={args.beam_width}, ndocs={args.ndocs}, "
        f"max_depth={args.max_depth}, critic={args.critic}, python {sys.version.split()[0]}"
    )
    print(
        "| question | wall s | LLM calls | rounds (engine) | rounds (server) | peak in flight | steps "
        "| rounds/step | wall/(rounds x L) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for q, wall, calls, rounds, observed, peak, steps, ratio in rows:
        print(
            f"| {q} | {wall:.3f} | {calls} | {rounds} | {observed} | {peak} | {steps} "
            f"| {rounds / steps:.2f} | {ratio:.3f} |"
        )
    ratios = [row[-1] for row in rows]
    print(f"\nmedian wall/(rounds x L) = {statistics.median(ratios):.3f} (target <= 1.15)")
    return 0


def _rounds(spans: list[tuple[float, float, str]], gap: float) -> int:
    count, first = 0, None
    for start, _, _ in sorted(spans):
        if first is None or start - first > gap:
            count, first = count + 1, start
    return count


if __name__ == "__main__":
    sys.exit(main())
