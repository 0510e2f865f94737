"""HTTP-level tests: the real AsyncOpenAI client over a mocked transport (respx routes behind httpx2)."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx2
import pytest
import respx
from helpers import CHUNKS
from httpmock import BASE, completion, openai_client, respx_transport

from selfrag.api import SelfRAG
from selfrag.config import Config, EndpointConfig, ResolvedEndpoint, resolve_endpoint
from selfrag.errors import ContextLengthError, CritiqueError, FatalLLMError, LLMError, RefusalError
from selfrag.llm.base import Capabilities, ChatRequest, Message
from selfrag.llm.openai_chat import OpenAIChatModel
from selfrag.llm.replies import DecideReply
from selfrag.llm.structured import ask
from selfrag.schema import Meter
from selfrag.testing import ListRetriever
from selfrag.testing.fake_server import FakeOpenAIServer, echo_responder

GOOD = '{"retrieve": "yes", "query": "refunds"}'
REQUEST = ChatRequest(
    "retrieve_decide", (Message("system", "Decide."), Message("user", "Q?")), DecideReply, logprobs=True
)


def model(router, *, settings=None, max_retries=0, api_key="sk-test"):
    settings = settings or EndpointConfig(model="m")
    endpoint = ResolvedEndpoint(BASE, api_key, "test", settings)
    return OpenAIChatModel(endpoint, client=openai_client(router, api_key=api_key, max_retries=max_retries))


def bodies(route):
    return [json.loads(call.request.content) for call in route.calls]


async def test_full_featured_endpoint_is_probed_once_and_gets_json_schema_and_logprobs():
    router = respx.MockRouter(base_url=BASE)
    route = router.post("/chat/completions").respond(
        json=completion(GOOD, logprobs=[{"token": GOOD, "logprob": 0.0, "top_logprobs": []}], choices=2)
    )
    chat = model(router)
    meter = Meter()
    await ask(chat, REQUEST, meter)
    await ask(chat, REQUEST, meter)
    sent = bodies(route)
    assert len(sent) == 3  # one combined probe, then two calls: the probe is cached
    probe, call = sent[0], sent[1]
    assert probe["n"] == 2 and probe["logprobs"] is True
    assert call["response_format"]["type"] == "json_schema"
    assert call["response_format"]["json_schema"]["strict"] is True
    assert call["response_format"]["json_schema"]["schema"]["additionalProperties"] is False
    assert call["logprobs"] is True and call["top_logprobs"] == 10 and call["temperature"] == 0.0
    assert meter.llm_calls == 3
    caps = await chat.capabilities(meter)
    assert (caps.structured, caps.logprobs, caps.n) == ("json_schema", True, True)


async def test_capabilities_known_to_the_caller_send_no_probe_and_shape_the_first_call():
    """The embedded model's server is run by the process itself: its capabilities are given, not probed."""
    router = respx.MockRouter(base_url=BASE)
    route = router.post("/chat/completions").respond(json=completion(GOOD))
    known = Capabilities(model="m", structured="json_object_schema", parallel=3)
    endpoint = ResolvedEndpoint(BASE, "sk-test", "test", EndpointConfig(model="m"))
    chat = OpenAIChatModel(endpoint, client=openai_client(router, api_key="sk-test"), known=known)
    meter = Meter()
    await ask(chat, REQUEST, meter)
    [call] = bodies(route)  # the answer's own call, and nothing before it
    assert call["response_format"]["type"] == "json_object" and "schema" in call["response_format"]
    assert meter.llm_calls == 1 and await chat.capabilities(meter) is known and "not probed" in chat.origin
    assert chat.limit.cap <= 3  # the known parallel slots bound the requests in flight


async def test_server_without_json_schema_falls_back_to_json_object_with_schema():
    """llama-cpp-python answers json_schema with HTTP 500 and accepts {"type": "json_object", "schema": ...}."""
    router = respx.MockRouter(base_url=BASE)

    def handler(request):
        body = json.loads(request.content)
        if body.get("response_format", {}).get("type") == "json_schema":
            return respx.MockResponse(500, json={"error": {"message": "Input should be 'text' or 'json_object'"}})
        return respx.MockResponse(200, json=completion(GOOD))

    route = router.post("/chat/completions").mock(side_effect=handler)
    chat = model(router)
    meter = Meter()
    parsed = await ask(chat, REQUEST, meter)
    assert parsed.value.query == "refunds"
    caps = await chat.capabilities(meter)
    assert caps.structured == "json_object_schema" and caps.logprobs is False and caps.n is False
    last = bodies(route)[-1]
    assert last["response_format"]["type"] == "json_object" and "properties" in last["response_format"]["schema"]
    assert "logprobs" not in last  # not asked where not offered
    assert meter.llm_calls == len(route.calls)  # every HTTP request counted, probes included


