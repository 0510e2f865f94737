"""Retrieval strategies on top of an `Index`: reranking, freshness, windows and context order, and the one
protocol the engine asks (`Searcher.asearch`).

`Retriever.find_many` runs, per query batch:

    sources (ranked lists) → fuse (RRF or weighted) → rerank (lexical overlap) → freshness → supersession
        → top k → window

- Sources are anything with `find_many(queries, k) -> list[list[Hit]]` (`RankedSource`). Built in: the
  stemmed BM25 view and, with `fusion`, the unstemmed one (`IndexSettings(unstemmed_view=True)`). More lists
  plug in through `Retriever(sources=...)` or `extra=`; a source that must first fetch something per query
  (dense retrieval embeds the queries over HTTP, `dense.py`) offers `async bind(queries, meter)` returning a
  plain RankedSource, and is searched only through `asearch`.
- `asearch(groups, k, meter)`: each group is one information need written as several queries (the query plus
  the LLM's variants: multi-query, HyDE, sub-questions). Every source runs every query; all the group's lists
  are fused together (RRF unless `fusion = weighted`), then reranked against the group's first query.
- Fusion (`fusion.py`): `rrf`, reciprocal rank fusion, score = sum of w / (k + rank), k = 60 (Cormack et al.
  2009); `weighted_fusion`, each list's scores min-max normalised to [0, 1], then a weighted sum.
- The engine asks every retriever one way, `asearch`. A retriever with only `find_relevant_chunks` (an `Index`,
  `selfrag.testing.ListRetriever`, your own) gets it from `SearchEachQuery` (inherited, or wrapped by
  `as_searcher`): each query searched alone, a group's lists fused by RRF.
- `rerank_overlap`: mixes the normalised score with the IDF-weighted share of query terms (and adjacent
  query-term pairs) found in the chunk; no model involved.
- `freshness_bonus`: adds `weight × top score × 0.5^(age / half-life)` where age counts from the newest dated
  hit (not from today, so results do not drift with the clock); undated hits get nothing. Meant to break
  near-ties in favour of newer documents, not to outrank clearly better evidence.
- supersession (on when the index links versions, `supersession.py`): a chunk of a superseded document yields
  to the best chunk of a newer version among the candidates; the hits returned say where their document stands.
- `widen` ("window" strategy): each hit grows by its neighbour chunks in the same document; windows of one
  document that overlap or touch are merged into one hit (the best score, the first chunk's id).
- `order_for_context`: best evidence first and second-best last, weakest in the middle ("lost in the middle").

Every function is deterministic: ties break on rank of first appearance, then chunk key.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from ..errors import ConfigError, InputError
from ..schema import Chunk, Hit, Meter
from .fusion import normalised, rrf, weighted_fusion

if TYPE_CHECKING:  # bm25s is imported only when an index is opened; rrf and friends need no index
    from .index import Index
    from .supersession import Versions

STRATEGIES = ("top", "window")
FUSIONS = ("none", "rrf", "weighted")
_SENTINEL = "\uffff"


@runtime_checkable
class Searcher(Protocol):
    """The one way the engine asks for chunks: the top k of each group of queries (a group is one need written
    as several queries; its lists are fused). `offline` leaves out sources that fetch per query over HTTP."""

    async def asearch(
        self, groups: Sequence[Sequence[str]], k: int, meter: Meter, *, offline: bool = False
    ) -> list[list[Hit]]: ...


class FindsChunks(Protocol):
    """A plain retriever: one ranked list for one question."""

    def find_relevant_chunks(self, question: str, k: int) -> list[Hit]: ...


class SearchEachQuery:
    """`asearch` for a retriever that offers only `find_relevant_chunks`: each query of a group is searched on
    its own (k hits) and the group's lists are fused by RRF (k = 60). Inherit it, or let `as_searcher` wrap."""

    def find_relevant_chunks(self, question: str, k: int) -> list[Hit]:
        raise NotImplementedError

    async def asearch(
        self, groups: Sequence[Sequence[str]], k: int, meter: Meter, *, offline: bool = False
    ) -> list[list[Hit]]:
        results = []
        for group in groups:
            lists = [self.find_relevant_chunks(query, k) for query in group]
            results.append(lists[0] if len(lists) == 1 else rrf(lists, k=60)[:k])
        return results


