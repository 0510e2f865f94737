"""The paper's short-form setting (PopQA-style): questions that ship with their own pre-retrieved passages.

The reference evaluation files (AkariAsai/self-rag `eval_data/`, e.g. `popqa_longtail_w_gs.jsonl`) are JSON
lines with `question`, `answers` (gold strings) and `ctxs` (the retriever's top passages, each with `title` and
`text`, best first: Contriever-MS MARCO over Wikipedia in the paper). Reading them (`datasets.load_shortform`,
with `pose` here) lets the benchmark run the paper's protocol on the paper's passages, so its numbers are
comparable with the paper's table:

    selfrag+short   depth 1 (`max_depth` 1): one retrieval, one candidate answer per passage, the best by the
                    critic score f; in adaptive mode the retrieval decision comes first and a "no" answers
                    without passages, as the reference short-form script does

Three datasets, each a folder holding the one `.jsonl` file of the reference code:
    popqa          `popqa_longtail_w_gs.jsonl`: open QA, the best candidate wins
    pubhealth      `health_claims_processed.jsonl`: true / false, closed set
    arc_challenge  `arc_challenge_processed.jsonl`: `choices` {label, text} and `answerKey`, closed set
The closed-set tasks are posed with the checkpoint's task instruction (`shortform_tasks.toml`) and decided as
the reference code does: the candidates' scores f are summed per distinct answer across the passages, the
largest sum wins (`closed_vote`); an answer saying SUPPORTS / REFUTES counts as true / false.

- retrieval: a question's own `ctxs` (or `top_contexts`), in file order (`PresetRetriever`), not BM25; the top
  `ndocs` are used.
- ids: the record's `id` when it has one, else its line number. A passage becomes chunk `<id>-ctx<rank>#0`.
- gold: `answers` (or `answer`); ARC: `answerKey`. The paper's metric for all three is `match` (a gold string
  inside the prediction, case-sensitive).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from string import Template
from typing import Any

from ..errors import InputError
from ..retrieval.strategies import SearchEachQuery
from ..schema import Chunk, Hit

TASKS_FILE = Path(__file__).resolve().parent / "shortform_tasks.toml"
CLOSED = ("pubhealth", "arc_challenge")


class PresetRetriever(SearchEachQuery):
    """Each known question's own passages, best first; anything else goes to the wrapped index. The engine asks
    it through `asearch` (SearchEachQuery): each query alone, a group's lists fused by RRF."""

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


def closed_vote(candidates: Sequence[tuple[str, float | None]]) -> str | None:
    """The closed-set answer: f summed per distinct answer (SUPPORTS / REFUTES read as true / false); None when
    no candidate was scored. Ties go to the answer seen first."""
    sums: dict[str, float] = {}
    for text, score in candidates:
        if score is None:
            continue
        answer = "true" if "SUPPORTS" in text else "false" if "REFUTES" in text else text.strip()
        sums[answer] = sums.get(answer, 0.0) + score
    return max(sums, key=sums.__getitem__) if sums else None


def pose(task: str, record: Mapping[str, Any], where: str) -> tuple[str, tuple[str, ...]]:
    """The question as the checkpoint was asked it, and its gold answers."""
    question = record.get("question")
    if not isinstance(question, str) or not question.strip():
        raise InputError(f"{where}: field 'question' is missing or not a string")
    if task == "popqa":
        return question.strip(), _answers(record, where)
    spec = tomllib.loads(TASKS_FILE.read_text(encoding="utf-8"))[task]
    values = {"instruction": spec["instruction"], "question": question.strip(), "choices": ""}
    if task == "arc_challenge":
        values["choices"], gold = _choices(record, where)
        answers: tuple[str, ...] = (gold,)
    else:
        answers = _answers(record, where)
    return Template(spec["template"]).substitute(values), answers


def _answers(record: Mapping[str, Any], where: str) -> tuple[str, ...]:
    answers = record.get("answers", record.get("answer"))
    answers = [answers] if isinstance(answers, str) else answers
    if not isinstance(answers, list) or not answers or not all(isinstance(a, str) for a in answers):
        raise InputError(f"{where}: `answers` must be a non-empty list of strings")
    return tuple(answers)


def _choices(record: Mapping[str, Any], where: str) -> tuple[str, str]:
    """ARC's options as "\nA: ...\nB: ..." (numeric labels 1-4 read as A-D, D left empty when absent)."""
    choices, key = record.get("choices"), record.get("answerKey")
    if not isinstance(choices, dict) or not isinstance(key, str):
        raise InputError(f"{where}: ARC records need `choices` {{label, text}} and `answerKey`")
    letters = {"1": "A", "2": "B", "3": "C", "4": "D"}
    options = {
        letters.get(str(label), str(label)): str(text)
        for label, text in zip(choices.get("label", []), choices.get("text", []), strict=False)
    }
    options.setdefault("D", "")
    order = ["A", "B", "C", "D", *(["E"] if "E" in options else [])]
    return "".join(f"\n{letter}: {options.get(letter, '')}" for letter in order), letters.get(key, key)
