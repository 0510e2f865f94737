"""Recompute metrics from run folders' samples.jsonl without calling any model, and print the table.

    python benchmarks/score.py benchmarks/runs/hotpotqa_smoke/*/*          # the table of every run
    python benchmarks/score.py RUN_DIR --check                              # exit 1 unless = results.json
    python benchmarks/score.py RUN_DIR... --plots benchmarks/plots          # also write the PNG plots

Same code as `selfrag bench score` / `selfrag bench plot`.
"""

from __future__ import annotations

import sys

from _cli import run_cli

if __name__ == "__main__":
    argv = sys.argv[1:]
    plots = None
    if "--plots" in argv:
        at = argv.index("--plots")
        plots, argv = argv[at + 1 : at + 2], argv[:at] + argv[at + 2 :]
    code = run_cli(["score", *argv], prog="benchmarks/score.py")
    if code == 0 and plots:
        dirs = [a for a in argv if not a.startswith("--")]
        code = run_cli(["plot", *dirs, "--out", plots[0]], prog="benchmarks/score.py")
    sys.exit(code)
