"""Query variants (multi-query, HyDE, decomposition): asked for, each searched, fused by RRF, failures fall back."""

from __future__ import annotations

import asyncio

import pytest
from helpers import CHUNKS, by_document, fused

from selfrag import Config
from selfrag.engine import retriever
from selfrag.engine.context import Deps, Run
from selfrag.errors import ConfigError, FatalLLMError, LLMError
from selfrag.labels import Decision
from selfrag.prompts import PromptBook
from selfrag.retrieval.index import Index
from selfrag.retrieval.strategies import Retriever
from selfrag.schema import Beam, Meter, Plan
from selfrag.testing import ListRetriever, ScriptedChatModel

Q = "Refund window?"  # shares no word with the shipping or warranty chunks
SEARCHED = f"refunds purchase {Q}"  # the engine searches the model's query plus the question
DECIDE = {"retrieve": "yes", "query": "refunds purchase"}
ANSWER = by_document(
    {
        "policy-2026.md": fused("Since April 2026 refunds are accepted within 30 days.", utility=5),
        "policy-2024.md": fused("Refunds were accepted within 14 days.", support="partially", utility=3),
        "shipping.md": fused("Orders ship from Lyon.", relevance="irrelevant", support="no", utility=1),
        "warranty.md": fused("Defects are covered.", relevance="irrelevant", support="no", utility=1),
    }
)


def variants(paraphrases=(), passage="", sub_questions=()):
    return {"paraphrases": list(paraphrases), "hypothetical_answer": passage, "sub_questions": list(sub_questions)}


def test_variants_are_requested_each_searched_and_fused_into_the_candidates(engine):
    rag = engine(
        {
            "retrieve_decide": DECIDE,
            "retrieve_variants": variants(["warehouse dispatch"], "Refunds take 30 days."),
            "generate_fused": ANSWER,
        },
        query_variants="multi,hyde",
    )
    result = rag.answer(Q)
    (call,) = rag.chat.calls_to("retrieve_variants")
    prompt = call.messages[0].content + call.messages[1].content
    assert "Search query: refunds purchase" in prompt and f"Question: {Q}" in prompt
    assert "exactly 3 different rewordings" in prompt and "passage wanted: yes" in prompt
    assert "at most 0 short" in prompt  # decomposition was not asked for
    assert rag.deps.index.queries == [SEARCHED, "warehouse dispatch", "Refunds take 30 days."]
    shown = {c.messages[1].content.split('id="')[1].split('"')[0] for c in rag.chat.calls_to("generate_fused")}
    assert "shipping.md#0" in shown  # only the variants find it (the query shares no word with it)
    beam = result.trace.steps[0].beams[0]
    assert beam.queries == [SEARCHED, "warehouse dispatch", "Refunds take 30 days."]
    assert beam.retrieval_note is None
    assert result.answer.startswith("Since April 2026 refunds are accepted within 30 days")


def test_without_variants_nothing_is_asked_and_the_trace_lists_no_queries(engine):
    rag = engine({"retrieve_decide": DECIDE, "generate_fused": ANSWER})
    result = rag.answer(Q)
    assert rag.chat.calls_to("retrieve_variants") == []
    assert rag.deps.index.queries == [SEARCHED]
    assert result.trace.steps[0].beams[0].queries == []


def test_a_failed_variant_call_falls_back_to_the_plain_query(engine):
    rag = engine(
        {
            "retrieve_decide": DECIDE,
            "retrieve_variants": LLMError("the endpoint answered 500"),
            "generate_fused": ANSWER,
        },
        query_variants="multi",
    )
    result = rag.answer(Q)
    assert rag.deps.index.queries == [SEARCHED]
    beam = result.trace.steps[0].beams[0]
    assert beam.queries == [SEARCHED]
    assert "query variants failed" in beam.retrieval_note and "500" in beam.retrieval_note
    assert result.sources[0].doc_id == "policy-2026.md"


def test_an_invalid_variant_reply_falls_back_after_the_re_ask(engine):
    rag = engine(
        {"retrieve_decide": DECIDE, "retrieve_variants": {"paraphrases": "not a list"}, "generate_fused": ANSWER},
        query_variants="decompose",
    )
    result = rag.answer(Q)
    assert len(rag.chat.calls_to("retrieve_variants")) == 2  # the call and one corrective re-ask
    assert "query variants failed" in result.trace.steps[0].beams[0].retrieval_note


