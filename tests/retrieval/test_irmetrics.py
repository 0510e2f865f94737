"""The benchmark's IR metrics against hand-worked values."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "irmetrics", Path(__file__).resolve().parents[2] / "benchmarks" / "irmetrics.py"
)
assert _SPEC and _SPEC.loader
irmetrics = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(irmetrics)

RANKED = ["d3", "d1", "d7", "d2", "d9"]
RELEVANT = {"d1": 1, "d2": 1, "d5": 1}  # d5 is never retrieved


def test_ndcg_by_hand() -> None:
    # relevant at ranks 2 and 4: DCG = 1/log2(3) + 1/log2(5); ideal = 1 + 1/log2(3) + 1/log2(4)
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    ideal = 1 + 1 / math.log2(3) + 0.5
    assert irmetrics.ndcg_at_k(RANKED, RELEVANT, 10) == pytest.approx(dcg / ideal)  # 0.4982
    assert irmetrics.ndcg_at_k(RANKED, RELEVANT, 2) == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert irmetrics.ndcg_at_k(["d1", "d2", "d5"], RELEVANT, 10) == pytest.approx(1.0)


def test_graded_relevance_uses_linear_gain() -> None:
    assert irmetrics.ndcg_at_k(["a", "b"], {"a": 1, "b": 2}, 2) == pytest.approx(
        (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    )


def test_recall_and_mrr_by_hand() -> None:
    assert irmetrics.recall_at_k(RANKED, RELEVANT, 10) == pytest.approx(2 / 3)
    assert irmetrics.recall_at_k(RANKED, RELEVANT, 3) == pytest.approx(1 / 3)
    assert irmetrics.mrr_at_k(RANKED, RELEVANT, 10) == pytest.approx(1 / 2)
    assert irmetrics.mrr_at_k(RANKED, RELEVANT, 1) == 0.0
    assert irmetrics.recall_at_k(["d1", "d1", "d1"], RELEVANT, 3) == pytest.approx(1 / 3)  # duplicates count once


def test_evaluate_averages_over_judged_queries() -> None:
    run = {"q1": RANKED, "q2": ["x"]}
    qrels = {"q1": RELEVANT, "q2": {"x": 1}, "q3": {"y": 0}, "q4": {"z": 1}}  # q3 unjudged, q4 missing from run
    scores = irmetrics.evaluate(run, qrels, ks=(10,))
    assert scores["MRR@10"] == pytest.approx((0.5 + 1 + 0) / 3)
    assert scores["Recall@10"] == pytest.approx((2 / 3 + 1 + 0) / 3)
