"""The pooled candidate (Config.pooled): one more candidate per beam and step, written from all of the step's
chunks at once, citing a real chunk, then judged like the others (scripted model, loopback server)."""

from __future__ import annotations

import json
import re

import pytest
from helpers import by_document, fused

from selfrag import Chunk, SegmentEvent
from selfrag.cli import main
from selfrag.cli.common import render_segment
from selfrag.cli.trace_html import render_trace_html
from selfrag.engine.evidence import drawn_on
from selfrag.engine.generator import cited_rank
from selfrag.testing.fake_server import FakeOpenAIServer, echo_responder

CHUNKS = [
    Chunk("jaws.md", 0, "Jaws is a 1975 film directed by Steven Spielberg.", title="Jaws"),
    Chunk("spielberg.md", 0, "Steven Spielberg was born in Cincinnati, Ohio, in 1946.", title="Spielberg"),
    Chunk("shark.md", 0, "The film Jaws made beaches empty; the great white shark was born a villain.", title="Shark"),
]
Q = "In which city was the director of the film Jaws born?"
DECIDE = {"retrieve": "yes", "query": "Jaws film director born city"}
SINGLES = {
    "jaws.md": fused("Jaws was directed by Steven Spielberg.", support="partially", utility=2),
    "spielberg.md": fused("Spielberg was born in 1946.", support="partially", utility=2),
    "shark.md": fused("Jaws made beaches empty.", relevance="irrelevant", support="no", utility=1),
}
POOLED = fused("The director of Jaws, Steven Spielberg, was born in Cincinnati.", evidence="born in Cincinnati, Ohio")


def script(pooled: dict | None = None) -> dict:
    return {"retrieve_decide": DECIDE, "generate_fused": by_document(SINGLES), "generate_pooled": pooled or POOLED}


def ranks(result) -> dict[str, int]:  # noqa: ANN001
    return {key: rank for rank, key in enumerate(result.trace.steps[0].beams[0].chunks)}


def test_k_chunks_send_k_plus_one_candidates_and_the_pooled_prompt_holds_every_chunk(engine):
    rag = engine(script(), chunks=CHUNKS, ndocs=3, pooled=True, lead=False)
    result = rag.answer(Q)
    assert len(result.trace.steps[0].beams[0].chunks) == 3
    assert len(rag.chat.calls_to("generate_fused")) == 3
    (call,) = rag.chat.calls_to("generate_pooled")
    shown = call.messages[1].content
    for chunk in CHUNKS:
        assert chunk.text in shown
    assert len(set(re.findall(r'<document nonce="(\w+)" id="', shown))) == 3  # a delimiter nonce per document
    assert result.usage.llm_calls == 1 + 3 + 1  # the decision, one per chunk, the pooled one
    off = engine(script(), chunks=CHUNKS, ndocs=3, lead=False).answer(Q)
    assert result.usage.rounds == off.usage.rounds  # written in the same round as the others


def test_a_pooled_sentence_that_wins_is_kept_citing_the_chunk_its_quote_is_in(engine):
    result = engine(script(), chunks=CHUNKS, ndocs=3, pooled=True, lead=False).answer(Q)
    assert result.answer == "The director of Jaws, Steven Spielberg, was born in Cincinnati [1]."
    (segment,) = result.segments
    assert segment.pooled and segment.chunk == "spielberg.md#0"
    assert [s.doc_id for s in result.sources] == ["spielberg.md"]
    assert segment.critique.quote_ok is True and segment.critique.support == "fully"
    candidates = result.trace.steps[0].candidates
    assert [c.pooled for c in candidates] == [False, False, False, True]  # the pooled one after the others
    pooled = candidates[-1]
    assert pooled.status == "kept" and pooled.chunk == "spielberg.md#0"
    assert pooled.rank == ranks(result)["spielberg.md#0"]


def test_knob_off_writes_no_pooled_candidate(engine):
    rag = engine(script(), chunks=CHUNKS, ndocs=3, lead=False)
    result = rag.answer(Q)
    assert rag.chat.calls_to("generate_pooled") == []
    assert result.answer == "Jaws was directed by Steven Spielberg [1]."
    assert not any(c.pooled for c in result.trace.steps[0].candidates) and not result.segments[0].pooled


def test_one_chunk_gets_no_pooled_candidate(engine):
    rag = engine(script(), chunks=CHUNKS, ndocs=1, pooled=True, lead=False)
    result = rag.answer(Q)
    assert rag.chat.calls_to("generate_pooled") == []
    assert len(result.trace.steps[0].candidates) == 1


def test_a_quote_found_nowhere_cites_the_chunk_sharing_most_words_and_loses_its_claimed_support(engine):
    invented = fused("Steven Spielberg directed the 1975 film Jaws.", evidence="a quote from no document")
    result = engine(script(invented), chunks=CHUNKS, ndocs=3, pooled=True, lead=False).answer(Q)
    pooled = result.trace.steps[0].candidates[-1]
    assert pooled.pooled and pooled.chunk == "jaws.md#0"
    assert pooled.critique.quote_ok is False and pooled.critique.support == "partially"