async def test_unset_model_is_taken_from_the_models_list():
    router = respx.MockRouter(base_url=BASE)
    router.get("/models").respond(
        json={"object": "list", "data": [{"id": "qwen-7b", "object": "model", "created": 0, "owned_by": "me"}]}
    )
    route = router.post("/chat/completions").respond(json=completion(GOOD))
    chat = model(router, settings=EndpointConfig())
    await ask(chat, REQUEST, Meter())
    assert {body["model"] for body in bodies(route)} == {"qwen-7b"}


async def test_invalid_json_is_reasked_over_http():
    router = respx.MockRouter(base_url=BASE)
    route = router.post("/chat/completions")
    route.side_effect = [
        respx.MockResponse(200, json=completion(GOOD)),  # probe
        respx.MockResponse(200, json=completion('{"retrieve": ')),
        respx.MockResponse(200, json=completion(GOOD)),
    ]
    parsed = await ask(model(router), REQUEST, meter := Meter())
    assert parsed.value.retrieve == "yes" and meter.reasks == 1
    reask = bodies(route)[2]["messages"]
    assert reask[-2] == {"role": "assistant", "content": '{"retrieve": '}


async def test_429_with_retry_after_is_retried_by_the_sdk_and_counted():
    router = respx.MockRouter(base_url=BASE)
    route = router.post("/chat/completions")
    route.side_effect = [
        respx.MockResponse(200, json=completion(GOOD)),
        respx.MockResponse(429, headers={"retry-after-ms": "1"}, json={"error": {"message": "slow"}}),
        respx.MockResponse(200, json=completion(GOOD)),
    ]
    parsed = await ask(model(router, max_retries=2), REQUEST, meter := Meter())
    assert parsed.value.query == "refunds"
    assert meter.llm_calls == 3 and len(route.calls) == 3  # probe + 429 + retry


@pytest.mark.parametrize("status", [401, 403, 404])
async def test_auth_and_not_found_are_fatal_at_once_and_never_show_the_key(status):
    router = respx.MockRouter(base_url=BASE)
    route = router.post("/chat/completions").respond(status, json={"error": {"message": "nope sk-canary-123"}})
    with pytest.raises(FatalLLMError) as caught:
        await ask(model(router, max_retries=2, api_key="sk-canary-123"), REQUEST, Meter())
    assert "sk-canary-123" not in str(caught.value)
    assert len(route.calls) == 1  # no retry


async def test_quota_exhaustion_is_fatal_without_a_retry_storm():
    router = respx.MockRouter(base_url=BASE)
    route = router.post("/chat/completions").respond(
        429, json={"error": {"message": "quota", "code": "insufficient_quota", "type": "insufficient_quota"}}
    )
    chat = model(router, max_retries=2)
    with pytest.raises(FatalLLMError, match="quota"):
        await ask(chat, REQUEST, Meter())
    sent = len(route.calls)
    assert sent <= 3  # the probe and its one SDK retry (the SDK retries every 429); never the 1 + 2 x 3 storm
    with pytest.raises(FatalLLMError):
        await ask(chat, REQUEST, Meter())
    assert len(route.calls) == sent  # the breaker is open for good: nothing more is sent


@pytest.mark.parametrize(
    "headers",
    [
        {"retry-after": "600"},
        {"retry-after-ms": "3600000"},
        {"retry-after": format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True)},
    ],
)
async def test_retry_after_beyond_two_minutes_is_fatal_after_one_request(headers):
    router = respx.MockRouter(base_url=BASE)
    route = router.post("/chat/completions")
    route.side_effect = [respx.MockResponse(200, json=completion(GOOD))] + [
        respx.MockResponse(429, headers=headers, json={"error": {"message": "slow down"}})
    ] * 5
    chat = model(router, max_retries=2)
    with pytest.raises(FatalLLMError, match="wait") as caught:
        await ask(chat, REQUEST, meter := Meter())
    assert "Retry-After" in str(caught.value)
    assert len(route.calls) == 2 and meter.llm_calls == 2  # the probe and one 429: no retry, no re-ask
    with pytest.raises(FatalLLMError):
        await ask(chat, REQUEST, Meter())
    assert len(route.calls) == 2  # the breaker refuses further calls without sending them


