"""How fast is the embedded model on a step's candidates, and on the README's first answer?

Indexes the sample corpus (examples/corpus) into a temporary folder, loads the embedded model (its weights chosen
first, outside the timings, as a first run would have: the shipped Q4_1 file and its F16 copy timed on this CPU
and the faster kept; the `weights:` line says which was served and why), then:

1. first answer: the README question with `--ndocs 3 --max-depth 3`, timed from building the engine to the
   result (capability probe included); its quality fields are printed (answer, labels, stop reason, failures).
2. one step's candidates: the engine answers the same question with ndocs 5 and max depth 1, and its five
   `generate_fused` requests are recorded; they are then sent again, each alone (one after another), then all
   five at once as the engine sends a step, `--repeat` times. round_ratio is the round's time over the mean
   time of one call alone: 5 means the five calls cost five single calls, 1 means they cost one. (The mean, not
   the first call: the five candidates write replies of different lengths.)

3. where the round's time went: per decoded pass, the prompt tokens read from the kept prefix of the previous
   round and those evaluated, the seconds evaluating them, the decoding steps and their seconds, and the tokens
   guessed (from the reply's schema and by prompt lookup) with how many of them the model wrote.

`--short-replies` runs everything with the engine's short_replies option (capped free-text fields), `--weights
q4_1`, `f16` or `bf16` serves that kind untimed ($SELFRAG_WEIGHTS; BF16 changes what the model writes, as
`--short-replies` does, so compare the quality lines too).

The last line is exactly `round_ratio=R first_answer_s=T`. Run it alone on the machine (the model is
CPU-bound), with the machine-wide lock where several people share it:

    flock /tmp/selfrag-model.lock python benchmarks/local_speed.py --threads 1
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from selfrag import Config, Mode, Result, SelfRAG
from selfrag.llm.base import Capabilities, ChatModel, ChatRequest, ChatResponse
from selfrag.llm.local import embedded_chat, served
from selfrag.retrieval.ingest import index_paths
from selfrag.schema import Meter

QUESTION = "What is the late fee for a bike returned after 24 hours, and how many days do I have to dispute a charge?"
NONCE_SEED = "local-speed"  # fixed document delimiters: the same prompts, so the same replies, run after run
CORPUS = Path(__file__).resolve().parent.parent / "examples" / "corpus"


class Recording:
    """A ChatModel that passes every call through and keeps the requests of one prompt."""

    def __init__(self, inner: ChatModel, prompt: str) -> None:
        self.inner, self.prompt, self.requests = inner, prompt, []

    @property
    def name(self) -> str:
        return self.inner.name

    async def capabilities(self, meter: Meter) -> Capabilities:
        return await self.inner.capabilities(meter)

    async def chat(self, request: ChatRequest, meter: Meter) -> ChatResponse:
        if request.prompt == self.prompt:
            self.requests.append(request)
        return await self.inner.chat(request, meter)


def quality(result: Result) -> list[str]:
    """The answer's fields whose kind must not change: text, labels per sentence, stop reason, failures."""
    usage = result.usage
    lines = [f"answer: {result.answer!r}", f"stop_reason: {result.stop_reason}  confidence: {result.confidence}"]
    for segment in result.segments:
        critique = segment.critique
        labels = (
            f"relevance={critique.relevance} support={critique.support} utility={critique.utility} "
            f"is_final={critique.is_final}"
            if critique
            else "no critique"
        )
        lines.append(f"segment [{segment.citation}] {segment.chunk}: {labels}: {segment.text!r}")
    lines.append(
        f"llm_calls={usage.llm_calls} rounds={usage.rounds} failed_calls={usage.failed_calls} "
        f"parse_failures={usage.parse_failures} reasks={usage.reasks} "
        f"completion_tokens={usage.completion_tokens}"
    )
    return lines


