"""`selfrag ask`: answer one question with citations; stream settled sentences, then the sources."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from typing import Any

from ..errors import InputError
from ..memory.sessions import check_name
from ..result import DoneEvent, LeadEvent, Result, SegmentEvent, StepEvent
from ..text import clean_for_terminal, escape_name
from .common import (
    OUTPUT_FILE,
    add_engine_options,
    check_scorer_weights,
    engine_flags,
    print_step,
    read_question,
    render_footer,
    render_segment,
    warn_if_stale,
)


def register(commands: Any) -> None:
    ask = commands.add_parser("ask", help="answer a question", description="Answer a question with citations.")
    ask.add_argument("question", help="the question, or - to read it from stdin")
    ask.add_argument("--index", "-i", required=True, help="index folder (made by `selfrag index`)")
    ask.add_argument("--session", "-s", metavar="NAME", help="continue (or start) a named conversation")
    out = ask.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the whole result as one JSON object")
    out.add_argument("--jsonl", action="store_true", help="stream events as JSON lines")
    out.add_argument("--trace", action="store_true", help="print each step of the search on stderr")
    out.add_argument("--trace-html", metavar="FILE", help="write the search tree as a self-contained HTML page")
    add_engine_options(ask)
    ask.set_defaults(run=run, outputs={"trace_html": OUTPUT_FILE})


def run(args: argparse.Namespace) -> int:
    from ..api import SelfRAG
    from ..settings import load_config

    question = read_question(args.question, sys.stdin)
    if args.session is not None:
        check_name(args.session)
    config = load_config(engine_flags(args), config_file=args.config)
    check_scorer_weights(args, config, os.environ)  # honoured or refused, before the engine is built
    rag = SelfRAG.from_index(args.index, config)
    warn_if_stale(args.index, sys.stderr)
    session = rag.session(args.session) if args.session is not None else None  # a damaged one is refused here
    with session.holding() if session else contextlib.nullcontext():  # locked before the answer is written
        conversation, recalled = session.prepare(question) if session else ("", ())
        result = asyncio.run(_ask(rag, question, args, conversation))
        if session is not None:
            session.record(question, result, recalled)  # the one line says so when the turn was not saved
    if args.trace_html:
        from .trace_html import write_trace_html

        try:  # checked before the answer (cli.check_outputs); this catches what changed since
            written = write_trace_html(result, args.trace_html)
        except OSError as error:
            raise InputError(
                f"--trace-html {escape_name(args.trace_html)}: {error.strerror or error}; the page was not written"
            ) from None
        print(f"selfrag: wrote the search tree to {escape_name(str(written))}", file=sys.stderr)
    if result.trace.weights_warning:  # weights fitted for another model: used as asked, never silently
        print(clean_for_terminal(f"selfrag: warning: {result.trace.weights_warning}"), file=sys.stderr)
    if result.trace.capabilities.get("note"):  # the reading an endpoint fell back to, said once
        print(f"selfrag: note: {result.trace.capabilities['note']}", file=sys.stderr)
    if result.stop_reason in ("budget", "deadline", "llm_failure"):
        print(
            f"selfrag: note: the answer stopped early ({result.stop_reason}); it holds what was settled",
            file=sys.stderr,
        )
    return 0


async def _ask(rag: Any, question: str, args: argparse.Namespace, conversation: str = "") -> Result:
    result = None
    streamed = False
    try:
        async for event in rag.astream(question, conversation=conversation):
            if args.jsonl:
                print(event.model_dump_json(), flush=True)
            if isinstance(event, StepEvent) and args.trace:
                print_step(event.step, sys.stderr)
            elif isinstance(event, LeadEvent) and not (args.json or args.jsonl):
                print(clean_for_terminal(event.text), end=" ", flush=True)
                streamed = True
            elif isinstance(event, SegmentEvent) and not (args.json or args.jsonl):
                print(render_segment(event), end=" ", flush=True)
                streamed = True
            elif isinstance(event, DoneEvent):
                result = event.result
    finally:
        await rag.aclose()
    assert result is not None
    if args.json:
        print(result.model_dump_json(indent=2))
    elif not args.jsonl:
        if streamed:
            print()
        print(render_footer(result))
    return result
