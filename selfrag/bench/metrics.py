"""Metrics: pure functions, no I/O, no model. Each is small enough to check by hand (tests/bench).

Answer metrics (QA):
- `lenient_match`: the paper's `match` (AkariAsai/self-rag `metrics.py`): 1 if any gold string occurs in the
  prediction, case-sensitive and unnormalised. It rewards long answers; always report it beside EM/F1.
- `exact_match`, `token_f1`: SQuAD normalisation (lower case, no punctuation, no articles, single spaces).
- `answer_in`: our correctness for QA: some normalised gold answer occurs as a whole-word run inside the
  normalised prediction (EM implies it). Calibration and the growth experiment use it.

Evidence metrics, kept apart from correctness:
- `coverage`: was any gold chunk retrieved at all (by any step of any beam).
- `evidence_mass`: share of the answer's cited segments whose chunk is a gold chunk.
- `citation_support`: precision and recall of cited sentences against gold evidence sentences; a cited
  segment's sentence is the sentence of its chunk it overlaps most (`align_sentence`).

Calibration: `ece` and `reliability_bins` (equal-width bins). Uncertainty: `bootstrap_mean` and
`bootstrap_statistic` give percentile 95 % intervals over questions.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, drop punctuation and articles, collapse whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def lenient_match(prediction: str, golds: Sequence[str]) -> float:
    """The paper's `match`: any gold string is a substring of the prediction (case-sensitive, unnormalised)."""
    return float(any(gold in prediction for gold in golds))


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    norm = normalize_answer(prediction)
    return float(any(norm == normalize_answer(gold) for gold in golds))


def token_f1(prediction: str, golds: Sequence[str]) -> float:
    """Best SQuAD token F1 over the gold answers (yes/no/noanswer must match exactly, as in HotpotQA's script)."""
    return max((_f1(prediction, gold) for gold in golds), default=0.0)


