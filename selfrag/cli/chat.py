"""`selfrag chat`: an interactive REPL over one index.

`>>>` prompt; settled sentences stream as they become final; `\"\"\"` opens and closes a multi-line message;
history persists in a file; slash commands tune the knobs; Ctrl-C cancels the current answer and keeps the
session; Ctrl-D (or /exit) leaves. Follow-up questions see what the managed memory recalls for them
(memory.py); with `--session NAME` that memory is kept on disk and another process can continue it
(sessions.py). A message that is only a greeting, thanks or a goodbye gets a line of its own, with no search
(`conversation.small_talk`). Without a terminal on stdin it reads one question per line, for scripts.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

from ..config import Config
from ..conversation import small_talk
from ..errors import ConfigError, FatalLLMError, SelfRagError, UsageError
from ..memory.sessions import ChatSession, check_name
from ..result import DoneEvent, LeadEvent, Result, SegmentEvent
from ..text import clean_for_terminal, escape_name, repair_text
from .common import (
    add_engine_options,
    check_output_file,
    check_scorer_weights,
    engine_flags,
    print_step,
    render_footer,
    render_segment,
    render_sources,
    warn_if_stale,
)

HELP = """commands:
  /help                 this help
  /sources              the sources of the last answer
  /trace on|off         print each search step on stderr
  /set KNOB VALUE       change a knob: mode threshold beam_width max_depth ndocs w_rel w_sup w_use critic ...
  /show                 the current knobs
  /save FILE            write the last answer's search as an HTML page
  /clear                forget the conversation (a named session is emptied)
  /exit                 leave (Ctrl-D works too)
  \"\"\"                   start or end a multi-line message
Ctrl-C cancels the answer being written."""


# knobs /set cannot change: the engine's endpoints and rater are built once, when the chat starts; their flags
FIXED_KNOBS = {
    "endpoint": "--base-url", "critic_endpoint": "--critic-base-url", "scorer": "--scorer",
    "scorer_weights": "--scorer-weights", "preset": "--preset",  # a preset sets the scorer too
}  # fmt: skip


def register(commands: Any) -> None:
    chat = commands.add_parser("chat", help="talk with your documents", description="Interactive Self-RAG chat.")
    chat.add_argument("--index", "-i", required=True, help="index folder (made by `selfrag index`)")
    chat.add_argument("--history-file", help="where to keep input history (default: under $SELFRAG_HOME)")
    chat.add_argument("--no-history", action="store_true", help="do not keep input history")
    chat.add_argument("--session", "-s", metavar="NAME", help="continue (or start) a named conversation on disk")
    add_engine_options(chat)
    chat.set_defaults(run=run)


def history_path(args: argparse.Namespace) -> Path | None:
    if args.no_history:
        return None
    if args.history_file:
        return Path(args.history_file)
    home = os.environ.get("SELFRAG_HOME") or os.path.join(
        os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state"), "selfrag"
    )
    return Path(home) / "chat_history"


class Session:
    """The REPL's state: the engine, the knobs, the conversation's memory, the last result."""

    def __init__(self, rag: Any, config: Config, memory: ChatSession | None = None) -> None:
        self.rag, self.config = rag, config
        self.memory = memory or ChatSession(rag)
        self.last: Result | None = None
        self.trace = False
        self.warned: set[str] = set()  # warnings said once per chat, not after every answer

    def warn_once(self, warning: str) -> None:
        if warning and warning not in self.warned:
            self.warned.add(warning)
            print(clean_for_terminal(f"selfrag: warning: {warning}"), file=sys.stderr)

    def command(self, line: str) -> bool:
        """Run a slash command; False means leave."""
        name, _, rest = line[1:].partition(" ")
        rest = rest.strip()
        if name in ("exit", "quit", "bye"):
            return False
        if name in ("help", "?"):
            print(HELP, file=sys.stderr)
        elif name == "sources":
            print(render_sources(self.last.sources) if self.last else "no answer yet", file=sys.stderr)
        elif name == "trace":
            self.trace = rest != "off"
            print(f"trace {'on' if self.trace else 'off'}", file=sys.stderr)
        elif name == "set":
            self.set_knob(rest)
        elif name == "show":
            from ..config import config_dict

            for key, value in config_dict(self.config).items():
                print(f"  {key} = {value}", file=sys.stderr)
        elif name == "clear":
            self.memory.clear()
            print("conversation cleared", file=sys.stderr)
        elif name == "save":
            self.save(rest)
        else:
            print(f"unknown command /{name}; /help lists them", file=sys.stderr)
        return True

    def set_knob(self, text: str) -> None:
        from ..settings import typed_values

        knob, _, value = text.partition(" ")
        knob = knob.replace("-", "_")
        if knob in FIXED_KNOBS:
            print(f"{knob} is chosen when the chat starts (selfrag chat {FIXED_KNOBS[knob]} ...)", file=sys.stderr)
            return
        if not value.strip():
            print("usage: /set KNOB VALUE (see /show for the knobs)", file=sys.stderr)
            return
        try:
            typed = (
                typed_values(Config, {knob: value.strip()}) if knob in Config.__dataclass_fields__ else {knob: value}
            )
            self.config = self.config.with_values(**typed)
        except ConfigError as error:
            print(f"error: {error}", file=sys.stderr)
            return
        print(f"{knob} = {getattr(self.config, knob)}", file=sys.stderr)

    def save(self, path: str) -> None:
        """Write the last answer's search as HTML; a path that cannot be written is said, and the chat goes on."""
        if not path or self.last is None:
            print("usage: /save FILE (after an answer)", file=sys.stderr)
            return
        from .trace_html import write_trace_html

        try:
            write_trace_html(self.last, check_output_file(path, "/save"))
        except UsageError as error:
            print(f"error: {error}; nothing was saved", file=sys.stderr)
            return
        except OSError as error:
            print(f"error: /save {escape_name(path)}: {error.strerror or error}; nothing was saved", file=sys.stderr)
            return
        print(f"saved the search of the last answer to {escape_name(path)}", file=sys.stderr)

    async def ask(self, question: str) -> None:
        """One answer, streamed; Ctrl-C cancels it and keeps the session."""
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(self._stream(question))
        loop.add_signal_handler(signal.SIGINT, task.cancel)
        try:
            await task
        except asyncio.CancelledError:
            print("\n[answer cancelled]", file=sys.stderr)
        except FatalLLMError:
            raise
        except SelfRagError as error:
            print(f"\nerror: {clean_for_terminal(str(error))}", file=sys.stderr)
        finally:
            loop.remove_signal_handler(signal.SIGINT)

    async def _stream(self, question: str) -> None:
        with self.memory.holding():  # a named session is locked before the answer is written (sessions.py)
            history, recalled = self.memory.prepare(question)
            async for event in self.rag.astream(question, conversation=history, config=self.config):
                if isinstance(event, LeadEvent):
                    print(clean_for_terminal(event.text), end=" ", flush=True)
                elif isinstance(event, SegmentEvent):
                    print(render_segment(event), end=" ", flush=True)
                elif isinstance(event, DoneEvent):
                    self.last = event.result
                    print()
                    print(render_footer(event.result))
                    self.warn_once(event.result.trace.weights_warning)
                    self.memory.record(question, event.result, recalled)
                elif self.trace:
                    print_step(event.step, sys.stderr)


