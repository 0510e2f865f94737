"""Retrieval benchmark: BM25 and the no-LLM fusion modes on BEIR-SciFact, or throughput on synthetic documents.

SciFact (default): builds the index through selfrag (document = title + " " + text, one chunk per
document), runs the 300 test claims as one batch, and prints a markdown table of nDCG@10 (with a bootstrap
95 % interval), Recall@10, Recall@100, MRR@10, queries/s (single thread, batch, best of 3), build time and
size on disk. The published bm25s anchor for plain BM25 is nDCG@10 0.687 (0.686 on these files).

    python benchmarks/retrieval.py                       # SciFact from ../shared/datasets/scifact
    python benchmarks/retrieval.py --data /path/to/scifact --json benchmarks/out/scifact.json
    python benchmarks/retrieval.py --synthetic 100000    # build time and batch throughput on 100k documents
    python benchmarks/retrieval.py --embedding-model M --dense-base-url http://127.0.0.1:8100/v1 \
        [--dense-query-base-url http://127.0.0.1:8101/v1] [--dense-limit 1000]

With `--embedding-model`, two more rows: dense vectors alone (cosine) and BM25 + dense fused by RRF k=60. The
corpus is embedded through selfrag's own embedder on a loopback OpenAI-compatible `/v1/embeddings` server
(no other address is accepted: benchmarks here use no network and no LLM). An asymmetric model (e5: "query:"
and "passage:" prefixes) can serve passages and queries from two servers. `--dense-limit N` evaluates every
mode on a seeded subset (all judged documents plus random others, N in all) when the local model is too slow
for the whole corpus; such figures are comparable with each other, not with published ones. Dense q/s count
search and fusion with the query vectors already embedded; the embedding time is reported on its own.
The fake server's hashed embeddings (`selfrag.testing.fake_server`) measure plumbing only, never quality.

The data is read in place, never copied. Timings are wall-clock on the current machine; other processes
running at the same time lower them.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import hashlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent))  # irmetrics sits next to this file

import irmetrics  # noqa: E402

from selfrag.config import EndpointConfig, is_loopback, resolve_endpoint  # noqa: E402
from selfrag.retrieval.chunking import ChunkingSettings, chunk_documents  # noqa: E402
from selfrag.retrieval.corpus import load_beir_corpus  # noqa: E402
from selfrag.retrieval.dense import DenseSource, embed_chunks  # noqa: E402
from selfrag.retrieval.embeddings import OpenAIEmbedder  # noqa: E402
from selfrag.retrieval.index import Index, IndexSettings  # noqa: E402
from selfrag.retrieval.strategies import RetrievalSettings, Retriever  # noqa: E402
from selfrag.schema import Chunk, Hit, Meter  # noqa: E402

DEFAULT_DATA = (
    Path(os.environ["SELFRAG_DATASETS"]) / "scifact"
    if os.environ.get("SELFRAG_DATASETS")
    else Path(__file__).resolve().parents[2] / "shared" / "datasets" / "scifact"  # ../shared beside the checkout
)
DEPTH = 100  # ranked list length used for every metric (Recall@100 needs 100)
T = TypeVar("T")
Search = Callable[[list[str]], list[list[Hit]]]


@dataclass(frozen=True)
class Mode:
    name: str
    search: Search
    build_seconds: float
    size_bytes: int


def timed(action: Callable[[], T]) -> tuple[T, float]:
    started = time.perf_counter()
    value = action()
    return value, time.perf_counter() - started


def load_queries(path: Path) -> dict[str, str]:
    return {r["_id"]: r["text"] for r in map(json.loads, path.read_text("utf-8").splitlines()) if r}


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    return qrels


def size_on_disk(index: Index) -> int:
    with tempfile.TemporaryDirectory() as folder:
        generation = index.save(Path(folder) / "idx")
        return sum(p.stat().st_size for p in generation.iterdir())


def throughput(search: Search, queries: list[str], repeats: int = 3) -> float:
    return len(queries) / min(timed(lambda: search(queries))[1] for _ in range(repeats))


def bootstrap(values: Sequence[float], rounds: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile 95 % interval of the mean over resampled queries."""
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(values, k=len(values))) for _ in range(rounds))
    return means[int(0.025 * rounds)], means[int(0.975 * rounds) - 1]


