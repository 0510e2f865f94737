"""A short answer the documents decide is a proposal: the rules read negation, exception and condition scope and
the date of the event asked, propose nothing where the scope is unclear, and a proposal that a kept sentence or
its own clause contradicts is not printed (the model's own short answer stands)."""

from __future__ import annotations

import pytest
from helpers import DIRECTORS, fused, plain

from selfrag import Chunk
from selfrag.engine.decide import Proposal, decide, decide_stated, decide_yes_no
from selfrag.engine.denials import refuted
from selfrag.engine.evidence import terms
from selfrag.engine.scope import reading
from selfrag.engine.state import UNSETTLED
from selfrag.errors import InputError

VELA = [
    Chunk("vela-pro.md", 0, "The Vela Pro is waterproof to 50 metres and comes with a steel strap."),
    Chunk("vela-lite.md", 0, "The Vela Lite is not waterproof, so keep it away from rain and the pool."),
]
LEAFLETS = [
    Chunk("calmex.md", 0, "Calmex is a pain medicine for adults. Calmex is not safe during pregnancy."),
    Chunk("dormira.md", 0, "Dormira is a sleep medicine for adults, taken at night."),
]
OVERTIME = [Chunk("pay.md", 0, "Overtime is paid to all staff apart from managers, at one and a half times the rate.")]
CROSSINGS = [
    Chunk("bridge.md", 0, "The Harbor Bridge was designed in 1890 and opened to traffic in 1932."),
    Chunk("tunnel.md", 0, "The Mill Tunnel was designed in 1920 and opened in 1925."),
]


def script(sentence: str, lead: str) -> dict:
    """A search that retrieves, writes `sentence` from each chunk, a lead call that says `lead`, and agreement
    with a decision: a strong reader that answers from the documents."""
    return {
        "retrieve_decide": {"retrieve": "yes", "query": "q"},
        "generate_fused": fused(sentence),
        "answer_lead": {"answer": lead},
        "confirm_decision": {"verdict": "agree"},
    }


def test_a_name_the_documents_deny_the_trait_of_is_not_both_and_the_readers_no_stands(engine):
    sentence = "No, the Vela Lite is not waterproof, so only the Vela Pro is."
    rag = engine(script(sentence, "No"), chunks=VELA, ndocs=2, lead=True, scorer="paper")
    result = rag.answer("Are the Vela Pro and the Vela Lite both waterproof?")
    assert result.lead == "No." and result.answer.startswith("No")
    assert "Yes" not in result.answer
    assert "not waterproof" in (result.trace.lead_clause or "")  # the trace names the clause behind it


def test_a_medicine_a_leaflet_says_is_not_safe_is_never_the_choice(engine):
    said = "The Calmex leaflet warns against taking it while expecting a baby."
    rag = engine(script(said, "not settled"), chunks=LEAFLETS, ndocs=2, lead=True, scorer="paper")
    result = rag.answer("Which medicine is safe during pregnancy, Calmex or Dormira?")
    assert result.lead != "Calmex." and "Calmex [" not in result.answer.split(".")[0]
    assert result.lead == UNSETTLED  # neither leaflet says either is safe: the model's reading stands
    assert rag.chat.calls_to("answer_lead")  # no rule decided it


def test_an_exception_naming_what_is_asked_answers_no():
    texts = [chunk.text for chunk in OVERTIME]
    assert decide_stated("Is overtime paid to managers?", texts).option == "No"
    assert decide_stated("Is overtime paid to staff?", texts) is None  # "yes, apart from managers": not read here


def test_overtime_paid_to_all_staff_apart_from_managers_is_not_paid_to_managers(engine):
    rag = engine(script("Overtime is paid to all staff apart from managers.", "No"), chunks=OVERTIME, lead=True)
    result = rag.answer("Is overtime paid to managers?")
    assert result.lead == "No." and not result.answer.startswith("Yes")
    assert result.lead_from == "stated" and "apart from managers" in result.trace.lead_clause


