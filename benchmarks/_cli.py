"""The shared door of benchmarks/run.py and benchmarks/score.py: `selfrag bench ...` without the rest of the CLI."""

from __future__ import annotations

import argparse
import sys
import traceback

from selfrag.cli import bench
from selfrag.errors import SelfRagError
from selfrag.text import clean_for_terminal


def run_cli(argv: list[str], *, prog: str) -> int:
    parser = argparse.ArgumentParser(prog=prog, description="selfrag benchmarks")
    parser.add_argument("--debug", action="store_true", help="print tracebacks of failures")
    commands = parser.add_subparsers(dest="command", required=True)
    bench.register(commands)
    args = parser.parse_args(["bench", *argv])
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except SelfRagError as error:
        if args.debug:
            traceback.print_exc()
        print(f"{prog}: error: {clean_for_terminal(str(error))}", file=sys.stderr)
        return 1
