"""samples.jsonl: one JSON record per finished question, appended (unbuffered) and fsynced before the question
counts as done; read back with torn-tail repair.

- A record is `json.dumps(..., ensure_ascii=False, allow_nan=False) + "\\n"` with `schema_version`. A failed
  write or fsync cuts the file back to where the record began (`SampleWriter`), so it never counts as done.
- Reading: the last line without its newline, or one that does not parse, is a torn write (a kill during the
  append): `repair=True` truncates the file to the last good newline (what --resume does), `repair=False`
  ignores it and leaves the file alone (what scoring a live run does). A bad line anywhere else is corruption
  and is refused. If an id appears twice (a failed question retried), the last record wins.
- `build_record` makes one record: the gold, what the system did, its cost, the plain similarity
  confidence beside the engine's own, and (QA) the facts the answer states that no document it cites holds.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..engine.grounding import unstated
from ..errors import InputError
from . import datasets as ds
from . import metrics
from .cache import CachedChatModel

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class ReadReport:
    lines: int  # good records read
    torn_bytes: int  # bytes of a torn last line (removed when repairing)
    repaired: bool


def read_samples(path: str | Path, *, repair: bool) -> tuple[dict[str, dict[str, Any]], ReadReport]:
    """Records by id, in first-seen order (a later record for the same id replaces the earlier one)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}, ReadReport(0, 0, False)
    good_end = data.rfind(b"\n") + 1  # everything after the last newline is a torn tail
    body, tail = data[:good_end], data[good_end:]
    lines = body.split(b"\n")[:-1] if body else []
    records: dict[str, dict[str, Any]] = {}
    parsed = 0
    for number, line in enumerate(lines, 1):
        record = _parse(line)
        if record is None:
            if number == len(lines) and not tail:  # the last complete line is garbage: also a torn write
                tail = line + b"\n"
                good_end -= len(tail)
                break
            raise InputError(f"{path} line {number} is corrupt (not a sample record); refusing to resume over it")
        records[record["id"]] = record
        parsed += 1
    torn = len(tail)
    if torn and repair:
        with open(path, "r+b") as file:
            file.truncate(good_end)
            file.flush()
            os.fsync(file.fileno())
    return records, ReadReport(parsed, torn, bool(torn and repair))


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("id"), str) or "status" not in record:
        return None
    return record


class SampleWriter:
    """Appends records durably: write, then fsync; only then does the question count as done.

    The file is unbuffered, so no half-written line waits in a buffer to be flushed later. When the write or
    the fsync fails (ENOSPC, EIO), the file is cut back to its length before the append and the OSError
    propagates: a line that was written but not synced must not make a resumed run skip its question.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file = open(self.path, "ab", buffering=0)  # noqa: SIM115 - closed in close()

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps({"schema_version": SCHEMA_VERSION, **record}, ensure_ascii=False, allow_nan=False) + "\n"
        fd = self._file.fileno()
        before = os.fstat(fd).st_size
        try:
            data = memoryview(line.encode("utf-8"))
            while data:
                data = data[os.write(fd, data) :]
            os.fsync(fd)
        except OSError:
            with contextlib.suppress(OSError):  # if even this fails, resume's torn-tail repair is the fallback
                os.ftruncate(fd, before)
                os.fsync(fd)
            raise

    def close(self) -> None:
        self._file.close()


def build_record(
    example: ds.Example,
    outcome: Any,
    error: str | None,
    dataset: ds.Dataset,
    index: Any,
    chat: CachedChatModel,
    wall: float,
) -> dict[str, Any]:
    """One samples.jsonl record: the gold, what the system did, and its cost. No correctness judgement."""
    top_score, similarity = similarity_confidence(index, example.question)
    record: dict[str, Any] = {
        "id": example.id,
        "status": "ok" if error is None else "failed",
        "error": error,
        "question": example.question,
        "answers": list(example.answers),
        "gold_label": example.label,
        "gold_chunks": list(example.gold_chunks),
        "gold_sentences": list(example.gold_sentences),
        "similarity_confidence": similarity,
        "top_score": top_score,
    }
    usage = {
        "wall_time": round(wall, 4),
        "model_seconds": round(chat.counters.model_seconds, 4),
        "cache_hits": chat.counters.hits,
        "requests_sent": chat.counters.sent,
    }
    if outcome is None:
        return {**record, "usage": usage}
    body = outcome.to_dict()
    body["usage"] = {**body["usage"], **usage}
    body["cited_sentences"] = cited_sentences(body["citations"], body["cited_texts"], dataset.sentences)
    if dataset.task == "qa":
        body["unstated"] = unstated_facts(body["prediction"], body["citations"], dataset.sentences, example.question)
    return {**record, **body}


def unstated_facts(
    prediction: str, citations: list[str], sentences: Mapping[str, tuple[str, ...]], question: str
) -> list[str]:
    """The numbers, dates and names the answer states that neither the question nor any document it cites holds
    ("born in 1985" citing a chunk that says 1850; every fact of an answer that cites nothing): what it says
    on no document's word. Checked against the cited documents together, so every system is held to the same
    test whether it cites per sentence or per answer."""
    source = "\n\n".join(" ".join(sentences.get(key, ())) for key in dict.fromkeys(citations))
    return list(unstated(prediction, source, question, words=False))


def cited_sentences(citations: list[str], texts: list[str], sentences: Mapping[str, tuple[str, ...]]) -> list[str]:
    """The sentence each citation rests on: the sentence of its chunk the citing text overlaps most
    (`<chunk>/?` when none overlaps, so it counts as a cited non-gold sentence)."""
    out = []
    for key, text in zip(citations, texts, strict=True):
        index = metrics.align_sentence(text, sentences.get(key, ()))
        out.append(f"{key}/{'?' if index is None else index}")
    return list(dict.fromkeys(out))


def similarity_confidence(index: Any, question: str) -> tuple[float, float]:
    """(top-1 BM25 score, that score over the summed idf of the question's terms, capped at 1): a plain
    similarity-based confidence, the kind a retriever-only system reports. Not the engine's confidence."""
    hits = index.find_relevant_chunks(question, 1)
    if not hits:
        return 0.0, 0.0
    terms = list(dict.fromkeys(index.analyze(question)))
    mass = sum(index.idf(terms)) if terms else 0.0
    top = float(hits[0].score)
    return round(top, 6), round(min(1.0, top / mass), 6) if mass > 0 else 0.0
