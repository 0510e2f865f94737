"""The fine-tuned Self-RAG models as a backend: the real openai client over real HTTP to the loopback server's
`/v1/completions`, which answers in vLLM's legacy completions shape (see `fake_server.legacy_choice`)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from helpers import CHUNKS
from reflection_checkpoint import REL, RET, SUP, USE, Checkpoint, p, segment, word_pieces

from selfrag.api import SelfRAG
from selfrag.cli.trace_html import render_trace_html
from selfrag.config import Config, EndpointConfig
from selfrag.errors import ConfigError
from selfrag.llm.openai_chat import OpenAIChatModel
from selfrag.llm.reflection_chat import ReflectionChatModel, open_chat
from selfrag.settings import load_config
from selfrag.testing import ListRetriever
from selfrag.testing.fake_server import FakeOpenAIServer

MODEL = "selfrag/selfrag_llama2_7b"
QUESTION = "How many days do I have for refunds since 2026?"
NEW, OLD = CHUNKS[1], CHUNKS[0]  # the 2026 and the 2024 refund policies


def checkpoint_engine(server: FakeOpenAIServer, **knobs: object) -> SelfRAG:
    endpoint = EndpointConfig(base_url=server.base_url, model=MODEL, max_retries=0)
    knobs = {"nonce_seed": "t", "ndocs": 2, "max_depth": 3, **knobs}
    config = Config(endpoint=endpoint, **knobs)  # type: ignore[arg-type]
    return SelfRAG(ListRetriever([OLD, NEW]), config, environ={})


def two_passages(**kw: object) -> Checkpoint:
    return Checkpoint(
        {
            "April 2026": segment("You have 30 days.", use=USE),
            "within 14 days": segment(
                "You have 14 days.",
                {"[Relevant]": 0.55, "[Irrelevant]": 0.45},
                {"[Partially supported]": 0.5, "[No support / Contradictory]": 0.4, "[Fully supported]": 0.1},
                {"[Utility:3]": 0.5, "[Utility:2]": 0.5},
            ),
        },
        **kw,  # type: ignore[arg-type]
    )


def test_one_call_per_chunk_writes_the_segment_and_the_token_probabilities_score_it():
    checkpoint = two_passages()
    with FakeOpenAIServer(model=MODEL, completions=checkpoint) as server:
        rag = checkpoint_engine(server)
        result = rag.answer(QUESTION)
        rag.close()
        bodies = list(server.stats.bodies)
    assert result.segments[0].text == "You have 30 days."
    assert result.answer == "Within 30 days [1]. You have 30 days [1]."  # the value the documents state leads, no call
    assert (
        result.trace.capabilities["protocol"] == "reflection-tokens"
        and result.trace.capabilities["reading"] == "logprobs"
    )
    best = result.segments[0]
    assert best.critique.estimator == "reflection-tokens"
    assert best.critique.probs["relevance"] == pytest.approx({"relevant": 0.9, "irrelevant": 0.1})
    assert best.critique.probs["support"]["fully"] == pytest.approx(0.8)
    assert best.critique.probs["utility"]["5"] == pytest.approx(0.6)
    s_use = (1 * 0.6 + 0.5 * 0.3 + 0 * 0.06 - 0.5 * 0.02 - 1 * 0.02) / 1.0
    assert best.score == pytest.approx(0.9 + (0.8 + 0.5 * 0.15) + 0.5 * s_use)
    step0 = result.trace.steps[0]
    assert step0.beams[0].p_retrieve == pytest.approx(0.75)  # (P(yes) + P(continue)) / all, at the first token
    assert len(step0.candidates) == 2  # one call per (beam, chunk)
    # the wire: the legacy endpoint, the checkpoint's prompt, top-20 logprobs, special tokens kept
    segment_bodies = [b for b in bodies if "<paragraph>" in b["prompt"]]
    assert len(segment_bodies) == 2
    body = segment_bodies[0]
    assert body["prompt"].startswith(f"### Instruction:\n{QUESTION}\n\n### Response:\n[Retrieval]<paragraph>")
    assert body["logprobs"] == 20 and body["skip_special_tokens"] is False and body["stop"] == ["<paragraph>"]
    assert body["temperature"] == 0.0 and "messages" not in body
    html = render_trace_html(result)
    assert "<b>relevant</b> 0.90" in html and "<b>fully</b> 0.80" in html and "P(retrieve) 0.75" in html


def test_a_no_retrieval_first_token_writes_without_evidence():
    no = {"[No Retrieval]": 0.9, "[Retrieval]": 0.1}
    checkpoint = Checkpoint({}, decide=[p("[No Retrieval]", 0.9, no)], plain=[*word_pieces("Paris."), p("[Utility:5]")])
    with FakeOpenAIServer(model=MODEL, completions=checkpoint) as server:
        rag = checkpoint_engine(server)
        result = rag.answer("What is the capital of France?")
        rag.close()
    assert result.answer == "Paris." and result.sources == []
    assert result.trace.steps[0].beams[0].decision == "no"
    assert checkpoint.prompts[-1].endswith("### Response:\n[No Retrieval]")


def test_an_empty_segment_is_dropped_and_recorded_and_the_other_chunk_answers():
    checkpoint = two_passages()
    checkpoint.by_passage = {**checkpoint.by_passage, "within 14 days": [p("[Irrelevant]", 0.8, REL)]}
    with FakeOpenAIServer(model=MODEL, completions=checkpoint) as server:
        rag = checkpoint_engine(server)
        result = rag.answer(QUESTION)
        rag.close()
    failed = [c for c in result.trace.steps[0].candidates if c.error]
    assert len(failed) == 1 and "empty segment" in failed[0].error
    assert result.segments[0].text == "You have 30 days."


def test_the_segment_ends_at_the_next_retrieval_and_the_next_step_retrieves_again():
    cut = [p("[Retrieval]", 0.8, RET)]
    checkpoint = Checkpoint(
        {
            "April 2026": [*segment("You have 30 days.", use=None, end=cut)],
            "within 14 days": segment(
                "Older orders had 14 days.",
                {"[Irrelevant]": 0.8, "[Relevant]": 0.2},
                {"[No support / Contradictory]": 0.9, "[Partially supported]": 0.1},
                first="[Irrelevant]",
            ),
        }
    )
    with FakeOpenAIServer(model=MODEL, completions=checkpoint) as server:
        rag = checkpoint_engine(server, max_depth=2)
        result = rag.answer(QUESTION)
        rag.close()
    first = next(c for c in result.trace.steps[0].candidates if c.chunk == NEW.key)
    assert first.text == "You have 30 days." and not first.critique.is_final
    assert first.critique.probs["utility"] == {"1": 0.0, "2": 0.0, "3": 1.0, "4": 0.0, "5": 0.0}  # missing: s_use 0
    assert len(result.trace.steps) == 2  # the [Retrieval] at the end asked for a second retrieval step


def test_an_endpoint_that_ignores_logprobs_falls_back_to_labels_read_from_the_text_and_says_so_once(caplog):
    checkpoint = two_passages(logprobs=False)
    with (
        caplog.at_level(logging.WARNING, logger="selfrag"),
        FakeOpenAIServer(model=MODEL, completions=checkpoint) as server,
    ):
        rag = checkpoint_engine(server)
        first = rag.answer(QUESTION)
        rag.answer(QUESTION)
        rag.close()
    said = [r for r in caplog.records if "ignores `logprobs`" in r.getMessage()]
    assert len(said) == 1
    assert first.trace.capabilities["reading"] == "labels" and "one-hot" in first.trace.capabilities["note"]
    best = first.segments[0]
    assert best.critique.estimator == "reflection-labels"
    assert best.critique.probs["support"] == {"fully": 1.0, "partially": 0.0, "no": 0.0}
    assert first.trace.steps[0].beams[0].p_retrieve is None  # a written [Retrieval]: the rule's discrete branch


def test_fewer_top_entries_than_asked_keep_probabilities_floor_the_rest_and_say_so():
    checkpoint = two_passages(top=2)
    with FakeOpenAIServer(model=MODEL, completions=checkpoint) as server:
        rag = checkpoint_engine(server)
        result = rag.answer(QUESTION)
        rag.close()
    assert result.trace.capabilities["reading"] == "logprobs"
    assert "returned 2 top logprobs where 20 were asked" in result.trace.capabilities["note"]
    critique = result.segments[0].critique
    assert critique.truncated and critique.estimator == "reflection-tokens"
    assert critique.probs["support"]["no"] == pytest.approx(0.0, abs=1e-40)  # outside the top 2: floored
    assert critique.probs["support"]["fully"] == pytest.approx(0.8 / 0.95)  # renormalised over what was listed


def test_tokens_outside_the_reflection_vocabulary_fall_back_to_the_text():
    split = [p("[", 0.9, {"[": 0.9, "The": 0.1}), p("Ret", 0.9), p("rieval", 0.9), p("]", 0.9)]
    pieces = [
        p("[", 0.9, {"[": 0.9}),
        p("Rel", 0.9),
        p("evant", 0.9),
        p("]", 0.9),
        *word_pieces("You have 30 days."),
        p("[Utility:9]", 0.9),
    ]
    checkpoint = Checkpoint({"April 2026": pieces, "within 14 days": pieces}, decide=split)
    with FakeOpenAIServer(model=MODEL, completions=checkpoint) as server:
        rag = checkpoint_engine(server)
        result = rag.answer(QUESTION)
        rag.close()
    assert (
        result.trace.capabilities["reading"] == "labels"
        and "no Self-RAG reflection token" in result.trace.capabilities["note"]
    )
    assert result.segments[0].text == "You have 30 days."
    assert "[" not in result.segments[0].text  # neither the split token nor the unknown [Utility:9] shows
    assert result.segments[0].critique.relevance == "relevant"
    assert result.segments[0].critique.support == "no"  # no ISSUP token written: the conservative label


def test_streaming_yields_the_segment_with_its_citation():
    with FakeOpenAIServer(model=MODEL, completions=two_passages()) as server:
        rag = checkpoint_engine(server)

        async def collect():
            try:
                return [event async for event in rag.astream(QUESTION)]
            finally:
                await rag.aclose()

        events = asyncio.run(collect())
    segments = [e for e in events if getattr(e, "type", "") == "segment"]
    assert segments and segments[0].text == "You have 30 days." and segments[0].citation == 1


def test_protocol_by_flag_environment_file_or_model_name_and_the_explicit_setting_wins(tmp_path):
    auto = EndpointConfig(base_url="http://127.0.0.1:9/v1", model="selfrag_llama2_13b")
    assert isinstance(open_chat(auto, {}), ReflectionChatModel)
    assert isinstance(open_chat(EndpointConfig(base_url="http://127.0.0.1:9/v1", model="qwen"), {}), OpenAIChatModel)
    assert not isinstance(open_chat(EndpointConfig(**{**_plain(auto), "protocol": "chat"}), {}), ReflectionChatModel)
    assert load_config({"protocol": "reflection-tokens"}, environ={}).endpoint.protocol == "reflection-tokens"
    assert load_config(environ={"SELFRAG_PROTOCOL": "chat"}).endpoint.protocol == "chat"
    toml = tmp_path / "c.toml"
    toml.write_text('[endpoint]\nprotocol = "reflection-tokens"\n')
    assert load_config(environ={}, config_file=str(toml)).endpoint.protocol == "reflection-tokens"
    with pytest.raises(ConfigError, match="protocol must be one of"):
        EndpointConfig(protocol="tokens")
    with pytest.raises(ConfigError, match="judges while it writes"):
        open_chat(auto, {}, Config(critic="separate"))


def _plain(endpoint: EndpointConfig) -> dict[str, object]:
    return {name: getattr(endpoint, name) for name in endpoint.__slots__}  # type: ignore[attr-defined]


def test_cli_ask_prints_the_fallback_once_and_the_answer(index_dir, capsys):
    from selfrag.cli import main

    checkpoint = Checkpoint(
        {"Refunds": segment("Refunds take 30 days.", REL, SUP, USE)}, logprobs=False, decide=[p("[Retrieval]")]
    )
    with FakeOpenAIServer(model=MODEL, completions=checkpoint) as server:
        code = main(["ask", "How long for refunds?", "-i", str(index_dir), "--base-url", server.base_url, "-m", MODEL])
    out, err = capsys.readouterr()
    assert code == 0 and "Refunds take 30 days [1]." in out
    assert err.count("reflection labels are read from the text") == 1


def test_doctor_reports_the_protocol_and_the_reading():
    from selfrag.api import default_chat
    from selfrag.cli.diagnose import check_endpoint

    with FakeOpenAIServer(model=MODEL, completions=two_passages(logprobs=False)) as server:
        config = Config(endpoint=EndpointConfig(base_url=server.base_url, model=MODEL, max_retries=0))
        checks = asyncio.run(check_endpoint(config, {}, default_chat))
    found = {check.name: check for check in checks}
    assert all(check.ok for check in checks)
    assert found["capabilities"].detail == "protocol reflection-tokens, labels from the text (one-hot)"
    assert "ignores `logprobs`" in found["capabilities"].hint


def test_a_completions_body_without_choices_is_one_clear_error():
    from selfrag.errors import LLMError

    with FakeOpenAIServer(model=MODEL, completions=two_passages(), fault="error-object") as server:
        rag = checkpoint_engine(server)
        with pytest.raises(LLMError, match="without choices: model overloaded"):
            rag.answer(QUESTION)
        rag.close()


def test_malformed_logprobs_are_dropped_whole_and_offsets_are_kept():
    from selfrag.llm.reflection_chat import read_text_completion
    from selfrag.schema import Meter

    good = {"tokens": ["[Relevant]", "Hi"], "token_logprobs": [-0.1, -0.2], "top_logprobs": [{}, None]}
    body = {
        "choices": [{"text": "[Relevant]Hi", "finish_reason": "stop", "logprobs": {**good, "text_offset": [0, 10]}}]
    }
    read = read_text_completion(body, Meter())
    assert [t.token for t in read.tokens] == ["[Relevant]", "Hi"] and read.offsets == (0, 10)
    body["choices"][0]["logprobs"] = {**good, "token_logprobs": [-0.1]}  # one logprob for two tokens
    assert read_text_completion(body, Meter()).tokens is None


def test_reflection_tokens_without_a_server_is_a_clear_error():
    from selfrag.api import default_chat

    with pytest.raises(ConfigError, match="needs --base-url"):
        default_chat(EndpointConfig(protocol="reflection-tokens"), {})


async def test_a_server_that_refuses_logprobs_is_probed_again_without_them_and_never_asked_for_them():
    import json

    import httpx
    import respx
    from httpmock import BASE, openai_client

    from selfrag.config import ResolvedEndpoint
    from selfrag.llm.base import ChatRequest
    from selfrag.llm.replies import DecideReply
    from selfrag.schema import Meter

    sent = []

    def answer(request):
        body = json.loads(request.content)
        sent.append(body)
        if "logprobs" in body:
            return httpx.Response(400, json={"error": {"message": "logprobs are not supported"}})
        choice = {"index": 0, "text": "[No Retrieval]", "finish_reason": "stop", "logprobs": None}
        return httpx.Response(200, json={"choices": [choice], "usage": {"prompt_tokens": 9, "completion_tokens": 1}})

    router = respx.MockRouter(base_url=BASE)
    router.post("/completions").mock(side_effect=answer)
    endpoint = ResolvedEndpoint(BASE, "sk-test", "test", EndpointConfig(model=MODEL))
    chat = ReflectionChatModel(endpoint, client=openai_client(router))
    meter = Meter()
    caps = await chat.capabilities(meter)
    assert caps.reading == "labels" and "refuses `logprobs` (400)" in caps.note
    values = (("question", "Who wrote Frankenstein?"), ("draft", "(nothing yet)"))
    response = await chat.chat(ChatRequest("retrieve_decide", (), DecideReply, values=values), meter)
    assert json.loads(response.text) == {"retrieve": "no", "query": ""}
    assert response.native is not None and response.native.estimator == "reflection-labels"
    assert [("logprobs" in body) for body in sent] == [True, False, False]
    assert sent[-1]["prompt"] == "### Instruction:\nWho wrote Frankenstein?\n\n### Response:\n"
    assert meter.llm_calls == 3


@pytest.mark.parametrize(("threshold", "expected"), [(0.2, "You have 30 days."), (0.5, "You have 30 days. Or more.")])
def test_a_written_no_retrieval_ends_the_segment_when_the_threshold_says_retrieve(threshold, expected):
    maybe = {"[No Retrieval]": 0.7, "[Retrieval]": 0.3}
    tail = [p("[No Retrieval]", 0.7, maybe), *word_pieces(" Or more.")]
    checkpoint = Checkpoint({"April 2026": segment("You have 30 days.", use=None, end=tail)})
    with FakeOpenAIServer(model=MODEL, completions=checkpoint) as server:
        rag = checkpoint_engine(server, max_depth=1, ndocs=1, threshold=threshold)
        result = rag.answer(QUESTION)
        rag.close()
    (candidate,) = result.trace.steps[0].candidates
    assert candidate.text == expected
    assert candidate.critique.is_final is (threshold == 0.5)  # cut for a retrieval, or written to the end
