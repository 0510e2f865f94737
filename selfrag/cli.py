"""The command line: `selfrag index`, `ask`, `search`. The only module that prints or sets exit codes.

stdout carries the answer (or JSON); stderr carries progress, the trace, warnings and errors. Exit codes:
0 ok, 1 runtime failure (one line on stderr; the traceback only with --debug), 2 usage error, 130 Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from . import __version__
from .errors import InputError, SelfRagError
from .result import DoneEvent, Result, SegmentEvent, Source, StepEvent, TraceStep
from .text import clean_for_terminal, inert_markdown

KNOB_FLAGS = ("mode", "threshold", "beam_width", "max_depth", "ndocs", "w_rel", "w_sup", "w_use", "critic")


def _engine_options(parser: argparse.ArgumentParser) -> None:
    search = parser.add_argument_group("search (the paper's knobs)")
    search.add_argument("--mode", choices=["adaptive", "always", "never"], help="when to retrieve (default adaptive)")
    search.add_argument("--threshold", type=float, help="adaptive: retrieve when P(retrieve) > this (default 0.2)")
    search.add_argument("--beam-width", type=int, help="partial answers kept per step (default 1, greedy)")
    search.add_argument("--max-depth", type=int, help="most sentences in an answer (default 7)")
    search.add_argument("--ndocs", type=int, help="chunks per retrieval = candidates per beam (default 5)")
    search.add_argument("--w-rel", type=float, help="weight of ISREL (default 1.0)")
    search.add_argument("--w-sup", type=float, help="weight of ISSUP (default 1.0)")
    search.add_argument("--w-use", type=float, help="weight of ISUSE (default 0.5)")
    search.add_argument("--critic", choices=["fused", "separate"], help="who judges candidates (default fused)")
    search.add_argument("--use-seqscore", action="store_const", const=True, help="add the sentence probability term")
    search.add_argument("--gate-irrelevant", action="store_const", const=True, help="drop irrelevant candidates")
    search.add_argument("--gate-unsupported", action="store_const", const=True, help="drop unsupported candidates")
    limits = parser.add_argument_group("limits")
    limits.add_argument("--deadline", type=float, help="seconds per answer (default 600)")
    limits.add_argument("--max-llm-calls", type=int, help="HTTP requests per answer (default 400)")
    endpoint = parser.add_argument_group("endpoint (keys come from SELFRAG_API_KEY or OPENAI_API_KEY, never flags)")
    endpoint.add_argument("--base-url", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1")
    endpoint.add_argument("--model", "-m", help="model name (default: the endpoint's first model)")
    endpoint.add_argument("--critic-base-url", help="separate critic: its base URL (default: the same endpoint)")
    endpoint.add_argument("--critic-model", help="separate critic: its model")
    endpoint.add_argument("--max-concurrency", type=int, help="requests in flight at once (default 32)")
    endpoint.add_argument("--timeout", type=float, help="seconds per HTTP request (default 60)")
    endpoint.add_argument(
        "--send-openai-key", action="store_const", const=True,
        help="allow OPENAI_API_KEY to be sent to a base URL that is not OpenAI's",
    )
    parser.add_argument("--config", help="TOML config file (default: ~/.config/selfrag/config.toml)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="selfrag", description="Self-RAG answers with citations from your documents.")
    parser.add_argument("--version", action="version", version=f"selfrag {__version__}")
    parser.add_argument("--debug", action="store_true", help="print tracebacks of failures")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    index = commands.add_parser("index", help="build a BM25 index from files", description="Build a BM25 index.")
    index.add_argument("paths", nargs="+", metavar="PATH", help="folders or files (.txt .md .jsonl .html)")
    index.add_argument("--out", "-o", required=True, help="index folder to write")
    index.add_argument("--include", action="append", help="glob of files to include (repeatable)")
    index.add_argument("--exclude", action="append", help="glob of files to skip (repeatable)")
    index.add_argument("--splitter", choices=["sentences", "tokens", "document"], help="how to cut chunks")
    index.add_argument("--chunk-size", type=int, help="chunk size in tokens")
    index.add_argument("--chunk-overlap", type=int, help="overlap in tokens (tokens splitter)")
    index.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")

    ask = commands.add_parser("ask", help="answer a question", description="Answer a question with citations.")
    ask.add_argument("question", help="the question, or - to read it from stdin")
    ask.add_argument("--index", "-i", required=True, help="index folder (made by `selfrag index`)")
    out = ask.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the whole result as one JSON object")
    out.add_argument("--jsonl", action="store_true", help="stream events as JSON lines")
    out.add_argument("--trace", action="store_true", help="print each step of the search on stderr")
    _engine_options(ask)

    search = commands.add_parser("search", help="show the top chunks for a query", description="BM25 search.")
    search.add_argument("query", nargs="?", help="the query")
    search.add_argument("--queries", help="JSONL file of {\"_id\", \"text\"} queries (batch mode)")
    search.add_argument("--index", "-i", required=True, help="index folder")
    search.add_argument("-k", type=int, default=10, help="hits per query (default 10)")
    search.add_argument("--json", action="store_true", help="JSON output")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        handler = {"index": cmd_index, "ask": cmd_ask, "search": cmd_search}[args.command]
        return handler(args)
    except KeyboardInterrupt:
        print("selfrag: interrupted", file=sys.stderr)
        return 130
    except SelfRagError as error:
        if args.debug:
            traceback.print_exc()
        print(f"selfrag: error: {clean_for_terminal(str(error))}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 1
    except Exception as error:  # a bug: one line, the traceback with --debug
        if args.debug:
            traceback.print_exc()
        print(f"selfrag: internal error: {type(error).__name__}: {error} (run with --debug for details)",
              file=sys.stderr)
        return 1


# -- index -------------------------------------------------------------------------------------------
def cmd_index(args: argparse.Namespace) -> int:
    from .chunking import ChunkingSettings
    from .index import index_paths

    chunking = ChunkingSettings()
    overrides = {"splitter": args.splitter, "size": args.chunk_size, "overlap": args.chunk_overlap}
    chunking = chunking.with_values(**{k: v for k, v in overrides.items() if v is not None})
    progress = None if args.quiet or not sys.stderr.isatty() else _progress
    report = index_paths(
        [Path(p) for p in args.paths], Path(args.out), chunking=chunking,
        include=args.include or (), exclude=args.exclude or (), progress=progress,
    )
    print(report.summary(), file=sys.stderr)
    return 0


def _progress(done: int, total: int, label: str) -> None:
    print(f"\r  {done}/{total} {clean_for_terminal(label)[:60]:<60}", end="", file=sys.stderr, flush=True)
    if done == total:
        print(file=sys.stderr)


# -- ask ---------------------------------------------------------------------------------------------
def _flags(args: argparse.Namespace) -> dict[str, Any]:
    names = (*KNOB_FLAGS, "use_seqscore", "gate_irrelevant", "gate_unsupported", "deadline", "max_llm_calls",
             "base_url", "model", "critic_base_url", "critic_model", "max_concurrency", "timeout", "send_openai_key")
    return {name: getattr(args, name, None) for name in names}


def read_question(text: str, stdin: TextIO) -> str:
    question = stdin.read() if text == "-" else text
    if not question.strip():
        raise InputError("the question is empty: give it as an argument, or pipe it in with `-`")
    return question.strip()


def cmd_ask(args: argparse.Namespace) -> int:
    from .api import SelfRAG
    from .settings import load_config

    question = read_question(args.question, sys.stdin)
    config = load_config(_flags(args), config_file=args.config)
    rag = SelfRAG.from_index(args.index, config)
    result = asyncio.run(_ask(rag, question, args))
    if result.stop_reason in ("budget", "deadline", "llm_failure"):
        print(f"selfrag: note: the answer stopped early ({result.stop_reason}); it holds what was settled",
              file=sys.stderr)
    return 0


async def _ask(rag: Any, question: str, args: argparse.Namespace) -> Result:
    result = None
    streamed = False
    try:
        async for event in rag.astream(question):
            if args.jsonl:
                print(event.model_dump_json(), flush=True)
            if isinstance(event, StepEvent) and args.trace:
                print_step(event.step, sys.stderr)
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
        print(render_sources(result.sources))
    return result


def render_segment(event: SegmentEvent) -> str:
    from .engine.report import with_marker

    return clean_for_terminal(inert_markdown(with_marker(event.text, event.citation)))


def render_sources(sources: list[Source]) -> str:
    if not sources:
        return "\nSources: none (the answer was written without retrieved evidence)"
    lines = ["", "Sources:"]
    for source in sources:
        title = f"{source.title} — " if source.title else ""
        lines.append(clean_for_terminal(f"  [{source.n}] {title}{source.doc_id} (chunk {source.chunk_id})"))
    return "\n".join(lines)


def print_step(step: TraceStep, stream: TextIO) -> None:
    for beam in step.beams:
        p = f" p={beam.p_retrieve:.2f}" if beam.p_retrieve is not None else ""
        query = f" query={beam.query!r}" if beam.decision != "no" else ""
        print(clean_for_terminal(f"step {step.step} beam {beam.beam}: retrieve={beam.decision}{p}{query}"
                                 f" chunks={len(beam.chunks)}"), file=stream)
    for c in step.candidates:
        labels = ""
        if c.critique:
            k = c.critique
            labels = f" rel={k.relevance} sup={k.support} use={k.utility} final={k.is_final}"
        score = f" f={c.score:.3f}" if c.score is not None else ""
        agg = f" agg={c.aggregate:.3f}" if c.aggregate is not None else ""
        text = c.error or c.text
        print(clean_for_terminal(f"  [{c.status:>7}] {c.chunk or '-'}{labels}{score}{agg}: {text[:100]}"), file=stream)


# -- search ------------------------------------------------------------------------------------------
def cmd_search(args: argparse.Namespace) -> int:
    from .index import Index

    if (args.query is None) == (args.queries is None):
        raise InputError("give either a QUERY or --queries FILE.jsonl")
    if args.k < 1:
        raise InputError("-k must be at least 1")
    index = Index.load(Path(args.index))
    if args.query is not None:
        hits = index.find_relevant_chunks(args.query, args.k)
        if args.json:
            print(json.dumps({"query": args.query, "hits": [_hit(h) for h in hits]}, ensure_ascii=False))
        else:
            for rank, hit in enumerate(hits, 1):
                text = clean_for_terminal(hit.chunk.text.replace("\n", " "))[:120]
                print(f"{rank:>3}. {hit.score:7.3f}  {clean_for_terminal(hit.chunk.key)}  {text}")
        return 0
    ids, texts = read_queries(Path(args.queries))
    for query_id, hits in zip(ids, index.find_many(texts, args.k), strict=True):
        print(json.dumps({"_id": query_id, "hits": [_hit(h) for h in hits]}, ensure_ascii=False))
    return 0


def _hit(hit: Any) -> dict[str, Any]:
    chunk = hit.chunk
    return {"doc_id": chunk.doc_id, "chunk_id": chunk.chunk_id, "score": round(float(hit.score), 6), "text": chunk.text}


def read_queries(path: Path) -> tuple[list[str], list[str]]:
    """BEIR queries: one {"_id", "text"} object per line; bad lines are an error naming the line."""
    ids, texts, seen = [], [], set()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read {path}: {error}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            query_id, text = str(record["_id"]), str(record["text"])
        except (json.JSONDecodeError, KeyError, TypeError):
            raise InputError(f"{path}:{number}: expected a JSON object with \"_id\" and \"text\"") from None
        if query_id in seen:
            raise InputError(f"{path}:{number}: duplicate _id {query_id!r}")
        seen.add(query_id)
        ids.append(query_id)
        texts.append(text)
    return ids, texts
