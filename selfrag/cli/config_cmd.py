"""`selfrag config show` (the resolved configuration, secrets masked) and `selfrag config path` (where the
config file is looked for). Keys are never printed: only where each endpoint's key comes from."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ..text import clean_for_terminal
from .common import CONFIG_HELP


def register(commands: Any) -> None:
    config = commands.add_parser(
        "config", help="show the resolved configuration", description="Show the resolved configuration."
    )
    actions = config.add_subparsers(dest="config_action", required=True, metavar="ACTION")
    show = actions.add_parser(
        "show",
        help="print the resolved configuration (secrets masked)",
        description="Print the configuration after flag > SELFRAG_* environment > TOML file > default.",
    )
    show.add_argument("--config", help=CONFIG_HELP)
    show.add_argument("--json", action="store_true", help="print JSON instead of TOML")
    show.set_defaults(run=run_show)
    path = actions.add_parser("path", help="print where the config file is looked for")
    path.add_argument("--config", help="an explicit config file (it wins over every other place)")
    path.set_defaults(run=run_path)


def run_show(args: argparse.Namespace) -> int:
    from ..config import config_dict
    from ..settings import config_location, load_config
    from .diagnose import key_report

    config = load_config(config_file=args.config)
    settings = config_dict(config, public=True)
    keys = key_report(config, os.environ)
    location = config_location(args.config, os.environ)
    if args.json:
        file = str(location.path) if location.exists else None
        print(json.dumps({"config_file": file, "settings": settings, "resolved": keys}, indent=2))
        return 0
    described = str(location.path) if location.exists else f"none ({location.path} not found)"
    lines = [f"# config file: {described}", "# precedence: flag > SELFRAG_* environment > config file > default"]
    tables = {name: settings.pop(name) for name in ("endpoint", "critic_endpoint")}
    lines += [_toml_line(name, value) for name, value in settings.items()]
    for name, table in tables.items():
        if table is None:
            lines += ["", f"# [{name}] not set: the same endpoint as [endpoint]"]
            continue
        lines += ["", f"[{name}]", *(_toml_line(key, value) for key, value in table.items())]
        lines.append(f"# requests go to: {keys[name]['described']}")
    print(clean_for_terminal("\n".join(lines)))
    return 0


def run_path(args: argparse.Namespace) -> int:
    from ..settings import config_location

    location = config_location(args.config, os.environ)
    print(clean_for_terminal(str(location.path)))
    state = "found" if location.exists else "not found: defaults and SELFRAG_* variables apply"
    print(clean_for_terminal(f"selfrag: config file from {location.reason}; {state}"), file=sys.stderr)
    return 0


def _toml_line(name: str, value: Any) -> str:
    if value is None:
        return f"# {name} is not set"
    return f"{name} = {json.dumps(value, ensure_ascii=False)}"
