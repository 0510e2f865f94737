"""`selfrag critic fit|cut|map|check`: refit the evidence critic from your own judged data, and check a weights file.

    selfrag critic fit JUDGMENTS.jsonl... --out WEIGHTS.json fit both heads, the threshold and the confidence map
    selfrag critic cut JUDGMENTS.jsonl --out WEIGHTS.json    refit only the abstention cut, under given weights
        [--confidence-map]                                   ... and the confidence map, on the same answers
    selfrag critic map JUDGMENTS.jsonl... --out WEIGHTS.json refit only the confidence map, under given weights
    selfrag critic check [WEIGHTS.json]                      validate a weights file (default: the shipped one)

The abstention cut keeps `--keep` of the right answers (default 92 %) with `--confidence` (default 95 %): a
one-sided bound on the share of right answers lost, so the cut keeps a margin when it is fitted on few answers.
Where the judgments hold at least 20 questions made unanswerable (`selfrag bench run --unanswerable`), `cut` and
`fit` first fit the answers head on them, and the cut is on its probability: right answers against answers to
questions whose documents are not in the corpus. With fewer, `cut` keeps the weights' own head (or none).
`fit` reads one or more judgments files as one set, and keeps the short answer's counts (how often a lead of each
kind was right: `selfrag bench fit-lead`) of `--weights` (default: the shipped ones): they count the short
answer, not the heads, and a refit without them would leave every lead uncounted in the confidence. `map` fits
what a confidence means on your own corpus (the answers of judged candidates from runs over it), nothing else.
An answered head (`selfrag bench fit-confidence`: the answer's confidence from its sentences' ratings and words)
is not carried over by `fit`, whose new heads rate every sentence anew: its answers' confidence is the map it
fits until the head is refitted on runs made under the new weights. `cut` keeps it; `map` and `cut
--confidence-map` drop it, since the map they fit on your answers is then what speaks for them.

A judgments file has one JSON object per line: "question", "sentence", "chunk" (the chunk's text), "relevant"
and "supported" (true/false) are required; "rank", "score_rel", "quote_ok", "model_rel", "model_sup",
"others" (sentences written from the other chunks), "correct" (does the sentence answer rightly),
"answerable" (false: written while the question's evidence was kept out of the corpus), "declined" (true: the
engine declined it by a rule, so it is never an answer) and "extracted" (true: extracted from the chunk beside the
model's sentence) are optional.
`selfrag bench judgments RUN_DIR` writes one from benchmark runs. Use the result with `--scorer-weights
WEIGHTS.json` (or `scorer_weights` in the config file). The shipped weights are never overwritten.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..engine.calibration import MAX_FILE_BYTES, SHIPPED, load_critic_model
from ..errors import InputError, UsageError
from ..files import read_regular, write_atomic
from ..fit.critic import KEEP, KEEP_CONFIDENCE, fit_abstain_cut, fit_critic, fit_map, judged_row, with_lead_counts
from .common import OUTPUT_FILE

MAX_JUDGMENTS_BYTES = 256 << 20


def register(commands: Any) -> None:
    critic = commands.add_parser(
        "critic",
        help="refit the evidence critic from judged data; check a weights file",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = critic.add_subparsers(dest="critic_command", required=True, metavar="SUBCOMMAND")
    fit = sub.add_parser("fit", help="fit critic weights from judgments files")
    fit.add_argument("judgments", nargs="+", help="JSONL files of judged candidates, read as one set")
    fit.add_argument("--weights", help="weights whose short-answer counts the fit keeps (default: the shipped ones)")
    fit.add_argument("--out", required=True, help="weights file to write")
    fit.set_defaults(run=fit_command, outputs={"out": OUTPUT_FILE})
    cut = sub.add_parser("cut", help="refit the abstention cut alone from a judgments file, under given weights")
    cut.add_argument("judgments", help="JSONL file of judged candidates, with 'correct'")
    cut.add_argument("--weights", help="weights whose heads rate the candidates (default: the shipped ones)")
    cut.add_argument("--keep", type=float, default=KEEP, help=f"share of right answers to keep (default {KEEP:g})")
    cut.add_argument(
        "--confidence", type=float, default=KEEP_CONFIDENCE,
        help=f"confidence that the share is kept beyond these answers (default {KEEP_CONFIDENCE:g})",
    )  # fmt: skip
    cut.add_argument(
        "--confidence-map", action="store_true",
        help="also refit the answer's confidence map (Platt) on the same answers, under the same heads",
    )  # fmt: skip
    cut.add_argument("--out", required=True, help="weights file to write")
    cut.set_defaults(run=cut_command, outputs={"out": OUTPUT_FILE})
    refit = sub.add_parser(
        "map", help="refit the answer's confidence map alone from judgments files, under given weights"
    )
    refit.add_argument("judgments", nargs="+", help="JSONL files of judged candidates, with 'correct', read as one set")
    refit.add_argument("--weights", help="weights whose heads rate the candidates (default: the shipped ones)")
    refit.add_argument("--out", required=True, help="weights file to write")
    refit.set_defaults(run=map_command, outputs={"out": OUTPUT_FILE})
    check = sub.add_parser("check", help="validate a weights file and print what it was fitted on")
    check.add_argument("weights", nargs="?", help="weights file (default: the shipped one)")
    check.set_defaults(run=check_command)


def fit_command(args: argparse.Namespace) -> int:
    out = _writable(args.out)
    paths = [Path(name) for name in args.judgments]
    rows = [row for path in paths for row in read_judgments(path)]
    before = load_critic_model(args.weights)
    model = with_lead_counts(fit_critic(rows, {"source": ", ".join(path.name for path in paths)}), before)
    text = model.to_json()
    if len(text) > MAX_FILE_BYTES:
        raise InputError("the fitted weights are larger than a weights file may be")
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, text)
    info = model.fitted_on
    print(
        f"wrote {out}: {info['rows']} rows, {info['questions']} questions, support threshold "
        f"{model.support_threshold:.2f}, confidence map a={model.confidence.a:.2f} c={model.confidence.c:.2f}, "
        f"abstention cut {model.abstain_threshold:.4f} on {'the answers head' if model.answers else 'P(rel)·P(sup)'}; "
        f"short-answer counts kept: {', '.join(model.lead) or 'none'}"
    )
    return 0


def cut_command(args: argparse.Namespace) -> int:
    for flag, value in (("--keep", args.keep), ("--confidence", args.confidence)):
        if not 0 < value < 1:
            raise UsageError(f"{flag} must be a share between 0 and 1, got {value:g}")
    out = _writable(args.out)
    model = load_critic_model(args.weights)
    rows = read_judgments(Path(args.judgments))
    model, fit = fit_abstain_cut(
        model, rows, args.keep, args.confidence, Path(args.judgments).name, refit_map=args.confidence_map
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, model.to_json())
    said = f"wrote {out}: abstention cut {fit.cut:.4f}; it keeps {fit.kept} of the {fit.right} right answers here"
    if fit.unanswerable:
        said += f" and abstains on {fit.abstained} of {fit.unanswerable} unanswerable questions"
    if fit.answers_head:
        said += "; the answers head refitted on them"
    if args.confidence_map:
        said += f"; confidence map a={model.confidence.a:.2f} c={model.confidence.c:.2f}"
    print(said)
    return 0


def map_command(args: argparse.Namespace) -> int:
    out = _writable(args.out)
    paths = [Path(name) for name in args.judgments]
    rows = [row for path in paths for row in read_judgments(path)]
    before = load_critic_model(args.weights)
    model, answered, right = fit_map(before, rows, ", ".join(path.name for path in paths))
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, model.to_json())
    print(
        f"wrote {out}: confidence map a={model.confidence.a:.2f} c={model.confidence.c:.2f} on {answered} answers, "
        f"{right} right; heads, abstention cut and short-answer counts kept"
        + ("; the answered head dropped (the map now speaks for answers)" if before.answered else "")
    )
    return 0


def _writable(path: str) -> Path:
    out = Path(path)
    if out.resolve() == Path(__file__).resolve().parents[1] / "data" / SHIPPED:
        raise InputError(f"--out {out} is the shipped weights file; write your weights elsewhere")
    return out


def check_command(args: argparse.Namespace) -> int:
    model = load_critic_model(args.weights)
    print(json.dumps({"ok": True, "support_threshold": model.support_threshold, "fitted_on": model.fitted_on}))
    return 0


def read_judgments(path: Path) -> list:  # type: ignore[type-arg]
    try:
        data = read_regular(path, MAX_JUDGMENTS_BYTES)  # a FIFO or device is refused, never waited on
        if len(data) > MAX_JUDGMENTS_BYTES:
            raise InputError(f"{path} is over {MAX_JUDGMENTS_BYTES >> 20} MiB; split it or sample it")
        lines = data.decode("utf-8").splitlines()
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
