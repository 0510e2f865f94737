"""The paper's short-form setting through the benchmark runner, on a Self-RAG checkpoint behind the loopback
server's /v1/completions: each question's own passages, one answer per passage, the best by the critic score."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from reflection_checkpoint import Checkpoint, segment

from selfrag.cli import main
from selfrag.testing.fake_server import FakeOpenAIServer

from .fixtures import write_jsonl

MODEL = "selfrag/selfrag_llama2_7b"
WEAK_REL = {"[Irrelevant]": 0.7, "[Relevant]": 0.3}
WEAK_SUP = {"[No support / Contradictory]": 0.6, "[Partially supported]": 0.3, "[Fully supported]": 0.1}
ROWS = [
    {
        "id": "q1",
        "question": "What is Marie Curie's occupation?",
        "answers": ["physicist", "chemist"],
        "ctxs": [
            {"title": "Curie's garden", "text": "The garden of the house had roses."},
            {"title": "Marie Curie", "text": "Marie Curie was a physicist and chemist."},
        ],
    },
    {
        "id": "q2",
        "question": "In what city was Ada Lovelace born?",
        "answers": ["London"],
        "ctxs": [
            {"title": "Ada Lovelace", "text": "Ada Lovelace was born in London in 1815."},
            {"title": "Byron", "text": "Lord Byron travelled to Greece."},
        ],
    },
]
ANSWERS = {  # passage text -> what the checkpoint writes from it
    "roses": segment("She was a gardener.", WEAK_REL, WEAK_SUP, first="[Irrelevant]"),
    "physicist and chemist": segment("She was a physicist."),
    "born in London": segment("She was born in London."),
    "Greece": segment("She was born in Greece.", WEAK_REL, WEAK_SUP, first="[Irrelevant]"),
}


def run(tmp_path: Path, server: FakeOpenAIServer) -> int:
    return main(
        ["bench", "run", "--dataset", "popqa", "--data", str(tmp_path / "popqa"), "--system", "selfrag+short",
         "--base-url", server.base_url, "--model", MODEL, "--ndocs", "2",
         "--out", str(tmp_path / "runs"), "--cache", str(tmp_path / "cache.sqlite3"), "--no-progress"]
    )  # fmt: skip


def test_short_form_runs_the_checkpoint_on_each_questions_own_passages_and_replays_from_the_cache(tmp_path, capsys):
    (tmp_path / "popqa").mkdir()
    write_jsonl(tmp_path / "popqa" / "popqa_longtail_w_gs.jsonl", ROWS)
    checkpoint = Checkpoint(ANSWERS, top=5)  # fewer top logprobs than the 20 asked: said once, still read
    with FakeOpenAIServer(model=MODEL, completions=checkpoint) as server:
        assert run(tmp_path, server) == 0
        assert capsys.readouterr().err.count("note: the endpoint returned 5 top logprobs where 20") == 1
        sent = server.stats.requests
        (folder,) = (tmp_path / "runs" / "popqa" / "selfrag+short").iterdir()
        first = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
        (folder / "samples.jsonl").unlink()
        assert run(tmp_path, server) == 0
        assert server.stats.requests == sent  # a cached rerun sends nothing
        again = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    results = json.loads((folder / "results.json").read_text())
    assert results["endpoint"]["capabilities"]["protocol"] == "reflection-tokens"
    config = json.loads((folder / "config.json").read_text())
    assert config["retriever"] == "each question's pre-retrieved ctxs from the dataset file"
    by_id = {s["id"]: s for s in first}
    assert (
        by_id["q1"]["prediction"] == "She was a physicist." and by_id["q2"]["prediction"] == "She was born in London."
    )
    assert by_id["q1"]["retrieved"] == ["q1-ctx0#0", "q1-ctx1#0"]  # its own passages, not BM25 over all of them
    assert results["summary"]["metrics"]["match"]["value"] == 1.0
    # the probe, then per question one decision and one answer per passage, a single segment each (depth 1)
    with_passage = [p for p in checkpoint.prompts if "<paragraph>" in p]
    assert sent == 1 + 2 * (1 + 2) and len(with_passage) == 4
    assert all(p.count("<paragraph>") == 1 for p in with_passage)
    segments = {s["id"]: s["segments"] for s in again}
    s_use = 0.6 + 0.5 * 0.3 - 0.5 * 0.02 - 0.02
    expected = 0.9 + (0.8 + 0.5 * 0.15) + 0.5 * s_use  # f from the token probabilities (one-hot would give 2.5)
    assert segments["q1"][0]["score"] == pytest.approx(expected, abs=1e-6)  # the replay kept the probabilities
    assert segments == {s["id"]: s["segments"] for s in first}


ARC = [
    {
        "id": "Mercury_1",
        "question": "Which gas do plants take in?",
        "choices": {"label": ["A", "B", "C", "D"], "text": ["oxygen", "carbon dioxide", "helium", "neon"]},
        "answerKey": "B",
        "ctxs": [
            {"title": "Leaves", "text": "Leaves breathe oxygen at night."},
            {"title": "Photosynthesis", "text": "Plants take in carbon dioxide."},
            {"title": "Stomata", "text": "Stomata let carbon dioxide in."},
        ],
    }
]
STRONG = {"[Relevant]": 0.95, "[Irrelevant]": 0.05}
MIDDLING = {"[Relevant]": 0.6, "[Irrelevant]": 0.4}
PARTLY = {"[Partially supported]": 0.6, "[Fully supported]": 0.2, "[No support / Contradictory]": 0.2}


def test_closed_set_sums_f_per_answer_across_passages_as_the_reference_does(tmp_path):
    (tmp_path / "arc").mkdir()
    write_jsonl(tmp_path / "arc" / "arc_challenge_processed.jsonl", ARC)
    checkpoint = Checkpoint(
        {  # one confident A against two middling Bs: the best single candidate says A, the sum says B
            "breathe oxygen": segment("A", STRONG),
            "take in carbon": segment("B", MIDDLING, PARTLY),
            "let carbon": segment("B", MIDDLING, PARTLY),
        }
    )
    with FakeOpenAIServer(model=MODEL, completions=checkpoint) as server:
        code = main(
            ["bench", "run", "--dataset", "arc_challenge", "--data", str(tmp_path / "arc"), "--system",
             "selfrag+short", "--base-url", server.base_url, "--model", MODEL, "--ndocs", "3",
             "--out", str(tmp_path / "runs"), "--no-progress"]
        )  # fmt: skip
    assert code == 0
    (folder,) = (tmp_path / "runs" / "arc_challenge" / "selfrag+short").iterdir()
    (sample,) = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    assert sample["segments"][0]["text"] == "A"  # the engine's own best candidate
    assert sample["prediction"] == "B"  # the closed-set vote
    question = checkpoint.prompts[-1].split("### Response:")[0]
    assert "Given four answer candidates, A, B, C and D, choose the best answer choice." in question
    assert "### Input:\nWhich gas do plants take in?\nA: oxygen\nB: carbon dioxide\nC: helium\nD: neon" in question


def test_pubhealth_is_posed_with_its_instruction_and_supports_counts_as_true():
    from selfrag.bench.shortform import closed_vote, pose

    question, answers = pose("pubhealth", {"question": "Vitamin C cures colds.", "answers": ["false"]}, "x")
    assert question.endswith("## Input:\n\nVitamin C cures colds.") and question.startswith("Is the following")
    assert answers == ("false",)
    assert closed_vote([("SUPPORTS", 0.4), ("false", 0.5), ("true", 0.3), ("x", None)]) == "true"  # 0.7 > 0.5
    assert closed_vote([]) is None
