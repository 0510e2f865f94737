"""The command line: `selfrag index`, `ask`, `search`, ... Only this package prints or sets exit codes.

stdout carries the answer (or JSON); stderr carries progress, the trace, warnings and errors. Exit codes:
0 ok, 1 runtime failure (one line on stderr; the traceback only with --debug), 2 usage error (argparse's, and
a `UsageError` a command raises for a bad argument: a NUL byte, a flag out of range, a missing QUERY; a
`SettingTypeError`: a setting of the wrong type, from a flag, the environment or the config file), 130 Ctrl-C.
Each command lives in its own module with a `register(subparsers)` that sets `run`.
"""

from __future__ import annotations

import argparse
import io
import logging
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from .. import __version__
from ..errors import SelfRagError, SettingTypeError, UsageError
from ..text import clean_for_terminal, redact_secrets
from . import ask, bench, calibrate, chat, config_cmd, critic, doctor, index, judge, search, session
from .common import check_outputs, refuse_nul_bytes

COMMANDS = (index, ask, search, chat, session, doctor, config_cmd, bench, judge, critic, calibrate)


class Parser(argparse.ArgumentParser):
    """argparse that never echoes a secret: a usage error quotes the offending arguments, and someone who
    typed `--api-key sk-...` (keys are never flags) must not find the key in their terminal's scrollback or a CI
    log."""

    def error(self, message: str) -> NoReturn:
        redacted = redact_secrets(message)
        hint = (
            " (keys are never flags: set SELFRAG_API_KEY, or OPENAI_API_KEY for OpenAI)" if redacted != message else ""
        )
        super().error(redacted + hint)


def build_parser(prog: str = "selfrag") -> argparse.ArgumentParser:
    parser = Parser(prog=prog, description="Self-RAG answers with citations from your documents.")
    parser.add_argument("--version", action="version", version=f"selfrag {__version__}")
    parser.add_argument("--debug", action="store_true", help="print tracebacks of failures")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(commands)
    return parser


class WarningLines(logging.Handler):
    """Warnings about what is remembered on disk (a capability cache file or the embedded model's weights choice
    ignored or not writable, an entry an error contradicted), one line each on stderr, cleaned and redacted like
    every other line the command line prints. The library's other notes reach the user through the results."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        text = " ".join(record.getMessage().split())
        print(redact_secrets(clean_for_terminal(text)), file=sys.stderr, flush=True)


WARNING_LOGGERS = ("selfrag.capabilities", "selfrag.weights")


def show_warnings() -> None:
    """Show the WARNING_LOGGERS' warnings on stderr (once per process, however often `main` runs)."""
    for name in WARNING_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(handler, WarningLines) for handler in logger.handlers):
            logger.addHandler(WarningLines())


def main(argv: Sequence[str] | None = None, *, prog: str = "selfrag") -> int:
    """The one door of every command (`prog` names the program in messages: benchmarks/run.py uses it too)."""
    args = build_parser(prog).parse_args(argv)
    if isinstance(sys.stdin, io.TextIOWrapper):  # a byte that is not UTF-8 is kept as an escape, then repaired
        sys.stdin.reconfigure(errors="surrogateescape")  # (text.repair_text), not a UnicodeDecodeError
    show_warnings()
    try:
        refuse_nul_bytes(args)
        check_outputs(args)
        return int(args.run(args))
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except (UsageError, SettingTypeError) as error:  # a bad argument or setting type: a usage error, as argparse's
        print(f"{prog}: error: {redact_secrets(clean_for_terminal(str(error)))}", file=sys.stderr)
        return 2
    except SelfRagError as error:
        if args.debug:
            traceback.print_exc()
        print(f"{prog}: error: {redact_secrets(clean_for_terminal(str(error)))}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 1
    except Exception as error:  # a bug: one line, the traceback with --debug
        if args.debug:
            traceback.print_exc()
        print(
            f"{prog}: internal error: {type(error).__name__}: {redact_secrets(clean_for_terminal(str(error)))} "
            "(run with --debug for details)",
            file=sys.stderr,
        )
        return 1