async def timed_round(chat: ChatModel, requests: list[ChatRequest]) -> tuple[float, list[ChatResponse]]:
    meter = Meter()
    start = time.perf_counter()
    replies = await asyncio.gather(*(chat.chat(request, meter) for request in requests))
    return time.perf_counter() - start, list(replies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads (default 1)")
    parser.add_argument("--repeat", type=int, default=1, help="timings of the calls alone and of the round")
    parser.add_argument("--candidates", type=int, default=5, help="candidates in the timed round (default 5)")
    parser.add_argument("--short-replies", action="store_true", help="the engine's short_replies option")
    parser.add_argument(
        "--weights",
        choices=["auto", "q4_1", "f16", "bf16"],
        default="auto",
        help="the embedded model's weights (default auto: the faster of q4_1 and f16, timed on this CPU)",
    )
    args = parser.parse_args()
    os.environ["SELFRAG_THREADS"] = str(args.threads)
    os.environ["SELFRAG_WEIGHTS"] = args.weights
    short = {"short_replies": True} if args.short_replies else {}

    with tempfile.TemporaryDirectory(prefix="selfrag-speed-") as folder:
        index = Path(folder) / "index"
        index_paths([CORPUS], index)
        environ = {**os.environ, "SELFRAG_HOME": str(Path(folder) / "home")}
        embedded_chat(environ=environ)  # chooses the weights and loads them (a first run's one-off)
        server = served()
        assert server is not None
        print(f"model: {server.describe()}")
        print(f"weights: {server.weights.describe() if server.weights else 'the shipped file (upcast off)'}")

        start = time.perf_counter()
        # the README command as a user runs it: on the embedded model the default scorer (auto) is the fitted one
        first = Config(ndocs=3, max_depth=3, nonce_seed=NONCE_SEED, scorer="evidence", **short)
        with SelfRAG.from_index(index, first, chat=embedded_chat(environ=environ)) as rag:
            result = rag.answer(QUESTION)
        first_answer = time.perf_counter() - start
        print(f"first answer (--ndocs 3 --max-depth 3): {first_answer:.2f} s")
        print("\n".join("  " + line for line in quality(result)))

        recording = Recording(embedded_chat(environ=environ), "generate_fused")
        config = Config(ndocs=args.candidates, max_depth=1, mode=Mode.ALWAYS, nonce_seed=NONCE_SEED, **short)
        with SelfRAG.from_index(index, config, chat=recording) as rag:
            rag.answer(QUESTION)
        requests = recording.requests[: args.candidates]
        if len(requests) < args.candidates:
            raise SystemExit(f"the step produced {len(requests)} candidate requests, not {args.candidates}")

        async def measure() -> tuple[list[float], list[float], list[ChatResponse], list[ChatResponse]]:
            chat = embedded_chat(environ=environ)
            await chat.capabilities(Meter())
            singles, rounds, alone, together = [], [], [], []
            for _ in range(args.repeat):
                alone = []
                for request in requests:
                    seconds, reply = await timed_round(chat, [request])
                    singles.append(seconds)
                    alone += reply
                seconds, together = await timed_round(chat, requests)
                rounds.append(seconds)
            return singles, rounds, alone, together

        gate = served().app  # type: ignore[union-attr]
        seen, seen_passes = len(getattr(gate, "batch_sizes", ())), len(getattr(gate, "pass_stats", ()))
        singles, rounds, alone, together = asyncio.run(measure())
        batches = getattr(gate, "batch_sizes", [])[seen:]
        passes = getattr(gate, "pass_stats", [])[seen_passes:]
    single, round_ = statistics.mean(singles), statistics.median(rounds)
    print(
        f"each candidate call alone: {', '.join(f'{s:.2f}' for s in singles)} s; mean {single:.2f} s, "
        f"one after another {sum(singles) / args.repeat:.2f} s; "
        f"completion tokens {[r.completion_tokens for r in alone]}"
    )
    print(
        f"the {len(requests)} calls at once (as the engine sends a step): {round_:.2f} s "
        f"(runs: {', '.join(f'{s:.2f}' for s in rounds)}); completion tokens {[r.completion_tokens for r in together]}"
    )
    print(f"requests per decoded batch during the timings: {batches or 'no batching (one request at a time)'}")
    for stats in [p for p in passes if p.sequences == len(requests)]:
        print(
            f"round of {stats.sequences}: prompt tokens read from the kept prefix {stats.reused} each, "
            f"evaluated {stats.evaluated} in {stats.prompt_s:.2f} s; {stats.steps} decoding steps in "
            f"{stats.steps_s:.2f} s ({1000 * stats.steps_s / max(stats.steps, 1):.0f} ms a step); "
            f"{stats.drafted} tokens guessed, {stats.accepted} of them written"
        )
    same = [a.text == b.text for a, b in zip(alone, together, strict=True)]
    print(f"same text alone and at once (temperature 0), per candidate: {same}")
    print(f"round_ratio={round_ / single:.2f} first_answer_s={first_answer:.1f}")


if __name__ == "__main__":
    main()
