"""`selfrag judge generate|retrieval|answers`: judgment lists, retriever precision@k and MRR, an LLM answer judge.

    selfrag judge generate --index DIR --out FILE [--limit N --seed S]   one LLM-written question per chunk
    selfrag judge retrieval --index DIR --judgments FILE [-k 5]          precision@k, hit@k, MRR@k (no LLM)
    selfrag judge answers RUN_DIR                                        contextual accuracy and completeness, 1-5

LLM-judged scores are written beside a run's results (judge.json) and never replace its deterministic metrics.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from .common import OUTPUT_FILE_IN_NEW_FOLDERS, add_engine_options, engine_flags


def register(commands: Any) -> None:
    judge = commands.add_parser(
        "judge",
        help="judgment lists, retrieval precision/MRR, LLM answer judge",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = judge.add_subparsers(dest="judge_command", required=True, metavar="SUBCOMMAND")

    generate = sub.add_parser("generate", help="ask the LLM for one question per chunk")
    generate.add_argument("--index", "-i", required=True, help="index folder")
    generate.add_argument("--out", required=True, help="judgment list to write (JSONL)")
    generate.add_argument("--limit", type=int, help="a seeded sample of N chunks (default: every chunk)")
    generate.add_argument("--seed", type=int, default=0)
    _endpoint_options(generate)
    generate.set_defaults(run=generate_command, outputs={"out": OUTPUT_FILE_IN_NEW_FOLDERS})

    retrieval = sub.add_parser("retrieval", help="precision@k and MRR of the retriever on a judgment list")
    retrieval.add_argument("--index", "-i", required=True, help="index folder")
    retrieval.add_argument("--judgments", required=True, help="judgment list (from `judge generate`)")
    retrieval.add_argument("-k", type=int, default=5, help="cut-off (default 5)")
    retrieval.add_argument("--json", action="store_true")
    retrieval.set_defaults(run=retrieval_command)

    answers = sub.add_parser("answers", help="LLM judge of a QA run's answers (contextual accuracy, completeness)")
    answers.add_argument("run_dir", help="a run folder of `selfrag bench run`")
    _endpoint_options(answers)
    answers.set_defaults(run=answers_command)


def _endpoint_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cache", help="request cache file (default: <cache dir>/bench/requests.sqlite3)")
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("--threads", type=int, help="embedded model only: llama.cpp threads")
    add_engine_options(parser)


def _chat(args: argparse.Namespace) -> Any:
    from ..bench.cache import CachedChatModel, RequestCache
    from ..bench.runner import open_endpoint
    from ..settings import load_config
    from .bench import cache_path

    config = load_config(engine_flags(args), config_file=args.config)
    inner, endpoint_id = open_endpoint(config, os.environ, args.threads)
    path = cache_path(args, os.environ)
    return CachedChatModel(inner, RequestCache(path) if path else None, endpoint=endpoint_id)


def generate_command(args: argparse.Namespace) -> int:
    from ..bench.judge import generate_judgments
    from ..retrieval.index import Index

    index = Index.load(Path(args.index))
    chat = _chat(args)

    async def go() -> int:
        try:
            return await generate_judgments(index, chat, Path(args.out), limit=args.limit, seed=args.seed)
        finally:
            await chat.aclose()

    written = asyncio.run(go())
    print(f"wrote {written} judgments to {args.out}", file=sys.stderr)
    return 0


def retrieval_command(args: argparse.Namespace) -> int:
    from ..bench.judge import read_judgments, retrieval_report
    from ..retrieval.index import Index

    report = retrieval_report(Index.load(Path(args.index)), read_judgments(Path(args.judgments)), args.k)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{report['queries']} questions, k = {report['k']}")
    for name, metric in report.items():
        if isinstance(metric, dict):
            print(f"  {name:<14} {metric['value']:.3f}  [{metric['low']:.3f}, {metric['high']:.3f}]")
    return 0


def answers_command(args: argparse.Namespace) -> int:
    from ..bench.judge import judge_answers

    chat = _chat(args)

    async def go() -> dict[str, Any]:
        try:
            return await judge_answers(Path(args.run_dir), chat)
        finally:
            await chat.aclose()

    print(json.dumps(asyncio.run(go()), indent=2))
    return 0