async def read_message(session: Any, first: str) -> str:
    """A message; a line of three double quotes starts a multi-line one, ended by another such line."""
    if not first.strip().startswith('"""'):
        return first
    lines = [first.strip()[3:]]
    while True:
        line = await session.prompt_async("... ")
        if line.strip().endswith('"""'):
            lines.append(line.strip()[:-3])
            return "\n".join(lines).strip()
        lines.append(line)


async def loop_tty(session: Session, args: argparse.Namespace) -> None:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory, InMemoryHistory

    path = history_path(args)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    prompt = PromptSession(history=FileHistory(str(path)) if path else InMemoryHistory())
    print('selfrag chat: ask a question; /help for commands, """ for multi-line, Ctrl-D to leave.', file=sys.stderr)
    while True:
        try:
            line = await prompt.prompt_async(">>> ")
            text = await read_message(prompt, line)
        except KeyboardInterrupt:
            continue
        except EOFError:
            break
        if not await handle(session, text):
            break


async def loop_pipe(session: Session) -> None:
    for line in sys.stdin:
        if not await handle(session, line.rstrip("\n")):
            break


async def handle(session: Session, text: str) -> bool:
    """One message: a slash command, small talk, or a question. Bytes that are not UTF-8 and controls are
    repaired first (`repair_text`), so no line typed or piped in ends the chat."""
    text = repair_text(text).strip()
    if not text:
        return True
    if text.startswith("/"):
        return session.command(text)
    said = small_talk(text)  # a greeting or thanks has nothing to look up: it is answered, not searched
    if said is not None:
        print(said, flush=True)
        return True
    await session.ask(text)
    return True


def run(args: argparse.Namespace) -> int:
    from ..api import SelfRAG
    from ..settings import load_config

    if args.session is not None:
        check_name(args.session)
    config = load_config(engine_flags(args), config_file=args.config)
    check_scorer_weights(args, config, os.environ)  # honoured or refused, before the engine is built
    rag = SelfRAG.from_index(args.index, config)
    warn_if_stale(args.index, sys.stderr)  # said once, at start
    # the engine's config: `scorer` "auto" made concrete, as its rater was built (what /show and the footer say)
    session = Session(rag, rag.config, rag.session(args.session) if args.session is not None else None)

    async def main() -> None:
        try:
            await (loop_tty(session, args) if sys.stdin.isatty() else loop_pipe(session))
        finally:
            await rag.aclose()

    asyncio.run(main())
    return 0
