"""Judged rows for fitting the critic (`selfrag critic fit`), made from benchmark runs on training ids.

From a Self-RAG QA run: every candidate the engine wrote from a chunk, judged with the gold of its question:

    relevant   the chunk is one of the question's gold chunks
    supported  a gold answer occurs (normalised, as whole words) in the sentence and in the chunk: the
               sentence says the answer and its chunk backs it
    correct    a gold answer occurs in the sentence (what the answer's confidence is calibrated against)
    declined   the engine declined it by a rule that does not ask the critic (`engine.critic.DECLINED`): never
               an answer

The model's own labels, the chunk's rank and relative retrieval score, the quote check and the sentences the
other chunks of the same beam gave are carried over as the candidate had them, so the features are exactly the
engine's. From a run with `--unanswerable` the rows are marked `answerable` false: they teach the critic what a
well-copied sentence that does not answer *this* question looks like. From a critic-agreement run (HaluEval
right vs hallucinated answers, CLIMATE-FEVER sentences): each (statement, chunk) pair with its gold support;
relevance there is the gold chunk (HaluEval) or an evidence sentence labelled SUPPORTS or REFUTES
(CLIMATE-FEVER).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..engine.critic import DECLINED
from ..fit.critic import JudgedRow
from ..schema import Chunk
from .metrics import answer_in


def rows_from_records(
    records: Iterable[Mapping[str, Any]], chunks: Mapping[str, Chunk], *, answerable: bool = True
) -> list[JudgedRow]:
    """`answerable` False: the run took the gold chunks out of the corpus (`--unanswerable`)."""
    rows: list[JudgedRow] = []
    for record in records:
        if record.get("status") != "ok":
            continue
        if record.get("pairs"):
            rows += _from_pairs(record, chunks)
        else:
            rows += [replace(row, answerable=answerable) for row in _from_candidates(record, chunks)]
    return rows


def _from_candidates(record: Mapping[str, Any], chunks: Mapping[str, Chunk]) -> list[JudgedRow]:
    golds, gold_chunks = record.get("answers") or [], set(record.get("gold_chunks") or [])
    groups: dict[tuple[int, str], list[Mapping[str, Any]]] = defaultdict(list)
    for candidate in record.get("candidates") or []:
        usable = candidate.get("critique") and candidate.get("chunk") in chunks and candidate.get("text")
        if usable and candidate.get("status") != "failed" and candidate["critique"].get("support"):
            groups[(candidate["step"], candidate["parent"])].append(candidate)
    rows = []
    for group in groups.values():
        scores = [c["retrieval_score"] for c in group if c.get("retrieval_score") is not None]
        top = max(scores) if scores else None
        for candidate in group:
            keys = (candidate["chunk"], *(candidate.get("also") or []))  # a pooled sentence: all it drew on
            drawn = [chunks[key] for key in keys if key in chunks]
            text = "\n\n".join(chunk.text for chunk in drawn)
            rank, score = _best_drawn(keys, group)
            critique = candidate["critique"]
            said = bool(golds) and bool(answer_in(candidate["text"], golds))
            rows.append(
                JudgedRow(
                    question=record["question"],
                    sentence=candidate["text"],
                    chunk=text,
                    relevant=any(chunk.key in gold_chunks for chunk in drawn),
                    supported=said and bool(answer_in(text, golds)),
                    rank=rank,
                    score_rel=score / top if top and score is not None else None,
                    quote_ok=critique.get("quote_ok"),
                    model_rel=_credit(critique["probs"].get("relevance", {}), {"relevant": 1.0}),
                    model_sup=_credit(critique["probs"].get("support", {}), {"fully": 1.0, "partially": 0.5}),
                    others=_others(candidate, keys, group),
                    correct=said,
                    declined=candidate.get("flag") in DECLINED,
                    extracted=bool(candidate.get("extracted")),
                )
            )
    return rows


def _best_drawn(keys: Sequence[str], group: Sequence[Mapping[str, Any]]) -> tuple[int, float | None]:
    """The rank and retrieval score the engine rates a candidate with: those of the best-ranked chunk it drew on
    (its own; for a pooled sentence, any of its chunks), read off the group's candidates from those chunks."""
    ranked = [(int(c.get("rank") or 0), c.get("retrieval_score")) for c in group if c.get("chunk") in keys]
    return min(ranked, key=lambda r: r[0])


def _others(candidate: Mapping[str, Any], keys: Sequence[str], group: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The sentences the candidate's agreement is counted against, as the engine counts them: those written
    from other chunks alone (not the ones it drew on, not a pooled one, not a sentence extracted from a chunk)."""
    return tuple(
        c["text"]
        for c in group
        if c is not candidate and c.get("chunk") not in keys and not c.get("pooled") and not c.get("extracted")
    )


def _from_pairs(record: Mapping[str, Any], chunks: Mapping[str, Chunk]) -> list[JudgedRow]:
    rows = []
    for pair in record["pairs"]:
        chunk = chunks.get(pair["chunk"])
        if chunk is None or pair.get("status") == "defaulted":
            continue
        label = pair.get("gold_label", "")
        relevant = label in ("right", "hallucinated", "SUPPORTS", "REFUTES")
        rows.append(
            JudgedRow(
                question=record["question"],
                sentence=pair["statement"],
                chunk=chunk.text,
                relevant=relevant,
                supported=bool(pair["gold_supported"]),
                rank=int(pair.get("rank", 0)),
                score_rel=pair.get("score_rel"),
                quote_ok=pair.get("quote_ok"),
                model_rel=float(pair.get("s_rel", 0.5)),
                model_sup=float(pair.get("s_sup", 0.5)),
            )
        )
    return rows


def _credit(probs: Mapping[str, float], credit: Mapping[str, float]) -> float:
    total = sum(probs.values())
    return sum(credit.get(label, 0.0) * p for label, p in probs.items()) / total if total > 0 else 0.5


def row_dict(row: JudgedRow) -> dict[str, Any]:
    """A row as one line of a judgments file (the format `selfrag critic fit` reads)."""
    return {
        "question": row.question,
        "sentence": row.sentence,
        "chunk": row.chunk,
        "relevant": row.relevant,
        "supported": row.supported,
        "rank": row.rank,
        "score_rel": row.score_rel,
        "quote_ok": row.quote_ok,
        "model_rel": round(row.model_rel, 6),
        "model_sup": round(row.model_sup, 6),
        "others": list(row.others),
        "correct": row.correct,
        "answerable": row.answerable,
        "declined": row.declined,
        "extracted": row.extracted,
    }