@pytest.mark.parametrize(
    "body",
    [
        {"content": b"<html><body>Bad gateway</body></html>", "headers": {"content-type": "text/html"}},
        {"json": {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []}},
        {"json": {"error": {"message": "overloaded"}}},
        {"content": b'{"id": "x", "object": "chat.completion", "choi', "headers": {"content-type": "application/json"}},
    ],
)
async def test_200_that_is_not_a_completion_becomes_a_clean_error(body):
    router = respx.MockRouter(base_url=BASE)
    route = router.post("/chat/completions")
    route.side_effect = [respx.MockResponse(200, json=completion(GOOD)), respx.MockResponse(200, **body)]
    with pytest.raises(LLMError) as caught:
        await ask(model(router, max_retries=2), REQUEST, meter := Meter())
    assert type(caught.value) is LLMError  # a typed error of ours, not an AttributeError or a re-ask loop
    assert len(route.calls) == 2 and meter.llm_calls == 2 and meter.reasks == 0  # the probe and one call


async def test_a_run_of_200_error_pages_opens_the_breaker():
    router = respx.MockRouter(base_url=BASE)
    page = respx.MockResponse(200, content=b"<html>Bad gateway</html>", headers={"content-type": "text/html"})
    route = router.post("/chat/completions")
    route.side_effect = [respx.MockResponse(200, json=completion(GOOD))] + [page] * 10
    chat = model(router, settings=EndpointConfig(model="m", breaker_threshold=3))
    for _ in range(3):
        with pytest.raises(LLMError, match="not JSON"):
            await chat.chat(REQUEST, Meter())
    with pytest.raises(LLMError, match="failed 3 times in a row"):
        await chat.chat(REQUEST, Meter())
    assert len(route.calls) == 1 + 3  # the fourth call was refused without being sent


async def test_usage_and_cached_tokens_are_accounted():
    router = respx.MockRouter(base_url=BASE)
    usage = {
        "prompt_tokens": 120,
        "completion_tokens": 7,
        "total_tokens": 127,
        "prompt_tokens_details": {"cached_tokens": 64},
    }
    router.post("/chat/completions").respond(json=completion(GOOD, usage=usage))
    await ask(model(router), REQUEST, meter := Meter())
    assert (meter.prompt_tokens, meter.completion_tokens, meter.cached_tokens) == (240, 14, 128)  # probe + call


async def test_label_probabilities_arrive_from_real_logprobs():
    tokens = [
        ('{"', 0.0),
        ("retrieve", 0.0),
        ('":"', 0.0),
        ("no", -0.2877),
        ('","', 0.0),
        ("query", 0.0),
        ('":"', 0.0),
        ("x", 0.0),
        ('"}', 0.0),
    ]
    text = "".join(t for t, _ in tokens)
    content = [
        {
            "token": t,
            "logprob": lp,
            "bytes": None,
            "top_logprobs": (
                [
                    {"token": "no", "logprob": -0.2877, "bytes": None},
                    {"token": "yes", "logprob": -1.3863, "bytes": None},
                ]
                if t == "no"
                else []
            ),
        }
        for t, lp in tokens
    ]
    router = respx.MockRouter(base_url=BASE)
    router.post("/chat/completions").respond(json=completion(text, logprobs=content))
    parsed = await ask(model(router), REQUEST, Meter())
    from selfrag.llm.logprobs import label_distribution

    dist = label_distribution(parsed.response.text, parsed.response.tokens, "retrieve", ["yes", "no", "continue"])
    assert dist.probs["yes"] == pytest.approx(0.25 / 1.0, abs=1e-3)  # exp(-1.386)=0.25, exp(-0.288)=0.75


def test_openai_key_goes_only_where_it_belongs():
    env = {"OPENAI_API_KEY": "sk-real"}
    local = resolve_endpoint(EndpointConfig(base_url="http://127.0.0.1:8000/v1"), env)
    assert local.api_key != "sk-real" and local.key_source == "placeholder"
    assert resolve_endpoint(EndpointConfig(), env).api_key == "sk-real"  # OpenAI itself
    assert resolve_endpoint(EndpointConfig(base_url="https://api.openai.com/v1"), env).api_key == "sk-real"
    paired = resolve_endpoint(EndpointConfig(), {**env, "OPENAI_BASE_URL": "http://vllm:8000/v1"})
    assert paired.api_key == "sk-real" and paired.base_url == "http://vllm:8000/v1"  # the SDK's own pair
    asked = resolve_endpoint(EndpointConfig(base_url="https://other.example/v1", send_openai_key=True), env)
    assert asked.api_key == "sk-real"
    own = resolve_endpoint(EndpointConfig(base_url="http://other/v1"), {**env, "SELFRAG_API_KEY": "sk-own"})
    assert own.api_key == "sk-own"