class EachQuery(SearchEachQuery):
    """A plain retriever (an `Index`, your own) made a Searcher."""

    def __init__(self, retriever: FindsChunks) -> None:
        self.retriever = retriever

    def find_relevant_chunks(self, question: str, k: int) -> list[Hit]:
        return self.retriever.find_relevant_chunks(question, k)

    async def aclose(self) -> None:
        close = getattr(self.retriever, "aclose", None)
        if close is not None:
            await close()


def as_searcher(retriever: Searcher | FindsChunks) -> Searcher:
    """The retriever itself when it has `asearch` (a Retriever does), else wrapped in EachQuery."""
    return retriever if isinstance(retriever, Searcher) else EachQuery(retriever)


class RankedSource(Protocol):
    """Anything that returns one ranked list of hits per query."""

    def find_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]: ...


@runtime_checkable
class BindableSource(Protocol):
    """A source that must fetch something per query first (e.g. its embedding) before it can rank."""

    async def bind(self, queries: Sequence[str], meter: Meter) -> RankedSource: ...


@dataclass(frozen=True, slots=True)
class IndexView:
    """One BM25 view of an index ("stemmed" or "plain") as a ranked source."""

    index: Index
    view: str = "stemmed"

    def find_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return self.index.find_many(queries, k, view=self.view)


@dataclass(frozen=True, slots=True)
class RetrievalSettings:
    """How a Retriever turns ranked lists into the final hits (all optional steps are off by default)."""

    strategy: str = "top"  # top | window
    window: int = 1  # neighbour chunks on each side (window strategy)
    fusion: str = "none"  # none | rrf | weighted: fuse the stemmed and unstemmed views (and extra sources)
    rrf_k: int = 60
    depth: int = 100  # candidates fetched per list before fusion and reranking
    rerank: bool = False
    rerank_weight: float = 0.3  # share of the lexical-overlap score in the reranked score
    freshness: float = 0.0  # 0 is off; 0.05 lets recency move a hit by up to 5 % of the top score
    half_life_days: float = 365.0
    supersession: bool = True  # a superseded chunk yields to a newer version among the candidates

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ConfigError(f"retrieval strategy {self.strategy!r} is unknown; use one of {', '.join(STRATEGIES)}")
        if self.fusion not in FUSIONS:
            raise ConfigError(f"fusion {self.fusion!r} is unknown; use one of {', '.join(FUSIONS)}")
        if self.window < 0 or self.rrf_k < 1 or self.depth < 1 or self.half_life_days <= 0:
            raise ConfigError("window must be >= 0, rrf_k and depth >= 1, half_life_days > 0")
        if not (0 <= self.rerank_weight <= 1 and 0 <= self.freshness <= 1):
            raise ConfigError("rerank_weight and freshness must lie between 0 and 1")


