"""`selfrag critic fit|check`: refit the evidence critic from your own judged data, and check a weights file.

    selfrag critic fit JUDGMENTS.jsonl --out WEIGHTS.json    fit both heads, the threshold and the confidence map
    selfrag critic check [WEIGHTS.json]                      validate a weights file (default: the shipped one)

A judgments file has one JSON object per line: "question", "sentence", "chunk" (the chunk's text), "relevant"
and "supported" (true/false) are required; "rank", "score_rel", "quote_ok", "model_rel", "model_sup",
"others" (sentences written from the other chunks), "correct" (does the sentence answer rightly) and
"answerable" (false: written while the question's evidence was kept out of the corpus) are optional.
`selfrag bench judgments RUN_DIR` writes one from benchmark runs. Use the result with `--scorer-weights
WEIGHTS.json` (or `scorer_weights` in the config file). The shipped weights are never overwritten.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..engine.calibration import MAX_FILE_BYTES, SHIPPED, fit_critic, judged_row, load_critic_model
from ..errors import InputError
from ..files import write_atomic

MAX_JUDGMENTS_BYTES = 256 << 20


def register(commands: Any) -> None:
    critic = commands.add_parser(
        "critic",
        help="refit the evidence critic from judged data; check a weights file",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = critic.add_subparsers(dest="critic_command", required=True, metavar="SUBCOMMAND")
    fit = sub.add_parser("fit", help="fit critic weights from a judgments file")
    fit.add_argument("judgments", help="JSONL file of judged candidates")
    fit.add_argument("--out", required=True, help="weights file to write")
    fit.set_defaults(run=fit_command)
    check = sub.add_parser("check", help="validate a weights file and print what it was fitted on")
    check.add_argument("weights", nargs="?", help="weights file (default: the shipped one)")
    check.set_defaults(run=check_command)


def fit_command(args: argparse.Namespace) -> int:
    out = Path(args.out)
    shipped = Path(__file__).resolve().parents[1] / "data" / SHIPPED
    if out.resolve() == shipped:
        raise InputError(f"--out {out} is the shipped weights file; write your weights elsewhere")
    rows = read_judgments(Path(args.judgments))
    model = fit_critic(rows, {"source": Path(args.judgments).name})
    text = model.to_json()
    if len(text) > MAX_FILE_BYTES:
        raise InputError("the fitted weights are larger than a weights file may be")
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, text)
    info = model.fitted_on
    print(
        f"wrote {out}: {info['rows']} rows, {info['questions']} questions, support threshold "
        f"{model.support_threshold:.2f}, confidence map a={model.confidence.a:.2f} c={model.confidence.c:.2f}"
    )
    return 0


def check_command(args: argparse.Namespace) -> int:
    model = load_critic_model(args.weights)
    print(json.dumps({"ok": True, "support_threshold": model.support_threshold, "fitted_on": model.fitted_on}))
    return 0


def read_judgments(path: Path) -> list:  # type: ignore[type-arg]
    try:
        if path.stat().st_size > MAX_JUDGMENTS_BYTES:
            raise InputError(f"{path} is over {MAX_JUDGMENTS_BYTES >> 20} MiB; split it or sample it")
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read {path}: {getattr(error, 'strerror', None) or error}") from None
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            raise InputError(f"{path} line {number} is not JSON") from None
        rows.append(judged_row(record, f"{path} line {number}"))
    return rows