async def test_the_placeholder_not_the_openai_key_is_sent_to_a_local_server():
    router = respx.MockRouter(base_url=BASE)
    route = router.post("/chat/completions").respond(json=completion(GOOD))
    endpoint = resolve_endpoint(EndpointConfig(base_url=BASE, model="m"), {"OPENAI_API_KEY": "sk-real-secret"})
    chat = OpenAIChatModel(endpoint, http_client_factory=lambda: httpx2.AsyncClient(transport=respx_transport(router)))
    await ask(chat, REQUEST, Meter())
    await chat.aclose()
    assert all("sk-real-secret" not in call.request.headers.get("authorization", "") for call in route.calls)


async def test_sustained_failures_open_the_breaker_then_calls_fail_fast():
    router = respx.MockRouter(base_url=BASE)
    route = router.post("/chat/completions")
    route.side_effect = [respx.MockResponse(200, json=completion(GOOD))] + [
        respx.MockResponse(503, json={"error": {"message": "down"}})
    ] * 50
    chat = model(router, settings=EndpointConfig(model="m", breaker_threshold=3, breaker_cooldown=60))
    meter = Meter()
    for _ in range(3):
        with pytest.raises(LLMError, match="503"):
            await chat.chat(REQUEST, meter)
    sent = len(route.calls)
    with pytest.raises(LLMError, match="failed 3 times in a row"):
        await chat.chat(REQUEST, meter)
    assert len(route.calls) == sent  # refused without a request


async def test_breaker_lets_one_trial_through_after_the_cooldown_and_closes_on_success():
    router = respx.MockRouter(base_url=BASE)
    route = router.post("/chat/completions")
    route.side_effect = [
        respx.MockResponse(200, json=completion(GOOD)),
        respx.MockResponse(500, json={}),
        respx.MockResponse(200, json=completion(GOOD)),
        respx.MockResponse(200, json=completion(GOOD)),
    ]
    chat = model(router, settings=EndpointConfig(model="m", breaker_threshold=1, breaker_cooldown=0))
    meter = Meter()
    with pytest.raises(LLMError):
        await chat.chat(REQUEST, meter)
    assert chat.breaker.opened_at is not None
    await chat.chat(REQUEST, meter)  # the trial call after the (zero) cooldown
    assert chat.breaker.opened_at is None and chat.breaker.failures == 0


async def test_a_fatal_error_keeps_the_breaker_open_for_later_calls():
    router = respx.MockRouter(base_url=BASE)
    route = router.post("/chat/completions")
    route.side_effect = [respx.MockResponse(200, json=completion(GOOD)), respx.MockResponse(401, json={})]
    chat = model(router)
    with pytest.raises(FatalLLMError):
        await chat.chat(REQUEST, Meter())
    with pytest.raises(FatalLLMError, match="not calling the endpoint again"):
        await chat.chat(REQUEST, Meter())
    assert len(route.calls) == 2


async def test_silent_prompt_truncation_is_detected():
    long_request = ChatRequest(
        "retrieve_decide", (Message("system", "Decide."), Message("user", "word " * 5000)), DecideReply
    )
    router = respx.MockRouter(base_url=BASE)
    usage = {"prompt_tokens": 2048, "completion_tokens": 5, "total_tokens": 2053}  # Ollama's silent cut
    router.post("/chat/completions").respond(json=completion(GOOD, usage=usage))
    with pytest.raises(ContextLengthError, match="silently"):
        await model(router).chat(long_request, Meter())
    honest = {"prompt_tokens": 5100, "completion_tokens": 5, "total_tokens": 5105}
    router2 = respx.MockRouter(base_url=BASE)
    router2.post("/chat/completions").respond(json=completion(GOOD, usage=honest))
    assert (await model(router2).chat(long_request, Meter())).prompt_tokens == 5100


@pytest.mark.parametrize(("words", "reported", "flagged"), [(300, 16, True), (300, 200, False), (40, 1, False)])
async def test_truncation_check_covers_ordinary_prompts_and_skips_tiny_ones(words, reported, flagged):
    """A 300-word prompt read as 16 tokens was cut; a tiny prompt is too small to judge across tokenizers."""
    request = ChatRequest("retrieve_decide", (Message("user", "word " * words),), DecideReply)
    router = respx.MockRouter(base_url=BASE)
    usage = {"prompt_tokens": reported, "completion_tokens": 5, "total_tokens": reported + 5}
    router.post("/chat/completions").respond(json=completion(GOOD, usage=usage))
    chat = model(router, settings=EndpointConfig(model="m"))
    if flagged:
        with pytest.raises(ContextLengthError, match="silently"):
            await chat.chat(request, Meter())
    else:
        assert (await chat.chat(request, Meter())).prompt_tokens == reported


