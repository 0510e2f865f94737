"""`selfrag critic fit|check`: refitting the evidence critic from judged data, and bad input refused in one line."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from factories import write_jsonl

import selfrag
from selfrag.cli import main
from selfrag.engine.calibration import load_critic_model

SHIPPED = Path(selfrag.__file__).parent / "data" / "critic-v1.json"
CHUNK = "Refunds are accepted within 30 days of purchase. A receipt is required."


def row(n: int, good: bool, **extra) -> dict:
    sentence = "Refunds are accepted within 30 days." if good else f"Refunds take {90 + n} days in Lyon."
    return {"question": f"How long for refunds ({n})?", "sentence": sentence, "chunk": CHUNK,
            "relevant": good, "supported": good, "rank": n % 5, "correct": good, **extra}  # fmt: skip


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_fit_writes_weights_that_check_and_load(tmp_path, capsys):
    judged = write_jsonl(tmp_path / "j.jsonl", [row(n, n % 2 == 0) for n in range(40)])
    out = tmp_path / "w.json"
    assert main(["critic", "fit", str(judged), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "40 rows" in said and "on P(rel)·P(sup)" in said  # no unanswerable questions to fit an answers head on
    assert main(["critic", "check", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["fitted_on"]["rows"] == 40


def test_fit_reads_several_files_as_one_set_and_keeps_the_short_answer_counts(tmp_path, capsys):
    first = write_jsonl(tmp_path / "a.jsonl", [row(n, n % 2 == 0) for n in range(20)])
    second = write_jsonl(tmp_path / "b.jsonl", [row(n, n % 2 == 1) for n in range(20, 40)])
    out = tmp_path / "w.json"
    assert main(["critic", "fit", str(first), str(second), "--out", str(out)]) == 0
    assert "40 rows" in capsys.readouterr().out  # 20 alone are too few: both files were read
    shipped, refitted = load_critic_model(), load_critic_model(out)
    assert refitted.fitted_on["source"] == "a.jsonl, b.jsonl"
    assert shipped.lead and refitted.lead == shipped.lead
    assert refitted.fitted_on["lead_decided"] == shipped.fitted_on["lead_decided"]
    assert refitted.relevant != shipped.relevant
    # the counts come from --weights: weights without any keep none
    bare = json.loads(SHIPPED.read_text())
    del bare["lead"]
    bare_path = write_jsonl(tmp_path / "bare.json", [json.dumps(bare)])
    assert main(["critic", "fit", str(first), str(second), "--weights", str(bare_path), "--out", str(out)]) == 0
    assert "short-answer counts kept: none" in capsys.readouterr().out
    assert load_critic_model(out).lead == {}


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{k: v for k, v in row(n, n % 2 == 0).items() if k != "chunk"} for n in range(40)], "'chunk'"),
        ([row(n, n % 2 == 0, supported="maybe") for n in range(40)], "'supported'"),
        ([row(n, True) for n in range(40)], "both classes"),
        ([row(n, n % 2 == 0) for n in range(10)], "too few"),
        (["{not json"], "not JSON"),
    ],
)
def test_bad_judgments_get_one_line_and_leave_the_shipped_weights_alone(tmp_path, capsys, rows, message):
    before = digest(SHIPPED)
    judged = write_jsonl(tmp_path / "j.jsonl", rows)
    out = tmp_path / "w.json"
    assert main(["critic", "fit", str(judged), "--out", str(out)]) != 0
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not out.exists() and digest(SHIPPED) == before


def test_fit_refuses_to_overwrite_the_shipped_weights(tmp_path, capsys):
    before = digest(SHIPPED)
    judged = write_jsonl(tmp_path / "j.jsonl", [row(n, n % 2 == 0) for n in range(40)])
    assert main(["critic", "fit", str(judged), "--out", str(SHIPPED)]) != 0
    assert "shipped" in capsys.readouterr().err and digest(SHIPPED) == before


def test_a_bad_weights_file_is_refused_naming_it(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "selfrag-critic", "version": 1, "features": ["x"]}))
    assert main(["critic", "check", str(bad)]) == 1
    assert "bad.json" in capsys.readouterr().err
    index = tmp_path / "missing-index"
    assert main(["ask", "q?", "--index", str(index), "--scorer", "evidence", "--scorer-weights", str(bad)]) != 0


def answers(n: int) -> list[dict]:
    """n questions, each with its right sentence and a wrong one."""
    return [row(i, good) | {"question": f"How long for refunds ({i})?"} for i in range(n) for good in (True, False)]


def test_cut_with_the_confidence_map_refits_it_on_the_same_answers_under_the_same_heads(tmp_path, capsys):
    judged = write_jsonl(tmp_path / "j.jsonl", answers(40))
    out = tmp_path / "w.json"
    assert main(["critic", "cut", str(judged), "--confidence-map", "--out", str(out)]) == 0
    assert "confidence map a=" in capsys.readouterr().out
    shipped, refitted = load_critic_model(), load_critic_model(out)
    assert (refitted.relevant, refitted.supported, refitted.lead) == (shipped.relevant, shipped.supported, shipped.lead)
    assert refitted.confidence != shipped.confidence and "40 answers" in refitted.fitted_on["confidence_map"]
    assert shipped.answered is not None and refitted.answered is None  # the map refitted here speaks for answers
    assert main(["critic", "cut", str(judged), "--out", str(out)]) == 0  # without the map: the head kept
    assert load_critic_model(out).answered == shipped.answered
    # a declined candidate is never the answer: declining every right one leaves too few to fit a cut on
    declined = [r | {"declined": r["correct"]} for r in answers(40)]
    assert main(["critic", "cut", str(write_jsonl(tmp_path / "d.jsonl", declined)), "--out", str(out)]) != 0
    assert "too few" in capsys.readouterr().err


def test_cut_refits_only_the_abstention_cut_under_the_given_weights(tmp_path, capsys):

    judged = write_jsonl(tmp_path / "j.jsonl", answers(40))
    out = tmp_path / "w.json"
    assert main(["critic", "cut", str(judged), "--keep", "0.95", "--confidence", "0.8", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "abstention cut" in said and "of the 40 right answers" in said and "answers head" not in said
    shipped, refitted = load_critic_model(), load_critic_model(out)
    kept = ("relevant", "supported", "lead", "answers")  # no unanswerable questions: the shipped answers head stays
    assert all(getattr(refitted, name) == getattr(shipped, name) for name in kept)
    assert "keep 0.95 at 0.8" in refitted.fitted_on["abstain_cut"]
    assert refitted.abstain_threshold != shipped.abstain_threshold
    # with 20 questions made unanswerable the answers head is refitted on them, and the cut is on it
    gone = [r | {"question": r["question"] + " (gone)", "answerable": False, "correct": False} for r in answers(20)]
    assert main(["critic", "cut", str(write_jsonl(tmp_path / "u.jsonl", answers(40) + gone)), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "abstains on" in said and "of 20 unanswerable questions; the answers head refitted on them" in said
    again = load_critic_model(out)
    assert again.answers is not None and again.answers != shipped.answers
    assert "40 right answers, 20 unanswerable questions" in again.fitted_on["answers_head"]


def right_of(n: int, every: int) -> list[dict]:
    """answers(n) where only every `every`-th question's answer is right."""
    return [r | {"correct": r["correct"] and i // 2 % every == 0} for i, r in enumerate(answers(n))]


def test_map_refits_only_the_confidence_map_on_several_files_as_one_set(tmp_path, capsys):
    first = write_jsonl(tmp_path / "a.jsonl", right_of(15, 2))
    second = write_jsonl(tmp_path / "b.jsonl", [r | {"question": r["question"] + " again"} for r in right_of(15, 2)])
    out = tmp_path / "w.json"
    assert main(["critic", "map", str(first), "--out", str(out)]) != 0  # 15 answered questions are too few
    assert "too few" in capsys.readouterr().err and not out.exists()
    assert main(["critic", "map", str(first), str(second), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "on 30 answers, 16 right" in said and "answered head dropped" in said
    shipped, refitted = load_critic_model(), load_critic_model(out)
    assert shipped.answered is not None and refitted.answered is None  # the map speaks for answers again
    assert "answered" not in refitted.fitted_on
    kept = ("relevant", "supported", "lead", "abstain_threshold", "support_threshold", "refutes")
    assert all(getattr(refitted, name) == getattr(shipped, name) for name in kept)
    assert refitted.confidence != shipped.confidence
    assert refitted.fitted_on["confidence_map"].startswith("a.jsonl, b.jsonl: 30 answers")
    # the map is what a confidence means: answers right less often get a lower one at the same support
    low = tmp_path / "low.json"
    assert main(["critic", "map", str(write_jsonl(tmp_path / "c.jsonl", right_of(30, 4))), "--out", str(low)]) == 0
    assert load_critic_model(low).confidence.probability(0.6) < refitted.confidence.probability(0.6)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([r | {"correct": False} for r in answers(30)], "every one of the 30 answers is wrong"),
        ([{k: v for k, v in r.items() if k != "correct"} for r in answers(30)], "too few"),
    ],
)
def test_map_refuses_bad_input_in_one_line(tmp_path, capsys, rows, message):
    before = digest(SHIPPED)
    out = tmp_path / "w.json"
    assert main(["critic", "map", str(write_jsonl(tmp_path / "j.jsonl", rows)), "--out", str(out)]) != 0
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not out.exists() and digest(SHIPPED) == before
    assert main(["critic", "map", str(write_jsonl(tmp_path / "k.jsonl", answers(30))), "--out", str(SHIPPED)]) != 0
    assert digest(SHIPPED) == before


@pytest.mark.parametrize(
    ("flags", "rows", "message"),
    [
        (["--keep", "1.5"], 40, "--keep must be a share"),
        (["--confidence", "0"], 40, "--confidence must be a share"),
        ([], 10, "too few"),
    ],
)
def test_cut_refuses_bad_input_in_one_line(tmp_path, capsys, flags, rows, message):
    before = digest(SHIPPED)
    judged = write_jsonl(tmp_path / "j.jsonl", answers(rows))
    out = tmp_path / "w.json"
    assert main(["critic", "cut", str(judged), *flags, "--out", str(out)]) != 0
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not out.exists() and digest(SHIPPED) == before
    assert main(["critic", "cut", str(judged), "--out", str(SHIPPED)]) != 0
    assert digest(SHIPPED) == before