def evaluate(run: list[list[Hit]], ids: list[str], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    ranked = {qid: [h.chunk.doc_id for h in hits] for qid, hits in zip(ids, run, strict=True)}
    scores = irmetrics.evaluate(ranked, qrels, ks=(10, 100))
    scores["nDCG@10 low"], scores["nDCG@10 high"] = bootstrap(
        [irmetrics.ndcg_at_k(ranked[q], qrels[q], 10) for q in ids]
    )
    return scores


def scifact_modes(chunks: Sequence[Chunk]) -> list[Mode]:
    """Plain BM25, the unstemmed view for reference, and the three no-LLM combinations."""
    plain, plain_build = timed(lambda: Index.build(chunks, IndexSettings()))
    dual, dual_build = timed(lambda: Index.build(chunks, IndexSettings(unstemmed_view=True)))
    plain_size, dual_size = size_on_disk(plain), size_on_disk(dual)
    fused = [
        ("stemmed + unstemmed, RRF k=60", Retriever(dual, RetrievalSettings(fusion="rrf")), dual_build, dual_size),
        ("stemmed + unstemmed, weighted", Retriever(dual, RetrievalSettings(fusion="weighted")), dual_build, dual_size),
        ("BM25 + lexical rerank (top 100)", Retriever(plain, RetrievalSettings(rerank=True)), plain_build, plain_size),
    ]
    return [
        Mode("BM25 (stemmed, stopwords)", lambda qs: plain.find_many(qs, DEPTH), plain_build, plain_size),
        Mode("BM25 unstemmed (reference)", lambda qs: dual.find_many(qs, DEPTH, view="plain"), dual_build, dual_size),
        *(Mode(name, partial(r.find_many, k=DEPTH), build, size) for name, r, build, size in fused),
    ]


@dataclass(frozen=True)
class DenseOptions:
    model: str
    base_url: str
    query_base_url: str
    limit: int | None = None


def embedder(url: str, model: str) -> OpenAIEmbedder:
    if not is_loopback(url):
        raise SystemExit(f"{url}: dense benchmarks use a loopback embeddings server only (127.0.0.1 or localhost)")
    endpoint = EndpointConfig(base_url=url, timeout=3600, max_retries=0, max_concurrency=1)
    return OpenAIEmbedder(resolve_endpoint(endpoint, {}), model, batch_size=16)


def dense_modes(chunks: Sequence[Chunk], options: DenseOptions) -> tuple[list[Mode], dict[str, Any]]:
    """Dense alone and BM25 + dense (RRF k=60); the corpus embedded once, through selfrag's embedder."""
    plain, plain_build = timed(lambda: Index.build(chunks, IndexSettings()))
    passages = embedder(options.base_url, options.model)

    async def embed_corpus() -> Any:
        try:
            return await embed_chunks(chunks, passages)
        finally:
            await passages.aclose()

    (vectors, report), embed_seconds = timed(lambda: asyncio.run(embed_corpus()))
    source = DenseSource(plain, vectors, embedder(options.query_base_url, options.model))
    size = size_on_disk(plain) + vectors.matrix.nbytes
    meter = Meter()

    def run(retriever: Retriever, queries: list[str]) -> list[list[Hit]]:
        async def search() -> list[list[Hit]]:
            try:
                return await retriever.asearch([[q] for q in queries], DEPTH, meter)
            finally:
                await retriever.aclose()

        return asyncio.run(search())

    dense_only = Retriever(plain, sources=[(source, 1.0)])
    hybrid = Retriever(plain, extra=[(source, 1.0)])
    build = plain_build + embed_seconds
    modes = [
        Mode(f"dense ({options.model}, cosine)", partial(run, dense_only), embed_seconds, int(vectors.matrix.nbytes)),
        Mode(f"BM25 + dense ({options.model}), RRF k=60", partial(run, hybrid), build, size),
    ]
    info = {"model": options.model, "dimensions": vectors.dimensions, "embed_s": embed_seconds,
            "embed_requests": report.requests, "embed_tokens": report.tokens, "query_meter": meter}  # fmt: skip
    return modes, info


def subset(chunks: list[Chunk], qrels: dict[str, dict[str, int]], limit: int, seed: int = 0) -> list[Chunk]:
    """Every judged document plus seeded random others, `limit` in all, in corpus order."""
    judged = {doc for rels in qrels.values() for doc in rels}
    others = [c.doc_id for c in chunks if c.doc_id not in judged]
    keep = judged | set(random.Random(seed).sample(others, max(0, min(len(others), limit - len(judged)))))
    return [c for c in chunks if c.doc_id in keep]


def scifact(data: Path, dense: DenseOptions | None = None) -> dict[str, Any]:
    documents, load_seconds = timed(lambda: load_beir_corpus(data / "corpus.jsonl"))
    chunks = chunk_documents(documents, ChunkingSettings(mode="document")).chunks
    queries, qrels = load_queries(data / "queries_test.jsonl"), load_qrels(data / "qrels_test.tsv")
    ids = [q for q in queries if q in qrels]
    texts = [queries[q] for q in ids]
    if dense is not None and dense.limit:
        chunks = subset(chunks, {q: qrels[q] for q in ids}, dense.limit)
    modes, dense_info = scifact_modes(chunks), None
    if dense is not None:
        extra, dense_info = dense_modes(chunks, dense)
        modes += extra
    rows = [
        {"mode": m.name, **evaluate(m.search(texts), ids, qrels), "q/s": throughput(m.search, texts),
         "build s": m.build_seconds, "size MB": m.size_bytes / 1e6}
        for m in modes
    ]  # fmt: skip
    if dense_info is not None:
        meter = dense_info.pop("query_meter")
        dense_info |= {"query_embed_requests": meter.llm_calls, "query_tokens": meter.prompt_tokens}
    return {
        "dataset": str(data),
        "corpus_sha256": hashlib.sha256((data / "corpus.jsonl").read_bytes()).hexdigest(),
        "documents": len({c.doc_id for c in chunks}),
        "subset": bool(dense is not None and dense.limit),
        "chunks": len(chunks),
        "queries": len(ids),
        "corpus_load_s": load_seconds,
        "dense": dense_info,
        "rows": rows,
    }


def print_scifact(result: dict[str, Any]) -> None:
    scope = "a SUBSET of " if result.get("subset") else ""
    print(f"SciFact test: {result['queries']} queries over {scope}{result['documents']} documents "
          f"(corpus.jsonl sha256 {result['corpus_sha256'][:16]}...)\n")  # fmt: skip
    if result.get("dense"):
        d = result["dense"]
        print(f"Dense: {d['model']} ({d['dimensions']} dimensions); corpus embedded in {d['embed_s']:.1f}s with "
              f"{d['embed_requests']} requests; queries in {d['query_embed_requests']} requests\n")  # fmt: skip
    print("| Mode | nDCG@10 [95% CI] | Recall@10 | Recall@100 | MRR@10 | q/s (1 thread, batch) | build s | size MB |")
    print("|---|---|---|---|---|---|---|---|")
    for r in result["rows"]:
        print(f"| {r['mode']} | {r['nDCG@10']:.4f} [{r['nDCG@10 low']:.3f}, {r['nDCG@10 high']:.3f}] | "
              f"{r['Recall@10']:.4f} | {r['Recall@100']:.4f} | {r['MRR@10']:.4f} | {r['q/s']:,.0f} | "
              f"{r['build s']:.2f} | {r['size MB']:.1f} |")  # fmt: skip


def synthetic_documents(count: int, seed: int = 0) -> list[Chunk]:
    """Deterministic documents of 12-40 words drawn from a Zipf-like vocabulary of 20,000 made-up words."""
    rng = random.Random(seed)
    vocabulary = ["".join(rng.choice("bcdfghklmnprstvz") + rng.choice("aeiou") for _ in range(rng.randint(2, 4)))
                  for _ in range(20_000)]  # fmt: skip
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    return [
        Chunk(f"doc{i:06d}", 0, " ".join(rng.choices(vocabulary, weights, k=rng.randint(12, 40))), title=f"Doc {i}")
        for i in range(count)
    ]


def synthetic(count: int, query_count: int = 2000) -> dict[str, Any]:
    chunks = synthetic_documents(count)
    index, build = timed(lambda: Index.build(chunks))
    with tempfile.TemporaryDirectory() as folder:
        generation, save = timed(lambda: index.save(Path(folder) / "idx"))
        size = sum(p.stat().st_size for p in generation.iterdir())
        load = timed(lambda: Index.load(Path(folder) / "idx"))[1]
        load_mmap = timed(lambda: Index.load(Path(folder) / "idx", mmap=True))[1]
    rng = random.Random(1)
    queries = [" ".join(rng.sample(c.text.split(), 3)) for c in rng.sample(chunks, query_count)]
    qps = {k: throughput(partial(index.find_many, k=k), queries) for k in (10, 100)}
    return {"documents": count, "build_s": build, "save_s": save, "size_MB": size / 1e6, "load_s": load,
            "load_mmap_s": load_mmap, "queries": query_count, "qps_k10": qps[10], "qps_k100": qps[100]}  # fmt: skip


def print_synthetic(r: dict[str, Any]) -> None:
    print(f"Synthetic corpus: {r['documents']:,} documents of 12-40 words; {r['queries']:,} queries of 3 words\n")
    print("| Build (tokenise + index) s | Save s | Size MB | Load s | Load (mmap) s | q/s k=10 | q/s k=100 |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {r['build_s']:.2f} | {r['save_s']:.2f} | {r['size_MB']:.1f} | {r['load_s']:.2f} | "
          f"{r['load_mmap_s']:.2f} | {r['qps_k10']:,.0f} | {r['qps_k100']:,.0f} |")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder in BEIR layout (default: %(default)s)")
    parser.add_argument("--synthetic", type=int, metavar="N", help="benchmark N synthetic documents instead")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--embedding-model", help="add dense rows, embedded with this model (needs a server below)")
    parser.add_argument("--dense-base-url", help="loopback /v1/embeddings server for passages (and queries)")
    parser.add_argument("--dense-query-base-url", help="a second loopback server for queries (asymmetric models)")
    parser.add_argument("--dense-limit", type=int, metavar="N", help="evaluate on a subset of N documents")
    args = parser.parse_args(argv)
    if args.synthetic:
        result = synthetic(args.synthetic)
        print_synthetic(result)
    else:
        dense = None
        if args.embedding_model:
            if not args.dense_base_url:
                parser.error("--embedding-model needs --dense-base-url")
            query_url = args.dense_query_base_url or args.dense_base_url
            dense = DenseOptions(args.embedding_model, args.dense_base_url, query_url, args.dense_limit)
        result = scifact(args.data, dense)
        print_scifact(result)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
