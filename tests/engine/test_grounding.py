"""The engine with the evidence scorer: it keeps what its chunk backs, declines degenerate sentences, and
abstains, typed, when nothing is supported well enough (scripted model, no network)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from helpers import CHUNKS, DIRECTORS, by_document, fused, plain

from selfrag import Chunk, LeadEvent
from selfrag.cli import main
from selfrag.engine.calibration import FEATURES, CriticModel, Head, Platt
from selfrag.engine.report import abstention_from
from selfrag.engine.state import UNSETTLED
from selfrag.result import ABSTAIN_ANSWER, CritiqueOut, TraceCandidate, TraceStep
from selfrag.testing.fake_server import echo_responder

Q = "How many days do I have to return a purchase for a refund?"
WHY = "Why would a shop accept returns at all?"  # asks for an explanation, not a fact
DECIDE_YES = {"retrieve": "yes", "query": "refund days"}


def _head(**weights: float) -> Head:
    bias = weights.pop("bias")
    return Head(tuple(weights.get(name, 0.0) for name in FEATURES), bias)


def critic_file(folder, **changes) -> str:  # type: ignore[no-untyped-def]
    """A weights file of a critic that trusts what the chunk backs (new words and facts found in it), not the
    model's labels; `changes` replace its other parts (its abstention cut, its short answer's counts)."""
    model = CriticModel(
        relevant=_head(question_in=6.0, bias=-3.0),
        supported=_head(new_in=5.0, facts_in=3.0, bias=-5.5),
        confidence=Platt(1.0, 0.0),
        support_threshold=0.5,
        abstain_threshold=changes.pop("abstain_threshold", 0.5),
        fitted_on={"rows": 100, "source": "test"},
        **changes,
    )
    path = folder / f"critic-{len(list(folder.glob('critic-*.json')))}.json"
    path.write_text(model.to_json())
    return str(path)


@pytest.fixture
def weights(tmp_path):
    return critic_file(tmp_path)


def test_the_evidence_scorer_keeps_what_its_chunk_backs_over_a_confident_invention(engine, weights):
    script = {
        "retrieve_decide": DECIDE_YES,
        "generate_fused": by_document(
            {
                "policy-2026.md": fused(
                    "Since April 2026 you have 30 days.", support="partially", relevance="irrelevant"
                ),
                "policy-2024.md": fused("You have 90 days under the Lyon rule."),  # "fully", but not in its chunk
            }
        ),
    }
    paper = engine(script, ndocs=2, lead=False).answer(Q)
    rated = engine(script, ndocs=2, scorer="evidence", scorer_weights=weights, lead=False).answer(Q)
    assert paper.answer.startswith("You have 90 days")
    assert rated.answer == "Since April 2026 you have 30 days [1]."
    kept = rated.segments[0].critique
    assert kept.p_supported is not None and kept.p_supported > 0.5 and kept.features["new_in"] == 1.0
    assert rated.confidence == pytest.approx(kept.p_supported, abs=1e-6)  # identity confidence map here


def test_the_evidence_scorer_ranks_by_what_the_chunk_backs_not_by_the_models_usefulness_label(engine, weights):
    """The model calls the sentence its chunk backs useless, and one that adds a word its chunk lacks perfect. The
    paper's f adds that label (w_use 0.5); the evidence scorer's f is P(relevant) + P(supported) alone."""
    script = {
        "retrieve_decide": DECIDE_YES,
        "generate_fused": by_document(
            {
                "policy-2026.md": fused("Since April 2026 refunds are accepted within 30 days.", utility=1),
                "policy-2024.md": fused("Refunds are accepted within 14 days in Lyon shops.", utility=5),  # Lyon?
            }
        ),
    }
    knobs = {"scorer": "evidence", "scorer_weights": weights, "abstain_below": 0.0, "ground": False}  # Lyon stays
    rated = engine(script, ndocs=2, **knobs, lead=False).answer(Q)
    assert rated.answer == "Since April 2026 refunds are accepted within 30 days [1]."
    scored = {c.chunk: (c.critique, c.score) for c in rated.trace.steps[0].candidates}
    critique, f = scored["policy-2026.md#0"]
    assert f == pytest.approx(critique.p_relevant + critique.p_supported, abs=1e-5)  # no utility term
    paper = engine(script, ndocs=2, lead=False).answer(
        Q
    )  # the paper's f: the labels tie on relevance and support, utility decides
    assert paper.answer == "Refunds are accepted within 14 days in Lyon shops [1]."


def test_nothing_supported_is_an_explicit_typed_abstention(engine, weights):
    script = {"retrieve_decide": DECIDE_YES, "generate_fused": fused("You have 90 days under the Lyon rule.")}
    rated = engine(script, ndocs=2, scorer="evidence", scorer_weights=weights, ground=False, lead_ahead=False)
    result = rated.answer(Q)  # (with the lead's call sent ahead, one more: tests/engine/test_lead_ahead.py)
    assert result.answer == ABSTAIN_ANSWER and not result.segments and not result.sources
    assert result.stop_reason == "unsupported" and result.abstention is not None
    assert result.abstention.threshold == 0.5 and result.abstention.best_support < 0.5
    assert result.confidence < 0.5
    assert {c.flag for c in result.trace.steps[0].candidates} == {"unsupported"}
    assert result.usage.llm_calls == 3  # the decision and two candidates: no fallback call


def test_an_abstention_costs_the_short_answers_call_sent_ahead_and_nothing_more(engine, weights):
    script = {"retrieve_decide": DECIDE_YES, "generate_fused": fused("You have 90 days under the Lyon rule.")}
    knobs = {"ndocs": 2, "scorer": "evidence", "scorer_weights": weights, "ground": False}
    ahead = engine({**script, "answer_lead": {"answer": "90 days"}}, lead_ahead=True, **knobs).answer(Q)
    after = engine(script, lead_ahead=False, **knobs).answer(Q)
    assert ahead.answer == after.answer == ABSTAIN_ANSWER and ahead.trace.lead_reply is None
    assert ahead.usage.llm_calls == after.usage.llm_calls + 1 and ahead.usage.by_prompt["answer_lead"].calls == 1


@pytest.mark.parametrize(
    ("p_relevant", "cut", "said"),
    [
        (0.5, 0.09, "reached 0.05, below 0.09"),
        (0.9, 0.0909, "reached 0.087, below 0.091"),  # 0.09 below 0.09 said nothing
        (0.9342, 0.0909, "reached 0.0906, below 0.0909"),
    ],
)
def test_an_abstention_says_the_best_support_and_the_cut_apart(p_relevant, cut, said):
    critique = CritiqueOut(
        relevance="relevant", support="partially", utility=1, is_final=True, probs={}, estimator="labels",
        p_relevant=p_relevant, p_supported=0.097, answer_support=p_relevant * 0.097,
    )  # fmt: skip
    declined = TraceCandidate(
        parent="0", child=None, chunk="a.md#0", text="x", critique=critique, score=None, aggregate=None,
        status="gated", flag="unsupported",
    )  # fmt: skip
    step = TraceStep(step=0, beams=[], candidates=[declined], kept=[], llm_calls=1, elapsed=0.0)
    assert said in abstention_from([step], cut).message


def test_a_sentence_its_chunk_backs_is_no_answer_when_the_chunk_is_about_something_else(engine, weights):
    """The question's evidence is not in the corpus; the model copies a true sentence from the chunk it got."""
    elsewhere = [
        Chunk("gift-cards.md", 0, "Gift cards paid by refund can be topped up online 3 times a year.", title="Gifts")
    ]
    script = {"retrieve_decide": DECIDE_YES, "generate_fused": fused("Gift cards can be topped up 3 times a year.")}
    result = engine(script, chunks=elsewhere, ndocs=1, scorer="evidence", scorer_weights=weights).answer(Q)
    declined = result.trace.steps[0].candidates[0]
    assert declined.critique.p_supported > 0.5 > declined.critique.p_relevant  # backed, but not about refunds
    assert declined.flag == "unsupported" and result.answer == ABSTAIN_ANSWER
    assert result.abstention.best_support == pytest.approx(
        declined.critique.p_relevant * declined.critique.p_supported, abs=1e-5
    )


