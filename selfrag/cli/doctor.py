"""`selfrag doctor`: is the index readable, do the indexed files still match it, which supersessions it applies
and why, which endpoint and key source, is it reachable, which model, what it supports, and how long a tiny
call takes. One line per check (ok, warn or FAIL); exit 0 when none failed, else 1."""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import sys
from pathlib import Path
from typing import Any

from ..config import PRESETS
from ..text import escape_name
from .common import CONFIG_HELP, add_endpoint_options, engine_flags


def register(commands: Any) -> None:
    doctor = commands.add_parser(
        "doctor", help="check the index and the endpoint", description="Check the index and the chat endpoint."
    )
    doctor.add_argument("--index", "-i", help="index folder to check (made by `selfrag index`)")
    add_endpoint_options(doctor, ("base_url", "model", "timeout", "logprobs", "send_openai_key"))
    doctor.add_argument("--preset", choices=list(PRESETS), help="the preset to report (default: the configured one)")
    doctor.add_argument(
        "--refresh",
        action="store_true",
        help="probe the endpoint afresh in full (costs, slots) and remember what it finds, rather than reuse "
        "the capabilities remembered from an earlier run; the embedded model times its weights again",
    )
    doctor.add_argument("--config", help=CONFIG_HELP)
    doctor.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..api import default_chat
    from ..errors import ConfigError, UsageError
    from ..settings import load_config
    from .diagnose import (
        Check,
        check_config,
        check_endpoint,
        check_index,
        check_policies,
        check_sources,
        check_versions,
        check_weights,
    )

    checks = [check_index(Path(args.index))] if args.index else []
    if checks and checks[0].ok:
        checks += check_sources(Path(args.index)) + check_versions(Path(args.index))
    try:
        config = load_config(engine_flags(args), config_file=args.config)
    except (ConfigError, UsageError) as error:  # doctor reports a bad flag as its failed config check
        checks.append(Check("config", False, str(error), "fix the flag, SELFRAG_* variable or config file it names"))
    else:
        checks.append(check_config(args.config, os.environ))
        checks.append(check_policies(config, os.environ))
        make_chat = functools.partial(default_chat, remeasure=True) if args.refresh else default_chat
        reached = asyncio.run(check_endpoint(config, os.environ, make_chat, refresh=args.refresh))
        model = next((check.found for check in reached if check.name == "model"), "")
        weights = check_weights(config, os.environ, model) if model else None
        checks += [*reached, *([weights] if weights else [])]
    for check in checks:
        status = "FAIL" if not check.ok else "warn" if check.warn else "ok  "
        hint = f"  (hint: {escape_name(check.hint)})" if check.hint else ""  # one line per check, whatever a
        print(f"{status} {check.name:<12} {escape_name(check.detail)}{hint}", flush=True)  # path or name holds
    failed = [check.name for check in checks if not check.ok]
    if failed:
        print(f"selfrag doctor: {len(failed)} check(s) failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0
