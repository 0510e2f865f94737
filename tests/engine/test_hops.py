"""The second hop: the sentence of a chunk the kept sentence's chunk links to joins the answer after the search."""

from __future__ import annotations

from helpers import by_document, fused

from selfrag import Chunk
from selfrag.cli.trace_html import render_trace_html
from selfrag.engine.hops import subject_named

QUESTION = "Which Sun Belt Conference team did New Orleans Saints kicker Wil Lutz play for?"
LUTZ = "Wil Lutz (born July 7, 1994) is a placekicker for the New Orleans Saints."
PLAYED = " He played college football at Georgia State."
PANTHERS = (
    "The Georgia State Panthers football team is the college football program for Georgia State University. "
    "The team is a member of the Sun Belt Conference."
)
SAINTS = "The New Orleans Saints are a professional football team based in New Orleans, Louisiana."


def chunks(first: str) -> list[Chunk]:
    return [Chunk("lutz.md", 0, first), Chunk("saints.md", 0, SAINTS), Chunk("panthers.md", 0, PANTHERS)]


def script(second: dict | None = None) -> dict:
    return {
        "retrieve_decide": {"retrieve": "yes", "query": ""},
        "generate_fused": by_document({
            "lutz.md": fused("Wil Lutz was born on July 7, 1994.", evidence="born July 7, 1994"),
            "saints.md": fused("The Saints are a football team.", relevance="irrelevant", support="no", utility=1),
            "panthers.md": second or fused(
                "The Georgia State Panthers are a member of the Sun Belt Conference.",
                relevance="irrelevant", support="no", utility=1,
            ),
        }),
    }  # fmt: skip


def test_the_chunk_the_first_hop_names_gives_the_second_sentence(engine):
    rag = engine(script(), chunks=chunks(LUTZ + PLAYED), ndocs=3, scorer="evidence", abstain_below=0.0, lead=False)
    result = rag.answer(QUESTION)
    assert result.answer == (
        "Wil Lutz was born on July 7, 1994 [1]. The Georgia State Panthers are a member of the Sun Belt Conference [2]."
    )
    assert [s.doc_id for s in result.sources] == ["lutz.md", "panthers.md"]
    assert len(rag.chat.calls_to("generate_fused")) == 3  # no call more: the sentence was written in the search
    fates = {c.chunk: (c.status, c.second_hop) for c in result.trace.steps[0].candidates if not c.extracted}
    assert fates == {"panthers.md#0": ("kept", True), "lutz.md#0": ("kept", False), "saints.md#0": ("pruned", False)}
    assert "second hop</span>" in render_trace_html(result)


def test_no_second_sentence_where_the_first_chunk_names_no_other_chunks_subject(engine):
    rag = engine(script(), chunks=chunks(LUTZ), ndocs=3, scorer="evidence", abstain_below=0.0, lead=False)
    assert rag.answer(QUESTION).answer == "Wil Lutz was born on July 7, 1994 [1]."


def test_no_second_sentence_that_adds_nothing_or_was_declined(engine):
    same = fused("Wil Lutz was born on July 7, 1994 in Georgia.", relevance="irrelevant", support="no")
    knobs = {"ndocs": 3, "scorer": "evidence", "abstain_below": 0.0, "extract": False}  # no other sentence extracted
    rag = engine(script(same), chunks=chunks(LUTZ + PLAYED), **knobs, lead=False)
    assert rag.answer(QUESTION).answer == "Wil Lutz was born on July 7, 1994 [1]."
    # under a cut the unsupported second sentence is declined, and stays out
    rag = engine(script(), chunks=chunks(LUTZ + PLAYED), ndocs=3, scorer="evidence", abstain_below=0.05, lead=False)
    assert "Panthers" not in rag.answer(QUESTION).answer


def test_the_papers_scorer_keeps_the_papers_answer_and_the_knob_turns_the_hop_off(engine):
    rag = engine(script(), chunks=chunks(LUTZ + PLAYED), ndocs=3, scorer="paper", lead=False)
    assert "Panthers" not in rag.answer(QUESTION).answer
    off = engine(
        script(), chunks=chunks(LUTZ + PLAYED), ndocs=3, scorer="evidence", abstain_below=0.0, hops=False, lead=False
    )
    assert off.answer(QUESTION).answer == "Wil Lutz was born on July 7, 1994 [1]."


def test_a_subject_is_a_bridge_only_when_the_first_chunk_names_it_and_the_question_does_not():
    assert subject_named(PANTHERS, LUTZ + PLAYED, QUESTION) == "georgia state"
    assert subject_named(PANTHERS, LUTZ, QUESTION) is None  # not named in the first chunk
    assert subject_named(SAINTS, LUTZ, QUESTION) is None  # the question names it: no hop beyond it
    assert subject_named("Mary Shelley wrote it.", "Mary was there.", "Who?") is None  # one short word links too much
    assert subject_named("Ghana's Bui Dam is large.", "the Bui Dam was built", "Bui National Park?") is None
    assert subject_named("The Bui Dam is a 400 MW project.", "reservoir of the Bui Dam", "Bui Park?") == "bui dam"
    assert subject_named("a lower-case opening", "a lower-case opening", "Who?") is None


def test_under_a_cut_the_hop_takes_a_sentence_only_the_cut_declined_unless_the_model_dismissed_it(engine):
    relevant = fused(
        "The Georgia State Panthers are a member of the Sun Belt Conference.", relevance="relevant", support="no"
    )
    knobs = {"chunks": chunks(LUTZ + PLAYED), "ndocs": 3, "scorer": "evidence", "lead": False}
    probe = engine(script(relevant), abstain_below=0.0, hops=False, **knobs).answer(QUESTION)
    rated = {c.chunk: c.critique.answer_support for c in probe.trace.steps[0].candidates if not c.extracted}
    assert rated["lutz.md#0"] > rated["panthers.md#0"]  # the hop's sentence says little of what the question names
    cut = (rated["lutz.md#0"] + rated["panthers.md#0"]) / 2
    result = engine(script(relevant), abstain_below=cut, **knobs).answer(QUESTION)
    assert result.answer.endswith("The Georgia State Panthers are a member of the Sun Belt Conference [2].")
    fates = {c.chunk: (c.status, c.second_hop, c.flag) for c in result.trace.steps[0].candidates if not c.extracted}
    assert fates["panthers.md#0"] == ("kept", True, None)
    # the cut alone declined it: without the hop it stays out, as does one the model calls irrelevant and unsupported
    assert "Panthers" not in engine(script(relevant), abstain_below=cut, hops=False, **knobs).answer(QUESTION).answer
    assert "Panthers" not in engine(script(), abstain_below=cut, **knobs).answer(QUESTION).answer