async def test_context_length_error_from_the_server_is_typed():
    router = respx.MockRouter(base_url=BASE)
    route = router.post("/chat/completions")
    route.side_effect = [
        respx.MockResponse(200, json=completion(GOOD)),
        respx.MockResponse(
            400, json={"error": {"message": "maximum context length is 4096", "code": "context_length_exceeded"}}
        ),
    ]
    with pytest.raises(ContextLengthError):
        await model(router).chat(REQUEST, Meter())


def test_keys_are_refused_where_they_would_leak():
    from selfrag.errors import ConfigError

    with pytest.raises(ConfigError, match="plain http"):
        resolve_endpoint(
            EndpointConfig(base_url="http://10.0.0.5:8000/v1", send_openai_key=True), {"OPENAI_API_KEY": "sk-real"}
        )
    with pytest.raises(ConfigError, match="credentials"):
        EndpointConfig(base_url="https://user:sk-secret@host.example/v1")
    with pytest.raises(ConfigError, match="credentials") as caught:
        resolve_endpoint(EndpointConfig(), {"OPENAI_BASE_URL": "https://u:sk-secret@h.example/v1"})
    assert "sk-secret" not in str(caught.value)
    loopback = resolve_endpoint(
        EndpointConfig(base_url="http://127.0.0.1:8000/v1", send_openai_key=True), {"OPENAI_API_KEY": "sk-real"}
    )
    assert loopback.api_key == "sk-real"  # loopback over http is fine when asked


def storm(failing: int):
    """A handler that answers 503 to the first `failing` chat requests after the probe, then 200."""
    seen = {"n": 0}

    def handler(request):
        seen["n"] += 1
        if 1 < seen["n"] <= 1 + failing:
            return respx.MockResponse(503, json={"error": {"message": "overloaded"}})
        return respx.MockResponse(200, json=completion(GOOD))

    return handler


async def fan_out(chat, count):
    async def one():
        try:
            await chat.chat(REQUEST, Meter())
            return "ok"
        except LLMError:
            return "failed"

    await chat.capabilities(Meter())
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(one()) for _ in range(count)]
    return [t.result() for t in tasks]


async def test_a_503_burst_across_a_50_call_fan_out_is_absorbed_within_the_attempt_bound():
    router = respx.MockRouter(base_url=BASE)
    route = router.post("/chat/completions").mock(side_effect=storm(failing=40))
    chat = model(router, max_retries=2, settings=EndpointConfig(model="m", max_concurrency=50))
    outcomes = await fan_out(chat, 50)
    assert outcomes.count("ok") == 50  # each call had retries left when the burst ended
    assert len(route.calls) <= 1 + 50 + 40  # the probe, one success per call, one retry per 503


async def test_a_sustained_503_storm_is_bounded_and_then_the_breaker_stops_sending():
    router = respx.MockRouter(base_url=BASE)
    route = router.post("/chat/completions").mock(side_effect=storm(failing=10**6))
    chat = model(router, max_retries=2, settings=EndpointConfig(model="m", max_concurrency=50, breaker_threshold=8))
    outcomes = await fan_out(chat, 50)
    assert outcomes == ["failed"] * 50  # every call ends in our error, none in a crash
    sent = len(route.calls)
    assert sent <= 1 + 50 * 3  # the probe, and at most 1 + max_retries attempts per call
    outcomes = await fan_out(chat, 10)
    assert outcomes == ["failed"] * 10 and len(route.calls) == sent  # the open breaker sends nothing