def test_a_pooled_candidate_is_rated_against_the_chunk_it_cites(engine):
    result = engine(
        script(), chunks=CHUNKS, ndocs=3, pooled=True, scorer="evidence", abstain_below=0.0, lead=False
    ).answer(Q)
    step = result.trace.steps[0]
    pooled = step.candidates[-1]
    rank = ranks(result)["spielberg.md#0"]
    features = pooled.critique.features
    assert features["rank_inv"] == pytest.approx(1 / (1 + rank))
    assert features["quote_ok"] == 1.0
    assert features["facts_in"] == 1.0  # Spielberg, Cincinnati: in the cited chunk (Jaws is in the question)
    single = next(c for c in step.candidates if c.chunk == "spielberg.md#0" and not c.pooled)
    assert single.critique.features["score_rel"] == features["score_rel"]  # the cited chunk's own score


def test_a_pooled_sentence_repeating_the_draft_is_declined_like_any_other(engine):
    first = fused("Jaws was directed by Steven Spielberg.", is_final=False, retrieve_next="yes")
    rag = engine(
        {
            "retrieve_decide": DECIDE,
            "generate_fused": [first, first, first, *[fused("Spielberg was born in Cincinnati.")] * 3],
            "generate_pooled": [fused("Jaws was directed by Steven Spielberg.", utility=1, is_final=False)] * 2,
        },
        chunks=CHUNKS,
        ndocs=3,
        pooled=True,
        max_depth=2,
        lead=False,
    )
    result = rag.answer(Q)
    second = result.trace.steps[1].candidates
    assert second[-1].pooled and second[-1].flag == "repeats_draft" and second[-1].status == "gated"


def _judged(request) -> str:  # noqa: ANN001
    return request.messages[-1].content.split("Sentence to judge:")[-1]


def _verdict(request) -> dict:  # noqa: ANN001
    """The separate critic: only the pooled sentence (it names the city) is supported by its document."""
    supported = "Cincinnati" in _judged(request)
    reply = fused("-", support="fully" if supported else "no", evidence="born in Cincinnati" if supported else "")
    return {key: value for key, value in reply.items() if key != "sentence"}


def test_with_a_separate_critic_the_pooled_sentence_is_judged_against_the_chunk_it_cites(engine):
    from selfrag.testing import ScriptedChatModel

    critic = ScriptedChatModel({"critique_candidate": _verdict})
    script = {
        "retrieve_decide": DECIDE,
        "generate_segment": {"sentence": "Spielberg made films."},
        "generate_pooled": POOLED,
    }
    rag = engine(script, chunks=CHUNKS, ndocs=3, pooled=True, critic="separate", critic_chat=critic, lead=False)
    result = rag.answer(Q)
    judged = critic.calls_to("critique_candidate")
    assert len(judged) == 4 and len(rag.chat.calls_to("generate_pooled")) == 1
    pooled_call = next(c for c in judged if "Cincinnati" in _judged(c))
    assert 'id="spielberg.md#0"' in pooled_call.messages[-1].content  # judged against the one chunk it cites
    assert result.segments[0].pooled and result.segments[0].chunk == "spielberg.md#0"


def test_a_pooled_prompt_too_long_for_the_model_is_retried_once_with_the_chunks_cut_to_one_chunks_length(engine):
    from selfrag.errors import ContextLengthError

    def reply(request):  # noqa: ANN001, ANN202
        if len(request.messages[1].content) > 1200:
            return ContextLengthError("maximum context length exceeded")
        return POOLED

    long = [Chunk(c.doc_id, 0, c.text + " Filler words here." * 30, title=c.title) for c in CHUNKS]
    rag = engine(
        script() | {"generate_pooled": reply}, chunks=long, ndocs=3, pooled=True, max_chunk_chars=600, lead=False
    )
    result = rag.answer(Q)
    sizes = [len(call.messages[1].content) for call in rag.chat.calls_to("generate_pooled")]
    assert len(sizes) == 2 and sizes[1] <= 1200 < sizes[0]
    assert result.segments[0].pooled and result.segments[0].chunk == "spielberg.md#0"


def test_cited_rank_never_makes_up_a_chunk():
    texts = ["Paris is the capital of France.", "The capital of France is Paris, on the Seine."]
    assert cited_rank("Paris lies on the Seine.", "capital of France", texts) == 1  # in both: most words
    assert cited_rank("Paris is a capital.", "", texts) == 0  # no quote: most words, ties to the better rank
    assert cited_rank("Nothing in common here.", "nowhere at all", texts) == 0
    assert cited_rank("Paris lies on the Seine.", "Paris is the capital of France", texts[:1]) == 0


def _by_prompt(body: dict) -> str:
    """One sentence per prompt: the pooled prompt (several documents) writes the answer that wins."""
    user = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
    if user.count("<document nonce=") < 2:
        return echo_responder(body)
    reply = json.loads(echo_responder(body))
    sentence = "Members get 60 days for refunds, the others 30 days."
    return json.dumps({**reply, "sentence": sentence, "evidence": "60 days for refunds", "utility": 5})


