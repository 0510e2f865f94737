"""Ranking metrics for retrieval benchmarks: nDCG@k, Recall@k, MRR@k, averaged over queries.

Conventions follow pytrec_eval / BEIR: gain = the graded relevance from the qrels (linear, not 2^rel - 1),
discount 1 / log2(rank + 1) with ranks from 1, the ideal ranking sorts the judged documents by relevance,
documents judged 0 are not relevant, and a ranked list's duplicates count once (first occurrence).
Recall@k = relevant documents in the top k / all relevant documents. MRR@k = 1 / rank of the first
relevant document in the top k, 0 if none. Queries without any relevant document are left out of averages.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

Qrels = Mapping[str, Mapping[str, int]]  # query id → document id → relevance (> 0 relevant)
Run = Mapping[str, Sequence[str]]  # query id → ranked document ids, best first


def _unique(ranked: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(ranked))


def ndcg_at_k(ranked: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    gains = [max(relevance.get(doc, 0), 0) for doc in _unique(ranked)[:k]]
    dcg = sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1))
    ideal = sorted((r for r in relevance.values() if r > 0), reverse=True)[:k]
    idcg = sum(gain / math.log2(rank + 1) for rank, gain in enumerate(ideal, start=1))
    return dcg / idcg if idcg else 0.0


def recall_at_k(ranked: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    relevant = {doc for doc, r in relevance.items() if r > 0}
    return len(relevant & set(_unique(ranked)[:k])) / len(relevant) if relevant else 0.0


def mrr_at_k(ranked: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    for rank, doc in enumerate(_unique(ranked)[:k], start=1):
        if relevance.get(doc, 0) > 0:
            return 1.0 / rank
    return 0.0


def evaluate(run: Run, qrels: Qrels, *, ks: Sequence[int] = (10, 100)) -> dict[str, float]:
    """Mean nDCG@k, Recall@k and MRR@k over the judged queries (a query missing from `run` scores 0)."""
    judged = [q for q, rel in qrels.items() if any(r > 0 for r in rel.values())]
    if not judged:
        return {}
    scores: dict[str, float] = {}
    for k in ks:
        for name, metric in (("nDCG", ndcg_at_k), ("Recall", recall_at_k), ("MRR", mrr_at_k)):
            total = sum(metric(run.get(q, ()), qrels[q], k) for q in judged)
            scores[f"{name}@{k}"] = total / len(judged)
    return scores
