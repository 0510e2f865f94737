"""The paper's short-form setting (PopQA-style): questions that ship with their own pre-retrieved passages.

The reference evaluation files (AkariAsai/self-rag `eval_data/`, e.g. `popqa_longtail_w_gs.jsonl`) are JSON
lines with `question`, `answers` (gold strings) and `ctxs` (the retriever's top passages, each with `title` and
`text`, best first: Contriever-MS MARCO over Wikipedia in the paper). Reading them here lets the benchmark run
the paper's protocol on the paper's passages, so its numbers are comparable with the paper's table:

    selfrag+short   depth 1 (`max_depth` 1): one retrieval, one candidate answer per passage, the best by the
                    critic score f; in adaptive mode the retrieval decision comes first and a "no" answers
                    without passages, as the reference short-form script does

- retrieval: a question's own `ctxs`, in file order (`PresetRetriever`), not BM25; the top `ndocs` are used.
- ids: the record's `id` when it has one, else its line number. A passage becomes chunk `<id>-ctx<rank>#0`.
- the metric the paper reports for PopQA is `match` (a gold string inside the prediction, case-sensitive).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..schema import Chunk, Hit


class PresetRetriever:
    """Each known question's own passages, best first; anything else goes to the wrapped index."""

    def __init__(self, index: Any, presets: Mapping[str, Sequence[str]], chunks: Mapping[str, Chunk]) -> None:
        self.index = index
        self.presets = {question: [chunks[key] for key in keys] for question, keys in presets.items()}

    def find_relevant_chunks(self, question: str, k: int) -> list[Hit]:
        preset = self.presets.get(question.strip())
        if preset is None:
            return self.index.find_relevant_chunks(question, k)
        return [Hit(chunk, float(len(preset) - rank)) for rank, chunk in enumerate(preset[:k])]

    def __getattr__(self, name: str) -> Any:  # idf, analyze, ... (the samples' similarity confidence)
        return getattr(self.index, name)


def load_popqa(folder: Path) -> Any:
    """The short-form file of `folder` (its one `*.jsonl`) as a Dataset with per-question passages."""
    from .datasets import Dataset, Example, _field, _Files, check_ids

    files = sorted(folder.glob("*.jsonl"))
    if len(files) != 1:
        raise InputError(f"{folder}: expected one .jsonl file (e.g. popqa_longtail_w_gs.jsonl), found {len(files)}")
    reader = _Files(folder)
    records = list(reader.jsonl(files[0].name))
    where = str(files[0])
    ids = [(str(r["id"]) if r.get("id") is not None else str(n), f"line {n}") for n, r in records]
    check_ids(ids, where)
    examples, corpus, presets = [], [], {}
    for (number, record), (example_id, _) in zip(records, ids, strict=True):
        line = f"{where} line {number}"
        question = _field(record, "question", line).strip()
        answers = _field(record, "answers", line, list)
        contexts = _field(record, "ctxs", line, list)
        if not all(isinstance(a, str) for a in answers) or not answers:
            raise InputError(f"{line}: `answers` must be a non-empty list of strings")
        keys = []
        for rank, ctx in enumerate(contexts):
            if not isinstance(ctx, dict) or not isinstance(ctx.get("text"), str):
                raise InputError(f"{line}: ctxs[{rank}] needs a `text` string")
            chunk = Chunk(f"{example_id}-ctx{rank}", 0, ctx["text"], title=str(ctx.get("title") or ""), source="popqa")
            corpus.append(chunk)
            keys.append(chunk.key)
        presets[question] = tuple(keys)
        examples.append(Example(example_id, question, tuple(answers)))
    return Dataset(
        "popqa",
        "qa",
        str(folder),
        reader.hashes,
        tuple(examples),
        tuple(corpus),
        {chunk.key: (chunk.text,) for chunk in corpus},
        total=len(examples),
        notes=("retrieval: each question's own pre-retrieved ctxs from the file, in file order (not BM25)",),
        presets=presets,
    )
