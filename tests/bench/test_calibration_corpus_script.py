"""benchmarks/calibration_corpus.py: a training split's questions with their own documents and, when asked for,
look-alike documents of later questions beside them (HotpotQA's distractor setting)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from selfrag.bench import datasets as ds
from selfrag.errors import SelfRagError

from .fixtures import write_jsonl

ROOT = Path(__file__).resolve().parents[2]


def script():
    spec = importlib.util.spec_from_file_location("calibration_corpus", ROOT / "benchmarks" / "calibration_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def qa(tmp_path: Path) -> ds.Dataset:
    rows = [
        ("The Rhine flows through Basel.", "Which river flows through Basel?", "Rhine"),
        ("Lisbon is the capital of Portugal, far from Basel.", "What is the capital of Portugal?", "Lisbon"),
        ("Basel has a zoo that opened in 1874.", "When did the zoo open?", "1874"),
        ("Porto is a city in Portugal known for wine.", "What is Porto known for?", "wine"),
        ("Tokyo is large.", "Is Tokyo large?", "yes"),
        ("The Rhine flows through Basel.", "Where does the Rhine flow?", "Basel"),  # the first question's document
    ]
    write_jsonl(tmp_path / "qa.jsonl", [
        {"knowledge": k, "question": q, "right_answer": a, "hallucinated_answer": "no"} for k, q, a in rows
    ])  # fmt: skip
    return ds.load("halueval_hops", tmp_path)  # a document two questions share is one chunk


def test_each_question_brings_the_later_documents_bm25_ranks_first_for_it_never_an_asked_ones_own(tmp_path):
    docs, rows = script().pick(qa(tmp_path), limit=2, distractors=1)
    assert [row["question"] for row in rows] == ["Which river flows through Basel?", "What is the capital of Portugal?"]
    assert rows[0]["answers"] == ["Rhine"]
    assert list(docs.values()) == [
        "The Rhine flows through Basel.",
        "Basel has a zoo that opened in 1874.",  # not its own document, which a later question shares
        "Lisbon is the capital of Portugal, far from Basel.",
        "Porto is a city in Portugal known for wine.",
    ]


def test_without_distractors_only_the_asked_questions_documents_are_written(tmp_path):
    docs, _ = script().pick(qa(tmp_path), limit=2)
    assert list(docs.values()) == [
        "The Rhine flows through Basel.",
        "Lisbon is the capital of Portugal, far from Basel.",
    ]


def test_distractors_need_a_later_question_to_take_them_from(tmp_path):
    with pytest.raises(SelfRagError, match="no question after the first 5"):
        script().pick(qa(tmp_path), limit=5, distractors=1)
