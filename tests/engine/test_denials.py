"""The model's own short answer is checked as a decided one is: a "Yes." or a chosen option that a kept sentence or
a document read denies ("The Vela Lite is not waterproof") prints as "The documents don't settle it." and the
trace says which sentence denied it (`Config.denials`; `--no-denials` prints the model's answer as it came)."""

from __future__ import annotations

import argparse

from helpers import fused

from selfrag import Chunk
from selfrag.cli.common import add_engine_options, engine_flags
from selfrag.engine.denials import denial
from selfrag.engine.policies import NAMES
from selfrag.engine.state import UNSETTLED
from selfrag.labels import QuestionKind
from selfrag.settings import load_config

VELA = [
    Chunk("vela-pro.md", 0, "The Vela Pro is waterproof to 50 metres and comes with a steel strap."),
    Chunk("vela-lite.md", 0, "The Vela Lite is not waterproof, so keep it away from rain and the pool."),
]
LEAFLETS = [
    Chunk("calmex.md", 0, "Calmex is a pain medicine for adults. Calmex is not safe during pregnancy."),
    Chunk("dormira.md", 0, "Dormira is a sleep medicine for adults. Dormira is safe during pregnancy."),
]


def script(sentence: str, lead: str) -> dict:
    return {
        "retrieve_decide": {"retrieve": "yes", "query": "q"},
        "generate_fused": fused(sentence),
        "generate_direct": fused(sentence),  # asked again plainly, it says the same
        "answer_lead": {"answer": lead},
        "confirm_decision": {"verdict": "agree"},
    }


def ask(engine, chunks, sentence, lead, question, **knobs):
    rag = engine(script(sentence, lead), chunks=chunks, ndocs=2, lead=True, decide=False, scorer="paper", **knobs)
    return rag.answer(question)


def test_the_models_own_yes_over_a_document_that_denies_it_is_withheld(engine):
    result = ask(engine, VELA, "The Vela Lite is a light watch.", "Yes", "Is the Vela Lite waterproof?")
    assert result.lead == UNSETTLED
    assert "The Vela Lite is not waterproof" in (result.trace.lead_refused or "")
    assert "by the model" in result.trace.lead_refused


def test_the_models_own_choice_of_a_medicine_its_leaflet_calls_unsafe_is_withheld(engine):
    said = "Calmex and Dormira are medicines for adults."
    result = ask(engine, LEAFLETS, said, "Calmex", "Which medicine is safe during pregnancy, Calmex or Dormira?")
    assert result.lead == UNSETTLED and "Calmex is not safe" in result.trace.lead_refused


def test_the_models_right_choice_and_its_no_stand(engine):
    said = "Dormira is safe during pregnancy."
    right = ask(engine, LEAFLETS, said, "Dormira", "Which medicine is safe during pregnancy, Calmex or Dormira?")
    assert right.lead == "Dormira." and right.trace.lead_refused is None
    no = ask(engine, VELA, "No, the Vela Lite is not waterproof.", "No", "Is the Vela Lite waterproof?")
    assert no.lead == "No." and no.trace.lead_refused is None


def test_switched_off_the_models_answer_prints_as_it_came(engine):
    result = ask(engine, VELA, "The Vela Lite is a light watch.", "Yes", "Is the Vela Lite waterproof?", denials=False)
    assert result.lead == "Yes." and result.trace.lead_refused is None


def test_a_denial_must_speak_of_the_chosen_option_and_of_what_is_asked():
    question = "Which medicine is safe during pregnancy, Calmex or Dormira?"
    texts = [chunk.text for chunk in LEAFLETS]
    assert denial(question, QuestionKind.CHOICE, "Calmex", texts) == "Calmex is not safe during pregnancy."
    assert denial(question, QuestionKind.CHOICE, "Dormira", texts) is None  # Calmex's denial is not Dormira's
    assert denial("Is the Vela Pro waterproof?", QuestionKind.YES_NO, "Yes", ["The Vela Pro is not heavy."]) is None
    assert denial("Is the Vela Lite waterproof?", QuestionKind.YES_NO, "No", [VELA[1].text]) is None
    assert denial("What does the Vela Lite cost?", QuestionKind.FACTOID, "Yes", [VELA[1].text]) is None


def test_every_policy_switch_given_as_a_flag_reaches_the_engine(tmp_path):
    """`--no-<policy>` for every policy, parsed as `selfrag ask` parses it, turns that policy off in the resolved
    Config (a flag parsed but never passed on would leave it on, as `--no-confirm` once did)."""
    parser = argparse.ArgumentParser()
    add_engine_options(parser)
    none = tmp_path / "empty.toml"
    none.write_text("")
    for name in NAMES:
        args = parser.parse_args([f"--no-{name.replace('_', '-')}"])
        config = load_config(engine_flags(args), environ={}, config_file=str(none))
        assert getattr(config, name) is False, name
        assert all(getattr(config, other) for other in NAMES if other != name), name
