"""The answer's confidence fitted on the answers training runs gave: its inputs read back from run records, the
head fitted and written into the weights, and what the command refuses."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest
from factories import write_run

from selfrag.cli import main
from selfrag.engine.calibration import NO_CHECK, Head, answer_support, load_critic_model
from selfrag.engine.evidence import FEATURES as ALL
from selfrag.engine.evidence import vector
from selfrag.fit.answers import answered, answered_all
from selfrag.fit.critic import check_predicts, fit_answered

FEATURES = {"novelty": 0.5}


def candidate(text, p_rel, p_sup, extracted=False):
    critique = {"p_relevant": p_rel, "p_supported": p_sup, "answer_support": None, "features": FEATURES}
    return {"text": text, "critique": critique, "extracted": extracted}


def record(sentences, answers, *, candidates=None, abstained=False, status="ok"):
    texts = [text for text, _, _ in sentences]
    return {
        "status": status, "question": "Who directed Raging Bull?", "answers": answers, "abstained": abstained,
        "prediction": " ".join(texts), "segments": [{"text": text} for text in texts],
        "candidates": candidates if candidates is not None else [candidate(*s) for s in sentences],
    }  # fmt: skip


def test_an_answers_inputs_are_its_sentences_ratings_and_words_under_the_weights_given():
    shipped = load_critic_model()
    sentences = [("Raging Bull was directed by Martin Scorsese.", 0.8, 0.4), ("It came out in 1980.", 0.6, 0.2)]
    found = answered(record(sentences, ["Martin Scorsese"]), shipped)
    assert found is not None
    inputs, right = found
    supports = [shipped.support(r, s, FEATURES, False) for _, r, s in sentences]
    assert right and inputs == pytest.approx([0.3, sum(supports) / 2, math.log1p(12)])
    plain = answered(record(sentences, ["Martin Scorsese"]), replace(shipped, answers=None))  # no head: the product
    assert plain is not None and plain[0][1] == pytest.approx((answer_support(0.8, 0.4) + answer_support(0.6, 0.2)) / 2)
    wrong = answered(record(sentences[1:], ["Martin Scorsese"]), shipped)
    assert wrong is not None and wrong[1] is False


def test_a_sentence_two_chunks_gave_is_read_from_the_candidate_of_its_own_chunk():
    shipped = load_critic_model()
    text = "Raging Bull was directed by Martin Scorsese."
    weak, strong = dict(candidate(text, 0.1, 0.1), chunk="a.md#0"), dict(candidate(text, 0.9, 0.7), chunk="b.md#0")
    kept = record([(text, 0.9, 0.7)], ["Martin Scorsese"], candidates=[weak, strong])
    kept["segments"][0]["chunk"] = "b.md#0"
    found = answered(kept, shipped)
    assert found is not None and found[0][0] == 0.7  # the kept segment's own candidate, not the first of that text


def test_no_inputs_for_an_abstention_a_failure_or_a_sentence_no_rated_candidate_holds():
    shipped = load_critic_model()
    sentence = [("Raging Bull was directed by Martin Scorsese.", 0.8, 0.4)]
    unrated = [{"text": sentence[0][0], "critique": {"p_relevant": None, "p_supported": None}}]
    records = [
        record(sentence, ["Martin Scorsese"], abstained=True),
        record(sentence, ["Martin Scorsese"], status="failed"),
        record(sentence, ["Martin Scorsese"], candidates=unrated),  # the paper's critic rated it: nothing to read
        record(sentence, ["Martin Scorsese"], candidates=[candidate("Another sentence.", 0.8, 0.4)]),
        record(sentence, ["Martin Scorsese"]),
    ]
    assert len(answered_all(records, shipped)) == 1


def answer_records(n):
    """n answers: the long, well-supported ones right, the short, poorly supported ones wrong (and one of each
    the other way, so the classes overlap)."""
    out = []
    for i in range(n):
        right = i % 2 == 0
        text = "Raging Bull was directed by Martin Scorsese in 1980 in New York." if right else "It is a film."
        p_rel, p_sup = (0.9, 0.6) if right else (0.3, 0.2)
        out.append(record([(text, p_rel, p_sup)], ["Martin Scorsese"] if right == (i > 1) else ["nobody"]))
    return out


def test_fit_confidence_writes_a_head_that_ranks_the_answers_and_keeps_the_rest(tmp_path, capsys):
    out = tmp_path / "w.json"
    train = write_run(tmp_path / "train", answer_records(30))
    made = write_run(tmp_path / "unans", answer_records(30), unanswerable=True)  # other questions: counted apart
    assert main(["bench", "fit-confidence", str(train), str(made), "--out", str(out)]) == 0
    assert "fitted on 60 answers" in capsys.readouterr().err
    fitted, shipped = load_critic_model(out), load_critic_model()
    assert fitted.answered is not None and fitted.fitted_on["answered"].startswith("halueval training answers of 2")
    kept = ("relevant", "supported", "answers", "confidence", "abstain_threshold", "lead")
    assert all(getattr(fitted, name) == getattr(shipped, name) for name in kept)  # the rest as it was
    long, short = (answered(r, fitted) for r in answer_records(4)[2:])
    assert long and short
    sure, unsure = fitted.answer_confidence([0.6], [long[0][1]], 12), fitted.answer_confidence([0.2], [short[0][1]], 4)
    assert sure > 0.5 > unsure


def test_fit_confidence_refuses_test_runs_too_few_answers_and_one_class(tmp_path, capsys):
    out = tmp_path / "w.json"
    right = record([("Raging Bull was directed by Martin Scorsese.", 0.9, 0.6)], ["Martin Scorsese"])
    for folder, code, message in (
        (write_run(tmp_path / "test", answer_records(30), split="all"), 2, "fit only on training ids"),
        (write_run(tmp_path / "few", answer_records(10)), 1, "too few"),
        (write_run(tmp_path / "right", [right] * 30), 1, "every one of the 30 answers is right"),
        (write_run(tmp_path / "none", [record([("x", 0.5, 0.5)], ["y"], abstained=True)] * 30), 1, "nothing to fit"),
    ):
        assert main(["bench", "fit-confidence", str(folder), "--out", str(out)]) == code
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1 and not out.exists()


def test_a_run_rated_by_other_weights_is_read_under_the_weights_being_fitted():
    shipped = load_critic_model()
    values = dict.fromkeys(ALL, 0.5) | {"novelty": 0.2}
    text = "Raging Bull was directed by Martin Scorsese."
    rated = {"text": text, "critique": {"p_relevant": 0.99, "p_supported": 0.99, "features": values}}
    found = answered(record([(text, 0.99, 0.99)], ["Martin Scorsese"], candidates=[rated]), shipped)
    assert found is not None  # the recorded 0.99 were another model's heads: this one's are read from the features
    p_rel, p_sup = shipped.relevant.probability(vector(values)), shipped.supported.probability(vector(values))
    assert found[0][:2] == pytest.approx([p_sup, shipped.support(p_rel, p_sup, values, False)])
    assert p_sup != pytest.approx(0.99)


def test_the_answers_given_are_those_the_weights_cut_lets_through():
    """`given`: a question none of whose candidates reaches the abstention cut gets no answer from the engine, so
    the answer's confidence is not fitted on its answer (`selfrag calibrate` asks with no cut, then fits one)."""
    shipped = load_critic_model()
    records = answer_records(30)
    every = answered_all(records, shipped)
    supports = sorted({inputs[1] for inputs, _ in every})
    assert len(supports) == 2  # the well-supported answers and the poorly supported ones
    cut = replace(shipped, abstain_threshold=(supports[0] + supports[1]) / 2)
    given = answered_all(records, cut, given=True)
    assert len(every) == 30 and len(given) == 15
    assert all(inputs[1] > cut.abstain_threshold for inputs, _ in given)
    assert len(answered_all(records, replace(shipped, abstain_threshold=0.0), given=True)) == 30  # no cut: all


