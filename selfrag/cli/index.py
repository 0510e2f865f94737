"""`selfrag index`: build or update a BM25 index from folders and files."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ..errors import ConfigError, UsageError
from ..text import clean_for_terminal, escape_name
from .common import add_endpoint_options, engine_flags


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
    index.add_argument(
        "--supersede-from",
        action="append",
        metavar="FOLDER",
        help="only documents in this folder may supersede others (repeatable; default: any folder; the "
        "supersede_from setting)",
    )
    index.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    dense = index.add_argument_group(
        "dense vectors (keys come from SELFRAG_API_KEY or OPENAI_API_KEY, never flags)",
        "With --embed, every chunk is also embedded on the endpoint's /v1/embeddings and stored with the index; "
        "give --embed on every run (an index rebuilt without it is BM25 only). Unchanged chunks reuse their "
        "vectors.",
    )
    dense.add_argument("--embed", action="store_true", help="also store dense vectors of every chunk")
    dense.add_argument("--embedding-model", help="embedding model, e.g. text-embedding-3-small (needed with --embed)")
    add_endpoint_options(dense, ("base_url", "max_concurrency", "timeout", "send_openai_key"))
    dense.add_argument("--config", help="TOML config file (endpoint, embedding_model and supersede_from)")
    index.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..retrieval.chunking import ChunkingSettings
    from ..retrieval.index import IndexSettings
    from ..retrieval.ingest import index_paths
    from ..settings import load_config

    given = {"mode": args.splitter, "max_tokens": args.chunk_size, "overlap": args.chunk_overlap}
    chunking = ChunkingSettings(**{name: value for name, value in given.items() if value is not None})
    progress = None if args.quiet or not sys.stderr.isatty() else _progress
    flags = {**engine_flags(args), "supersede_from": ",".join(args.supersede_from) if args.supersede_from else None}
    config = load_config(flags, config_file=args.config)  # flags > SELFRAG_* > file, as for every command
    options: dict[str, Any] = {"include": args.include or (), "hidden": args.hidden}
    options["supersede_from"] = config.supersede_from
    if args.unstemmed_view:
        options["settings"] = IndexSettings(unstemmed_view=True)
    if args.exclude:
        options["exclude"] = args.exclude
    reports: list[Any] = []
    if args.embed:
        options["extra_files"], reports = _embedding_hook(config, args, progress)
    elif args.embedding_model:
        raise UsageError("--embedding-model is only used with --embed")
    report = index_paths([Path(p) for p in args.paths], Path(args.out), chunking=chunking, progress=progress, **options)
    print(summary(report), file=sys.stderr)
    for embedded in reports:
        print(
            f"  dense vectors ({clean_for_terminal(embedded.model)}): {embedded.embedded} chunks embedded, "
            f"{embedded.reused} reused, {embedded.requests} requests, {embedded.tokens} tokens",
            file=sys.stderr,
        )
    return 0


def _embedding_hook(config: Any, args: argparse.Namespace, progress: Any) -> tuple[Any, list[Any]]:
    """The index_paths hook that embeds the chunks on the configured endpoint (flags > environment > file)."""
    from ..config import resolve_endpoint
    from ..retrieval.dense import embed_hook
    from ..retrieval.embeddings import OpenAIEmbedder

    if not config.embedding_model:
        raise ConfigError(
            "--embed needs an embedding model: pass --embedding-model NAME (or set SELFRAG_EMBEDDING_MODEL)"
        )
    resolved = resolve_endpoint(config.endpoint, os.environ)
    if resolved.nothing_configured:
        raise ConfigError(
            "--embed needs an endpoint: pass --base-url (e.g. http://127.0.0.1:8000/v1) or set OPENAI_API_KEY"
        )
    return embed_hook(OpenAIEmbedder(resolved, config.embedding_model), Path(args.out), progress=progress)


def summary(report: Any) -> str:
    lines = [
        f"indexed {report.documents} documents as {report.chunks} chunks into {escape_name(str(report.out_dir))} "
        f"in {report.seconds:.1f}s",
        f"  files: {report.files_seen} seen, {report.files_added} added, {report.files_changed} changed, "
        f"{report.files_reused} unchanged, {report.files_deleted} deleted; {report.duplicates} duplicate chunks "
        "collapsed",
    ]
    if report.full_rebuild:
        lines.append(f"  rebuilt from scratch: {report.full_rebuild}")
    if report.links:
        lines.append(f"  versions: {report.links} older → newer links (superseded documents yield to newer ones)")
    if report.supersede_from:
        lines.append(f"  only documents under {', '.join(f + '/' for f in report.supersede_from)} may supersede")
    for note in report.notes[:10]:
        lines.append(clean_for_terminal(f"  note: {note}"))
    if len(report.notes) > 10:
        lines.append(f"  ... and {len(report.notes) - 10} more notes")
    for skipped in report.skipped[:10]:
        lines.append(clean_for_terminal(f"  skipped {escape_name(skipped.path)}: {skipped.reason}"))
    if len(report.skipped) > 10:
        lines.append(f"  ... and {len(report.skipped) - 10} more skipped")
    return "\n".join(lines)


def _progress(done: int, total: int, label: str) -> None:
    print(f"\r  {done}/{total} {clean_for_terminal(label)[:60]:<60}", end="", file=sys.stderr, flush=True)
    if done >= total:
        print(file=sys.stderr)