def test_the_abstention_threshold_is_a_knob(engine, weights):
    script = {"retrieve_decide": DECIDE_YES, "generate_fused": fused("You have 90 days under the Lyon rule.")}
    knobs = {"scorer": "evidence", "scorer_weights": weights, "abstain_below": 0.0, "ground": False}
    result = engine(script, ndocs=1, **knobs, lead=False).answer(Q)
    assert result.abstention is None and result.answer.startswith("You have 90 days")


DIRECTORS_AND_BIKES = [*DIRECTORS, Chunk("bikes.md", 0, "Bikes returned after 24 hours pay a late fee of 15 euros.")]
SAME_COUNTRY = "Are Pablo Trapero and Aleksander Ford from the same country?"  # Argentine and Polish: no


def directors() -> dict:
    """Two directors' chunks read, and a sentence from each that neither backs (declined under the cut)."""
    return {
        "retrieve_decide": {"retrieve": "yes", "query": "Pablo Trapero Aleksander Ford country"},
        "generate_fused": fused("They were born in Lyon and Vienna."),
        "answer_lead": {"answer": "yes"},  # the model's coin flip: sent ahead while the step writes, never used here
        "confirm_decision": {"verdict": "agree"},  # it agrees with what the documents decide
    }


async def test_where_no_sentence_is_supported_what_the_documents_decide_stands_citing_them(engine, weights):
    rag = engine(directors(), chunks=DIRECTORS_AND_BIKES, ndocs=2, lead=True, scorer="evidence", scorer_weights=weights)
    events = [event async for event in rag.astream(SAME_COUNTRY)]
    result = events[-1].result
    assert {c.flag for c in result.trace.steps[0].candidates} == {"unstated"}  # every sentence declined: no
    assert result.abstention is None and result.answer == "No [1, 2]." and not result.segments  # chunk says Lyon
    assert (result.lead, result.lead_from, result.stop_reason) == ("No.", "same", "unsupported")
    assert {s.doc_id for s in result.sources} == {"trapero.md", "ford.md"}  # what decided it, not bikes.md
    assert [e.text for e in events if isinstance(e, LeadEvent)] == ["No [1, 2]."]  # streamed as printed
    assert result.trace.lead_reply is None  # the model's own short answer never stands alone