def test_a_fatal_endpoint_error_in_the_variant_call_stops_the_answer(engine):
    rag = engine(
        {"retrieve_decide": DECIDE, "retrieve_variants": FatalLLMError("bad key"), "generate_fused": ANSWER},
        query_variants="hyde",
    )
    with pytest.raises(FatalLLMError, match="bad key"):
        rag.answer(Q)


def test_variants_are_cut_to_what_was_asked_cleaned_and_deduplicated(engine):
    reply = variants(
        ["  warehouse   dispatch ", "warehouse dispatch", "", "REFUNDS PURCHASE", "support email", "extra"],
        "a passage that was not asked for",
        ["warranty defects"],
    )
    rag = engine(
        {"retrieve_decide": DECIDE, "retrieve_variants": reply, "generate_fused": ANSWER},
        query_variants="multi,decompose",
        variant_count=4,
    )
    result = rag.answer(Q)
    assert result.trace.steps[0].beams[0].queries == [
        SEARCHED,
        "warehouse dispatch",  # spaces folded; the repeat, the empty one and the query itself dropped
        "warranty defects",  # "support email" was the fifth paraphrase (variant_count=4); HyDE was not asked
    ]


def make_run(chat: ScriptedChatModel, index, **knobs) -> Run:
    config = Config(nonce_seed="t", **knobs)
    return Run(Deps(chat=chat, index=index, prompts=PromptBook()), config, Q, "", Meter(), b"secret")


async def test_all_beams_ask_for_their_variants_in_one_concurrent_round():
    seen_in_flight = []

    def reply(request):
        seen_in_flight.append(chat.in_flight)  # how many calls are in flight as this one is answered
        query = request.messages[1].content.split("Search query: ")[1]
        return variants([f"{query} variant"])

    chat = ScriptedChatModel({"retrieve_variants": reply}, latency=0.05)
    index = ListRetriever(CHUNKS)
    run = make_run(chat, index, query_variants="multi")
    live = (Beam("0"), Beam("1"), Beam("2"))
    plans = (Plan(Decision.YES, "refunds"), Plan(Decision.NO, ""), Plan(Decision.YES, "warranty"))
    evidence = await retriever.gather(live, plans, run)
    assert len(chat.calls_to("retrieve_variants")) == 2  # only the beams that retrieve ask
    assert max(seen_in_flight) == 2 and run.meter.rounds == 1
    searched = [f"refunds {Q}", "refunds variant", f"warranty {Q}", "warranty variant"]  # variants of the plain query
    assert [e.queries for e in evidence] == [tuple(searched[:2]), (), tuple(searched[2:])]
    assert evidence[1] == () and [c.doc_id for c in evidence[2]] == ["warranty.md"]
    assert index.queries == searched


async def test_a_group_that_finds_nothing_tries_the_question_then_gives_no_chunks():
    chat = ScriptedChatModel({"retrieve_variants": variants(["zebra"])})
    index = ListRetriever(CHUNKS)
    run = make_run(chat, index, query_variants="multi")
    (found,) = await retriever.gather((Beam("0"),), (Plan(Decision.YES, "xylophone"),), run)
    assert index.queries == [f"xylophone {Q}", "zebra", Q]
    assert found == () and found.queries == (f"xylophone {Q}", "zebra") and found.note is None


def test_the_index_retriever_fuses_a_group_of_queries(pet_index: Index):
    retriever_ = Retriever(pet_index)
    alone = retriever_.find_relevant_chunks("cats at dusk", 3)
    assert "fish#0" not in [h.chunk.key for h in alone]
    (fused_hits,) = asyncio.run(retriever_.asearch([["cats at dusk", "goldfish memory"]], 3, Meter()))
    keys = [h.chunk.key for h in fused_hits]
    assert keys[0] == "cats#0" and "fish#0" in keys  # the variant's only hit reaches the top 3
    assert asyncio.run(retriever_.asearch([["cats at dusk"]], 3, Meter())) == [alone]


@pytest.mark.parametrize(
    ("given", "stored"),
    [("", ""), ("multi", "multi"), (" HyDE , multi,multi", "hyde,multi"), ("decompose,hyde", "decompose,hyde")],
)
def test_query_variants_knob_is_normalised(given, stored):
    assert Config(query_variants=given).query_variants == stored


@pytest.mark.parametrize("bad", ["paraphrase", "multi,,rag", 3])
def test_unknown_variant_kinds_are_refused(bad):
    with pytest.raises(ConfigError, match="query_variants"):
        Config(query_variants=bad)
