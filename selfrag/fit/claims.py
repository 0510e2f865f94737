"""Fitting the claim protocol's evidence scorer (`critic-claims-<dataset>-v1.json`) on training claims only.

The file has the QA scorer's format (`engine.calibration.CriticModel`), read the same way; its parts mean:

    relevant          P(on topic): the chunk is about the claim (SciFact: a document the claim cites;
                      CLIMATE-FEVER: one of the claim's five annotated sentences)
    supported         P(settles): the chunk holds evidence that supports or refutes the claim (SciFact: a cited
                      document with rationale sentences; CLIMATE-FEVER: a SUPPORTS or REFUTES sentence)
    abstain_threshold the cut on max P(on topic)·P(settles) under which the answer is NEI: the one with the best
                      balanced accuracy of "settled" against NEI on the training claims
    support_threshold the cut on P(settles) with the best balanced accuracy on the training rows (a verdict)
    refutes           P(refutes): a chunk that settles the claim refutes it rather than supports it, from the
                      polarity cues (`evidence.polarity`) of the training claims' settling evidence (CLIMATE-FEVER:
                      its SUPPORTS and REFUTES sentences; SciFact: the documents with rationales of SUPPORT and
                      CONTRADICT claims); left out when either side has fewer than `MIN_POLARITY_ROWS`, or
                      when the training runs' claims re-voted with it are not right more often than without
    confidence        Platt scaling of the vote's score (the largest weight for a verdict, one minus it for NEI)
                      against whether the label was right, on training runs of the claim protocol

The heads are fitted from every training claim's top-`ndocs` BM25 chunks with no model call: the model's own
labels and the quote check are held neutral, so their weights come out zero (on claims the 135M model's labels
agree with gold at chance: docs/archive/benchmark-rounds.md). The confidence map needs the model's verdicts, so it
is fitted on training runs (`bench run --split train`) re-voted with the new heads; without them it is the identity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..bench.claims import claim_question, rate_candidates, settled_vote
from ..bench.datasets import Dataset, Example
from ..engine.calibration import CriticModel, EvidenceRater, Head, Platt
from ..engine.evidence import polarity, vector
from ..errors import InputError
from ..schema import Chunk, Hit
from .critic import JudgedRow, balanced_threshold, fit_logistic, fit_platt

MIN_POLARITY_ROWS = 20  # settling chunks of each side (supporting, refuting) needed to fit the polarity head


def evidence_of(dataset: Dataset, example: Example) -> tuple[set[str], set[str]]:
    """The chunk keys on the claim's topic, and those that settle it (a subset)."""
    if dataset.name == "climate_fever":
        return {pair.chunk for pair in example.pairs} | set(example.gold_chunks), set(example.gold_chunks)
    settles = {sentence.rsplit("/", 1)[0] for sentence in example.gold_sentences}
    return set(example.gold_chunks) | settles, settles


def polarity_rows(dataset: Dataset, example: Example) -> list[tuple[str, bool]]:
    """(chunk key, refutes) for each chunk that settles a training claim one way or the other."""
    if dataset.name == "climate_fever":
        return [(p.chunk, p.gold_label == "REFUTES") for p in example.pairs if p.gold_label in ("SUPPORTS", "REFUTES")]
    if example.label not in ("SUPPORT", "CONTRADICT"):
        return []
    return [(key, example.label == "CONTRADICT") for key in sorted(evidence_of(dataset, example)[1])]


def fit_polarity(claims: Iterable[tuple[Dataset, Example]]) -> tuple[Head | None, int]:
    """The polarity head from the training claims' settling chunks, and how many rows it saw; None when either
    side has fewer than `MIN_POLARITY_ROWS` rows (then the writer's verdict stands)."""
    x, y = [], []
    chunks: dict[str, dict[str, Chunk]] = {}
    for dataset, example in claims:
        corpus = chunks.setdefault(dataset.name, dataset.chunk_texts())
        for key, refutes in polarity_rows(dataset, example):
            if key in corpus:
                x.append(polarity(example.question, corpus[key].text))
                y.append(refutes)
    if min(sum(y), len(y) - sum(y)) < MIN_POLARITY_ROWS:
        return None, len(y)
    return fit_logistic(np.array(x), np.array(y, dtype=float)), len(y)


def claim_rows(dataset: Dataset, example: Example, hits: Sequence[Hit]) -> list[JudgedRow]:
    """One judged row per retrieved chunk of a training claim, rated as the claim protocol rates it."""
    topic, settles = evidence_of(dataset, example)
    top = hits[0].score if hits and hits[0].score > 0 else None
    return [
        JudgedRow(
            question=claim_question(example.question),
            sentence=example.question,
            chunk=hit.chunk.text,
            relevant=hit.chunk.key in topic,
            supported=hit.chunk.key in settles,
            rank=rank,
            score_rel=hit.score / top if top else None,
        )
        for rank, hit in enumerate(hits)
    ]


