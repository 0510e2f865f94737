"""`selfrag session list | show NAME | delete NAME`: the named conversations kept by `ask`/`chat --session`."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any

from ..errors import InputError
from ..memory.sessions import SessionStore
from ..text import clean_for_terminal, escape_name


def register(commands: Any) -> None:
    session = commands.add_parser(
        "session", help="list, show or delete named conversations", description="Named conversations."
    )
    actions = session.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("list", help="every session, with its turns and last use")
    show = actions.add_parser("show", help="the turns of one session")
    show.add_argument("name", help="session name")
    show.add_argument("--json", action="store_true", help="the stored turns as JSON")
    delete = actions.add_parser("delete", help="delete one session (a damaged one too)")
    delete.add_argument("name", help="session name")
    session.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    store = SessionStore.default()
    if args.action == "list":
        infos = store.list()
        if not infos:
            print(f"no sessions in {escape_name(str(store.folder))}", file=sys.stderr)
        for info in infos:
            state = f"unreadable: {info.problem}" if info.problem else f"{info.turns} turns, last {info.updated or '-'}"
            print("\t".join(escape_name(field) for field in (info.name, state, f"{info.size} bytes")))
        return 0
    if args.action == "show":
        if not store.path(args.name).exists():
            raise InputError(f"no session named {args.name!r} in {store.folder}; `selfrag session list` shows them")
        memory = store.load(args.name)
        if args.json:
            print(json.dumps([asdict(t) for t in memory.turns], ensure_ascii=False, indent=2))
            return 0
        for turn in memory.turns:
            cited = f"  (cited: {', '.join(map(escape_name, turn.cited))})" if turn.cited else ""
            print(escape_name(f"[{turn.number}] {turn.time} topic {turn.topic}{cited}"))
            print(clean_for_terminal(f"  User: {turn.question}"))
            print(clean_for_terminal(f"  Assistant: {turn.answer}"))
        print(
            f"{len(memory.turns)} turns kept, {memory.evicted} evicted, {memory.collapsed} collapsed as repeats",
            file=sys.stderr,
        )
        return 0
    if not store.delete(args.name):
        raise InputError(f"no session named {args.name!r} in {store.folder}")
    print(f"deleted session {args.name}", file=sys.stderr)
    return 0
