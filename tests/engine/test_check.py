"""The `check` policy: where the weights' answered head reads the model's verdict that the answer gives what the
question asks, the engine asks it once and the confidence moves with it; the answer never does. Weights that do not
read it send no call, and a failed call reads as no verdict (scripted model, no network)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import CHUNKS, fused

from selfrag.engine.calibration import (
    ANSWERED_FEATURES,
    FEATURES,
    NO_CHECK,
    CriticModel,
    Head,
    Platt,
    load_critic_model,
    parse_critic_model,
)
from selfrag.errors import ConfigError, LLMError

Q = "How many days do I have to return a purchase for a refund?"
SCRIPT = {
    "retrieve_decide": {"retrieve": "yes", "query": "refund days"},
    "generate_fused": fused("Refunds are accepted within 30 days of purchase."),
}


def weights(folder, answered: Head | None) -> str:  # type: ignore[no-untyped-def]
    """A weights file that rates every candidate alike and whose answered head is `answered`."""
    flat = Head(tuple(0.0 for _ in FEATURES), 2.0)
    model = CriticModel(flat, flat, Platt(), 0.5, 0.0, {"rows": 100, "source": "test"}, answered=answered)
    path = folder / f"w-{len(list(folder.glob('w-*.json')))}.json"
    path.write_text(model.to_json())
    return str(path)


CHECKED = Head((0.0, 0.0, 0.0, 4.0), -2.0)  # reads only the check: sigmoid(4 · credit - 2)


@pytest.mark.parametrize(("verdict", "credit"), [("agree", 1.0), ("disagree", 0.0), ("unclear", 0.5)])
def test_the_check_moves_the_confidence_where_the_weights_read_it_and_never_the_answer(
    engine, tmp_path, verdict, credit
):
    knobs = {"scorer": "evidence", "scorer_weights": weights(tmp_path, CHECKED), "lead": False}
    rag = engine({**SCRIPT, "check_answer": {"verdict": verdict}}, chunks=CHUNKS, ndocs=2, **knobs)
    result = rag.answer(Q)
    assert result.answer.startswith("Refunds are accepted within 14 days")
    [asked] = rag.chat.calls_to("check_answer")  # one call, about the question and the sentences as given
    values = dict(asked.values)
    assert values["question"] == Q and "Refunds are accepted within 14 days" in values["answer"]
    assert result.trace.answer_check == credit and verdict in (result.trace.answer_check_reply or "")
    assert result.confidence == pytest.approx(CHECKED.probability([0.0, 0.0, 0.0, credit]), abs=1e-6)
    assert "check" in result.trace.policies.split("policies in force: ")[1]


def test_weights_that_do_not_read_the_check_and_check_off_send_no_call(engine, tmp_path):
    plain = Head((0.0, 0.0, 0.0), 0.0)
    for knobs in (
        {"scorer": "evidence", "scorer_weights": weights(tmp_path, plain)},
        {"scorer": "evidence", "scorer_weights": weights(tmp_path, CHECKED), "check": False},
        {"scorer": "evidence"},  # the shipped weights
        {"preset": "paper"},
    ):
        rag = engine(SCRIPT, chunks=CHUNKS, ndocs=2, lead=False, **knobs)
        result = rag.answer(Q)
        assert not rag.chat.calls_to("check_answer") and result.trace.answer_check is None
        assert "check" not in result.trace.policies.split("policies in force: ")[1].split(", ")


def test_a_failed_check_reads_as_no_verdict_and_the_answer_stands(engine, tmp_path):
    knobs = {"scorer": "evidence", "scorer_weights": weights(tmp_path, CHECKED), "lead": False, "reasks": 0}
    rag = engine({**SCRIPT, "check_answer": LLMError("the endpoint is down")}, chunks=CHUNKS, ndocs=2, **knobs)
    result = rag.answer(Q)
    assert result.answer.startswith("Refunds are accepted within 14 days")
    assert result.trace.answer_check is None and "no reply" in (result.trace.answer_check_reply or "")
    assert result.confidence == pytest.approx(CHECKED.probability([0.0, 0.0, 0.0, NO_CHECK]), abs=1e-6)


def test_an_abstention_is_not_checked(engine, tmp_path):
    knobs = {"scorer": "evidence", "scorer_weights": weights(tmp_path, CHECKED), "lead": False, "abstain_below": 0.99}
    rag = engine({**SCRIPT, "check_answer": {"verdict": "agree"}}, chunks=CHUNKS, ndocs=2, **knobs)
    result = rag.answer(Q)
    assert result.abstention is not None and not rag.chat.calls_to("check_answer")


def test_a_weights_file_names_the_check_among_its_answered_inputs_and_reads_back(tmp_path):
    path = weights(tmp_path, CHECKED)
    text = Path(path).read_text()
    assert json.loads(text)["answered"]["features"] == [*ANSWERED_FEATURES, "model_check"]
    model = load_critic_model(path)
    assert model.reads_check and model.answered == CHECKED
    assert not load_critic_model(weights(tmp_path, Head((0.0, 0.0, 0.0), 0.0))).reads_check  # an older file
    with pytest.raises(ConfigError, match="answered was fitted on other features"):
        parse_critic_model(text.replace('"model_check"', '"model_verdict"'), "critic weights w.json")
