"""Run one benchmark: one dataset x one system into a run folder (selfrag.bench; see benchmarks/README.md).

    python benchmarks/run.py --dataset hotpotqa_smoke --system selfrag --limit 20 --seed 0 [--resume]
    python benchmarks/run.py --dataset scifact --system rag --base-url http://127.0.0.1:8011/v1 --model smollm2

Same code and flags as `selfrag bench run`. Exit codes: 0 complete, 3 complete with failed questions,
1 incomplete (resumable with --resume), 2 usage error.
"""

from __future__ import annotations

import sys

from _cli import run_cli

if __name__ == "__main__":
    sys.exit(run_cli(["run", *sys.argv[1:]], prog="benchmarks/run.py"))
