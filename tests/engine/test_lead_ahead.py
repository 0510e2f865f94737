"""The short answer's call sent while a step writes (`Config.lead_ahead`, `engine.lead.EarlyLead`): it is in flight
with the step's candidates instead of a round of its own after the loop, its prompt and so the answer are those of
the call sent after, it is sent again only for other documents, and what it costs where the answer ends on other
documents or abstains is one call (tests/engine/test_grounding.py)."""

from __future__ import annotations

import pytest
from helpers import fused

QUESTION = "How many days are refunds accepted?"
DECIDE = {"retrieve": "yes", "query": "refunds"}
LEAD = {"answer": "30 days"}


def _one_step() -> dict:
    return {
        "retrieve_decide": DECIDE,
        "generate_fused": fused("Since April 2026 refunds are accepted within 30 days."),
        "answer_lead": LEAD,
    }


@pytest.mark.parametrize("ahead", [True, False])
def test_the_leads_call_is_in_flight_with_the_steps_candidates_and_asks_the_same(engine, ahead):
    rag = engine(_one_step(), ndocs=2, latency=0.02, lead_ahead=ahead)
    result = rag.answer(QUESTION)
    assert result.lead == "30 days." and result.answer.startswith("30 days. Since April 2026")
    [asked] = rag.chat.calls_to("answer_lead")
    prompts = [call.prompt for call in rag.chat.calls]
    if ahead:  # sent once the step has its chunks, before its candidates: three calls in flight at once
        assert prompts.index("answer_lead") < prompts.index("generate_fused") and rag.chat.max_in_flight == 3
    else:  # after the loop, alone
        assert prompts[-1] == "answer_lead" and rag.chat.max_in_flight == 2
    # the same prompt either way: which sentence is kept does not change the documents the lead reads
    other = engine(_one_step(), ndocs=2, lead_ahead=not ahead)
    other.answer(QUESTION)
    assert other.chat.calls_to("answer_lead")[0].messages == asked.messages


def test_steps_that_write_from_the_same_chunks_send_it_once(engine):
    script = {
        **_one_step(),
        "generate_fused": [
            fused("Refunds are accepted within 30 days.", is_final=False, retrieve_next="continue"),
            fused("Other first.", support="no", evidence="", is_final=False, retrieve_next="continue"),
            fused("They were 14 days before April 2026."),
            fused("Other second.", support="no", evidence=""),
        ],
    }
    result = engine(script, ndocs=2, lead_ahead=True).answer(QUESTION)
    assert len(result.segments) == 2 and result.lead == "30 days."
    assert result.usage.by_prompt["answer_lead"].calls == 1


def test_a_step_that_reads_other_chunks_sends_it_again_for_them(engine):
    script = {
        **_one_step(),
        "generate_fused": [
            fused(
                "Refunds are accepted within 30 days.",
                is_final=False,
                retrieve_next="yes",
                next_query="warranty covers manufacturing defects for two years",
            ),
            fused("The warranty covers manufacturing defects for two years."),
        ],
    }
    rag = engine(script, ndocs=1, lead_ahead=True, decide=False)
    result = rag.answer(QUESTION)
    assert [(s.chunk or "").partition("#")[0] for s in result.segments] == ["policy-2024.md", "warranty.md"]
    first, last = rag.chat.calls_to("answer_lead")  # the first, for the first step's chunk alone, is not used
    assert "warranty" not in first.messages[1].content and "warranty" in last.messages[1].content
    assert result.lead == "30 days." and result.usage.by_prompt["answer_lead"].calls == 2