def test_a_choice_by_dates_reads_the_date_of_the_event_asked():
    texts = [chunk.text for chunk in CROSSINGS]
    offered = ("Harbor Bridge", "Mill Tunnel")
    assert decide("Which opened first, the Harbor Bridge or the Mill Tunnel?", offered, texts).option == "Mill Tunnel"
    assert decide("Which was designed first, the Harbor Bridge or the Mill Tunnel?", offered, texts).option == (
        "Harbor Bridge"
    )
    glued = ["Born Rich is a 2003 documentary film.", "Baraka is a 1992 film. Born Rich was screened in 2005."]
    assert decide(
        "Which documentary was released first, Baraka or Born Rich?", ("Baraka", "Born Rich"), glued
    ).option == ("Baraka")  # "Born" of the option's own name is no birth
    both = ["The General (1964–1998) was a periodical.XXL is a magazine founded in 1997."]
    assert decide("Which magazine was founded first, The General or XXL?", ("The General", "XXL"), both).option == (
        "The General"
    )  # the date after the other option's name is the other's
    only_designed = ["The Harbor Bridge was designed in 1890.", "The Mill Tunnel was opened in 1925."]
    assert decide("Which opened first, the Harbor Bridge or the Mill Tunnel?", offered, only_designed) is None


@pytest.mark.parametrize(
    ("asked", "clause", "question", "read"),
    [
        ("waterproof", "The Vela Lite is not waterproof.", "", "denied"),
        ("waterproof", "The Vela Pro is waterproof to 50 metres.", "", "said"),
        ("overtime paid managers", "Overtime is paid to all staff apart from managers.", "", "denied"),
        ("overtime paid staff", "Overtime is paid to all staff except managers.", "", "unclear"),
        ("overtime paid", "Overtime is no longer paid.", "", "denied"),
        ("refunds accepted", "Refunds are accepted only if you hold a receipt.", "Are refunds accepted?", "unclear"),
        ("refunds accepted", "Refunds are accepted only after the bike is checked.", "", "unclear"),
        ("refunds accepted", "Refunds are accepted unless the bike was damaged.", "", "unclear"),
        ("discount e bikes", "The discount does not apply to e-bikes.", "Is there a discount on e-bikes?", "denied"),
        ("waterproof", "Neither the Pro nor the Lite is waterproof.", "", "unclear"),  # too far to read
        ("waterproof", "It has never been waterproof.", "", "denied"),
        ("charged", "If you report a fault, you are not charged.", "If I report a fault, am I charged?", "denied"),
        ("helmet returned", "A helmet not returned in a day costs $30.", "charge for helmet not returned?", "said"),
        ("ride hours", "You may ride for no more than 2 hours.", "", "said"),  # a qualifier, no denial
        ("safe pregnancy", "It is safe in pregnancy without a prescription.", "", "said"),
        ("carbonated drinks", "Diet Pepsi is a no-calorie carbonated soft drink.", "", "said"),  # a compound
        ("breed dog", "The Westphalian Dachsbracke (FCI No. 100) is a breed of dog.", "", "said"),  # a number
        ("opera", "It is a chamber opera; its designer had provided designs for the opera house.", "", "said"),
        ("opera", "It is an opera, first staged in London in 1954 and in Venice, if the sources agree.", "", "said"),
    ],
)  # fmt: skip
def test_the_scope_of_a_negation_an_exception_or_a_condition_is_read(asked, clause, question, read):
    assert reading(terms(asked), clause, question) == read


