"""Presets instead of a hidden switch: `paper` runs the paper's algorithm and no other policy, `default` every
policy; a policy's own switch wins over its preset; the trace says which preset and policies were in force."""

from __future__ import annotations

import pytest
from helpers import DIRECTORS, fused

from selfrag import Config
from selfrag.cli import main
from selfrag.config import PRESETS
from selfrag.engine.policies import NAMES, POLICIES, in_force
from selfrag.errors import ConfigError

QUESTION = "Who was born first, Pablo Trapero or Aleksander Ford?"
RESTATED = "Who was born first, Pablo Trapero or Aleksander Ford?"  # a degenerate sentence: the question again


def script() -> dict:
    """Every sentence restates the question, asked again plainly too; no short-answer call is scripted (one would
    fail loudly)."""
    restated = fused(RESTATED)
    return {
        "retrieve_decide": {"retrieve": "yes", "query": "born"},
        "generate_fused": restated,
        "generate_direct": restated,
    }


def test_every_policy_has_its_own_switch_and_every_preset_sets_them_all():
    assert set(NAMES) <= {name for name in Config.__dataclass_fields__}
    for values in PRESETS.values():
        assert set(NAMES) <= set(values)
    assert all(policy.reads and policy.changes for policy in POLICIES)


@pytest.mark.parametrize("scorer", ["paper", "evidence"])
def test_the_paper_preset_puts_no_policy_in_force_whatever_the_scorer(scorer):
    assert in_force(Config(preset="paper", scorer=scorer), evidence=scorer == "evidence") == ()
    assert Config(preset="paper").scorer == "paper"
    # the evidence scorer has its cut; the check acts only where the weights read it
    assert set(in_force(Config(), evidence=True)) == set(NAMES) - {"disowned", "check"}
    assert set(in_force(Config(), evidence=True, checks=True)) == set(NAMES) - {"disowned"}
    assert set(in_force(Config(), evidence=False)) == set(NAMES) - {"ground", "extract", "hops", "check"}
    assert "check" not in in_force(Config(), evidence=False, checks=True)  # the paper's scorer reads no check


def test_the_paper_preset_runs_the_papers_algorithm_and_nothing_else(engine):
    rag = engine(script(), chunks=DIRECTORS, ndocs=2, preset="paper", lead=None)
    result = rag.answer(QUESTION)
    assert result.lead is None and not rag.chat.calls_to("answer_lead")  # no short answer, decided or asked
    assert [s.text for s in result.segments] == [RESTATED]  # no filter declined the sentence the model wrote
    assert {c.flag for step in result.trace.steps for c in step.candidates} == {None}
    assert result.trace.policies.startswith("preset paper, scorer paper; policies in force: none")
    assert result.config["preset"] == "paper"


def test_the_default_preset_runs_its_policies_and_says_so(engine):
    confirming = {**script(), "answer_lead": {"answer": "Aleksander Ford"}, "confirm_decision": {"verdict": "agree"}}
    rag = engine(confirming, chunks=DIRECTORS, ndocs=2, lead=None)
    result = rag.answer(QUESTION)
    assert result.lead == "Aleksander Ford." and result.lead_from == "dates"  # decided, and the model agreed
    assert len(rag.chat.calls_to("confirm_decision")) == 1 and "agree" in result.trace.lead_confirm
    assert "restates_question" in {c.flag for step in result.trace.steps for c in step.candidates}
    policies = "policies in force: supersession, filters, ask_plainly, disowned, lead, decide, confirm"
    assert policies in result.trace.policies


def test_a_policys_own_switch_wins_over_its_preset():
    config = Config(preset="paper", lead=True, decide=True)
    assert in_force(config, evidence=False) == ("lead", "decide")
    assert Config(lead=False).with_values(preset="paper").lead is False
    assert Config(preset="paper").with_values(preset="default").lead is True


def test_an_unknown_preset_is_refused_naming_the_valid_ones(capsys):
    with pytest.raises(ConfigError, match="preset must be one of default, paper"):
        Config(preset="fast")
    with pytest.raises(SystemExit) as caught:
        main(["ask", "q?", "--index", "x", "--preset", "fast"])
    assert caught.value.code == 2
    assert "'default', 'paper'" in capsys.readouterr().err