def served(reply):
    """A route handler: the probe and ordinary calls get a valid reply for their schema (the fake server's
    echo), calls that `reply(body)` answers (a response, not None) get that instead."""

    def handler(request):
        body = json.loads(request.content)
        usage = {"prompt_tokens": len(json.dumps(body["messages"])) // 4, "completion_tokens": 20, "total_tokens": 0}
        return reply(body) or respx.MockResponse(200, json=completion(echo_responder(body), usage=usage))

    return handler


def shows(body, doc_id):
    return f'id="{doc_id}' in body["messages"][-1]["content"] and "FusedReply" in json.dumps(body)


async def answer_over_http(router, **knobs):
    rag = SelfRAG(ListRetriever(CHUNKS), Config(nonce_seed="t", **knobs), chat=model(router), environ={})
    return await rag.aanswer("How long are refunds accepted?")


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (completion(None, message={"refusal": "I can't help with that."}), "refusal"),
        (completion(GOOD, finish_reason="content_filter"), "content_filter"),  # its JSON parses: still refused
    ],
)
async def test_refusal_and_content_filter_are_typed_and_never_reasked(reply, kind):
    router = respx.MockRouter(base_url=BASE)
    route = router.post("/chat/completions")
    route.side_effect = [respx.MockResponse(200, json=completion(GOOD))] + [respx.MockResponse(200, json=reply)] * 3
    with pytest.raises(RefusalError) as caught:
        await ask(model(router), REQUEST, meter := Meter(), reasks=2)
    assert caught.value.kind == kind
    assert len(route.calls) == 2 and meter.reasks == 0  # the probe and one call: asking again will not help


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_reasoning_without_content_is_reasked_with_more_tokens_and_never_taken_as_the_answer(field):
    thinking = completion(None, message={field: GOOD}, finish_reason="length")  # valid JSON, but only thoughts
    router = respx.MockRouter(base_url=BASE)
    route = router.post("/chat/completions")
    route.side_effect = [respx.MockResponse(200, json=completion(GOOD))] + [respx.MockResponse(200, json=thinking)] * 3
    with pytest.raises(CritiqueError, match="only reasoning") as caught:
        await ask(model(router), REQUEST, meter := Meter())
    sent = bodies(route)
    assert len(sent) == 3 and meter.reasks == 1  # one re-ask, then the typed error
    assert sent[2]["max_tokens"] == 2 * sent[1]["max_tokens"]
    assert caught.value.raw_text == ""


async def test_a_refused_candidate_is_dropped_and_recorded_and_the_step_goes_on():
    refusal = respx.MockResponse(200, json=completion(None, message={"refusal": "I won't summarise this."}))
    router = respx.MockRouter(base_url=BASE)
    route = router.post("/chat/completions").mock(
        side_effect=served(lambda body: refusal if shows(body, "policy-2026.md") else None)
    )
    result = await answer_over_http(router, max_depth=1)
    candidates = {c.chunk: c for c in result.trace.steps[0].candidates}
    refused = candidates["policy-2026.md#0"]
    assert refused.status == "failed" and refused.error.startswith("RefusalError: the model refused")
    assert candidates["policy-2024.md#0"].status == "kept" and "[1]" in result.answer
    assert sum(shows(body, "policy-2026.md") for body in bodies(route)) == 1  # not re-asked


async def test_a_prompt_still_too_long_after_the_shrink_fails_its_candidate_after_two_calls():
    too_long = respx.MockResponse(
        400, json={"error": {"message": "maximum context length is 512", "code": "context_length_exceeded"}}
    )
    router = respx.MockRouter(base_url=BASE)
    route = router.post("/chat/completions").mock(
        side_effect=served(lambda body: too_long if shows(body, "policy-2026.md") else None)
    )
    result = await answer_over_http(router, max_depth=1)
    tries = [body for body in bodies(route) if shows(body, "policy-2026.md")]
    assert len(tries) == 2  # the full chunk, then once with half of it; no third call
    failed = next(c for c in result.trace.steps[0].candidates if c.chunk == "policy-2026.md#0")
    assert failed.status == "failed" and failed.error.startswith("ContextLengthError")
    assert "[1]" in result.answer  # the other candidate carried the step


async def test_a_truncated_reply_is_reasked_with_a_larger_max_tokens_in_the_request_body():
    router = respx.MockRouter(base_url=BASE)
    route = router.post("/chat/completions")
    route.side_effect = [
        respx.MockResponse(200, json=completion(GOOD)),  # probe
        respx.MockResponse(200, json=completion('{"retrieve": "ye', finish_reason="length")),
        respx.MockResponse(200, json=completion(GOOD)),
    ]
    parsed = await ask(model(router), REQUEST, Meter())
    first, reask = bodies(route)[1:]
    assert parsed.value.retrieve == "yes"
    assert reask["max_tokens"] == 2 * first["max_tokens"]


