"""The BM25 index: build, save, load and search chunks. The only module that imports bm25s.

Tokenisation mirrors `bm25s.tokenize` (lower-case, words of two or more characters, English stopwords removed,
then the Snowball stemmer via PyStemmer), the setup behind bm25s's published BEIR figures (SciFact nDCG@10
0.687 with Lucene scoring, k1 1.5, b 0.75). It is done here so the vocabulary order is deterministic and
queries always go through the corpus's own analyzer. One-character words ("vitamin C") are dropped, so a
query of only such words and stopwords finds nothing. With `unstemmed_view` a second, unstemmed matrix is
kept for stemmed+unstemmed fusion (`strategies.py`, `fusion.py`).

On disk (see `store.py` for the atomic CURRENT/generation design): `chunks.jsonl` (one chunk record per
line, JSON, in row order), per view `<view>.data.npy`, `<view>.indices.npy`, `<view>.indptr.npy` (the CSC
score matrix, loaded with allow_pickle=False) and `<view>.vocab.json` (terms in id order), any extra files a
caller adds (`ingest.index_paths` adds its file catalog), and `manifest.json`. Nothing is pickled. Loading refuses
corrupt, partial, edited, older-format or mismatched indexes and checks the matrix invariants bm25s trusts.

Search: k is clamped to the number of chunks, empty or stopword-only queries return no hits, zero-score hits
are dropped, ties are ordered by chunk position (also at the cut). bm25s computes the scores
(`BM25.get_scores_from_ids`); the top-k selection is done here, not by `BM25.retrieve`, because numpy's
`argpartition(scores, -k)` degrades badly on mostly-zero score vectors (see `_top`) and cannot break ties.
"""

from __future__ import annotations

import json
import math
import re
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from importlib import metadata
from itertools import chain
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import Stemmer
from bm25s.stopwords import STOPWORDS_EN

from ..errors import ConfigError, InputError, RetrievalError
from ..schema import Chunk, Hit
from .chunking import ChunkingSettings
from .records import CHUNKS, checksum, chunks_jsonl, csc_problem, load_array, npy_bytes, parse_chunks
from .store import (
    FORMAT,
    FORMAT_VERSION,
    MAX_JSON_BYTES,
    FileOps,
    Generation,
    open_current,
    prune,
    unusable,
    write_generation,
)

VIEWS = ("stemmed", "plain")
METHODS = ("lucene", "robertson", "atire")
_ARRAYS = ("data", "indices", "indptr")
_TOKEN = re.compile(r"(?u)\b\w\w+\b")  # bm25s's default token pattern


@dataclass(frozen=True, slots=True)
class IndexSettings:
    """How chunks are tokenised and scored; recorded in the manifest and checked on load."""

    k1: float = 1.5
    b: float = 0.75
    method: str = "lucene"  # lucene | robertson | atire
    stemmer: str | None = "english"  # a PyStemmer algorithm, or None for no stemming
    stopwords: str = "en"  # en | none
    include_title: bool = True  # index "title text" rather than the chunk text alone
    unstemmed_view: bool = False  # also keep an unstemmed matrix (for stemmed + unstemmed fusion)

    def __post_init__(self) -> None:
        if not (0 < self.k1 <= 10 and 0 <= self.b <= 1):
            raise ConfigError(f"BM25 k1={self.k1}, b={self.b} out of range; use 0 < k1 <= 10 and 0 <= b <= 1")
        if self.method not in METHODS:
            raise ConfigError(f"BM25 method {self.method!r} is unknown; use one of {', '.join(METHODS)}")
        if self.stemmer is not None and self.stemmer not in Stemmer.algorithms():
            raise ConfigError(f"stemmer {self.stemmer!r} is unknown; use 'english', another PyStemmer name, or none")
        if self.stopwords not in ("en", "none"):
            raise ConfigError(f"stopwords {self.stopwords!r} are unknown; use 'en' or 'none'")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> IndexSettings:
        return cls(**data)

    def view_names(self) -> tuple[str, ...]:
        return VIEWS if self.unstemmed_view else VIEWS[:1]


