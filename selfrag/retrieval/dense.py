"""Dense vectors beside the BM25 index: compute them at index time, store them, search them by cosine.

On disk, two extra files in the index generation (listed in its manifest, so sizes and sha256 are checked on
load like every other file): `dense.vectors.npy`, a float32 matrix with one unit-length row per chunk in
chunk order (saved with allow_pickle=False), and `dense.json`, `{"format": 1, "model": ..., "dimensions": ...,
"count": ...}` (refused unread above `MAX_META_BYTES`). A chunk is embedded as "title text", the text BM25
indexes. Loading checks the shape, dtype, finiteness and count against the index, and that the generation read
holds exactly the index's chunks.

At query time `DenseSource` is a `RankedSource` (see strategies.py) once bound to its queries' vectors:
`await source.bind(queries, meter)` embeds the queries not seen recently (one request for all of them) and
returns a source that ranks by cosine with numpy. The index's model is the one queries are embedded with; a
configured `embedding_model` that differs is refused, since vectors of two models are not comparable.

Re-indexing reuses the previous generation's vectors for chunks whose embedded text is unchanged (same model).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..config import Config, resolve_endpoint
from ..errors import ConfigError, RetrievalError
from ..schema import Chunk, Hit, Meter
from .embeddings import Embedder, OpenAIEmbedder, normalise
from .records import CHUNKS, chunks_jsonl, load_array, npy_bytes, parse_chunks
from .store import Generation, open_current, unusable

if TYPE_CHECKING:
    from .index import Index

VECTORS = "dense.vectors.npy"
META = "dense.json"
DENSE_FORMAT = 1
MAX_META_BYTES = 64 * 2**10  # dense.json holds four short fields
QUERY_CACHE = 1024  # query vectors kept per source (the engine often searches the question again)
ProgressFn = Callable[[int, int, str], None]


@dataclass(frozen=True, slots=True)
class DenseVectors:
    """One unit-length float32 row per index chunk, and the embedding model that made them."""

    model: str
    matrix: np.ndarray

    @property
    def dimensions(self) -> int:
        return int(self.matrix.shape[1])

    def files(self) -> dict[str, bytes]:
        """The extra files to store in an index generation (`Index.save(path, extra=...)`)."""
        meta = {"format": DENSE_FORMAT, "model": self.model, "dimensions": self.dimensions, "count": len(self.matrix)}
        return {VECTORS: npy_bytes(self.matrix.astype(np.float32)), META: json.dumps(meta).encode("utf-8")}

    def search(self, queries: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per query vector, the k most similar rows (cosine > 0), best first, ties by row."""
        if queries.shape[1] != self.dimensions:
            raise ConfigError(
                f"query vectors have {queries.shape[1]} dimensions but the index's have {self.dimensions}: the "
                f"endpoint is not serving {self.model!r} as it was at index time; rebuild the index with --embed"
            )
        k = min(k, len(self.matrix))
        results = []
        for scores in np.asarray(self.matrix @ queries.T, dtype=np.float32).T:
            rows = np.argpartition(-scores, k - 1)[:k] if 0 < k < len(scores) else np.arange(len(scores))
            rows = rows[scores[rows] > 0]
            rows = rows[np.lexsort((rows, -scores[rows]))]
            results.append((rows, scores[rows]))
        return results

    @classmethod
    def load(cls, path: str | Path, index: Index, *, mmap: bool = False) -> DenseVectors | None:
        """The vectors stored with the index at `path`, or None when it was built without --embed."""
        generation = open_current(path)
        if META not in generation.manifest["files"]:
            return None
        vectors = read_vectors(generation, mmap=mmap)
        if len(vectors.matrix) != len(index):
            raise unusable(path, f"it holds {len(vectors.matrix)} vectors for {len(index)} chunks")
        expected = generation.manifest["files"][CHUNKS]["sha256"]
        if hashlib.sha256(chunks_jsonl(list(index.loop_over_chunks()))).hexdigest() != expected:
            raise RetrievalError(f"the index at {path} changed while it was being opened; open it again")
        return vectors


