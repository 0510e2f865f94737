"""`selfrag search`: the top chunks for one query, or for a BEIR queries file in batch mode."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import InputError, UsageError
from ..files import read_regular
from ..text import clean_for_terminal, escape_name, repair_text
from .common import add_supersession_flag


def register(commands: Any) -> None:
    search = commands.add_parser("search", help="show the top chunks for a query", description="BM25 search.")
    search.add_argument("query", nargs="?", help="the query")
    search.add_argument("--queries", help='JSONL file of {"_id", "text"} queries (batch mode)')
    search.add_argument("--index", "-i", required=True, help="index folder")
    search.add_argument("-k", type=int, default=10, help="hits per query (default 10)")
    search.add_argument("--json", action="store_true", help="JSON output")
    add_supersession_flag(search)
    search.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..retrieval.index import Index
    from ..retrieval.supersession import load_versions

    if (args.query is None) == (args.queries is None):
        raise UsageError("give either a QUERY or --queries FILE.jsonl")
    if args.k < 1:
        raise UsageError("-k must be at least 1")
    if args.query is not None:
        args.query = repair_text(args.query)  # bytes that are not UTF-8 become U+FFFD, controls go
    if args.query is not None and not args.query.strip():
        raise UsageError("the query is empty: give the words to search for")
    index = Index.load(Path(args.index))
    versions = load_versions(args.index) if args.supersession is not False else None

    def find_many(queries: list[str]) -> list[list[Any]]:
        if versions is None:
            return index.find_many(queries, args.k)
        found = index.find_many(queries, max(args.k, CANDIDATES))  # superseded hits yield among these
        return [versions.marked(versions.prefer_current(hits)[: args.k]) for hits in found]

    if args.query is not None:
        hits = find_many([args.query])[0]
        if args.json:
            print(json.dumps({"query": args.query, "hits": [_hit(h) for h in hits]}, ensure_ascii=False))
        elif not hits:  # said, not left blank: a query of stopwords or of words no document holds
            print(
                f"no chunk holds a word of {clean_for_terminal(args.query)!r} that the index searches", file=sys.stderr
            )
        else:
            for rank, hit in enumerate(hits, 1):
                text = clean_for_terminal(hit.chunk.text.replace("\n", " "))[:120]
                print(f"{rank:>3}. {hit.score:7.3f}  {escape_name(hit.chunk.key)}{_status(hit)}  {text}")
        return 0
    ids, texts = read_queries(Path(args.queries))
    for query_id, hits in zip(ids, find_many(texts), strict=True):
        print(json.dumps({"_id": query_id, "hits": [_hit(h) for h in hits]}, ensure_ascii=False))
    return 0


CANDIDATES = 100  # as deep as the engine's retriever looks (RetrievalSettings.depth)


def _status(hit: Any) -> str:
    version = hit.chunk.version
    if version is None:
        return ""
    return f" [superseded by {', '.join(map(escape_name, version.newer))}]" if version.newer else " [current]"


def _hit(hit: Any) -> dict[str, Any]:
    chunk = hit.chunk
    found = {
        "doc_id": chunk.doc_id,
        "chunk_id": chunk.chunk_id,
        "score": round(float(hit.score), 6),
        "text": chunk.text,
    }
    if chunk.version is not None:
        found["superseded_by"] = list(chunk.version.newer)
    return found


def read_queries(path: Path) -> tuple[list[str], list[str]]:
    """BEIR queries: one {"_id", "text"} object per line; bad lines are an error naming the line."""
    ids, texts, seen = [], [], set()
    try:
        lines = read_regular(path).decode("utf-8").splitlines()  # a FIFO or device is refused, never waited on
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read {path}: {getattr(error, 'strerror', None) or error}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            query_id, text = str(record["_id"]), str(record["text"])
        except (json.JSONDecodeError, KeyError, TypeError):
            raise InputError(f'{path}:{number}: expected a JSON object with "_id" and "text"') from None
        if query_id in seen:
            raise InputError(f"{path}:{number}: duplicate _id {query_id!r}")
        seen.add(query_id)
        ids.append(query_id)
        texts.append(text)
    return ids, texts
