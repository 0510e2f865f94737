"""The document's own sentence extracted beside the model's: from a chunk of several sentences, the one sharing
most with the question, rated like the model's (evidence scorer; scripted model)."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
from helpers import SHIPPED_WEIGHTS, by_document, fused

from selfrag import Chunk
from selfrag.cli import main
from selfrag.cli.trace_html import render_trace_html
from selfrag.engine.calibration import Head, answer_support, load_critic_model
from selfrag.engine.evidence import spaced
from selfrag.result import ABSTAIN_ANSWER, Result
from selfrag.testing.fake_server import FakeOpenAIServer, echo_responder

Q = "Which magazine cover did the actress appear on at age 13?"
DECIDE_YES = {"retrieve": "yes", "query": "actress magazine cover 13"}
PHILLIPS = Chunk(
    "phillips.md",
    0,
    "Bijou Lilly Phillips (born April 1, 1980) is an American actress, model and singer. "
    "When she was 13, she became one of the youngest people to appear on the cover of Italian Vogue.",
)

ANSWER = "When she was 13, she became one of the youngest people to appear on the cover of Italian Vogue."
WEAK = "The cover of a magazine."
OTHER = Chunk("vogue.md", 0, "Vogue is a fashion and lifestyle magazine covering many topics.")
EVIDENCE = {"scorer": "evidence", "abstain_below": 0.0, "ndocs": 2}


def script(first: dict | None = None) -> dict:
    return {
        "retrieve_decide": DECIDE_YES,
        "generate_fused": by_document(
            {
                "phillips.md": first or fused(WEAK),  # a small writer's vague sentence
                "vogue.md": fused("Vogue is a fashion magazine.", relevance="irrelevant", support="partially"),
            }
        ),
    }


def test_the_sentence_of_the_chunk_that_answers_is_extracted_and_can_win(engine):
    result = engine(script(), chunks=[PHILLIPS, OTHER], **EVIDENCE, lead=False).answer(Q)
    assert result.answer == ANSWER.removesuffix(".") + " [1]."
    extracted = [c for c in result.trace.steps[0].candidates if c.extracted]
    assert [(c.chunk, c.text, c.status) for c in extracted] == [("phillips.md#0", ANSWER, "kept")]
    assert result.usage.llm_calls == 3  # the decision and two sentences: the extracted one costs no call
    assert ">extracted</span>" in render_trace_html(result)


def test_the_knob_and_the_papers_scorer_extract_nothing(engine):
    off = engine(script(), chunks=[PHILLIPS, OTHER], **{**EVIDENCE, "extract": False}, lead=False).answer(Q)
    assert ANSWER.removesuffix(".") not in off.answer
    assert not any(c.extracted for c in off.trace.steps[0].candidates)
    paper = engine(script(), chunks=[PHILLIPS, OTHER], scorer="paper", ndocs=2, lead=False).answer(Q)
    assert not any(c.extracted for c in paper.trace.steps[0].candidates)


def test_nothing_is_extracted_from_a_chunk_of_one_sentence_or_one_whose_sentence_the_model_wrote(engine):
    result = engine(script(fused(ANSWER)), chunks=[PHILLIPS, OTHER], **EVIDENCE, lead=False).answer(Q)
    assert result.answer == ANSWER.removesuffix(".") + " [1]."
    assert not any(c.extracted for c in result.trace.steps[0].candidates)  # vogue.md is one sentence


def test_an_extracted_sentence_answers_on_its_own_ratings_and_is_declined_under_the_cut(engine):
    restated = fused("Which magazine cover did the actress appear on at age 13?")  # declined: restates the question
    rude = {**script(restated), "generate_fused": restated, "generate_direct": restated}  # asked again: the same
    result = engine(rude, chunks=[PHILLIPS, OTHER], **EVIDENCE, lead=False).answer(Q)
    assert result.answer == ANSWER.removesuffix(".") + " [1]."  # the written one declined, the document's stands
    own = next(c for c in result.trace.steps[0].candidates if c.extracted)
    assert own.critique is not None and own.critique.p_supported is not None
    cut = own.critique.answer_support + 1e-3
    under = engine(rude, chunks=[PHILLIPS, OTHER], **{**EVIDENCE, "abstain_below": cut}, lead=False).answer(Q)
    assert under.answer == ABSTAIN_ANSWER  # under the cut like any sentence: declined, and nothing else stands
    # both chunks' own sentences (the one-sentence chunk gives its own where the model restated the question twice)
    extracted_flags = [c.flag for c in under.trace.steps[0].candidates if c.extracted]
    assert extracted_flags == ["unsupported", "unsupported"]


def test_the_answers_head_decides_which_sentence_is_declined_where_the_weights_have_one(engine, tmp_path):
    product = replace(load_critic_model(), answers=None)

    def answered(head: Head | None, cut: float = 0.5) -> Result:
        (tmp_path / "w.json").write_text(replace(product, answers=head).to_json(), encoding="utf-8")
        knobs = {**EVIDENCE, "scorer_weights": str(tmp_path / "w.json"), "abstain_below": cut}
        return engine(script(), chunks=[PHILLIPS, OTHER], **knobs, lead=False).answer(Q)

    trusting = answered(Head((0.0, 0.0, 0.0, 10.0), -5.0))  # extracted sentences answer, nothing else
    assert trusting.answer == ANSWER.removesuffix(".") + " [1]."
    rated = [c for c in trusting.trace.steps[0].candidates if c.critique.answer_support is not None]
    assert {c.text: (c.extracted, c.flag) for c in rated} == {
        ANSWER: (True, None),
        WEAK: (False, "unsupported"),
        "Vogue is a fashion magazine.": (False, "unsupported"),
    }
    distrusting = answered(Head((0.0, 0.0, 0.0, -10.0), 5.0))  # the reverse
    assert ANSWER.removesuffix(".") not in distrusting.answer and WEAK.removesuffix(".") in distrusting.answer
    own = next(c for c in distrusting.trace.steps[0].candidates if c.extracted)
    assert own.flag == "unsupported" and own.critique.answer_support < 0.01
    plain = answered(None, cut=0.0)  # no head: the product of the two probabilities, as the paper's critic has it
    for c in (c for c in plain.trace.steps[0].candidates if c.critique.answer_support is not None):
        assert c.critique.answer_support == pytest.approx(
            answer_support(c.critique.p_relevant, c.critique.p_supported), abs=1e-6
        )
    # an abstention is as sure as its best candidate's P(relevant)·P(supported), whatever scale the cut is on
    sure, unsure = answered(Head((0.0,) * 4, 5.0), cut=0.9999), answered(None, cut=0.9999)
    assert sure.abstention.best_support > 0.99 > unsure.abstention.best_support
    assert sure.confidence == unsure.confidence < 0.5


def test_an_answers_confidence_is_the_answered_head_of_its_sentences_and_an_abstentions_stays_on_the_map(
    engine, tmp_path
):
    shipped = replace(load_critic_model(), answered=None)

    def answered(head: Head | None, cut: float = 0.0) -> Result:
        (tmp_path / "w.json").write_text(replace(shipped, answered=head).to_json(), encoding="utf-8")
        knobs = {**EVIDENCE, "scorer_weights": str(tmp_path / "w.json"), "abstain_below": cut}
        return engine(script(), chunks=[PHILLIPS, OTHER], **knobs, lead=False).answer(Q)

    wordy = Head((0.0, 0.0, 1.0), -3.0)  # the more the sentences state, the surer
    result, mapped = answered(wordy), answered(None)
    assert result.answer == mapped.answer and result.segments
    critiques = [s.critique for s in result.segments]
    words = sum(len(s.text.split()) for s in result.segments)
    assert result.confidence == pytest.approx(1 / (1 + math.exp(-(math.log1p(words) - 3.0))), abs=1e-6)
    p_sup = [c.p_supported for c in critiques]
    assert mapped.confidence == pytest.approx(shipped.confidence.probability(sum(p_sup) / len(p_sup)), abs=1e-6)
    supported = Head((0.0, 8.0, 0.0), -4.0)  # on the sentences' answer support instead
    support = sum(c.answer_support for c in critiques) / len(critiques)
    assert answered(supported).confidence == pytest.approx(1 / (1 + math.exp(-(8.0 * support - 4.0))), abs=1e-6)
    # an abstention is as sure as the map of its best candidate's P(relevant)·P(supported), head or none
    assert answered(wordy, cut=0.9999).confidence == answered(None, cut=0.9999).confidence < 0.5


def test_sentences_run_together_with_no_space_are_read_as_two():
    glued = "Arthur's Magazine was published in Philadelphia.First for Women is a woman's magazine."
    assert spaced(glued) == "Arthur's Magazine was published in Philadelphia. First for Women is a woman's magazine."
    assert spaced("The hunt was in 1999.The gray whale migrates.") == "The hunt was in 1999. The gray whale migrates."
    assert spaced("It costs $4.50 at St.Mary's.") == "It costs $4.50 at St.Mary's."  # an abbreviation ends there
    assert spaced('He sang "Daniel".Elton John wrote it.') == 'He sang "Daniel". Elton John wrote it.'
    assert spaced("He was born in Rome (1971).Anna Olsson is a singer.").endswith("(1971). Anna Olsson is a singer.")
    assert spaced("Ask Mr.Li about it.") == "Ask Mr.Li about it."


def test_the_cli_shows_the_extracted_sentences_and_turns_them_off(index_dir, capsys):
    with FakeOpenAIServer(responder=echo_responder) as server:  # it copies each document's first sentence
        argv = ["ask", "When is a receipt required?", "--index", str(index_dir), "--base-url", server.base_url]
        argv += ["--scorer", "evidence", "--scorer-weights", SHIPPED_WEIGHTS, "--abstain-below", "0"]
        argv += ["--max-depth", "1", "--no-lead", "--json"]
        assert main(argv) == 0
        extracting = json.loads(capsys.readouterr().out)
        assert main([*argv, "--no-extract"]) == 0
        plain = json.loads(capsys.readouterr().out)
        assert main([*argv[:-1], "--trace"]) == 0
        traced = capsys.readouterr()
    extracted = [c for c in extracting["trace"]["steps"][0]["candidates"] if c["extracted"]]
    assert [(c["chunk"], c["text"]) for c in extracted] == [("refunds.md#0", "A receipt is required.")]
    assert not any(c["extracted"] for c in plain["trace"]["steps"][0]["candidates"])
    assert "refunds.md#0, extracted" in traced.out + traced.err
    shown = extracted[0]["critique"]["answer_support"]  # the trace says what the abstention cut would be applied to
    assert f"answer_support={shown:.2f}" in traced.out + traced.err


FEES = Chunk(
    "fees.md",
    0,
    "# Fee schedule\n\nUpdated: 2026-04-01\n\nHow much you pay depends on how you ride.\n\n"
    "- Day pass: $6.00. A day pass gives 24 hours of unlimited trips.\n"
    "- Commuter membership: $15 per month.\n"
    "- Household membership: $32 per month.\n\n"
    "**Member share.** The refundable member share stays at $25.",
)
FEES_Q = "What does the Household membership cost per month?"


def test_from_a_markdown_chunk_one_list_item_is_extracted_not_the_list_after_it(engine):
    vague = {
        "retrieve_decide": {"retrieve": "yes", "query": "household membership cost"},
        "generate_fused": fused(WEAK),
    }
    result = engine(vague, chunks=[FEES, OTHER], **EVIDENCE, lead=False).answer(FEES_Q)
    own = next(c for c in result.trace.steps[0].candidates if c.extracted and c.chunk == "fees.md#0")
    assert own.text == "Household membership: $32 per month."  # not "...trips.\n- Commuter ...\n- Household ..."
    assert result.answer == "Household membership: $32 per month [1]."