def read_vectors(generation: Generation, *, mmap: bool = False) -> DenseVectors:
    """The dense files of one generation, checked (RetrievalError with a rebuild hint when unusable)."""
    out_dir = generation.folder.parent
    try:
        meta = json.loads(generation.read(META, limit=MAX_META_BYTES))
        matrix = load_array(generation, VECTORS, mmap)
    except (ValueError, OSError, EOFError, RecursionError) as error:
        raise unusable(out_dir, f"its dense vectors cannot be read ({error})") from error
    if not isinstance(meta, dict) or meta.get("format") != DENSE_FORMAT or not isinstance(meta.get("model"), str):
        raise unusable(out_dir, f"{META} is malformed or from another format")
    if matrix.dtype != np.float32 or matrix.ndim != 2 or matrix.shape[1] < 1:
        raise unusable(out_dir, f"{VECTORS} is not a float32 matrix")
    if matrix.shape != (meta.get("count"), meta.get("dimensions")) or not np.all(np.isfinite(matrix)):
        raise unusable(out_dir, f"{VECTORS} does not match {META}")
    return DenseVectors(meta["model"], matrix)


def embedding_text(chunk: Chunk) -> str:
    """What a chunk is embedded as: the same "title text" that BM25 indexes."""
    return f"{chunk.title} {chunk.text}" if chunk.title else chunk.text


# index time -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EmbedReport:
    model: str
    embedded: int  # chunks sent to the endpoint this run
    reused: int  # chunks whose vector came from the previous index
    requests: int  # HTTP requests, retries included
    tokens: int


async def embed_chunks(
    chunks: Sequence[Chunk],
    embedder: Embedder,
    *,
    previous: Mapping[str, np.ndarray] | None = None,
    progress: ProgressFn | None = None,
) -> tuple[DenseVectors, EmbedReport]:
    """Vectors for `chunks` in order; texts found in `previous` (text → vector, same model) are not re-sent."""
    texts = [embedding_text(c) for c in chunks]
    known = previous or {}
    missing = list(dict.fromkeys(t for t in texts if t not in known))
    meter = Meter()
    fresh: dict[str, np.ndarray] = {}
    step = 16 * getattr(embedder, "batch_size", 64)  # progress every few concurrent batches
    for start in range(0, len(missing), step):
        part = missing[start : start + step]
        fresh.update(zip(part, await embedder.embed(part, meter), strict=True))
        if progress is not None:
            progress(min(start + step, len(missing)), len(missing), "embedding chunks")
    rows = [fresh[t] if t in fresh else known[t] for t in texts]
    dims = {len(row) for row in rows}
    if len(dims) > 1:  # the previous vectors came from another revision of the model
        return await embed_chunks(chunks, embedder, progress=progress)
    matrix = normalise(np.asarray(rows, dtype=np.float32).reshape(len(rows), -1))
    report = EmbedReport(embedder.model, len(missing), len(texts) - len(missing), meter.llm_calls, meter.prompt_tokens)
    return DenseVectors(embedder.model, matrix), report


def previous_vectors(path: str | Path, model: str) -> dict[str, np.ndarray]:
    """Text → vector from the current index at `path` when it was embedded with `model`; {} otherwise."""
    try:
        generation = open_current(path)
        if META not in generation.manifest["files"]:
            return {}
        vectors = read_vectors(generation)
        if vectors.model != model:
            return {}
        chunks = parse_chunks(generation.read(CHUNKS))
    except (RetrievalError, ValueError, KeyError, TypeError, RecursionError):
        return {}
    if len(chunks) != len(vectors.matrix):
        return {}
    return {embedding_text(c): row for c, row in zip(chunks, vectors.matrix, strict=True)}


def embed_hook(
    embedder: Embedder, out_dir: str | Path, *, progress: ProgressFn | None = None
) -> tuple[Callable[[Index], Mapping[str, bytes]], list[EmbedReport]]:
    """For `index_paths(extra_files=...)`: embeds the built index (reusing `out_dir`'s vectors) before it is
    saved, so the vectors land in the same generation. The second value collects the report."""
    reports: list[EmbedReport] = []

    def hook(index: Index) -> Mapping[str, bytes]:
        previous = previous_vectors(out_dir, embedder.model)
        chunks = list(index.loop_over_chunks())
        vectors, report = asyncio.run(_embed_and_close(chunks, embedder, previous, progress))
        reports.append(report)
        return vectors.files()

    return hook, reports


