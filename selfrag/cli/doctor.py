"""`selfrag doctor`: is the index readable, which endpoint and key source, is it reachable, which model,
what it supports, and how long a tiny call takes. One line per check; exit 0 when all are ok, else 1."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from ..text import clean_for_terminal
from .common import CONFIG_HELP, add_endpoint_options, engine_flags


def register(commands: Any) -> None:
    doctor = commands.add_parser(
        "doctor", help="check the index and the endpoint", description="Check the index and the chat endpoint."
    )
    doctor.add_argument("--index", "-i", help="index folder to check (made by `selfrag index`)")
    add_endpoint_options(doctor, ("base_url", "model", "timeout", "logprobs", "send_openai_key"))
    doctor.add_argument(
        "--refresh",
        action="store_true",
        help="probe the endpoint afresh in full (costs, slots) and remember what it finds, rather than reuse "
        "the capabilities remembered from an earlier run",
    )
    doctor.add_argument("--config", help=CONFIG_HELP)
    doctor.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..api import default_chat
    from ..errors import ConfigError, UsageError
    from ..settings import load_config
    from .diagnose import Check, check_config, check_endpoint, check_index

    checks = [check_index(Path(args.index))] if args.index else []
    try:
        config = load_config(engine_flags(args), config_file=args.config)
    except (ConfigError, UsageError) as error:  # doctor reports a bad flag as its failed config check
        checks.append(Check("config", False, str(error), "fix the flag, SELFRAG_* variable or config file it names"))
    else:
        checks.append(check_config(args.config, os.environ))
        checks += asyncio.run(check_endpoint(config, os.environ, default_chat, refresh=args.refresh))
    for check in checks:
        status = "ok  " if check.ok else "FAIL"
        hint = f"  (hint: {check.hint})" if check.hint else ""
        print(clean_for_terminal(f"{status} {check.name:<12} {check.detail}{hint}"), flush=True)
    failed = [check.name for check in checks if not check.ok]
    if failed:
        print(f"selfrag doctor: {len(failed)} check(s) failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0