def test_the_models_check_is_the_last_input_and_no_verdict_reads_as_none_had():
    shipped = load_critic_model()
    sentences = [("Raging Bull was directed by Martin Scorsese.", 0.8, 0.4)]
    plain = answered(record(sentences, ["Martin Scorsese"]), shipped)
    checked = answered({**record(sentences, ["Martin Scorsese"]), "answer_check": 0.9}, shipped, checked=True)
    unchecked = answered(record(sentences, ["Martin Scorsese"]), shipped, checked=True)
    assert plain is not None and checked is not None and unchecked is not None
    assert checked[0] == [*plain[0], 0.9] and unchecked[0] == [*plain[0], NO_CHECK]


def _answers(check_of):  # type: ignore[no-untyped-def]
    """60 answers whose ratings say little of which are right (a third are), each with the check `check_of` gives."""
    rng = random.Random(3)
    out = []
    for n in range(60):
        right = n % 3 == 0
        inputs = [rng.uniform(0.3, 0.7), rng.uniform(0.2, 0.6), math.log1p(rng.randint(8, 20))]
        out.append(([*inputs, check_of(right, rng)], right))
    return out


def test_the_check_is_read_only_where_it_predicts_answers_held_out():
    reads, said = check_predicts(_answers(lambda right, rng: float(right) if rng.random() < 0.9 else 1 - right))
    assert reads and "held-out log loss" in said
    noise, _ = check_predicts(_answers(lambda right, rng: float(rng.random() < 0.5)))
    assert not noise  # a check that says nothing of the answers is not worth its call
    model, count, _ = fit_answered(load_critic_model(), _answers(lambda right, rng: float(right)))
    assert count == 60 and model.reads_check and model.answered is not None and model.answered.weights[3] > 0


def test_fit_confidence_keeps_the_check_where_the_weights_read_it(tmp_path, capsys):
    weights = tmp_path / "checked.json"
    weights.write_text(replace(load_critic_model(), answered=Head((0.0, 0.0, 0.0, 1.0), 0.0)).to_json())
    runs = [{**r, "answer_check": float(n % 2 == 0)} for n, r in enumerate(answer_records(40))]  # agrees when right
    out = tmp_path / "w.json"
    train = write_run(tmp_path / "train", runs)
    assert main(["bench", "fit-confidence", str(train), "--weights", str(weights), "--out", str(out)]) == 0
    fitted = load_critic_model(out)
    assert fitted.reads_check and fitted.answered is not None and fitted.answered.weights[3] > 0
    assert fitted.fitted_on["answered"].startswith("halueval training answers of 1 run(s) with the model's check: 40")