class Analyzer:
    """Text to index terms, exactly as `bm25s.tokenize(..., stopwords, stemmer)` does it."""

    def __init__(self, settings: IndexSettings, *, stem: bool = True) -> None:
        self._stopwords = frozenset(STOPWORDS_EN if settings.stopwords == "en" else ())
        self._stemmer = Stemmer.Stemmer(settings.stemmer) if stem and settings.stemmer else None

    def terms(self, text: str) -> list[str]:
        words = _TOKEN.findall(text.lower())
        term_of = self.term_map(words)
        return [term_of[w] for w in words if w in term_of]

    def split_many(self, texts: Iterable[str]) -> list[list[str]]:
        """Lower-cased words of two or more characters, stopwords still in."""
        return [_TOKEN.findall(text.lower()) for text in texts]

    def term_map(self, words: Iterable[str]) -> dict[str, str]:
        """Word → index term for every distinct non-stopword, in order of first appearance."""
        unique = [w for w in dict.fromkeys(words) if w not in self._stopwords]
        stems = self._stemmer.stemWords(unique) if self._stemmer is not None else unique
        return dict(zip(unique, stems, strict=True))


@dataclass(frozen=True, slots=True)
class _View:
    """One score matrix with its analyzer and vocabulary."""

    analyzer: Analyzer
    vocab: Mapping[str, int]
    bm25: Any  # bm25s.BM25

    def query_ids(self, text: str) -> list[int]:
        return [self.vocab[t] for t in self.analyzer.terms(text) if t in self.vocab]


