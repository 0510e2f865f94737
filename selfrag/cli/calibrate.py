"""`selfrag calibrate`: fit the evidence scorer for one model, on your own corpus.

    selfrag calibrate --index IDX --base-url URL [--model NAME] [--limit 60] [--seed 0] [--out FILE] [--resume]
                      [--questions FILE] [--keep 0.92]

The model writes one question per sampled chunk, with its short answer copied from the chunk (where it cannot, it is
given the chunk's own number or name and writes only the question; where it cannot do that either, the chunk's
sentence with that answer left blank is the question); the engine answers them, then answers them again with each
question's chunk held out of the corpus; every candidate is labelled against the question's chunk and answer, and
the evidence scorer (both heads, the support threshold, the answers head, the confidence map, the abstention cut)
and the short answer's trust are fitted on them, as `selfrag critic fit` and `selfrag bench fit-lead` fit them,
but the abstention cut is fitted on answers rated by heads fitted without their question (five folds): it keeps
--keep of those right answers and says how many held-out questions it abstains on. The
weights name the model, the endpoint and the corpus they were fitted for. Without --out they go to <data
folder>/weights/<model>-<hash of endpoint and model>.json (the data folder: $SELFRAG_HOME, else
$XDG_CACHE_HOME/selfrag, else ~/.cache/selfrag), where `selfrag ask` and `selfrag chat` find them for that endpoint
and model; elsewhere, pass them with --scorer-weights. The embedded model keeps the shipped weights unless given
others.

With --questions FILE the questions are yours instead: JSON lines, each {"question": ..., "answer": ...} (or
"answers": [...]) whose answer a chunk of the index states word for word, so that the answer's confidence is fitted
on questions like the ones you will ask. Each is placed on the chunk that states its answer and names most of it, one
per chunk; a yes/no question, whose answer no chunk states, is left out.

The work is kept in <out>.work/ (the questions, one record per answered question); after a failure, run the same
command with --resume to go on from there; --resume with another --limit keeps the answers to the questions both
limits ask (the seeded sample of the smaller limit is the start of the larger's) and asks the held-out questions
again. Calibrating needs at least 2 documents and 20 usable questions, and candidates of both classes for each
head; else it says what is short and writes nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from ..config import Config, resolve_endpoint
from ..errors import InputError, UsageError
from ..llm.base import ChatModel
from ..schema import Meter
from ..text import escape_name
from .common import CONFIG_HELP, OUTPUT_FILE_IN_NEW_FOLDERS, add_endpoint_options, engine_flags


def register(commands: Any) -> None:
    calibrate = commands.add_parser(
        "calibrate",
        help="fit the evidence scorer for a model on your own corpus",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    calibrate.add_argument("--index", "-i", required=True, help="index folder (made by `selfrag index`)")
    calibrate.add_argument("--limit", type=int, help="chunks (or questions) to ask about, a seeded sample (default 60)")
    calibrate.add_argument("--questions", help="your own questions and answers (JSON lines) instead of writing them")
    calibrate.add_argument("--seed", type=int, default=0, help="seed of the sample (default 0)")
    calibrate.add_argument("--out", help="weights file to write (default: where ask finds them for this model)")
    calibrate.add_argument(
        "--resume", action="store_true", help="go on from the work an earlier run left (with another --limit too)"
    )
    calibrate.add_argument(
        "--keep",
        type=float,
        help="share of right answers the abstention cut keeps, measured on answers rated out of fold (default 0.92)",
    )
    calibrate.add_argument("--threads", type=int, help="the embedded model's llama.cpp threads (default: as ask)")
    endpoint = calibrate.add_argument_group("endpoint (keys come from SELFRAG_API_KEY or OPENAI_API_KEY, never flags)")
    add_endpoint_options(
        endpoint, ("base_url", "model", "max_concurrency", "timeout", "logprobs", "send_openai_key", "protocol")
    )
    calibrate.add_argument("--config", help=CONFIG_HELP)
    calibrate.set_defaults(run=run, outputs={"out": OUTPUT_FILE_IN_NEW_FOLDERS})


def run(args: argparse.Namespace) -> int:
    from ..bench.calibrate import DEFAULT_LIMIT, MIN_QUESTIONS, Calibration, calibrate, given_questions, read_corpus
    from ..engine.fitted import FittedFor, endpoint_name, place
    from ..fit.critic import KEEP
    from ..settings import load_config

    limit = DEFAULT_LIMIT if args.limit is None else args.limit
    if limit < MIN_QUESTIONS:
        raise UsageError(f"--limit must be at least {MIN_QUESTIONS} (the fewest usable questions), got {limit}")
    keep = KEEP if args.keep is None else args.keep
    if not 0.5 <= keep < 1:
        raise UsageError(f"--keep must be a share from 0.5 to below 1, got {args.keep}")
    if args.threads is not None and args.threads < 1:
        raise UsageError(f"--threads must be 1 or more, got {args.threads}")
    if args.out:
        _refuse_shipped(Path(args.out))
    config = load_config(engine_flags(args), config_file=args.config)
    corpus = read_corpus(Path(args.index))  # a corpus too small is refused before any call
    questions = None  # a damaged questions file, or too few of its questions placed on the index, is refused too
    if args.questions:
        questions = given_questions(Path(args.questions), corpus, limit, args.seed)
    resolved = resolve_endpoint(config.endpoint, os.environ)
    chat = _open(config, resolved.nothing_configured, args.threads)
    meter = Meter()
    model, identity = asyncio.run(_probe(chat, meter))
    fitted_for = FittedFor(model, endpoint_name(resolved), identity)
    out = Path(args.out) if args.out else place(os.environ, fitted_for.endpoint, config.endpoint.model, model)
    plan = Calibration(corpus, fitted_for, out, limit, args.seed, args.resume, questions, keep)
    try:
        done = calibrate(plan, chat, calls=meter.llm_calls, stream=sys.stderr)
    except UsageError:
        raise
    except InputError as error:  # a damaged work folder: input that cannot be used as given
        raise UsageError(str(error)) from None
    fitted = done.model
    sizes = fitted.fitted_on["sizes"]
    on = "the answers head" if fitted.answers else "P(rel)·P(sup)"
    cut = f"abstention cut {fitted.abstain_threshold:.4f} on {on} ({fitted.fitted_on['abstain_cut']})"
    if not fitted.abstain_threshold:
        cut = f"no abstention cut ({fitted.fitted_on['abstain_cut']}: raise --limit; --resume keeps the answers asked)"
    print(
        f"wrote {escape_name(str(out))}: weights for {fitted_for.describe()}, fitted on {sizes['rows']} candidates "
        f"of {sizes['questions']} questions and {sizes['unanswerable_questions']} held out; {cut}; confidence map "
        f"a={fitted.confidence.a:.2f} c={fitted.confidence.c:.2f}; {done.calls} calls for {done.asked}"
    )
    if args.out or resolved.nothing_configured:
        print("selfrag: use them with --scorer-weights " + escape_name(str(out)), file=sys.stderr)
    return 0


def _open(config: Config, embedded: bool, threads: int | None) -> ChatModel:
    """The chat model calibrated: the configured endpoint's, or the embedded one (`threads`)."""
    if embedded:
        from ..llm.local import embedded_chat

        return embedded_chat(config.endpoint, os.environ, n_threads=threads)
    from ..llm.reflection_chat import open_chat

    return open_chat(config.endpoint, os.environ, config)


async def _probe(chat: ChatModel, meter: Meter) -> tuple[str, str]:
    """The model id the endpoint reports and its server's identity (when it reports one)."""
    try:
        capabilities = await chat.capabilities(meter)
    finally:
        close = getattr(chat, "aclose", None)
        if close is not None:
            await close()
    return capabilities.model, getattr(chat, "identity", "")


def _refuse_shipped(out: Path) -> None:
    from ..engine.calibration import SHIPPED

    if out.resolve() == Path(__file__).resolve().parents[1] / "data" / SHIPPED:
        raise UsageError(f"--out {escape_name(str(out))} is the shipped weights file; write your weights elsewhere")