def test_json_and_trace_show_which_candidate_was_pooled(index_dir, capsys):
    with FakeOpenAIServer(responder=_by_prompt) as server:
        argv = ["ask", "How many days for refunds?", "--index", str(index_dir), "--base-url", server.base_url]
        assert main([*argv, "--pooled", "--max-depth", "1", "--no-lead", "--trace"]) == 0
        printed = capsys.readouterr()
        assert main([*argv, "--pooled", "--max-depth", "1", "--no-lead", "--json"]) == 0
    assert "pooled, cites members.md#0" in printed.out + printed.err
    body = json.loads(capsys.readouterr().out)
    candidates = body["trace"]["steps"][0]["candidates"]
    assert sum(c["pooled"] for c in candidates) == 1 and len(candidates) >= 3
    pooled = next(c for c in candidates if c["pooled"])
    assert pooled["chunk"] == "members.md#0" and pooled["text"].startswith("Members get 60 days")
    assert body["config"]["pooled"] is True


def test_a_self_rag_checkpoint_refuses_the_pooled_candidate():
    from selfrag import Config
    from selfrag.config import EndpointConfig
    from selfrag.errors import ConfigError
    from selfrag.llm.reflection_chat import open_chat

    endpoint = EndpointConfig(base_url="http://127.0.0.1:9/v1", model="selfrag_llama2_7b")
    with pytest.raises(ConfigError, match="leave --pooled off"):
        open_chat(endpoint, {}, Config(pooled=True, endpoint=endpoint))
    assert open_chat(endpoint, {}, Config(endpoint=endpoint)) is not None


TWO_HOP = fused(
    "Jaws, a 1975 film, was directed by Steven Spielberg, who was born in Cincinnati.", evidence="born in Cincinnati"
)


def test_a_sentence_joining_two_chunks_facts_is_rated_against_both_and_cites_both(engine):
    rated = engine(
        script(TWO_HOP), chunks=CHUNKS, ndocs=3, pooled=True, scorer="evidence", abstain_below=0.0, lead=False
    )
    answer = rated.answer(Q)
    pooled = answer.trace.steps[0].candidates[-1]
    assert pooled.chunk == "spielberg.md#0" and pooled.also == ["jaws.md#0"]  # 1975 is only in the Jaws chunk
    assert pooled.critique.features["facts_in"] == 1.0  # 1975, Steven Spielberg, Cincinnati: all in the two
    assert pooled.critique.features["new_in"] == 1.0
    jaws, spielberg = ranks(answer)["jaws.md#0"], ranks(answer)["spielberg.md#0"]
    assert jaws < spielberg  # so the rank it is rated with is not the cited chunk's
    assert pooled.critique.features["rank_inv"] == pytest.approx(1 / (1 + jaws))  # the better of its two chunks
    result = engine(script(TWO_HOP), chunks=CHUNKS, ndocs=3, pooled=True, scorer="paper", lead=False).answer(Q)
    (segment,) = result.segments
    assert segment.pooled and segment.chunk == "spielberg.md#0" and segment.citation == 1
    assert segment.also == [2] and segment.also_chunks == ["jaws.md#0"]
    assert [s.doc_id for s in result.sources] == ["spielberg.md", "jaws.md"]
    assert result.answer.endswith("born in Cincinnati [1, 2].")
    page = render_trace_html(result)
    assert '[<a class="cite" href="#src-1">1</a>, <a class="cite" href="#src-2">2</a>].' in page


def test_a_sentence_one_chunk_covers_draws_on_that_chunk_alone(engine):
    result = engine(
        script(), chunks=CHUNKS, ndocs=3, pooled=True, scorer="evidence", abstain_below=0.0, lead=False
    ).answer(Q)
    pooled = result.trace.steps[0].candidates[-1]
    assert pooled.also == [] and result.segments[0].also == [] and len(result.sources) == 1


def test_drawn_on_adds_the_chunk_holding_what_the_cited_one_lacks_and_no_more():
    texts = [chunk.text for chunk in CHUNKS]
    two_hop = "Jaws, a 1975 film, was directed by Steven Spielberg, who was born in Cincinnati."
    assert drawn_on(Q, two_hop, texts, 1) == (1, 0)
    assert drawn_on(Q, two_hop, texts, 0) == (0, 1)  # from either end, the other half
    assert drawn_on(Q, "Steven Spielberg was born in Cincinnati.", texts, 1) == (1,)
    assert drawn_on(Q, "Spielberg was born in Cincinnati in 2020.", texts, 1) == (1,)  # no chunk holds 2020
    three = "In 1975 the shark became a villain; Spielberg was born in Cincinnati in 1946."
    assert drawn_on(Q, three, texts, 2) == (2, 1)  # 1975 is left uncovered: two chunks at most
    assert drawn_on(Q, two_hop, texts[:1], 0) == (0,)  # one chunk: nothing to add


def test_the_terminal_prints_every_source_of_a_two_source_sentence():
    event = SegmentEvent(index=0, text="Spielberg, who directed Jaws, was born in Cincinnati.", citation=1, source=None)
    assert render_segment(event).endswith("Cincinnati [1].")
    assert render_segment(event.model_copy(update={"also": [3]})).endswith("Cincinnati [1, 3].")