async def test_a_transport_error_is_never_turned_into_a_reask():
    router = respx.MockRouter(base_url=BASE)
    route = router.post("/chat/completions")
    route.side_effect = [respx.MockResponse(200, json=completion(GOOD))] + [
        respx.MockResponse(500, headers={"retry-after-ms": "1"}, json={"error": {"message": "boom"}})
    ] * 6
    with pytest.raises(LLMError, match="500") as caught:
        await ask(model(router, max_retries=1), REQUEST, meter := Meter(), reasks=2)
    assert not isinstance(caught.value, CritiqueError)
    assert len(route.calls) == 1 + 2  # the probe, one call and its SDK retry: no re-ask on top
    assert meter.reasks == 0 and meter.parse_failures == 0
    assert all(len(body["messages"]) == 2 for body in bodies(route)[1:])  # no re-ask prompt was ever sent


class CountingTransport(httpx2.AsyncBaseTransport):
    """Real HTTP (loopback only), counting every request the SDK sends: each is one connection attempt."""

    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.attempts = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.attempts += 1
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def loopback_model(base_url, transport, **settings):
    endpoint = ResolvedEndpoint(base_url, "sk-test", "test", EndpointConfig(model="m", **settings))
    return OpenAIChatModel(endpoint, http_client_factory=lambda: httpx2.AsyncClient(transport=transport))


async def test_a_call_cancelled_in_flight_is_counted_as_the_server_saw_it():
    """A short answer's call sent ahead and not used, or one a deadline cut: the server has it, so the meter does."""
    known = Capabilities(model="m", structured="json_schema", logprobs=False, n=False)
    with FakeOpenAIServer(latency=5) as server:
        endpoint = ResolvedEndpoint(server.base_url, "sk-test", "test", EndpointConfig(model="m"))
        chat = OpenAIChatModel(endpoint, known=known)  # no probe: the one request is the call
        sent = asyncio.ensure_future(chat.chat(REQUEST, meter := Meter()))
        while server.stats.requests == 0:
            await asyncio.sleep(0.01)
        sent.cancel()
        with pytest.raises(asyncio.CancelledError):
            await sent
        await chat.aclose()
    assert server.stats.requests == meter.llm_calls == 1


async def test_refused_connections_are_bounded_per_call_and_count_toward_the_breaker():
    """A refused connection is a transient failure, like a 503 after the SDK's retries: each call makes at
    most max_retries + 1 attempts and fails fast; one refusal does not open the breaker (a restarting server
    refuses for a moment), `breaker_threshold` refused calls in a row do, and then nothing more is sent."""
    transport = CountingTransport()
    with FakeOpenAIServer() as server:
        chat = loopback_model(server.base_url, transport, max_retries=2, breaker_threshold=2, breaker_cooldown=60)
        await chat.chat(REQUEST, Meter())  # probed while the server is up; leaving the block closes its port
    started, spent = time.monotonic(), []
    for _ in range(2):
        before = transport.attempts
        with pytest.raises(LLMError, match="cannot reach the endpoint"):
            await chat.chat(REQUEST, meter := Meter())
        spent.append(transport.attempts - before)
        assert meter.llm_calls == spent[-1]
        if len(spent) == 1:
            assert chat.breaker.opened_at is None  # one refused call: counted, not yet opening the breaker
    assert spent == [3, 3]  # max_retries + 1 attempts per call, no more
    before = transport.attempts
    with pytest.raises(LLMError, match="failed 2 times in a row"):
        await chat.chat(REQUEST, Meter())
    assert transport.attempts == before  # the open breaker sends nothing
    assert time.monotonic() - started < 10  # backoff 0.5 s then 1 s per call: no long hang
    await chat.aclose()


async def test_an_endpoint_that_never_answered_is_not_probed_again_once_the_breaker_opens():
    transport = CountingTransport()
    chat = loopback_model(
        f"http://127.0.0.1:{closed_port()}/v1", transport, max_retries=2, breaker_threshold=2, breaker_cooldown=60
    )
    for _ in range(2):
        before = transport.attempts
        with pytest.raises(LLMError, match="cannot reach the endpoint"):
            await chat.chat(REQUEST, Meter())
        assert 1 <= transport.attempts - before <= 1 + 2  # the capability probe, within the attempt bound
    sent = transport.attempts
    with pytest.raises(LLMError, match="in a row"):
        await chat.chat(REQUEST, Meter())
    assert transport.attempts == sent  # the probe goes through the breaker too
    await chat.aclose()


