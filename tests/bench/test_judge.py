"""Judgment lists, retrieval precision@k / MRR, the LLM answer judge, and the plots."""

from __future__ import annotations

import asyncio
import json

import pytest

from selfrag import Chunk
from selfrag.bench.judge import generate_judgments, judge_answers, read_judgments, retrieval_report
from selfrag.bench.runner import RunOptions, run_benchmark
from selfrag.bench.systems import BENCH_DEFAULTS
from selfrag.config import Config
from selfrag.errors import InputError
from selfrag.retrieval.index import Index
from selfrag.testing import ScriptedChatModel

from .fixtures import PARAGRAPHS, write_hotpot

INDEX = Index.build([Chunk(city, 0, "".join(text), title=city) for city, text in PARAGRAPHS.items()])


def question_for(request):
    doc = request.messages[1].content
    city = next(c for c in PARAGRAPHS if f'id="{c}#0' in doc)
    return {"question": f"Which monument stands in {city}?" if city != "Rome" else "What is a famous museum?"}


def test_generate_one_question_per_chunk_then_score_the_retriever(tmp_path):
    chat = ScriptedChatModel({"judge_question": question_for})
    out = tmp_path / "judgments.jsonl"
    assert asyncio.run(generate_judgments(INDEX, chat, out)) == 6
    rows = read_judgments(out)
    assert {r["chunk"] for r in rows} == {f"{c}#0" for c in PARAGRAPHS}
    report = retrieval_report(INDEX, rows, k=2)
    # five questions name their city and find it first; "famous museum" finds Madrid (the Prado), not Rome
    assert report["hit@2"]["value"] == pytest.approx(5 / 6)
    assert report["mrr@2"]["value"] == pytest.approx(5 / 6)
    assert report["precision@2"]["value"] == pytest.approx(5 / 6 / 2)


def test_a_seeded_sample_of_chunks_and_bad_lists(tmp_path):
    chat = ScriptedChatModel({"judge_question": question_for})
    assert asyncio.run(generate_judgments(INDEX, chat, tmp_path / "j.jsonl", limit=2, seed=1)) == 2
    (tmp_path / "bad.jsonl").write_text('{"chunk": "Paris#0"}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:1: expected"):
        read_judgments(tmp_path / "bad.jsonl")


def test_the_answer_judge_writes_beside_the_run_and_resumes(tmp_path):
    data = write_hotpot(tmp_path / "data")
    options = RunOptions("hotpotqa_smoke", "rag", Config(**BENCH_DEFAULTS), data_path=str(data),
                         out=tmp_path / "runs", progress=False, environ={})  # fmt: skip
    run = run_benchmark(options, chat=ScriptedChatModel({"rag_answer": {"answer": "Paris", "citations": [1]}}))
    judge = ScriptedChatModel({"judge_answer": {"contextual_accuracy": 4, "completeness": 2}}, name="judge-model")
    summary = asyncio.run(judge_answers(run.run_dir, judge))
    assert summary["judged"] == 6 and summary["judge_model"] == "judge-model"
    assert summary["contextual_accuracy"]["value"] == 4 and summary["completeness"]["value"] == 2
    context = judge.calls[0].messages[1].content
    assert "<context>" in context and "capital" in context
    assert json.loads((run.run_dir / "judge.json").read_text())["judged"] == 6
    again = ScriptedChatModel({})
    asyncio.run(judge_answers(run.run_dir, again))
    assert again.calls == []  # every answer already judged
    results = json.loads((run.run_dir / "results.json").read_text())
    assert "contextual_accuracy" not in json.dumps(results)  # judged scores never enter the primary results


def test_plots_are_written(tmp_path):
    pytest.importorskip("matplotlib")
    from selfrag.bench.plots import plot_runs

    data = write_hotpot(tmp_path / "data")
    from helpers import fused

    script = {"retrieve_decide": {"retrieve": "yes", "query": "capital"},
              "generate_fused": fused("Paris is the capital.", evidence="", support="partially"),
              "rag_answer": {"answer": "Paris", "citations": [1]}}  # fmt: skip
    folders = []
    for system in ("rag", "selfrag"):
        options = RunOptions("hotpotqa_smoke", system, Config(**BENCH_DEFAULTS), data_path=str(data), limit=3,
                             out=tmp_path / "runs", progress=False, environ={})  # fmt: skip
        folders.append(run_benchmark(options, chat=ScriptedChatModel(script)).run_dir)
    written = plot_runs(folders, tmp_path / "plots")
    names = sorted(p.name for p in written)
    assert names == ["hotpotqa_smoke-quality-vs-calls.png", "hotpotqa_smoke-selfrag-reliability.png"]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in written)


def test_a_plots_file_name_has_no_spaces_or_brackets():
    from selfrag.bench.plots import file_part

    assert file_part("selfrag+evidence (unanswerable)") == "selfrag_evidence_unanswerable"
    assert file_part("selfrag+oracle0.25") == "selfrag_oracle0.25"