class Index:
    """Chunks plus their BM25 matrices. Build with `build`, persist with `save`, reopen with `load`."""

    def __init__(
        self,
        chunks: Sequence[Chunk],
        settings: IndexSettings,
        views: Mapping[str, _View],
        chunking: ChunkingSettings | None = None,
    ) -> None:
        self._chunks = tuple(chunks)
        self.settings = settings
        self.chunking = chunking
        self._views = dict(views)
        self._rows = {(c.doc_id, c.chunk_id): row for row, c in enumerate(self._chunks)}
        self._by_doc: dict[str, list[int]] = {}
        for row, chunk in sorted(enumerate(self._chunks), key=lambda rc: (rc[1].doc_id, rc[1].chunk_id)):
            self._by_doc.setdefault(chunk.doc_id, []).append(row)

    # building
    @classmethod
    def build(
        cls,
        chunks: Iterable[Chunk],
        settings: IndexSettings = IndexSettings(),
        *,
        chunking: ChunkingSettings | None = None,
    ) -> Index:
        """An in-memory index of `chunks` (RetrievalError when there is nothing to index)."""
        rows = tuple(chunks)
        if not rows:
            raise RetrievalError("nothing to index: no chunks with text; add documents and run again")
        keys = {(c.doc_id, c.chunk_id) for c in rows}
        if len(keys) != len(rows):
            raise InputError("two chunks share a (doc_id, chunk_id); give every document a unique id")
        texts = [f"{c.title} {c.text}" if settings.include_title and c.title else c.text for c in rows]
        views = {name: _build_view(texts, settings, stem=(name == "stemmed")) for name in settings.view_names()}
        return cls(rows, settings, views, chunking)

    # searching
    def __len__(self) -> int:
        return len(self._chunks)

    @property
    def document_count(self) -> int:
        return len(self._by_doc)

    @property
    def views(self) -> tuple[str, ...]:
        return tuple(self._views)

    def find_relevant_chunks(self, question: str, k: int) -> list[Hit]:
        """The best `k` chunks for `question`, best first; [] for an empty or stopword-only question."""
        return self.find_many([question], k)[0]

    def find_many(self, queries: Sequence[str], k: int, *, view: str = "stemmed") -> list[list[Hit]]:
        """`find_relevant_chunks` for a batch of queries (each analysed once, scored by bm25s, cut exactly)."""
        target = self._view(view)
        k = min(k, len(self._chunks))
        out: list[list[Hit]] = []
        for query in queries:
            ids = target.query_ids(query)
            if not ids or k <= 0:
                out.append([])
                continue
            rows, scores = _top(target.bm25.get_scores_from_ids(ids), k)
            out.append([Hit(self._chunks[r], s) for r, s in zip(rows.tolist(), scores.tolist(), strict=True)])
        return out

    def idf(self, terms: Sequence[str], *, view: str = "stemmed") -> list[float]:
        """Lucene's BM25 idf of each term (as bm25s scores it); unknown terms get the idf of a term seen once."""
        target = self._view(view)
        indptr, n = target.bm25.scores["indptr"], len(self._chunks)
        frequencies = [int(indptr[i + 1] - indptr[i]) if (i := target.vocab.get(t)) is not None else 1 for t in terms]
        return [math.log(1 + (n - df + 0.5) / (df + 0.5)) for df in frequencies]

    def contains(self, terms: Sequence[str], chunks: Sequence[Chunk], *, view: str = "stemmed") -> np.ndarray:
        """A boolean matrix: does chunk i (an indexed chunk) contain index term j? Read from the postings."""
        target = self._view(view)
        scores = target.bm25.scores
        rows = np.fromiter((self._rows[(c.doc_id, c.chunk_id)] for c in chunks), dtype=np.int64, count=len(chunks))
        found = np.zeros((len(chunks), len(terms)), dtype=bool)
        for j, term in enumerate(terms):
            if (i := target.vocab.get(term)) is not None:
                found[:, j] = np.isin(rows, scores["indices"][scores["indptr"][i] : scores["indptr"][i + 1]])
        return found

    def analyze(self, text: str, *, view: str = "stemmed") -> list[str]:
        """The index terms of `text` as the named view sees them."""
        return self._view(view).analyzer.terms(text)

    def _view(self, name: str) -> _View:
        if name not in self._views:
            raise ConfigError(
                f"this index has no {name!r} view (it has: {', '.join(self._views)}); "
                "rebuild it with unstemmed_view enabled to use stemmed+unstemmed fusion"
            )
        return self._views[name]

    # chunks
    def get_chunk(self, doc_id: str, chunk_id: int) -> Chunk:
        row = self._rows.get((doc_id, chunk_id))
        if row is None:
            raise InputError(f"no chunk {doc_id}#{chunk_id} in this index; check the id or rebuild the index")
        return self._chunks[row]

    def chunks_of(self, doc_id: str) -> tuple[Chunk, ...]:
        """The indexed chunks of one document, by chunk number (gaps where duplicates were collapsed)."""
        return tuple(self._chunks[row] for row in self._by_doc.get(doc_id, ()))

    def loop_over_chunks(self) -> Iterator[Chunk]:
        return iter(self._chunks)

    # persistence
    def save(self, path: str | Path, *, extra: Mapping[str, bytes] | None = None, ops: FileOps | None = None) -> Path:
        """Write the index durably to folder `path` (see store.py); returns the new generation folder."""
        files = {CHUNKS: chunks_jsonl(self._chunks), **(extra or {})}
        for name, view in self._views.items():
            files.update(_view_files(name, view))
        generation = write_generation(Path(path), files, self._manifest(), ops or FileOps())
        current = open_current(path)
        for name in current.manifest["files"]:
            current.read(name)  # read back and verify before old generations go
        prune(path)
        return generation

    def _manifest(self) -> dict[str, Any]:
        documents: dict[str, list[Chunk]] = {}
        for chunk in self._chunks:
            documents.setdefault(chunk.doc_id, []).append(chunk)
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "selfrag_version": _selfrag_version(),
            "bm25s_version": bm25s.__version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "settings": self.settings.to_dict(),
            "chunking": self.chunking.to_dict() if self.chunking else None,
            "counts": {"chunks": len(self._chunks), "documents": len(documents)}
            | {f"{name}_terms": len(view.vocab) for name, view in self._views.items()},
            "document_fields": ["doc_id", "chunks", "sha256_16"],
            "documents": [[doc_id, len(chunks), checksum(chunks)] for doc_id, chunks in documents.items()],
        }

    @classmethod
    def load(cls, path: str | Path, *, mmap: bool = False, settings: IndexSettings | None = None) -> Index:
        """Open the index at `path`; RetrievalError (with a rebuild hint) if it is unusable or mismatched."""
        generation = open_current(path)
        manifest = generation.manifest
        stored = _stored_settings(manifest, Path(path))
        if settings is not None and settings != stored:
            raise RetrievalError(
                f"the index at {path} was built with other settings ({_diff(stored, settings)}); "
                f"rebuild it with: selfrag index PATH --out {path}"
            )
        try:
            chunks = parse_chunks(generation.read(CHUNKS))
        except (ValueError, KeyError, TypeError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
            raise unusable(path, f"{CHUNKS} is malformed ({error})") from error
        if len(chunks) != manifest.get("counts", {}).get("chunks"):
            raise unusable(path, "its chunk count does not match the manifest")
        views = {name: _load_view(generation, name, stored, len(chunks), mmap) for name in stored.view_names()}
        chunking = manifest.get("chunking")
        return cls(chunks, stored, views, ChunkingSettings.from_dict(chunking) if chunking else None)


def _top(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best rows with a positive score, best first, ties broken by row number.

    bm25s's own top-k calls np.argpartition(scores, -k), which numpy runs about 15 times slower when most
    scores are 0 (sparse BM25 scores: 5 ms instead of 0.35 ms over 100k rows); partitioning the negated scores
    at k avoids that. When the k-th score ties with rows outside the cut, every tied row is considered.
    """
    if k < len(scores):
        rows = np.argpartition(-scores, k - 1)[:k]
        floor = scores[rows].min()
        if floor > 0 and np.count_nonzero(scores >= floor) > k:
            rows = np.flatnonzero(scores >= floor)
    else:
        rows = np.arange(len(scores))
    rows = rows[scores[rows] > 0]
    rows = rows[np.lexsort((rows, -scores[rows]))][:k]
    return rows, scores[rows]


def _build_view(texts: Sequence[str], settings: IndexSettings, *, stem: bool) -> _View:
    analyzer = Analyzer(settings, stem=stem)
    documents = analyzer.split_many(texts)
    vocab: dict[str, int] = {}
    word_ids = {
        w: vocab.setdefault(t, len(vocab)) for w, t in analyzer.term_map(chain.from_iterable(documents)).items()
    }
    ids = [[word_ids[w] for w in words if w in word_ids] for words in documents]
    if not vocab:
        raise RetrievalError(
            "nothing to index: every chunk is empty after removing stopwords and one-letter words; add real text"
        )
    bm25 = bm25s.BM25(k1=settings.k1, b=settings.b, method=settings.method)
    bm25.index((ids, vocab), create_empty_token=False, show_progress=False)
    return _View(analyzer, vocab, bm25)


def _view_files(name: str, view: _View) -> dict[str, bytes]:
    files = {f"{name}.{part}.npy": npy_bytes(view.bm25.scores[part]) for part in _ARRAYS}
    terms = sorted(view.vocab, key=view.vocab.__getitem__)
    files[f"{name}.vocab.json"] = json.dumps(terms, ensure_ascii=False).encode("utf-8")
    return files


def _load_view(generation: Generation, name: str, settings: IndexSettings, num_docs: int, mmap: bool) -> _View:
    out_dir = generation.folder.parent
    try:
        terms = json.loads(generation.read(f"{name}.vocab.json", limit=MAX_JSON_BYTES))
        arrays = {part: load_array(generation, f"{name}.{part}.npy", mmap) for part in _ARRAYS}
    except (ValueError, OSError, EOFError, RecursionError) as error:
        raise unusable(out_dir, f"the {name} matrix cannot be read ({error})") from error
    if not isinstance(terms, list) or not all(isinstance(t, str) for t in terms) or len(set(terms)) != len(terms):
        raise unusable(out_dir, f"{name}.vocab.json is malformed")
    problem = csc_problem(arrays["data"], arrays["indices"], arrays["indptr"], len(terms), num_docs)
    if problem:
        raise unusable(out_dir, f"the {name} matrix is inconsistent ({problem})")
    vocab = {term: i for i, term in enumerate(terms)}
    # bm25s.BM25.load does the same: a fresh object given its score arrays and vocabulary.
    bm25 = bm25s.BM25(k1=settings.k1, b=settings.b, method=settings.method)
    bm25.scores = {**arrays, "num_docs": num_docs}
    bm25.vocab_dict = vocab
    bm25.unique_token_ids_set = set(vocab.values())
    bm25.nonoccurrence_array = None
    return _View(Analyzer(settings, stem=(name == "stemmed")), vocab, bm25)


def _stored_settings(manifest: Mapping[str, Any], out_dir: Path) -> IndexSettings:
    try:
        return IndexSettings.from_dict(manifest["settings"])
    except (KeyError, TypeError, ConfigError) as error:
        raise RetrievalError(
            f"the index at {out_dir} records settings this selfrag does not understand ({error}); "
            f"rebuild it with: selfrag index PATH --out {out_dir}"
        ) from error


def _diff(stored: IndexSettings, wanted: IndexSettings) -> str:
    a, b = stored.to_dict(), wanted.to_dict()
    return ", ".join(f"{key}={a[key]!r} on disk, {b[key]!r} asked" for key in a if a[key] != b[key])


def _selfrag_version() -> str:
    try:
        return metadata.version("selfrag")
    except metadata.PackageNotFoundError:  # running from a source tree
        return str(getattr(sys.modules.get("selfrag"), "__version__", "0+unknown"))