def nei_cut(best: Sequence[float], settled: Sequence[bool]) -> float:
    """The cut on a claim's largest weight with the best balanced accuracy of settled (at or over) vs NEI,
    among the weights themselves."""
    if all(settled) or not any(settled):
        raise InputError("the training claims need both settled and NEI claims to fit the NEI cut")
    return round(balanced_threshold(best, settled, cuts=sorted(set(best))), 6)


def fit_heads(claims: Sequence[tuple[Dataset, Example, Sequence[Hit]]], fitted_on: Mapping[str, Any]) -> CriticModel:
    """The heads, the verdict cut and the NEI cut from training claims and their retrieved chunks (no model)."""
    rows, claim_of = [], []
    for n, (dataset, example, hits) in enumerate(claims):
        made = claim_rows(dataset, example, hits)
        rows += made
        claim_of += [(n, example.label != "NEI")] * len(made)
    if len(rows) < 50:
        raise InputError(f"{len(rows)} judged rows from training claims are too few to fit the claim scorer")
    for name in ("relevant", "supported"):
        if len({getattr(row, name) for row in rows}) < 2:
            raise InputError(f"every training row has {name}={getattr(rows[0], name)}; the fit needs both classes")
    x = np.array([vector(row.features()) for row in rows])
    relevant = fit_logistic(x, np.array([row.relevant for row in rows], dtype=float))
    supported = fit_logistic(x, np.array([row.supported for row in rows], dtype=float))
    p_sup = [supported.probability(v) for v in x.tolist()]
    weights = [relevant.probability(v) * s for v, s in zip(x.tolist(), p_sup, strict=True)]
    best: dict[tuple[int, bool], float] = {}  # (claim, settled) -> its largest weight
    for claim, w in zip(claim_of, weights, strict=True):
        best[claim] = max(w, best.get(claim, 0.0))
    cut = nei_cut(list(best.values()), [settled for _, settled in best])
    threshold = balanced_threshold(p_sup, [row.supported for row in rows])
    refutes, polar = fit_polarity((dataset, example) for dataset, example, _ in claims)
    info = {"rows": len(rows), "claims": len(best), "task": "claim", "polarity_rows": polar, **fitted_on}
    return CriticModel(relevant, supported, Platt(), threshold, cut, info, refutes=refutes)


def revote(model: CriticModel, record: Mapping[str, Any], hits: Sequence[Hit]) -> tuple[str, float] | None:
    """A training run's claim voted again with `model` (identity confidence map): the label and the vote's
    score; None for a claim answered without retrieval or whose candidates all failed."""
    found = {hit.chunk.key for hit in hits}
    candidates = [c for c in record.get("segments") or [] if c.get("status") != "failed" and c.get("chunk") in found]
    if not candidates:
        return None
    rater = EvidenceRater(replace(model, confidence=Platt()))
    rated = rate_candidates(rater, record["question"], candidates, list(hits))
    label, score, _ = settled_vote(rated, rater)
    return label, score


TrainingClaim = tuple[Mapping[str, Any], Sequence[Hit]]  # a training run's record and its claim's retrieval
Votes = list[tuple[float, bool]]  # (vote score, label right) of re-voted training claims


def voted(model: CriticModel, claims: Sequence[TrainingClaim]) -> Votes:
    """(vote score, label right) of each training claim re-voted with `model` (those with a vote)."""
    out = []
    for record, hits in claims:
        again = revote(model, record, hits)
        if again is not None:
            out.append((again[1], again[0] == record["gold_label"]))
    return out


def keep_polarity(model: CriticModel, claims: Sequence[TrainingClaim]) -> tuple[CriticModel, Votes, str]:
    """The model with its polarity head only where it wins, the training claims re-voted with it (for the
    confidence map), and what was decided (for the command's line): the training runs' claims re-voted with the
    head must be right more often than without it; a tie, or no training run to show it, leaves the head out
    and the writer's verdict stands."""
    rows = model.fitted_on.get("polarity_rows", 0)
    if model.refutes is None:
        return model, voted(model, claims), f"no polarity head ({rows} settling chunks)"
    without = replace(model, refutes=None)
    if not claims:
        return without, [], "polarity head left out (no training run to show that it helps)"
    with_head, without_head = voted(model, claims), voted(without, claims)
    right, right_without = sum(ok for _, ok in with_head), sum(ok for _, ok in without_head)
    counts = f"{right} training claims right with it, {right_without} without"
    if right > right_without:
        return model, with_head, f"polarity head from {rows} settling chunks ({counts})"
    return without, without_head, f"polarity head left out ({counts})"


def fit_confidence(model: CriticModel, voted: Sequence[tuple[float, bool]], runs: int) -> CriticModel:
    """The model with its confidence map fitted on (vote score, label right) of training claims."""
    if len({right for _, right in voted}) < 2:
        raise InputError("the training runs' claims are all right or all wrong; the confidence map needs both")
    platt = fit_platt([score for score, _ in voted], [right for _, right in voted])
    info = {**model.fitted_on, "confidence_claims": len(voted), "confidence_runs": runs}
    return replace(model, confidence=platt, fitted_on=info)
