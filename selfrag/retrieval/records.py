"""The record files of an index, independent of bm25s: chunk lines, numpy arrays and their invariants.

- `chunks.jsonl`: one JSON object per chunk in row order: doc_id, chunk_id, text, title, source, date.
- `.npy` arrays are written and read with allow_pickle=False; an object array fails to load.
- `csc_problem` checks what bm25s trusts blindly: shapes, dtypes, a non-decreasing pointer array that matches
  the vocabulary and postings, postings inside the corpus, finite scores.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..schema import Chunk
from .store import Generation

CHUNKS = "chunks.jsonl"


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()


def load_array(generation: Generation, name: str, mmap: bool) -> np.ndarray:
    source = generation.path(name) if mmap else io.BytesIO(generation.read(name))
    array: np.ndarray = np.load(source, mmap_mode="r" if mmap else None, allow_pickle=False)
    return array


def csc_problem(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, terms: int, docs: int) -> str | None:
    if data.ndim != 1 or indices.ndim != 1 or indptr.ndim != 1:
        return "arrays must be one-dimensional"
    if data.dtype != np.float32 or indices.dtype.kind not in "iu" or indptr.dtype.kind not in "iu":
        return "unexpected dtypes"
    if len(indptr) != terms + 1 or indptr[0] != 0 or indptr[-1] != len(indices) or len(indices) != len(data):
        return "pointer array does not match the vocabulary and postings"
    if np.any(np.diff(indptr) < 0):
        return "pointer array decreases"
    if len(indices) and (indices.min() < 0 or indices.max() >= docs):
        return "a posting points past the last chunk"
    if not np.all(np.isfinite(data)):
        return "non-finite scores"
    return None


def chunks_jsonl(chunks: Sequence[Chunk]) -> bytes:
    lines = (json.dumps(_record(c), ensure_ascii=False, allow_nan=False) for c in chunks)
    return ("\n".join(lines) + "\n").encode("utf-8")


def _record(chunk: Chunk) -> dict[str, Any]:
    return {"doc_id": chunk.doc_id, "chunk_id": chunk.chunk_id, "text": chunk.text, "title": chunk.title,
            "source": chunk.source, "date": chunk.date}  # fmt: skip


def parse_chunks(data: bytes) -> list[Chunk]:
    """Chunks from `chunks.jsonl` bytes; ValueError, KeyError or TypeError if a line is malformed."""
    return [_chunk(json.loads(line)) for line in data.decode("utf-8").splitlines()]


def _chunk(record: dict[str, Any]) -> Chunk:
    chunk = Chunk(**{key: record[key] for key in ("doc_id", "chunk_id", "text", "title", "source", "date")})
    strings = (chunk.doc_id, chunk.text, chunk.title, chunk.source)
    if not all(isinstance(s, str) for s in strings) or type(chunk.chunk_id) is not int:
        raise TypeError("a chunk record has a field of the wrong type")
    if chunk.date is not None and not isinstance(chunk.date, str):
        raise TypeError("a chunk record has a date that is not a string")
    return chunk


def checksum(chunks: Sequence[Chunk]) -> str:
    """The first 16 hex digits of a sha256 over a document's chunks (text and metadata): cheap to compare."""
    digest = hashlib.sha256()
    for c in chunks:
        digest.update("\x1f".join((str(c.chunk_id), c.title, c.source, c.date or "", c.text, "\x1e")).encode())
    return digest.hexdigest()[:16]
