"""The conversation-memory experiment: what reaches a follow-up question's prompt as a conversation grows.

A long conversation is scripted from HaluEval QA pairs (question, right answer, hallucinated answer), seeded:
interleaved topics (each pair is one fact), facts repeated later word for word, and facts first answered
wrongly (the hallucinated answer) and corrected later by the same question asked again. Every few turns comes
a follow-up about a fact told at least `--gap` turns earlier, worded with only some of the fact question's
words ("About Oberoi hotel head office: what was the answer again?").

Three memories are compared at the same prompt budget (the 4,000 characters the engine takes):
- `none`: no conversation in the prompt;
- `last-n`: the chat's old window, the most recent whole turns that fit (conversation.Conversation.render);
- `managed`: selfrag.memory (topics, collapsed repeats, eviction by worth, recall reranked against the
  question), with its default store budget and with a small one (`--small-budget` characters) that forces
  evictions.

Measured per conversation-length bucket, for the follow-ups in it: `found` = the fact's current answer is in
the conversation text the prompt would carry (case-insensitive substring), `stale` = for corrected facts, the
old wrong answer is in it, plus the characters in the prompt and in the store. No model runs: this measures
what the memory hands the model, not the answers a model writes from it (a short answer such as "Delhi" can
also occur in an unrelated turn, which counts as found).

    python benchmarks/memory.py --turns 400 --seed 0 [--json out.json] [--plot memory.png]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from selfrag.conversation import MAX_HISTORY_CHARS, Conversation
from selfrag.memory import Budget, Memory, MemoryTurn, noted, recall, remember, render

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "halueval_qa" / "qa.jsonl"
STOP = set("a an and are as at be by did do does for from has have how in is it its of on or the to was were what "
           "when where which who whom whose why with".split())  # fmt: skip


@dataclass(frozen=True)
class Fact:
    question: str
    right: str
    wrong: str


@dataclass(frozen=True)
class Step:
    kind: str  # say | probe
    question: str
    answer: str = ""
    fact: int = -1
    stale: bool = False  # a `say` giving the wrong answer (corrected later)


def load(path: Path, n: int, seed: int) -> list[Fact]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    picked = random.Random(seed).sample(rows, n)
    return [Fact(r["question"], r["right_answer"], r["hallucinated_answer"]) for r in picked]


def script(facts: list[Fact], turns: int, gap: int, seed: int) -> list[Step]:
    """The conversation: new facts, repeats, corrections and follow-ups, interleaved (module docstring)."""
    rng = random.Random(seed + 1)
    steps: list[Step] = []
    told: dict[int, int] = {}  # fact -> step it was last told right
    wrong: dict[int, int] = {}  # fact -> step it was told wrongly, not yet corrected
    unused = list(range(len(facts)))
    while len(steps) < turns:
        roll, at = rng.random(), len(steps)
        old = [f for f, t in told.items() if at - t >= gap]
        if roll < 0.15 and old:
            f = rng.choice(old)
            words = [w for w in re.findall(r"\w+", facts[f].question) if w.lower() not in STOP]
            kept = rng.sample(words, min(len(words), max(2, len(words) // 2)))
            steps.append(Step("probe", f"About {' '.join(kept)}: what was the answer again?", fact=f))
        elif roll < 0.25 and wrong:
            f = rng.choice(sorted(wrong))
            del wrong[f]
            steps.append(Step("say", facts[f].question, facts[f].right, f))
            told[f] = at
        elif roll < 0.35 and told:
            f = rng.choice(sorted(told))
            steps.append(Step("say", facts[f].question, facts[f].right, f))
        elif unused:
            f = unused.pop(rng.randrange(len(unused)))
            if rng.random() < 0.2:
                steps.append(Step("say", facts[f].question, facts[f].wrong, f, stale=True))
                wrong[f] = at
            else:
                steps.append(Step("say", facts[f].question, facts[f].right, f))
                told[f] = at
        else:
            break
    return steps


def run(steps: list[Step], facts: list[Fact], small: int, buckets: list[int]) -> list[dict[str, object]]:
    budgets = {"managed": Budget(), f"managed-{small // 1000}k": Budget(max_chars=small)}
    memories = dict.fromkeys(budgets, Memory())
    window = Conversation()
    corrected = {s.fact for s in steps if s.stale}
    rows: dict[tuple[str, int], dict[str, float]] = {}
    for at, step in enumerate(steps):
        if step.kind == "say":
            window = window.add(step.question, step.answer)
            for name, budget in budgets.items():
                memories[name] = remember(memories[name], MemoryTurn(step.question, step.answer), budget)
            continue
        bucket = next(b for b in buckets if at < b)
        fact = facts[step.fact]
        contexts = {"none": "", "last-n": window.render(MAX_HISTORY_CHARS)}
        for name, budget in budgets.items():
            recalled = recall(memories[name], step.question, budget)
            memories[name] = noted(memories[name], recalled)
            contexts[name] = render(recalled, budget.recall_chars)
        for name, text in contexts.items():
            row = rows.setdefault((name, bucket), {"probes": 0, "found": 0, "corrected": 0, "stale": 0, "chars": 0})
            lowered = text.lower()
            row["probes"] += 1
            row["found"] += fact.right.lower() in lowered
            row["chars"] += len(text)
            if step.fact in corrected:
                row["corrected"] += 1
                row["stale"] += fact.wrong.lower() in lowered
            stored = {"none": 0, "last-n": sum(len(t.question) + len(t.answer) for t in window.turns)}
            row["stored"] = stored.get(name, memories[name].size if name in memories else 0)
    out = []
    for (name, bucket), row in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        n = row["probes"]
        out.append({
            "memory": name, "turns_up_to": bucket, "follow_ups": int(n),
            "found": round(100 * row["found"] / n, 1),
            "stale": round(100 * row["stale"] / row["corrected"], 1) if row["corrected"] else None,
            "corrected_follow_ups": int(row["corrected"]),
            "prompt_chars": round(row["chars"] / n), "stored_chars": int(row["stored"]),
        })  # fmt: skip
    return out


def table(rows: list[dict[str, object]]) -> str:
    lines = [
        "| turns up to | memory | follow-ups | found % | stale % (corrected facts) | prompt chars | stored chars |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        stale = "–" if r["stale"] is None else f"{r['stale']} (n={r['corrected_follow_ups']})"
        lines.append(
            f"| {r['turns_up_to']} | {r['memory']} | {r['follow_ups']} | {r['found']} | {stale} | "
            f"{r['prompt_chars']} | {r['stored_chars']} |"
        )
    return "\n".join(lines)


def plot(rows: list[dict[str, object]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name in dict.fromkeys(str(r["memory"]) for r in rows):
        mine = [r for r in rows if r["memory"] == name]
        ax.plot([r["turns_up_to"] for r in mine], [r["found"] for r in mine], marker="o", label=name)
    ax.set_xlabel("conversation length (turns, bucket end)")
    ax.set_ylabel("follow-ups with the current answer in the prompt (%)")
    ax.set_ylim(0, 100)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="HaluEval qa.jsonl")
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument(
        "--gap", type=int, default=10, help="a follow-up asks about a fact at least this many turns old"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--small-budget", type=int, default=20_000, help="characters of the small managed store")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--plot", type=Path)
    args = parser.parse_args(argv)
    facts = load(args.data, args.turns, args.seed)
    steps = script(facts, args.turns, args.gap, args.seed)
    buckets = sorted({min(b, args.turns) for b in (50, 100, 200, 400, 800, 1600)} | {args.turns})
    rows = run(steps, facts, args.small_budget, buckets)
    says = [s for s in steps if s.kind == "say"]
    print(
        f"{len(steps)} turns: {len(says)} told ({sum(s.stale for s in says)} wrong, corrected later or not), "
        f"{len(steps) - len(says)} follow-ups; seed {args.seed}",
        file=sys.stderr,
    )
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    if args.plot:
        plot(rows, args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
