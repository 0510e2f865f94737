"""`selfrag index`: build or update a BM25 index from folders and files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..text import clean_for_terminal


def register(commands: Any) -> None:
    index = commands.add_parser("index", help="build a BM25 index from files", description="Build a BM25 index.")
    index.add_argument("paths", nargs="+", metavar="PATH", help="folders or files (.txt .md .jsonl .html)")
    index.add_argument("--out", "-o", required=True, help="index folder to write")
    index.add_argument("--include", action="append", help="glob of files to include (repeatable)")
    index.add_argument("--exclude", action="append", help="glob of files to skip (repeatable)")
    index.add_argument("--splitter", choices=["sentences", "tokens", "document"], help="how to cut chunks")
    index.add_argument("--chunk-size", type=int, help="chunk size in tokens")
    index.add_argument("--chunk-overlap", type=int, help="overlap in tokens (tokens splitter)")
    index.add_argument("--hidden", action="store_true", help="also read hidden files and folders")
    index.add_argument("--unstemmed-view", action="store_true", help="also store unstemmed BM25 (for --fusion)")
    index.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    index.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..chunking import ChunkingSettings
    from ..index import IndexSettings, index_paths

    given = {"mode": args.splitter, "max_tokens": args.chunk_size, "overlap": args.chunk_overlap}
    chunking = ChunkingSettings(**{name: value for name, value in given.items() if value is not None})
    progress = None if args.quiet or not sys.stderr.isatty() else _progress
    options: dict[str, Any] = {"include": args.include or (), "hidden": args.hidden}
    if args.unstemmed_view:
        options["settings"] = IndexSettings(unstemmed_view=True)
    if args.exclude:
        options["exclude"] = args.exclude
    report = index_paths([Path(p) for p in args.paths], Path(args.out), chunking=chunking, progress=progress, **options)
    print(summary(report), file=sys.stderr)
    return 0


def summary(report: Any) -> str:
    lines = [
        f"indexed {report.documents} documents as {report.chunks} chunks into {report.out_dir} "
        f"in {report.seconds:.1f}s",
        f"  files: {report.files_seen} seen, {report.files_added} added, {report.files_changed} changed, "
        f"{report.files_reused} unchanged, {report.files_deleted} deleted; {report.duplicates} duplicate chunks "
        "collapsed",
    ]
    if report.full_rebuild:
        lines.append(f"  rebuilt from scratch: {report.full_rebuild}")
    for skipped in report.skipped[:10]:
        lines.append(clean_for_terminal(f"  skipped {skipped.path}: {skipped.reason}"))
    if len(report.skipped) > 10:
        lines.append(f"  ... and {len(report.skipped) - 10} more skipped")
    return "\n".join(lines)


def _progress(done: int, total: int, label: str) -> None:
    print(f"\r  {done}/{total} {clean_for_terminal(label)[:60]:<60}", end="", file=sys.stderr, flush=True)
    if done >= total:
        print(file=sys.stderr)