class Retriever:
    """An index plus a strategy; usable wherever the engine expects `find_relevant_chunks`."""

    def __init__(
        self,
        index: Index,
        settings: RetrievalSettings = RetrievalSettings(),
        *,
        sources: Sequence[tuple[RankedSource | BindableSource, float]] | None = None,
        extra: Sequence[tuple[RankedSource | BindableSource, float]] = (),
        versions: Versions | None = None,
    ) -> None:
        """`sources` replaces the built-in BM25 views; `extra` adds lists to them (e.g. a dense source);
        `versions` (supersession.py) makes superseded chunks yield to newer versions, unless settings say not."""
        self.index, self.settings = index, settings
        self.versions = versions if settings.supersession and versions else None
        if sources is None:
            sources = [(IndexView(index, "stemmed"), 1.0)]
            if settings.fusion != "none":
                if "plain" not in index.views:
                    raise ConfigError(
                        f"fusion {settings.fusion!r} needs the unstemmed view; "
                        "rebuild the index with IndexSettings(unstemmed_view=True)"
                    )
                sources.append((IndexView(index, "plain"), 1.0))
        self.sources = (*sources, *extra)

    def find_relevant_chunks(self, question: str, k: int) -> list[Hit]:
        return self.find_many([question], k)[0]

    def find_many(self, questions: Sequence[str], k: int) -> list[list[Hit]]:
        """The hits of each question (synchronous: sources that need `bind` raise; use `asearch`)."""
        if any(isinstance(source, BindableSource) for source, _ in self.sources):
            raise ConfigError(
                "this retriever has a source that fetches per query (dense vectors): use `await asearch(...)`"
            )
        return self._search([[q] for q in questions], k, self.sources)  # type: ignore[arg-type]

    async def asearch(
        self, groups: Sequence[Sequence[str]], k: int, meter: Meter, *, offline: bool = False
    ) -> list[list[Hit]]:
        """The top k of each group of queries, all of a group's lists fused. Bindable sources fetch what they
        need for every query of every group at once; `offline` leaves them out (BM25 only)."""
        queries = list(dict.fromkeys(q for group in groups for q in group))
        sources: list[tuple[RankedSource, float]] = []
        for source, weight in self.sources:
            if isinstance(source, BindableSource):
                if not offline and queries:
                    sources.append((await source.bind(queries, meter), weight))
            else:
                sources.append((source, weight))
        return self._search(groups, k, sources)

    async def aclose(self) -> None:
        """Close what the sources opened (the dense source's HTTP client)."""
        for source, _ in self.sources:
            close = getattr(source, "aclose", None)
            if close is not None:
                await close()

    def _search(
        self, groups: Sequence[Sequence[str]], k: int, sources: Sequence[tuple[RankedSource, float]]
    ) -> list[list[Hit]]:
        s = self.settings
        many = len(sources) > 1 or any(len(group) > 1 for group in groups)
        depth = max(k, s.depth) if (many or s.rerank or s.freshness or self.versions) else k
        queries = list(dict.fromkeys(q for group in groups for q in group))
        found = [dict(zip(queries, source.find_many(queries, depth), strict=True)) for source, _ in sources]
        results: list[list[Hit]] = []
        for group in groups:
            if not group:
                results.append([])
                continue
            lists = [by_query[q] for q in group for by_query in found]
            hits = self._fuse(lists, [weight for _ in group for _, weight in sources])
            if s.rerank:
                hits = rerank_overlap(group[0], hits, self.index, weight=s.rerank_weight)
            if s.freshness:
                hits = freshness_bonus(hits, weight=s.freshness, half_life_days=s.half_life_days)
            if self.versions:
                hits = self.versions.prefer_current(hits)
            hits = hits[:k]
            hits = widen(self.index, hits, radius=s.window) if s.strategy == "window" else hits
            results.append(self.versions.marked(hits) if self.versions else hits)
        return results

    def _fuse(self, lists: list[list[Hit]], weights: list[float]) -> list[Hit]:
        if len(lists) == 1:
            return lists[0]
        if self.settings.fusion == "weighted":
            return weighted_fusion(lists, weights)
        return rrf(lists, k=self.settings.rrf_k, weights=weights)


def rerank_overlap(question: str, hits: Sequence[Hit], index: Index, *, weight: float = 0.3) -> list[Hit]:
    """Re-score hits by (1 - weight) × normalised score + weight × lexical overlap with the question.

    Overlap = 0.8 × IDF-weighted share of the query's index terms present in the chunk (read from the
    postings, so no text is re-analysed) + 0.2 × share of adjacent query-word pairs found verbatim
    (lower-cased) in the chunk's title or text. Hits not from `index` keep overlap 0.
    """
    terms = list(dict.fromkeys(index.analyze(question)))
    if not hits or not terms:
        return list(hits)
    idf = np.asarray(index.idf(terms))
    known = [h for h in hits if _indexed(index, h.chunk)]
    present = dict(zip((h.chunk.key for h in known), index.contains(terms, [h.chunk for h in known]), strict=True))
    words = question.lower().split()
    pairs = [f"{a} {b}" for a, b in pairwise(words)]
    scored = []
    for position, (hit, base) in enumerate(zip(hits, normalised(hits), strict=True)):
        row = present.get(hit.chunk.key)
        cover = float(idf[row].sum() / idf.sum()) if row is not None else 0.0
        text = f"{hit.chunk.title} {hit.chunk.text}".lower()
        adjacent = sum(pair in text for pair in pairs) / len(pairs) if pairs else cover
        scored.append((-((1 - weight) * base + weight * (0.8 * cover + 0.2 * adjacent)), position, hit))
    return [Hit(hit.chunk, -score) for score, _, hit in sorted(scored, key=lambda t: t[:2])]


