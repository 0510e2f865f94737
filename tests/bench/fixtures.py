"""Tiny datasets in the layout of ../shared/datasets, written into a test's tmp_path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from factories import write_jsonl

PARAGRAPHS = {
    "Paris": ["Paris is the capital of France.", " The Eiffel Tower stands in Paris."],
    "Berlin": ["Berlin is the capital of Germany.", " The Brandenburg Gate stands in Berlin."],
    "Rome": ["Rome is the capital of Italy.", " The Colosseum stands in Rome."],
    "Madrid": ["Madrid is the capital of Spain.", " The Prado museum is in Madrid."],
    "Lisbon": ["Lisbon is the capital of Portugal.", " Trams climb the hills of Lisbon."],
    "Vienna": ["Vienna is the capital of Austria.", " The Opera house stands in Vienna."],
}
CAPITALS = {"Paris": "France", "Berlin": "Germany", "Rome": "Italy", "Madrid": "Spain", "Lisbon": "Portugal",
            "Vienna": "Austria"}  # fmt: skip


def hotpot_questions() -> list[dict[str, Any]]:
    return [
        {
            "_id": f"q{i}",
            "question": f"What is the capital of {country}?",
            "answer": city,
            "type": "bridge",
            "level": "easy",
            "supporting_facts": [[city, 0]],
            "context": [[city, PARAGRAPHS[city]]],
        }
        for i, (city, country) in enumerate(CAPITALS.items())
    ]


def many_hotpot_questions(copies: int) -> list[dict[str, Any]]:
    """`copies` x the six questions, each copy with its own ids and wording ("q3-1": "... of Spain (1)?")."""
    return [
        dict(q, _id=f"{q['_id']}-{n}", question=q["question"].replace("?", f" ({n})?"))
        for n in range(copies)
        for q in hotpot_questions()
    ]


def write_hotpot(folder: Path, questions: list[dict[str, Any]] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "questions.json").write_text(json.dumps(questions if questions is not None else hotpot_questions()))
    (folder / "corpus.json").write_text(json.dumps(PARAGRAPHS))
    return folder


def write_scifact(folder: Path, claims: list[dict[str, Any]] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    corpus = [
        {"_id": f"d{i}", "title": city, "text": "".join(sentences), "sentences": [s.strip() for s in sentences]}
        for i, (city, sentences) in enumerate(PARAGRAPHS.items())
    ]
    write_jsonl(folder / "corpus.jsonl", corpus)
    if claims is None:
        claims = [
            {"_id": "1", "text": "Paris is the capital of France.", "label": "SUPPORT", "cited_doc_ids": ["d0"],
             "evidence": {"d0": {"label": "SUPPORT", "sentences": [0, 9]}}},
            {"_id": "2", "text": "Berlin is the capital of Spain.", "label": "CONTRADICT", "cited_doc_ids": ["d1"],
             "evidence": {"d1": {"label": "CONTRADICT", "sentences": [0]}}},
            {"_id": "3", "text": "Rome has many cats.", "label": "NEI", "cited_doc_ids": ["d2"], "evidence": {}},
        ]  # fmt: skip
    write_jsonl(folder / "claims_test.jsonl", claims)
    return folder


def write_climate(folder: Path, rows: list[dict[str, Any]] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)

    def evidence(city: str, n: int, label: str) -> dict[str, Any]:
        return {"evidence_id": f"{city}:{n}", "evidence_label": label, "article": city,
                "evidence": PARAGRAPHS[city][n].strip(), "entropy": 0.0, "votes": [label, None]}  # fmt: skip

    if rows is None:
        rows = [
            {"claim_id": "0", "claim": "Paris is the capital of France", "claim_label": "SUPPORTS",
             "evidences": [evidence("Paris", 0, "SUPPORTS"), evidence("Rome", 0, "NOT_ENOUGH_INFO")]},
            {"claim_id": "1", "claim": "Rome is the capital of Spain", "claim_label": "REFUTES",
             "evidences": [evidence("Madrid", 0, "REFUTES"), evidence("Rome", 0, "NOT_ENOUGH_INFO")]},
            {"claim_id": "2", "claim": "Vienna is lovely", "claim_label": "DISPUTED",
             "evidences": [evidence("Vienna", 1, "NOT_ENOUGH_INFO")]},
        ]  # fmt: skip
    write_jsonl(folder / "climate-fever.jsonl", rows)
    return folder


def write_halueval(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = [
        {"knowledge": "".join(PARAGRAPHS[city]), "question": f"What is the capital of {country}?",
         "right_answer": city, "hallucinated_answer": "Zurich"}
        for city, country in CAPITALS.items()
    ]  # fmt: skip
    rows.append(dict(rows[0], question="Which country has Paris as its capital?", right_answer="France"))
    write_jsonl(folder / "qa.jsonl", rows)
    return folder