def test_an_answer_that_would_stand_alone_needs_the_models_agreement_too(engine, weights):
    disagrees = {**directors(), "confirm_decision": {"verdict": "disagree"}}
    rag = engine(disagrees, chunks=DIRECTORS_AND_BIKES, ndocs=2, lead=True, scorer="evidence", scorer_weights=weights)
    result = rag.answer(SAME_COUNTRY)
    assert result.lead is None and result.abstention is not None  # the model does not agree: the abstention stands
    [asked] = rag.chat.calls_to("confirm_decision")
    assert dict(asked.values)["proposal"] == "No."
    off = engine(
        disagrees, chunks=DIRECTORS_AND_BIKES, ndocs=2, scorer="evidence", scorer_weights=weights, confirm=False
    )
    assert off.answer(SAME_COUNTRY).lead == "No." and not off.chat.calls_to("confirm_decision")


@pytest.mark.parametrize(("counted", "confidence"), [({}, 0.5), ({"value": (6, 6)}, 7 / 8)])
def test_where_no_sentence_is_supported_a_value_the_documents_state_stands_citing_it(
    engine, tmp_path, counted, confidence
):
    weights = critic_file(tmp_path, lead=counted)
    rag = engine(directors(), chunks=DIRECTORS_AND_BIKES, ndocs=3, lead=True, scorer="evidence", scorer_weights=weights)
    result = rag.answer("How much is the late fee for bikes returned after 24 hours?")
    assert (result.lead, result.lead_from, result.stop_reason) == ("15 euros.", "value", "unsupported")
    assert result.abstention is None and not result.segments and result.trace.lead_reply is None
    assert [s.doc_id for s in result.sources] == ["bikes.md"] and result.answer == "15 euros [1]."
    # alone, it is as sure as the decisions of its kind were right, however few (Laplace's rule), never 0
    assert result.confidence == pytest.approx(confidence)


