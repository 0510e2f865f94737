"""The memory-growth experiment: the same questions while the corpus grows with distractors.

For each corpus size (default 100, 1,000, 10,000 snippets of HaluEval's pool) the corpus holds the gold
snippet of every sampled question plus seeded random distractors; each system answers the same questions
through the ordinary runner (so each cell is a resumable, cached run folder). Reported per size and system:
correctness, the engine's critique-based confidence, and beside it a plain similarity-based confidence (the
top BM25 score over the question's idf mass, `samples.similarity_confidence`), plus coverage. A useful
confidence falls when correctness falls; the similarity score is shown to see whether it does the same.

With `stale` (a list of copy counts) each cell also adds that many conflicting near-duplicates of every gold
snippet (`Dataset.with_stale_copies`): the pile of stale, contradicting entries that makes a similarity-based
system more sure and less right. The plot's x axis is the copy count when more than one is given.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from ..llm.base import ChatModel
from .runner import EXIT_FAILURES, EXIT_INCOMPLETE, EXIT_OK, RunOptions, run_benchmark, write_atomic

SEVERITY = [EXIT_OK, EXIT_FAILURES, EXIT_INCOMPLETE]  # the worst cell decides the exit code
TRACKED = ("correct", "accuracy", "confidence", "similarity_confidence", "coverage", "llm_calls")


def run_growth(
    base: RunOptions,
    systems: list[str],
    sizes: list[int],
    *,
    stale: list[int] | None = None,
    chat: ChatModel | None = None,
) -> tuple[dict[str, Any], int]:
    folder = base.out / f"growth-{base.dataset}"
    cells, code = [], EXIT_OK
    for size, copies in [(size, copies) for size in sizes for copies in stale or [0]]:
        for system in systems:
            dated = "-dated" if copies and base.stale_dated else ""
            cell_dir = folder / (f"size-{size}" + (f"-stale-{copies}{dated}" if copies else ""))
            options = replace(base, system=system, corpus_size=size, stale_copies=copies, out=cell_dir, run_dir=None)
            report = run_benchmark(options, chat=chat)
            code = max(code, report.exit_code, key=SEVERITY.index)
            metrics = report.summary["metrics"]
            cells.append(
                {
                    "size": size,
                    "stale": copies,
                    "system": system,
                    "status": report.status,
                    "run_dir": str(report.run_dir),
                    "n": report.summary["n"],
                    "failed": report.summary["failed"],
                    **{name: metrics[name] for name in TRACKED if name in metrics},
                }
            )
    summary = {
        "dataset": base.dataset,
        "limit": base.limit,
        "seed": base.seed,
        "sizes": sizes,
        "stale": stale or [0],
        "axis": "stale" if len(stale or [0]) > 1 else "size",
        "cells": cells,
    }
    summary["table"] = growth_table(cells)
    name = "growth" if summary["axis"] == "size" else "stale"
    write_atomic(folder / f"{name}.json", json.dumps(summary, indent=2))
    write_atomic(folder / f"{name}.md", summary["table"] + "\n")
    try:
        from .plots import growth_plot

        growth_plot(summary, folder / f"{name}.png")
    except ImportError:
        pass
    summary["path"] = str(folder / f"{name}.json")
    return summary, code


def growth_table(cells: list[dict[str, Any]]) -> str:
    def cell(metric: dict[str, Any] | None, percent: bool = True) -> str:
        if not metric or metric.get("value") is None:
            return "–"
        if not percent:
            return f"{metric['value']:.1f}"
        return f"{100 * metric['value']:.1f} [{100 * metric['low']:.1f}, {100 * metric['high']:.1f}]"

    lines = [
        "| corpus size | stale copies | system | n | failed | correct | critique conf. | similarity conf. | coverage"
        " | calls/q |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        quality = c.get("correct") or c.get("accuracy")
        values = [cell(quality), cell(c.get("confidence")), cell(c.get("similarity_confidence"))]
        values += [cell(c.get("coverage")), cell(c.get("llm_calls"), False)]
        head = f"| {c['size']} | {c.get('stale', 0)} | {c['system']} | {c['n']} | {c['failed']} | "
        lines.append(head + " | ".join(values) + " |")
    return "\n".join(lines)
