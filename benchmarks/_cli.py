"""The shared door of benchmarks/run.py and benchmarks/score.py: `selfrag bench ...` under the script's name."""

from __future__ import annotations

from selfrag.cli import main


def run_cli(argv: list[str], *, prog: str) -> int:
    return main(["bench", *argv], prog=prog)
