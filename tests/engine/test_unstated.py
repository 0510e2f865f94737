"""Grounding: a sentence that states a number, date or name its chunk does not hold is replaced by the chunk's own
sentence it was drawn from, or declined when it was drawn from none (evidence scorer; scripted model)."""

from __future__ import annotations

import json

from helpers import CHUNKS, DIRECTORS, SHIPPED_WEIGHTS, by_document, fused

from selfrag import Chunk
from selfrag.cli import main
from selfrag.cli.trace_html import render_trace_html
from selfrag.engine.grounding import source_sentence, unstated
from selfrag.result import ABSTAIN_ANSWER
from selfrag.testing.fake_server import FakeOpenAIServer, echo_responder

Q = "How many days do I have to return a purchase for a refund?"
DECIDE_YES = {"retrieve": "yes", "query": "refund days"}
MADIGAN = (
    "Elvira Madigan (4 December 1867 – 19 July 1889) was a Danish tightrope walker. "
    "Her father, Frederik Madigan, was born in 1850 in Copenhagen."
)


def test_what_a_sentence_states_that_its_source_does_not():
    said = "Elvira Madigan's father was born in Copenhagen in 1985, 20 years before her."
    assert unstated(said, MADIGAN, "When was Elvira Madigan's father born?") == ("1985", "20")
    assert unstated("Her father was born in 1850 in Copenhagen.", MADIGAN) == ()
    assert unstated("She lived from 1867–1889.", MADIGAN) == ()  # the dash the chunk writes differently
    assert unstated("Madigan's act toured Sweden.", MADIGAN) == ("sweden",)  # a possessive is the name itself
    assert unstated("Sweden hosted her.", MADIGAN, "Did Sweden host Elvira Madigan?") == ()  # the question's own
    assert unstated("jerde", MADIGAN, "Who was Elvira Madigan?") == ("jerd",)  # adds only a word the chunk lacks
    assert unstated("jerde", MADIGAN, "Who was Elvira Madigan?", words=False) == ()  # facts alone


def test_a_sentence_whose_source_lacks_most_of_the_words_it_adds_states_them_itself():
    question = "Who was Elvira Madigan's father?"
    # a half-invented tail: of the words added to the question (walker, tightrope, dane, ...), the chunk lacks most
    invented = "Elvira Madigan's father was a tightrope walker who fought pirates and sailed ships across oceans."
    assert unstated(invented, MADIGAN, question) == ("across", "fought", "ocean", "pirat", "sail", "ship")
    # a sentence whose added words the chunk mostly holds, with one word of its own (kept: "mostly" is not "only")
    assert unstated("Her father Frederik was born in Copenhagen, a capital city.", MADIGAN, question) == ()
    # the share is of the words it adds: half lacking is not more than half
    assert unstated("Her father was a famous tightrope walker.", MADIGAN, question) == ()


def test_the_sentence_a_written_one_was_drawn_from():
    question = "When was Elvira Madigan's father born?"
    wrong = "Elvira Madigan's father was born in 1985."
    assert source_sentence(question, wrong, MADIGAN) == "Her father, Frederik Madigan, was born in 1850 in Copenhagen."
    assert source_sentence(question, "The circus toured Norway and Sweden in winter.", MADIGAN) is None  # no source
    drafted = ["Her father, Frederik Madigan, was born in 1850 in Copenhagen."]
    assert source_sentence(question, wrong, MADIGAN, drafted) is None  # its source is already said


def test_a_sentence_stating_what_its_chunk_does_not_is_replaced_by_the_chunks_own(engine):
    script = {"retrieve_decide": DECIDE_YES, "generate_fused": fused("Refunds are accepted within 90 days.")}
    result = engine(script, chunks=CHUNKS[:1], **EVIDENCE, lead=False).answer(Q)
    assert result.answer == "Refunds are accepted within 14 days of purchase [1]."
    (candidate,) = result.trace.steps[0].candidates
    assert (candidate.status, candidate.flag) == ("kept", "quoted")
    assert candidate.written == "Refunds are accepted within 90 days."  # the model's own, kept in the trace
    assert result.usage.llm_calls == 2  # the decision and the sentence: the quote costs no call
    page = render_trace_html(result)
    assert ">quoted</span>" in page and "the model wrote: Refunds are accepted within 90 days." in page


def test_a_sentence_drawn_from_nothing_in_its_chunk_is_declined_even_without_a_cut(engine):
    script = {"retrieve_decide": DECIDE_YES, "generate_fused": fused("You have 90 days under the Lyon rule.")}
    result = engine(script, chunks=CHUNKS[:2], **EVIDENCE).answer(Q)
    assert result.answer == ABSTAIN_ANSWER and result.stop_reason == "unsupported"
    assert [c.flag for c in result.trace.steps[0].candidates] == ["unstated", "unstated"]
    assert result.abstention.best_support is None
    assert "no sentence was rated; declined: 2 unstated" in result.abstention.message


def test_the_knob_and_the_papers_scorer_keep_the_sentence_as_written(engine):
    script = {"retrieve_decide": DECIDE_YES, "generate_fused": fused("Refunds are accepted within 90 days.")}
    off = engine(script, chunks=CHUNKS[:1], **{**EVIDENCE, "ground": False}, lead=False).answer(Q)
    paper = engine(script, chunks=CHUNKS[:1], **{**EVIDENCE, "scorer": "paper"}, lead=False).answer(Q)
    assert off.answer == paper.answer == "Refunds are accepted within 90 days [1]."
    assert off.trace.steps[0].candidates[0].flag is None