def _f1(prediction: str, gold: str) -> float:
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if ref in ("yes", "no", "noanswer") or pred in ("yes", "no", "noanswer"):
        if pred != ref:
            return 0.0
    pred_tokens, ref_tokens = pred.split(), ref.split()
    common = sum((Counter(pred_tokens) & Counter(ref_tokens)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred_tokens), common / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


def answer_in(prediction: str, golds: Sequence[str]) -> float:
    """Correctness for QA: a normalised gold answer occurs as whole words in the normalised prediction."""
    pred = f" {normalize_answer(prediction)} "
    return float(any(norm and f" {norm} " in pred for norm in map(normalize_answer, golds)))


# -- labels --------------------------------------------------------------------------------------------


def label_accuracy(golds: Sequence[str], predictions: Sequence[str | None]) -> float:
    if not golds:
        return 0.0
    return sum(g == p for g, p in zip(golds, predictions, strict=True)) / len(golds)


def macro_f1(golds: Sequence[str], predictions: Sequence[str | None], labels: Sequence[str]) -> float:
    """Mean over `labels` of each label's F1 (a label never predicted nor gold scores 0, as sklearn does)."""
    scores = []
    for label in labels:
        tp = sum(g == label and p == label for g, p in zip(golds, predictions, strict=True))
        fp = sum(g != label and p == label for g, p in zip(golds, predictions, strict=True))
        fn = sum(g == label and p != label for g, p in zip(golds, predictions, strict=True))
        scores.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return sum(scores) / len(scores) if scores else 0.0


def balanced_accuracy(golds: Sequence[bool], predictions: Sequence[bool]) -> float | None:
    """Mean of the true-positive and true-negative rates; None unless both classes occur in the gold."""
    positives = [p for g, p in zip(golds, predictions, strict=True) if g]
    negatives = [not p for g, p in zip(golds, predictions, strict=True) if not g]
    if not positives or not negatives:
        return None
    return (sum(positives) / len(positives) + sum(negatives) / len(negatives)) / 2


def auroc(scores: Sequence[float], golds: Sequence[bool]) -> float | None:
    """Area under the ROC curve (ties count half); None unless both classes occur."""
    pos = [s for s, g in zip(scores, golds, strict=True) if g]
    neg = [s for s, g in zip(scores, golds, strict=True) if not g]
    if not pos or not neg:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


# -- evidence ------------------------------------------------------------------------------------------


def coverage(retrieved: Sequence[str], gold_chunks: Sequence[str]) -> float | None:
    """1 if any gold chunk was retrieved; None when the question has no gold chunk."""
    if not gold_chunks:
        return None
    return float(bool(set(retrieved) & set(gold_chunks)))


def evidence_mass(citations: Sequence[str], gold_chunks: Sequence[str]) -> float | None:
    """Share of cited segments whose chunk is gold; None when nothing is cited or nothing is gold."""
    if not citations or not gold_chunks:
        return None
    gold = set(gold_chunks)
    return sum(key in gold for key in citations) / len(citations)


def citation_support(cited: Sequence[str], gold: Sequence[str]) -> tuple[float | None, float | None]:
    """(precision, recall) of cited sentence ids against gold sentence ids. Precision is None without
    citations, recall None without gold sentences; both None when the question has no sentence-level gold."""
    if not gold:
        return None, None
    cited_set, gold_set = set(cited), set(gold)
    precision = len(cited_set & gold_set) / len(cited_set) if cited_set else None
    return precision, len(cited_set & gold_set) / len(gold_set)


def align_sentence(text: str, sentences: Sequence[str]) -> int | None:
    """The index of the sentence that `text` overlaps most (token F1, first on ties); None if none overlaps."""
    best, best_score = None, 0.0
    for index, sentence in enumerate(sentences):
        score = _f1(text, sentence) if normalize_answer(sentence) else 0.0
        if score > best_score:
            best, best_score = index, score
    return best


# -- calibration ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Bin:
    low: float
    high: float
    count: int
    confidence: float | None  # mean confidence in the bin
    accuracy: float | None  # share correct in the bin


def reliability_bins(confidences: Sequence[float], correct: Sequence[float], bins: int = 10) -> list[Bin]:
    """Equal-width bins over [0, 1]; a confidence of exactly 1 falls in the last bin."""
    out = []
    for b in range(bins):
        low, high = b / bins, (b + 1) / bins
        inside = [
            (c, k)
            for c, k in zip(confidences, correct, strict=True)
            if low <= c < high or (b == bins - 1 and c == high)
        ]
        if inside:
            out.append(
                Bin(
                    low,
                    high,
                    len(inside),
                    sum(c for c, _ in inside) / len(inside),
                    sum(k for _, k in inside) / len(inside),
                )
            )
        else:
            out.append(Bin(low, high, 0, None, None))
    return out


def calibrated_ece(bins: Sequence[Mapping[str, Any]]) -> float | None:
    """The ECE a perfectly calibrated engine with these reliability bins' confidences would show on average: each
    bin's share right drawn from its own mean confidence p, so |share right - p| is about sqrt(2 p (1 - p) / (pi n))
    for its n answers (the normal approximation of E|mean - p|). A measured ECE near it says nothing against
    calibration at this number of answers."""
    total = sum(int(b["count"]) for b in bins)
    if not total:
        return None
    return sum(
        b["count"] / total * math.sqrt(2 * b["confidence"] * (1 - b["confidence"]) / (math.pi * b["count"]))
        for b in bins
        if b["count"]
    )


def ece(confidences: Sequence[float], correct: Sequence[float], bins: int = 10) -> float | None:
    """Expected calibration error: sum over bins of (share of items) * |accuracy - mean confidence|."""
    if not confidences:
        return None
    total = len(confidences)
    return sum(
        b.count / total * abs(b.accuracy - b.confidence)  # type: ignore[operator]
        for b in reliability_bins(confidences, correct, bins)
        if b.count
    )


def risk_coverage(confidences: Sequence[float], correct: Sequence[float]) -> list[tuple[float, float]]:
    """(coverage, risk) when only the k most confident answers are kept, k = 1..n (ties keep input order):
    risk is the share of those k that are wrong."""
    order = sorted(range(len(confidences)), key=lambda i: -confidences[i])
    points, right = [], 0.0
    for k, i in enumerate(order, 1):
        right += correct[i]
        points.append((k / len(order), 1 - right / k))
    return points


def aurc(confidences: Sequence[float], correct: Sequence[float]) -> float | None:
    """Area under the risk-coverage curve (mean risk over k = 1..n): lower is better; a confidence that ranks
    every right answer first reaches the floor for that accuracy."""
    points = risk_coverage(confidences, correct)
    return sum(risk for _, risk in points) / len(points) if points else None


# -- uncertainty ---------------------------------------------------------------------------------------

BOOTSTRAP_SAMPLES = 1000


def bootstrap_mean(
    values: Sequence[float | None], *, samples: int = BOOTSTRAP_SAMPLES, seed: int = 0
) -> tuple[float | None, float | None, float | None, int]:
    """(mean, low, high, n) with a percentile 95 % interval over resampled questions; None values are left
    out of the mean (questions where the metric is undefined) but keep their place in the resampling."""
    mask = np.array([v is not None and not (isinstance(v, float) and math.isnan(v)) for v in values], dtype=bool)
    n = int(mask.sum())
    if n == 0:
        return None, None, None, 0
    data = np.array([float(v) if ok else 0.0 for v, ok in zip(values, mask, strict=True)])
    mean = float(data[mask].mean())
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(values), size=(samples, len(values)))
    counts, sums = mask[idx].sum(axis=1), data[idx].sum(axis=1)
    means = sums[counts > 0] / counts[counts > 0]
    low, high = np.percentile(means, [2.5, 97.5]) if len(means) else (mean, mean)
    return mean, float(low), float(high), n


def bootstrap_statistic(
    count: int, statistic: Callable[[Sequence[int]], float | None], *, samples: int = BOOTSTRAP_SAMPLES, seed: int = 0
) -> tuple[float | None, float | None, float | None]:
    """(value, low, high) of any statistic of a set of questions given as indices 0..count-1."""
    value = statistic(range(count)) if count else None
    if value is None:
        return None, None, None
    rng = np.random.default_rng(seed)
    draws = [statistic(rng.integers(0, count, size=count).tolist()) for _ in range(samples)]
    kept = [d for d in draws if d is not None]
    if not kept:
        return value, value, value
    low, high = np.percentile(kept, [2.5, 97.5])
    return value, float(low), float(high)