async def test_a_cancelled_trial_call_does_not_keep_the_breaker_shut():
    seen = {"n": 0}

    async def handler(request):
        seen["n"] += 1
        if seen["n"] == 2:
            return respx.MockResponse(500, json={"error": {"message": "down"}})
        if seen["n"] == 3:
            await asyncio.sleep(30)  # the trial call hangs until the caller's deadline cancels it
        return respx.MockResponse(200, json=completion(GOOD))

    router = respx.MockRouter(base_url=BASE)
    router.post("/chat/completions").mock(side_effect=handler)
    chat = model(router, settings=EndpointConfig(model="m", breaker_threshold=1, breaker_cooldown=0))
    with pytest.raises(LLMError, match="500"):
        await chat.chat(REQUEST, Meter())  # the probe passes, the call fails: the breaker opens
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            await chat.chat(REQUEST, Meter())  # the trial, cancelled without a verdict
    await chat.chat(REQUEST, Meter())  # the next trial is let through and closes the breaker
    assert chat.breaker.opened_at is None and seen["n"] == 4


def counting(status_for):
    """An async route handler that holds each call 20 ms, records the peak of calls in flight per phase, and
    answers `status_for(n)` (None: a good reply) for the n-th request."""
    state = {"n": 0, "in_flight": 0, "peak": 0}

    async def handler(request):
        state["n"] += 1
        status = status_for(state["n"])
        if status is not None:
            return respx.MockResponse(status, json={"error": {"message": "slow down"}}, headers={"retry-after-ms": "1"})
        state["in_flight"] += 1
        state["peak"] = max(state["peak"], state["in_flight"])
        await asyncio.sleep(0.02)
        state["in_flight"] -= 1
        return respx.MockResponse(200, json=completion(GOOD))

    return handler, state


def own_client_model(router, **settings):
    """A model that builds its own HTTP client (as in real use) over the respx router."""
    endpoint = ResolvedEndpoint(BASE, "sk-test", "test", EndpointConfig(model="m", max_retries=3, **settings))
    return OpenAIChatModel(endpoint, http_client_factory=lambda: httpx2.AsyncClient(transport=respx_transport(router)))


async def test_a_429_episode_cuts_the_calls_in_flight_once_and_clean_rounds_grow_them_back():
    router = respx.MockRouter(base_url=BASE)
    handler, state = counting(lambda n: 429 if 2 <= n <= 21 else None)  # the whole first round is told to wait
    router.post("/chat/completions").mock(side_effect=handler)
    chat = own_client_model(router, max_concurrency=20)
    assert await fan_out(chat, 20) == ["ok"] * 20  # the SDK waited as told and retried
    cuts = [(allowed, cause) for _, allowed, cause in chat.limit.changes if cause == "429"]
    assert cuts == [(16, "429")]  # twenty 429s in one episode: one cut by a fifth, not twenty
    state["peak"] = 0
    assert await fan_out(chat, 30) == ["ok"] * 30
    assert state["peak"] < 20  # still below the cap of 20 that the first round used
    assert await fan_out(chat, 200) == ["ok"] * 200
    assert chat.limit.allowed == 20  # clean rounds grew it back to the cap, one slot at a time
    assert [allowed for _, allowed, cause in chat.limit.changes if cause == "clean"] == [17, 18, 19, 20]
    await chat.aclose()


async def test_5xx_errors_do_not_cut_the_calls_in_flight():
    router = respx.MockRouter(base_url=BASE)
    handler, state = counting(lambda n: 503 if 2 <= n <= 21 else None)
    router.post("/chat/completions").mock(side_effect=handler)
    chat = own_client_model(router, max_concurrency=20)
    assert await fan_out(chat, 20) == ["ok"] * 20
    assert chat.limit.allowed == 20 and not chat.limit.changes  # an outage is the breaker's business
    assert state["peak"] == 20
    await chat.aclose()


async def test_429s_have_one_owner_the_sdk_never_retries_them_on_our_own_clients():
    """max_retries=3 lets the SDK retry 408/409/5xx; a 429 is marked not to be retried, so every attempt after a
    429 is ours, sent fresh (the SDK's attempt counter stays 0) after the server's Retry-After."""
    router = respx.MockRouter(base_url=BASE)
    seen = []

    def handler(request):
        seen.append(request.headers.get("x-stainless-retry-count"))
        if 2 <= len(seen) <= 4:
            return respx.MockResponse(429, headers={"retry-after-ms": "5"}, json={"error": {"message": "slow"}})
        return respx.MockResponse(200, json=completion(GOOD))

    router.post("/chat/completions").mock(side_effect=handler)
    chat = own_client_model(router)
    parsed = await ask(chat, REQUEST, meter := Meter())
    assert parsed.value.query == "refunds"
    assert seen == ["0"] * 5  # the probe, three 429s, the answer: no SDK retry among them
    assert meter.llm_calls == 5
    await chat.aclose()