@pytest.mark.parametrize(
    ("question", "knobs"),
    [
        (SAME_COUNTRY, {"lead": False}),  # no short answers asked for
        ("Are Pablo Trapero and Aleksander Ford in the same family?", {"lead": True}),  # the documents can't say
        ("Who is the Argentine film producer?", {"lead": True}),  # a factoid: only the model could say it
    ],
)
def test_where_the_documents_decide_nothing_the_answer_still_abstains(engine, weights, question, knobs):
    rag = engine(directors(), chunks=DIRECTORS_AND_BIKES, ndocs=2, scorer="evidence", scorer_weights=weights, **knobs)
    result = rag.answer(question)
    assert result.answer == ABSTAIN_ANSWER and result.abstention is not None and result.lead is None
    assert result.trace.lead_reply is None


def test_a_beam_does_not_grow_by_an_unsupported_sentence(engine, weights):
    script = {
        "retrieve_decide": DECIDE_YES,
        "generate_fused": [
            fused("Refunds are accepted within 14 days.", is_final=False, retrieve_next="yes"),
            fused("A manager may add 45 days in Paris.", is_final=True),
        ],
    }
    knobs = {"scorer": "evidence", "scorer_weights": weights, "ground": False}  # Paris is declined by the cut
    result = engine(script, ndocs=1, max_depth=3, **knobs, lead=False).answer(Q)
    assert result.answer == "Refunds are accepted within 14 days [1]."
    assert result.stop_reason == "final" and result.abstention is None
    assert [c.flag for c in result.trace.steps[1].candidates] == ["unsupported"]


def test_a_restated_question_is_declined_and_a_copied_passage_is_cut_to_one_sentence(engine):
    copied = "Refunds are accepted within 14 days of purchase. Keep the receipt. Staff check it."
    script = {
        "retrieve_decide": DECIDE_YES,
        "generate_fused": by_document(
            {
                "policy-2026.md": fused("How many days do I have to return a purchase for a refund?"),
                "policy-2024.md": fused(copied, evidence="Refunds are accepted within 14 days"),
            }
        ),
    }
    result = engine(script, ndocs=2, lead=False, ask_plainly=False).answer(Q)  # asked again: test_ask_plainly
    flags = {c.chunk: (c.status, c.flag) for c in result.trace.steps[0].candidates}
    assert flags["policy-2026.md#0"] == ("gated", "restates_question")
    assert flags["policy-2024.md#0"] == ("kept", "several_sentences")
    assert result.answer == "Refunds are accepted within 14 days of purchase [1]."


@pytest.mark.parametrize(
    ("about_the_text", "kept", "kept_flag"),
    [
        # a sentence about the document is declined, and a report's frame is taken off what it reports
        ("This document contains information about refunds.",
         "The document states that refunds are accepted within 14 days of purchase.", None),
        # a document's id copied from the prompt is declined, the sentence's own document's or another's
        ("policy-2026.md #0", "Refunds are accepted within 14 days of purchase.", None),
        ("Refunds: see policy-2024.md#0.", "Refunds are accepted within 14 days of purchase.", None),
        # the prompt's other names for a text: declined; a second sentence about the text is cut off
        ("The document is incomplete, the next sentence is not complete.",
         "Refunds are accepted within 14 days of purchase. The sentence is also about store credit.",
         "several_sentences"),
    ],
)  # fmt: skip
def test_a_sentence_about_the_text_is_declined_or_cut_to_what_it_says_of_the_world(
    engine, about_the_text, kept, kept_flag
):
    script = {
        "retrieve_decide": DECIDE_YES,
        "generate_fused": by_document(
            {
                "policy-2026.md": fused(about_the_text),
                "policy-2024.md": fused(kept, evidence="Refunds are accepted within 14 days"),
            }
        ),
    }
    result = engine(script, ndocs=2, lead=False).answer(Q)
    flags = {c.chunk: (c.status, c.flag) for c in result.trace.steps[0].candidates}
    assert flags["policy-2026.md#0"] == ("gated", "about_the_document")
    assert flags["policy-2024.md#0"] == ("kept", kept_flag)
    assert result.answer == "Refunds are accepted within 14 days of purchase [1]."


