"""The short answer first: yes/no and factoid questions lead with their answer, checked against the sentences."""

from __future__ import annotations

import pytest
from helpers import fused

from selfrag import LeadEvent, SegmentEvent
from selfrag.bench.claims import claim_question
from selfrag.engine.lead import UNSETTLED, lead_text, question_kind

DECIDE_YES = {"retrieve": "yes", "query": "refunds"}


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Is a receipt required for a refund?", "yes_no"),
        ("Does the warranty cover defects?", "yes_no"),
        ("How many days do I have for a refund?", "factoid"),
        ("Who answers support email?", "factoid"),
        ("What year did the policy change?", "factoid"),
        # the claim datasets asked as questions, as the benchmarks ask them (`bench.claims.claim_question`)
        (claim_question("Global warming is driving polar bears toward extinction."), "yes_no"),
        (claim_question("0-dimensional biomaterials show inductive properties."), "yes_no"),
        ("Global warming is driving polar bears toward extinction.", None),  # a bare statement asks nothing
        ("Why do refunds take time?", None),
        ("Explain the refund policy.", None),
    ],
)
def test_questions_with_a_short_answer_are_recognised(question, kind):
    assert question_kind(question) == kind


SENTENCES = ["Since April 2026 refunds are accepted within 30 days of purchase."]


@pytest.mark.parametrize(
    ("kind", "answer", "lead"),
    [
        ("yes_no", "Yes, within 30 days.", "Yes."),
        ("yes_no", "no", "No."),
        ("yes_no", "not settled", UNSETTLED),
        ("yes_no", "maybe", UNSETTLED),
        ("factoid", "30 days", "30 days."),
        ("factoid", "90 days", None),  # a number the sentences do not hold is never stated as the answer
        ("factoid", "not settled", None),
        ("factoid", "", None),
    ],
)
def test_the_models_short_answer_is_checked_before_it_leads(kind, answer, lead):
    assert lead_text(kind, answer, SENTENCES) == lead


async def test_a_yes_no_question_leads_with_yes_then_the_cited_sentences(engine):
    script = {
        "retrieve_decide": DECIDE_YES,
        "generate_fused": fused("Since April 2026 refunds are accepted within 30 days."),
        "answer_lead": {"answer": "yes"},
    }
    rag = engine(script, ndocs=1, lead=True)
    events = [e async for e in rag.astream("Are refunds accepted within 30 days?")]
    shown = [e for e in events if isinstance(e, LeadEvent | SegmentEvent)]
    assert isinstance(shown[0], LeadEvent) and shown[0].text == "Yes."
    result = events[-1].result
    assert result.answer == "Yes. Since April 2026 refunds are accepted within 30 days [1]."
    assert result.lead == "Yes." and result.sources[0].n == 1
    call = rag.chat.calls_to("answer_lead")[0].messages[1].content
    assert "1. Since April 2026 refunds are accepted within 30 days." in call


def test_a_factoid_whose_short_answer_the_sentences_do_not_hold_gets_no_lead(engine):
    script = {
        "retrieve_decide": DECIDE_YES,
        "generate_fused": fused("Since April 2026 refunds are accepted within 30 days."),
        "answer_lead": {"answer": "90 days"},
    }
    result = engine(script, ndocs=1, lead=True).answer("How many days do I have for a refund?")
    assert result.lead is None and result.answer == "Since April 2026 refunds are accepted within 30 days [1]."


def test_an_explanation_question_makes_no_lead_call(engine):
    script = {"retrieve_decide": DECIDE_YES, "generate_fused": fused("Refunds take time because of checks.")}
    rag = engine(script, ndocs=1, lead=True)
    assert rag.answer("Why do refunds take time?").lead is None
    assert not rag.chat.calls_to("answer_lead")