def test_a_pooled_sentence_is_held_to_every_chunk_it_was_written_from(engine):
    chunks = [
        Chunk("jaws.md", 0, "Jaws is a 1975 film directed by Steven Spielberg."),
        Chunk("spielberg.md", 0, "Steven Spielberg was born in Cincinnati, Ohio, in 1946."),
    ]
    two = "Steven Spielberg, who directed Jaws in 1975, was born in Cincinnati."  # 1975 is the other chunk's
    script = {
        "retrieve_decide": DECIDE_YES,
        "generate_fused": by_document({
            "jaws.md": fused("Jaws is a film by Steven Spielberg.", support="partially", utility=2),
            "spielberg.md": fused("Steven Spielberg was born in Cincinnati.", support="partially", utility=2),
        }),
        "generate_pooled": fused(two, evidence="born in Cincinnati, Ohio"),
    }  # fmt: skip
    result = engine(script, chunks=chunks, ndocs=2, pooled=True, **EVIDENCE, lead=False).answer(
        "Where was Jaws's director born?"
    )
    pooled = next(c for c in result.trace.steps[0].candidates if c.pooled)
    assert pooled.chunk == "spielberg.md#0" and (pooled.flag, pooled.text) == (None, two)
    assert pooled.also == ["jaws.md#0"]  # cited with the chunk its quote is in


def test_a_pooled_sentence_stating_what_only_a_chunk_it_does_not_cite_holds_is_declined(engine):
    chunks = [
        Chunk("jaws.md", 0, "Jaws is a 1975 film directed by Steven Spielberg."),
        Chunk("spielberg.md", 0, "Steven Spielberg was born in Cincinnati, Ohio, in 1946."),
        Chunk("music.md", 0, "John Williams wrote music."),
    ]
    three = "Steven Spielberg, born in Cincinnati, directed the 1975 film Jaws, scored by John Williams."
    script = {
        "retrieve_decide": DECIDE_YES,
        "generate_fused": by_document({
            "jaws.md": fused("Jaws is a film by Steven Spielberg.", support="partially", utility=2),
            "spielberg.md": fused("Steven Spielberg was born in Cincinnati.", support="partially", utility=2),
            "music.md": fused("John Williams wrote music.", relevance="irrelevant", support="no", utility=1),
        }),
        "generate_pooled": fused(three, evidence="born in Cincinnati, Ohio"),
    }  # fmt: skip
    result = engine(script, chunks=chunks, ndocs=3, pooled=True, **EVIDENCE, lead=False).answer(
        "Where was Jaws's director born?"
    )
    pooled = next(c for c in result.trace.steps[0].candidates if c.pooled)
    assert (pooled.chunk, pooled.flag) == ("spielberg.md#0", "unstated")  # it would cite jaws.md, not music.md,
    # and no one sentence of its chunk holds half of what it joins
    assert "Steven Spielberg was born in Cincinnati" in result.answer and "Williams" not in result.answer


def test_a_bare_yes_or_no_the_model_is_not_trusted_to_give_is_no_sentence_of_the_answer(engine):
    script = {
        "retrieve_decide": {"retrieve": "yes", "query": "Pablo Trapero Aleksander Ford country"},
        "generate_fused": fused("Yes."),
        "answer_lead": {"answer": "yes"},
        "confirm_decision": {"verdict": "agree"},
    }
    question = "Are Pablo Trapero and Aleksander Ford from the same country?"  # Argentine and Polish
    result = engine(script, chunks=DIRECTORS, ndocs=2, lead=True, **EVIDENCE).answer(question)
    assert result.answer == "No [1, 2]." and not result.segments  # the documents' verdict, not "No. Yes [1]."
    assert {c.flag for c in result.trace.steps[0].candidates} == {"unstated"}
    kept = engine(script, chunks=DIRECTORS, ndocs=2, lead=True, **{**EVIDENCE, "ground": False}).answer(question)
    assert "kept" in {c.status for c in kept.trace.steps[0].candidates}  # ungrounded, the search keeps the "Yes."
    assert kept.answer == "No."  # and the answer does not print it under the documents' "No."


def _ninety_days(body: dict) -> str:
    """Every document gets the same sentence, with a number no document states."""
    return json.dumps({**json.loads(echo_responder(body)), "sentence": "Refunds are accepted within 90 days."})


def test_the_cli_shows_the_quote_and_turns_it_off(index_dir, capsys):
    with FakeOpenAIServer(responder=_ninety_days) as server:
        argv = ["ask", "How many days for refunds?", "--index", str(index_dir), "--base-url", server.base_url]
        argv += ["--scorer", "evidence", "--scorer-weights", SHIPPED_WEIGHTS, "--abstain-below", "0"]
        argv += ["--max-depth", "1", "--no-lead", "--json"]
        assert main(argv) == 0
        grounded = json.loads(capsys.readouterr().out)
        assert main([*argv, "--no-ground"]) == 0
        written = json.loads(capsys.readouterr().out)
        assert main([*argv[:-1], "--trace"]) == 0
        traced = capsys.readouterr()
    assert grounded["answer"] == "Refunds are accepted within 30 days of purchase [1]."
    written_ones = [c for c in grounded["trace"]["steps"][0]["candidates"] if not c["extracted"]]
    assert {c["flag"] for c in written_ones} <= {"quoted", "unstated"}
    assert written["answer"].startswith("Refunds are accepted within 90 days")
    assert "(quoted): Refunds are accepted within 30 days" in traced.out + traced.err
    assert "the model wrote: Refunds are accepted within 90 days." in traced.out + traced.err


EVIDENCE = {"scorer": "evidence", "abstain_below": 0.0}