def test_a_trait_two_names_share_only_where_neither_is_denied_it():
    texts = [chunk.text for chunk in VELA]
    named = ("the Vela Pro", "the Vela Lite")
    assert decide_yes_no("Are the Vela Pro and the Vela Lite both waterproof?", named, texts).option == "No"
    both = [VELA[0].text, "The Vela Lite is waterproof to 10 metres."]
    assert decide_yes_no("Are the Vela Pro and the Vela Lite both waterproof?", named, both).option == "Yes"
    limited = [VELA[0].text, "The Vela Lite is waterproof only if its cover is closed."]
    assert decide_yes_no("Are the Vela Pro and the Vela Lite both waterproof?", named, limited) is None


def test_a_decision_a_kept_sentence_contradicts_is_not_printed_and_the_trace_says_why(engine):
    helmets = [Chunk("helmets.md", 0, "Helmets are required on the forest trails at all times.")]
    sentence = "No, since 2026 helmets are no longer required on the forest trails."
    rag = engine(script(sentence, "no"), chunks=helmets, ndocs=1, lead=True, scorer="paper")
    result = rag.answer("Are helmets required on the forest trails?")
    assert result.lead == "No." and result.lead_from == "model"  # the reader's answer, not the rule's "Yes."
    assert result.trace.lead_refused.startswith("Yes. by stated")
    assert "No, since 2026" in result.trace.lead_refused


def test_deciding_can_be_turned_off_without_turning_the_short_answer_off(engine):
    question = "Who was born first, Pablo Trapero or Aleksander Ford?"
    said = script("Aleksander Ford was born in 1908.", "Pablo Trapero")
    decided = engine(said, chunks=DIRECTORS, ndocs=2, lead=True, confirm=False)
    assert decided.answer(question).lead == "Aleksander Ford." and not decided.chat.calls_to("answer_lead")
    rag = engine(
        script("Aleksander Ford was born in 1908.", "Aleksander Ford"),
        chunks=DIRECTORS,
        ndocs=2,
        lead=True,
        decide=False,
    )
    result = rag.answer(question)
    assert result.lead == "Aleksander Ford." and result.lead_from == "model"
    assert rag.chat.calls_to("answer_lead")


@pytest.mark.parametrize(
    "question",
    [
        "?!?...",  # only punctuation
        "Είναι το Vela Lite αδιάβροχο;",  # a script the rules do not know
        "Are " + " and ".join(["the Vela Pro"] * 400) + " both waterproof?",  # a long pair of names
    ],
    ids=["punctuation", "greek", "long-pair"],
)
def test_a_question_the_rules_cannot_read_gets_an_answer_not_a_traceback(engine, question):
    written = {**script("The Vela Pro is waterproof to 50 metres.", "yes"), "generate_plain": plain("Nothing found.")}
    result = engine(written, chunks=VELA, ndocs=2, lead=True).answer(question)
    assert result.answer


def test_a_question_of_ten_thousand_words_is_refused_in_one_line(engine):
    question = "Is the Vela Lite waterproof, " + "or rather, " * 5000 + "is it?"
    rag = engine(script("The Vela Pro is waterproof to 50 metres.", "yes"), chunks=VELA, ndocs=2, lead=True)
    with pytest.raises(InputError) as refused:
        rag.answer(question)
    assert "the limit is" in str(refused.value) and "\n" not in str(refused.value)
    assert not rag.chat.calls  # refused before any call


def test_a_chosen_option_a_kept_sentence_denies_the_trait_of_is_refuted():
    question = "Which medicine is safe during pregnancy, Calmex or Dormira?"
    picked = Proposal("Calmex", "traits", clause="Calmex is a medicine that is safe for adults.")
    assert refuted(question, "choice", picked, ["Calmex is not safe during pregnancy."])
    assert refuted(question, "choice", picked, ["Dormira is not safe during pregnancy."]) is None  # the other one
    assert refuted(question, "choice", picked, ["Calmex is safe during pregnancy."]) is None
    said_no = Proposal("No", "stated", clause="Overtime is paid to all staff apart from managers.")
    assert refuted("Is overtime paid to managers?", "yes_no", said_no, ["Yes, managers are paid overtime."])