async def _embed_and_close(
    chunks: Sequence[Chunk], embedder: Embedder, previous: Mapping[str, np.ndarray], progress: ProgressFn | None
) -> tuple[DenseVectors, EmbedReport]:
    try:
        return await embed_chunks(chunks, embedder, previous=previous, progress=progress)
    finally:
        close = getattr(embedder, "aclose", None)
        if close is not None:
            await close()


# query time -----------------------------------------------------------------------------------------------


class DenseSource:
    """Cosine search over an index's vectors; `bind` embeds queries and returns a `RankedSource`."""

    def __init__(self, index: Index, vectors: DenseVectors, embedder: Embedder) -> None:
        if embedder.model != vectors.model:
            raise ConfigError(
                f"the index was embedded with {vectors.model!r} but queries would be embedded with "
                f"{embedder.model!r}; vectors of different models cannot be compared: use embedding_model = "
                f"{vectors.model!r} (or leave it unset), or rebuild with --embed --embedding-model {embedder.model}"
            )
        self.index, self.vectors, self.embedder = index, vectors, embedder
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._chunks = list(index.loop_over_chunks())

    @property
    def model(self) -> str:
        return self.vectors.model

    async def bind(self, queries: Sequence[str], meter: Meter) -> BoundDense:
        """A ranked source for exactly these queries (one embeddings request for those not cached)."""
        missing = [q for q in dict.fromkeys(queries) if q not in self._cache]
        if missing:
            for query, row in zip(missing, await self.embedder.embed(missing, meter), strict=True):
                self._cache[query] = row
        found = {}
        for query in dict.fromkeys(queries):
            self._cache.move_to_end(query)
            found[query] = self._cache[query]
        while len(self._cache) > QUERY_CACHE:
            self._cache.popitem(last=False)
        return BoundDense(self, found)

    def find_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        raise ConfigError(
            "dense retrieval embeds each query over HTTP: search with `await retriever.asearch(...)` "
            "(the engine does), or open the index with dense = off for synchronous BM25 search"
        )

    def hits(self, vectors: np.ndarray, k: int) -> list[list[Hit]]:
        return [
            [Hit(self._chunks[r], float(s)) for r, s in zip(rows.tolist(), scores.tolist(), strict=True)]
            for rows, scores in self.vectors.search(vectors, k)
        ]

    async def aclose(self) -> None:
        close = getattr(self.embedder, "aclose", None)
        if close is not None:
            await close()


@dataclass(frozen=True, slots=True)
class BoundDense:
    """A DenseSource with its queries' vectors in hand: a plain synchronous RankedSource."""

    source: DenseSource
    vectors: Mapping[str, np.ndarray]

    def find_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        if not queries:
            return []
        return self.source.hits(np.stack([self.vectors[q] for q in queries]), k)


def open_dense(
    path: str | Path, index: Index, config: Config, environ: Mapping[str, str], embedder: Embedder | None = None
) -> DenseSource | None:
    """The dense source for an engine over the index at `path`, as `config.dense` and `embedding_model` say."""
    if config.dense == "off":
        return None
    vectors = DenseVectors.load(path, index)
    if vectors is None:
        if config.dense == "on":
            raise ConfigError(
                f"dense = on, but the index at {path} has no dense vectors; rebuild it with: selfrag index PATH "
                f"--out {path} --embed --embedding-model MODEL (or set dense = auto or off)"
            )
        return None
    if config.embedding_model and config.embedding_model != vectors.model:
        raise ConfigError(
            f"the index at {path} was embedded with {vectors.model!r}, but embedding_model is "
            f"{config.embedding_model!r}: vectors of different models cannot be compared; unset embedding_model, "
            f"or rebuild with: selfrag index PATH --out {path} --embed --embedding-model {config.embedding_model}"
        )
    if embedder is None:
        resolved = resolve_endpoint(config.endpoint, environ)
        if resolved.nothing_configured:
            raise ConfigError(
                f"the index at {path} has dense vectors ({vectors.model}), so queries are embedded: configure an "
                "endpoint serving that model (--base-url), or set dense = off"
            )
        embedder = OpenAIEmbedder(resolved, vectors.model)
    return DenseSource(index, vectors, embedder)