@pytest.mark.parametrize(
    ("counts", "lead"),
    [
        ({}, UNSETTLED),  # no training yes/no answers counted: the model's yes is not stated
        ({"yes_no": (11, 24)}, UNSETTLED),  # right on fewer than half: a coin
        ({"yes_no": (23, 40)}, UNSETTLED),  # over half, but as a coin's 40 throws may well be
        ({"yes_no": (30, 40)}, "Yes."),  # right on three in four where the sentences were not
    ],
)
def test_the_evidence_scorer_prints_the_models_yes_or_no_only_where_training_shows_it_beats_a_coin(
    engine, tmp_path, counts, lead
):
    counted = critic_file(tmp_path, abstain_threshold=0.0, lead=counts)
    script = {
        "retrieve_decide": DECIDE_YES,
        "generate_fused": fused("Since April 2026 refunds are accepted within 30 days."),
        "answer_lead": {"answer": "yes"},
    }
    question = "Can I get a refund within 30 days?"
    rated = engine(script, ndocs=1, lead=True, scorer="evidence", scorer_weights=counted)
    result = rated.answer(question)
    assert result.lead == lead and result.trace.lead_reply == "yes"  # asked, and kept in the trace either way
    assert result.answer.startswith(f"{lead} Since April 2026 refunds are accepted within 30 days [1].")
    assert engine(script, ndocs=1, lead=True).answer(question).lead == "Yes."  # the paper's scorer trusts the model


CARGO = [
    Chunk("insurance.md", 0, "The co-op's cargo bikes and city bikes are covered by liability insurance."),
    Chunk("cargo.md", 0, "The co-op has 6 cargo bikes with a front box that holds up to 80 kg."),
]


def test_a_question_asking_how_many_is_answered_by_a_sentence_stating_an_amount(engine):
    strong = {"support": "fully", "utility": 5}
    script = {
        "retrieve_decide": {"retrieve": "yes", "query": "cargo bikes"},
        "generate_fused": by_document(
            {
                "insurance.md": fused("The co-op's cargo bikes are covered by liability insurance.", **strong),
                "cargo.md": fused("The co-op has 6 cargo bikes.", support="partially", utility=3),
            }
        ),
    }
    result = engine(script, chunks=CARGO, ndocs=2, lead=False).answer("How many cargo bikes does the co-op have?")
    flags = {c.chunk: (c.status, c.flag) for c in result.trace.steps[0].candidates}
    assert flags["insurance.md#0"] == ("gated", "no_amount")  # rated higher, but it states no number
    assert result.answer == "The co-op has 6 cargo bikes [1]."
    asked_where = engine(script, chunks=CARGO, ndocs=2, lead=False).answer("Where are the cargo bikes insured?")
    assert asked_where.answer.startswith("The co-op's cargo bikes are covered")  # no amount asked: no such rule


def test_once_the_draft_states_the_amount_a_sentence_without_one_may_follow(engine):
    script = {
        "retrieve_decide": {"retrieve": "yes", "query": "cargo bikes"},
        "generate_fused": by_document(
            {
                "insurance.md": fused("The cargo bikes are insured.", is_final=True),
                "cargo.md": fused("The co-op has 6 cargo bikes.", is_final=False, retrieve_next="yes"),
            }
        ),
    }
    rag = engine(script, chunks=CARGO, ndocs=2, max_depth=2, confirm=False)
    result = rag.answer("How many cargo bikes does the co-op have?")
    assert [s.text for s in result.segments] == ["The co-op has 6 cargo bikes.", "The cargo bikes are insured."]


def _replying(values: dict) -> Callable[[dict], str]:
    """A server whose model fills every reply schema from `values` (the capability probe's own is echoed)."""

    def reply(body: dict) -> str:
        fmt = body.get("response_format") or {}
        props = ((fmt.get("json_schema") or {}).get("schema") or fmt.get("schema") or {}).get("properties", {})
        if not set(props) <= set(values):  # the capability probe's own schema
            return echo_responder(body)
        return json.dumps({key: values[key] for key in props} if props else values)

    return reply


_invents = _replying({**fused("You have 90 days under the Lyon rule."), **DECIDE_YES})  # confident, in no document


