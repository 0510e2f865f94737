"""A value asked for is read off the clauses of the documents holding the question's words, or not at all."""

from __future__ import annotations

import pytest

from selfrag.engine.decide import Proposal
from selfrag.engine.values import asked_value, decide_value

CARGO = (
    "# Cargo bikes\n\nThe co-op has 6 cargo bikes with a front box that holds up to 80 kg.\n\n"
    "Cargo bikes must be reserved in the app, at least two hours ahead. The price is $4 per hour for every "
    "membership type."
)
LATE = "A cargo bike not returned at the end of its slot is charged $10 per extra hour."
FEES = (
    "# Fees\n\nA day pass costs $6.00. The member share is $25. The Fair Ride plan costs $3 per month, with the "
    "$25 share paid over a year."
)
REPAIR = "The community repair evening is open from 18:00 to 21:00 every Thursday."
SERVICE = "Each bike is serviced every six weeks at the workshop."


@pytest.mark.parametrize(
    ("question", "sort"),
    [
        ("How much does the member share cost?", "money"),
        ("Day pass price?", "money"),
        ("How much time do I get to reach another station?", "duration"),  # not money
        ("How long do I have to report an accident?", "duration"),
        ("How far ahead do I need to book a cargo bike?", "duration"),  # not a distance
        ("How far does a full battery last?", "distance"),
        ("Minimum age to ride alone?", "age"),
        ("What time does the repair evening open?", "time"),
        ("By what date do students renew?", "date"),
        ("In which year was the co-op founded?", "year"),
        ("What weight can the box hold?", "weight"),
        ("What's the top speed of the e-bike motor?", "speed"),
        ("How often is each bike serviced?", "frequency"),
        ("How many docks at Central Station?", "count:docks"),
        ("Who decides on Fair Ride applications?", None),
    ],
)
def test_the_sort_of_value_a_question_asks(question, sort):
    assert asked_value(question) == sort


@pytest.mark.parametrize(
    ("question", "texts", "value"),
    [
        ("Day pass price?", [FEES], "$6.00"),  # "price" is the value's name, not a word the clause must hold
        ("day pass price", [FEES], "$6.00"),  # typed as into a search box
        ("How much does the member share cost?", [FEES], "$25"),
        ("What does the Fair Ride plan cost per month?", [FEES], "$3 per month"),  # the one of two it asks
        ("What weight can the cargo bike box hold?", [CARGO], "Up to 80 kg"),
        ("How often is each bike serviced?", [SERVICE], "Every six weeks"),
        ("What time does the community repair evening open?", [REPAIR], "18:00"),  # the first of two
        (
            "What time does the repair evening close?",
            ["The repair evening opens at 18:00 and closes at 21:00."],
            "21:00",
        ),
    ],
)
def test_a_value_every_clause_holding_the_questions_words_states_is_the_answer(question, texts, value):
    decision = decide_value(question, texts)
    assert decision is not None and (decision.option, decision.by) == (value, "value")


def test_the_heading_counts_for_the_clause_and_the_text_read_is_cited():
    question = "How far ahead do I need to reserve a cargo bike?"  # "cargo" and "reserved" in the clause itself
    assert decide_value(question, [SERVICE, CARGO]) == Proposal("At least two hours", "value", (1,))
    # "The price is $4 per hour" names no cargo bike: its document's heading does
    assert decide_value("How much per hour is a cargo bike?", [SERVICE, CARGO]) == Proposal(
        "$4 per hour", "value", (1,)
    )


@pytest.mark.parametrize(
    ("question", "texts"),
    [
        ("How much per hour is a cargo bike?", [CARGO, LATE]),  # $4 and $10 per extra hour: clauses disagree
        ("What's the e-bike lost bike charge?", ["An e-bike lost costs $250 with a police report, $900 without."]),
        ("Damage charge cap?", ["Damage charges are capped at $150 per incident.", "A damage fee of $20 applies."]),
        ("What does a new member card cost?", [FEES]),  # no clause holds "member card"
        ("How much is the day pass?", []),
        ("Who answers a charge dispute?", ["The bookkeeper answers a charge dispute within $14."]),  # a name asked
    ],
)
def test_no_value_where_the_clauses_do_not_settle_one(question, texts):
    assert decide_value(question, texts) is None


def test_the_same_value_written_in_two_clauses_agrees_with_itself():
    texts = ["Send a dispute within 30 days.", "Send your dispute to the bookkeeper Within 30 days."]
    assert decide_value("How long do I have to send a dispute?", texts) == Proposal("Within 30 days", "value", (0, 1))


def test_a_or_an_is_a_number_only_after_a_qualifier():
    day_pass = ["A day pass costs $6.00 and is valid for 24 hours."]  # "a day" names the pass, not its length
    assert decide_value("How long is a day pass valid?", day_pass) == Proposal("24 hours", "value", (0,))
    assert decide_value("How long do I have to report a fault?", ["Report a fault within an hour."]) == Proposal(
        "Within an hour", "value", (0,)
    )


def test_a_value_the_question_itself_gives_is_not_its_answer():
    texts = ["Student membership costs $9 per month.", "Student membership was $8 per month in 2025."]
    assert decide_value("Student membership was $8 a month in 2025; what does it cost now?", texts) == Proposal(
        "$9 per month", "value", (0,)
    )
