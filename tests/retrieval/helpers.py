"""Helpers shared by the retrieval-layer tests."""

from __future__ import annotations

import os
from pathlib import Path

from selfrag.retrieval.chunking import ChunkingSettings
from selfrag.schema import Chunk

OLD = 1_600_000_000  # 2020-09-13: far older than any scan, so mtimes count as settled (not "racy")
WORDS = ChunkingSettings(mode="sentences", max_tokens=40, tokenizer="whitespace")


def write(path: Path, content: str | bytes, *, mtime: float | None = OLD) -> Path:
    """Write a file (making folders) and give it an old mtime unless told otherwise."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def chunk(doc_id: str, number: int, text: str, *, date: str | None = None, title: str = "") -> Chunk:
    return Chunk(doc_id, number, text, title=title, source=f"test:{doc_id}", date=date)