def test_ask_prints_the_abstention_and_json_carries_it(index_dir, capsys, weights):
    from selfrag.testing.fake_server import FakeOpenAIServer

    with FakeOpenAIServer(responder=_invents) as server:
        base = ["ask", Q, "--index", str(index_dir), "--base-url", server.base_url, "--scorer", "evidence"]
        assert main([*base, "--scorer-weights", weights]) == 0  # the invention declined, the document's sentence
        assert capsys.readouterr().out.startswith("Refunds are accepted within 30 days of purchase [1].")
        base.append("--no-extract")  # and where no document's own is extracted: nothing stands
        assert main([*base, "--scorer-weights", weights]) == 0
        printed = capsys.readouterr().out
        assert printed.splitlines()[0].startswith(ABSTAIN_ANSWER)
        assert main([*base, "--scorer-weights", weights, "--json"]) == 0
        body = json.loads(capsys.readouterr().out)
    assert body["abstention"]["reason"] == "no_support" and body["answer"] == ABSTAIN_ANSWER


def test_ask_prints_what_the_documents_decide_with_its_sources_where_it_would_abstain(tmp_path, capsys, weights):
    """`selfrag ask` over a real index and a loopback endpoint: the documents decide a yes/no question whose every
    sentence is declined; stdout says "No", cites both directors' documents, and lists them."""
    from selfrag.testing.fake_server import FakeOpenAIServer

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for chunk in DIRECTORS_AND_BIKES:
        (corpus / chunk.doc_id).write_text(chunk.text)
    index = tmp_path / "index"
    assert main(["index", str(corpus), "--out", str(index), "--quiet"]) == 0

    # every sentence names cities no document holds; the model's short answer would say yes
    invents = _replying(
        {**fused("They were born in Lyon and Vienna."), **DECIDE_YES, "answer": "yes", "verdict": "agree"}
    )
    with FakeOpenAIServer(responder=invents) as server:
        argv = ["ask", SAME_COUNTRY, "--index", str(index), "--base-url", server.base_url, "--lead"]
        assert main([*argv, "--scorer", "evidence", "--scorer-weights", weights, "--ndocs", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].rstrip() == "No [1, 2]."
    assert any("trapero.md" in line for line in lines) and any("ford.md" in line for line in lines)
    assert not any(ABSTAIN_ANSWER in line for line in lines)


HOPS = [
    Chunk("jaws.md", 0, "Jaws is a 1975 thriller directed by Steven Spielberg.", title="Jaws"),
    Chunk("spielberg.md", 0, "Steven Spielberg was born in Cincinnati, Ohio, in 1946.", title="Spielberg"),
    Chunk("shark.md", 0, "The great white shark lives in coastal waters.", title="Sharks"),
]
HOP_Q = "In which city was the director of the film Jaws born?"


@pytest.mark.parametrize("ndocs", [1, 2])
def test_a_second_hop_is_written_from_the_chunk_the_first_did_not_use(engine, ndocs):
    first = fused(
        "Jaws was directed by Steven Spielberg.",
        is_final=False,
        retrieve_next="yes",
        next_query="Steven Spielberg director of Jaws birthplace",
    )
    script = {
        "retrieve_decide": {"retrieve": "yes", "query": "director of the film Jaws"},
        "generate_fused": by_document(
            {"jaws.md": first, "spielberg.md": fused("He was born in Cincinnati, Ohio.")}
            | ({"shark.md": fused("Sharks live in coastal waters.")} if ndocs > 1 else {})
        ),
    }
    result = engine(script, chunks=HOPS, ndocs=ndocs, max_depth=3, lead=False).answer(HOP_Q)
    assert [s.chunk for s in result.segments] == ["jaws.md#0", "spielberg.md#0"]
    assert result.answer == "Jaws was directed by Steven Spielberg [1]. He was born in Cincinnati, Ohio [2]."
    second = result.trace.steps[1]
    assert second.beams[0].query.startswith("Steven Spielberg") and second.beams[0].chunks[0] == "spielberg.md#0"


def test_a_sentence_from_a_superseded_document_yields_to_its_current_version(engine):
    from selfrag.schema import Version

    old = Chunk("fees-2024.md", 0, "The late fee is 5 euros per day.", title="Fees 2024",
                version=Version(False, "2024", newer=("fees-2026.md",)))  # fmt: skip
    new = Chunk("fees-2026.md", 0, "The late fee is 15 euros per day.", title="Fees 2026",
                version=Version(True, "2026", older=("fees-2024.md",)))  # fmt: skip
    script = {
        "retrieve_decide": {"retrieve": "yes", "query": "late fee"},
        "generate_fused": by_document(
            {
                "fees-2024.md": fused("The late fee is 5 euros per day.", utility=5),
                "fees-2026.md": fused("The late fee is 15 euros per day.", utility=3, relevance="irrelevant"),
            }
        ),
    }
    result = engine(script, chunks=[old, new], ndocs=2, lead=False).answer("What is the late fee?")
    assert result.answer == "The late fee is 15 euros per day [1]." and result.sources[0].doc_id == "fees-2026.md"
    flags = {c.chunk: c.flag for c in result.trace.steps[0].candidates}
    assert flags == {"fees-2024.md#0": "superseded", "fees-2026.md#0": None}
    alone = engine(script, chunks=[old], ndocs=1, lead=False).answer("What is the late fee?")
    assert alone.answer == "The late fee is 5 euros per day [1]."  # with no newer version in hand, it stands


def test_a_beam_that_did_not_read_reads_before_it_may_say_the_documents_do_not_say(engine):
    """The model chose not to retrieve and restated the question: the sentence is declined, and the beam
    retrieves with the question in the same step instead of answering "The documents do not say." unread."""
    script = {
        "retrieve_decide": {"retrieve": "no", "query": ""},
        "generate_plain": plain("How many days do I have to return a purchase for a refund?"),
        "generate_fused": fused("Since April 2026 refunds are accepted within 30 days."),
    }
    rag = engine(script, ndocs=1, lead=False)
    result = rag.answer(Q)
    assert result.answer == "Since April 2026 refunds are accepted within 30 days [1]." and result.abstention is None
    step = result.trace.steps[0]
    assert step.beams[0].decision == "yes" and "declined" in step.beams[0].raw_label
    assert [c.flag for c in step.candidates] == ["restates_question", None]
    assert step.beams[0].chunks and not step.beams[0].query  # searched with the question: the model gave no query
    assert result.usage.llm_calls == 3  # the decision, the declined sentence, one candidate from the chunk


def test_a_search_told_never_to_retrieve_does_not_read(engine):
    script = {
        "retrieve_decide": {"retrieve": "no", "query": ""},
        "generate_plain": plain("How many days do I have to return a purchase for a refund?"),
    }
    result = engine(script, ndocs=1, mode="never").answer(Q)
    assert result.answer == ABSTAIN_ANSWER and not result.trace.steps[0].beams[0].chunks


POLICY_2026 = [c for c in CHUNKS if c.doc_id == "policy-2026.md"]


def from_memory(from_document: str) -> dict:
    """The model chooses not to retrieve and writes a plausible sentence from memory; once it reads, it writes
    `from_document`."""
    return {
        "retrieve_decide": {"retrieve": "no", "query": ""},
        "generate_plain": plain("You have 90 days to return a purchase."),
        "generate_fused": fused(from_document),
    }


def test_with_a_cut_a_first_sentence_from_memory_is_declined_and_the_beam_reads(engine, weights):
    """The model chose not to retrieve and wrote a plausible sentence: under an abstention cut nothing backs it,
    so it is declined and the beam reads in the same step; the answer is what a document backs."""
    script, chunks = from_memory("Since April 2026 refunds are accepted within 30 days."), POLICY_2026
    result = engine(script, chunks=chunks, ndocs=1, scorer="evidence", scorer_weights=weights, lead=False).answer(Q)
    assert result.answer == "Since April 2026 refunds are accepted within 30 days [1]." and result.abstention is None
    step = result.trace.steps[0]
    assert [(c.chunk, c.flag) for c in step.candidates] == [(None, "unsupported"), ("policy-2026.md#0", None)]
    assert step.beams[0].decision == "yes" and "declined" in step.beams[0].raw_label
    never = engine(script, chunks=chunks, ndocs=1, scorer="evidence", scorer_weights=weights, mode="never", lead=False)
    assert never.answer(Q).answer == "You have 90 days to return a purchase."  # told not to read: kept


def test_without_a_cut_a_question_asking_for_a_fact_is_answered_from_the_documents(engine, weights):
    """With the cut at 0 the evidence scorer still rates only sentences written from chunks: a factoid's first
    sentence from memory is declined and the beam reads. A question that asks for an explanation keeps the
    paper's adaptive answer from memory, and so does the paper's scorer for any question."""
    script, chunks = from_memory("Since April 2026 refunds are accepted within 30 days."), POLICY_2026
    rated = engine(
        script, chunks=chunks, ndocs=1, scorer="evidence", scorer_weights=weights, abstain_below=0.0, lead=False
    )
    result = rated.answer(Q)
    assert result.answer == "Since April 2026 refunds are accepted within 30 days [1]."
    assert [(c.chunk, c.flag) for c in result.trace.steps[0].candidates] == [
        (None, "unsupported"), ("policy-2026.md#0", None)
    ]  # fmt: skip
    assert rated.answer(WHY).answer == "You have 90 days to return a purchase."  # an explanation: from memory
    paper = engine(script, chunks=chunks, ndocs=1, scorer="paper", lead=False)
    assert paper.answer(Q).answer == "You have 90 days to return a purchase."  # the paper's adaptive retrieval


def test_with_a_cut_a_sentence_from_memory_that_reads_nothing_relevant_ends_in_an_abstention(engine, weights):
    text = "Gift cards paid by refund can be topped up online 3 times a year."
    elsewhere = [Chunk("gift-cards.md", 0, text, title="Gifts")]
    script = from_memory("Gift cards can be topped up 3 times a year.")
    result = engine(script, chunks=elsewhere, ndocs=1, scorer="evidence", scorer_weights=weights).answer(Q)
    assert result.answer == ABSTAIN_ANSWER and result.stop_reason == "unsupported"
    assert [c.flag for c in result.trace.steps[0].candidates] == ["unsupported", "unsupported"]
    assert result.abstention.best_support is not None  # the read sentence's support: the unread one has none


def test_with_a_cut_an_answer_does_not_grow_by_a_sentence_from_memory(engine, weights):
    script = {
        "retrieve_decide": DECIDE_YES,
        "generate_fused": fused("Since April 2026 refunds are accepted within 30 days.", is_final=False),
        "generate_plain": plain("A manager may add 45 days in Paris."),
    }
    chunks = POLICY_2026
    rated = engine(script, chunks=chunks, ndocs=1, scorer="evidence", scorer_weights=weights, max_depth=3, lead=False)
    result = rated.answer(Q)
    assert result.answer == "Since April 2026 refunds are accepted within 30 days [1]."
    assert result.stop_reason == "final" and [c.flag for c in result.trace.steps[1].candidates] == ["unsupported"]
    grown = engine(script, chunks=chunks, ndocs=1, scorer="evidence", scorer_weights=weights, max_depth=3,
                   abstain_below=0.0, lead=False).answer(WHY)  # fmt: skip
    assert grown.answer.endswith("A manager may add 45 days in Paris.")  # no cut, no fact asked: it grows
    factoid = engine(script, chunks=chunks, ndocs=1, scorer="evidence", scorer_weights=weights, max_depth=3,
                     abstain_below=0.0, lead=False).answer(Q)  # fmt: skip
    assert factoid.answer == "Since April 2026 refunds are accepted within 30 days [1]."  # a fact: from documents


def test_with_a_cut_a_search_that_finds_nothing_keeps_no_sentence_written_without_documents(engine, weights):
    """The model chose to retrieve and the search found no chunk ("Hi!" over a shop's policies): the sentence it
    wrote without one is not an answer the documents support."""
    elsewhere = [Chunk("gift-cards.md", 0, "Gift cards never expire.", title="Gifts")]
    script = {"retrieve_decide": DECIDE_YES, "generate_plain": plain("Hello, how can I help?")}
    result = engine(script, chunks=elsewhere, ndocs=1, scorer="evidence", scorer_weights=weights).answer("Hi!")
    assert result.answer == ABSTAIN_ANSWER and result.abstention.best_support is None
    assert [(c.chunk, c.flag) for c in result.trace.steps[0].candidates] == [(None, "unsupported")]
    always = engine(script, chunks=elsewhere, ndocs=1, scorer="evidence", scorer_weights=weights, mode="always")
    assert always.answer("Hi!").answer == ABSTAIN_ANSWER
    kept = engine(script, chunks=elsewhere, ndocs=1, scorer="evidence", scorer_weights=weights, abstain_below=0.0)
    assert kept.answer("Hi!").answer == "Hello, how can I help?"  # no cut: it stands, as the paper's search keeps it