def _indexed(index: Index, chunk: Chunk) -> bool:
    try:
        return index.get_chunk(chunk.doc_id, chunk.chunk_id) == chunk
    except InputError:
        return False


def freshness_bonus(hits: Sequence[Hit], *, weight: float = 0.05, half_life_days: float = 365.0) -> list[Hit]:
    """Hits re-sorted after a small recency bonus (see the module docstring)."""
    days = [_day_number(h.chunk.date) for h in hits]
    known = [d for d in days if d is not None]
    if not known:
        return list(hits)
    newest, top = max(known), max(h.score for h in hits)
    rescored = [
        (h.score + (weight * top * 0.5 ** ((newest - d) / half_life_days) if d is not None else 0.0), position, h)
        for position, (h, d) in enumerate(zip(hits, days, strict=True))
    ]
    rescored.sort(key=lambda t: (-t[0], t[1]))
    return [Hit(h.chunk, score) for score, _, h in rescored]


def _day_number(date: str | None) -> int | None:
    match = re.match(r"^(\d{4})-(\d{2})-(\d{2})", date or "")
    if not match:
        return None
    try:
        return dt.date(*map(int, match.groups())).toordinal()
    except ValueError:
        return None


def widen(index: Index, hits: Sequence[Hit], *, radius: int = 1) -> list[Hit]:
    """Each hit with `radius` neighbour chunks on each side; overlapping windows of a document merged."""
    spans: dict[str, list[tuple[int, int, int, float]]] = {}  # doc → (lo, hi, first rank, best score)
    ranked: list[tuple[int, Hit]] = []
    for rank, hit in enumerate(hits):
        ids = [c.chunk_id for c in index.chunks_of(hit.chunk.doc_id)]
        if hit.chunk.chunk_id not in ids:  # not from this index: kept as it is
            ranked.append((rank, hit))
            continue
        at = ids.index(hit.chunk.chunk_id)
        spans.setdefault(hit.chunk.doc_id, []).append((max(0, at - radius), at + radius, rank, hit.score))
    overlapping = bool(index.chunking and index.chunking.mode == "tokens" and index.chunking.overlap)
    for doc, windows in spans.items():
        for lo, hi, rank, score in _merge(windows):
            ranked.append((rank, Hit(_joined(index.chunks_of(doc)[lo : hi + 1], overlapping), score)))
    ranked.sort(key=lambda pair: pair[0])
    return [hit for _, hit in ranked]


def _merge(windows: list[tuple[int, int, int, float]]) -> list[tuple[int, int, int, float]]:
    """Union of windows that overlap or touch, keeping the best rank and score of each union."""
    merged: list[tuple[int, int, int, float]] = []
    for lo, hi, rank, score in sorted(windows):
        if merged and lo <= merged[-1][1] + 1:
            plo, phi, prank, pscore = merged[-1]
            merged[-1] = (plo, max(phi, hi), min(prank, rank), max(pscore, score))
        else:
            merged.append((lo, hi, rank, score))
    return merged


def _joined(parts: Sequence[Chunk], overlapping: bool) -> Chunk:
    text = parts[0].text
    for part in parts[1:]:
        shared = _overlap(text, part.text) if overlapping else 0
        text = text + part.text[shared:] if shared else f"{text} {part.text}"
    first = parts[0]
    return Chunk(first.doc_id, first.chunk_id, text, first.title, first.source, first.date)


def _overlap(left: str, right: str) -> int:
    """Length of the longest suffix of `left` that is a prefix of `right` (prefix function, linear time)."""
    if _SENTINEL in right:
        return 0
    joined = right + _SENTINEL + left[-len(right) :]
    table = [0] * len(joined)
    for i in range(1, len(joined)):
        j = table[i - 1]
        while j and joined[i] != joined[j]:
            j = table[j - 1]
        table[i] = j + (joined[i] == joined[j])
    return table[-1]


def order_for_context(hits: Sequence[Hit]) -> list[Hit]:
    """Ranks 1, 3, 5, ... then ..., 4, 2: the strongest evidence sits at both ends of the context."""
    return list(hits[::2]) + list(hits[1::2])[::-1]
