"""The real endpoint: `AsyncOpenAI` chat completions, over any OpenAI-compatible server.

- Transport retries (connection errors, timeouts, 408/409/429/5xx) belong to the SDK (`max_retries`).
- Capabilities (structured-output flavour, logprobs, n) are probed once per instance, never guessed from
  model names, and reported in results. Probes run with SDK retries off.
- One semaphore per endpoint bounds requests in flight. The client is created inside the running event loop
  (one per loop), so the sync door can call `asyncio.run` repeatedly.
- Every HTTP request is counted in the answer's Meter, retries and probes included.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx2
import openai
from openai import AsyncOpenAI

from ..config import ResolvedEndpoint, redact_url
from ..errors import FatalLLMError, LLMError
from ..schema import Meter
from .base import Capabilities, ChatRequest, ChatResponse, TokenLogprob

RETRYABLE = (408, 409, 429)
PROBE_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["answer"],
    "additionalProperties": False,
}


class OpenAIChatModel:
    """A ChatModel backed by one OpenAI-compatible endpoint."""

    def __init__(
        self,
        endpoint: ResolvedEndpoint,
        *,
        client: AsyncOpenAI | None = None,
        http_client_factory: Callable[[], httpx2.AsyncClient] | None = None,
    ) -> None:
        """`client`: use this AsyncOpenAI as it is (the caller owns it). `http_client_factory`: build our own
        client per event loop over this transport (an ASGI app, a test's mock transport)."""
        self._endpoint = endpoint
        self._own_client = client is None
        self._http_client_factory = http_client_factory
        self._clients: dict[int, tuple[AsyncOpenAI, asyncio.Semaphore, asyncio.Lock]] = {}
        if client is not None:
            self._given = client
        self._caps: Capabilities | None = None

    @property
    def name(self) -> str:
        model = self._caps.model if self._caps else self._endpoint.settings.model
        return f"{model or '?'}@{redact_url(self._endpoint.base_url or 'openai')}"

    def _loop_state(self) -> tuple[AsyncOpenAI, asyncio.Semaphore, asyncio.Lock]:
        loop_id = id(asyncio.get_running_loop())
        if loop_id not in self._clients:
            settings = self._endpoint.settings
            client = (
                self._given
                if not self._own_client
                else AsyncOpenAI(
                    api_key=self._endpoint.api_key,
                    base_url=self._endpoint.base_url,
                    timeout=settings.timeout,
                    max_retries=settings.max_retries,
                    http_client=self._http_client_factory() if self._http_client_factory else None,
                )
            )
            self._clients = {loop_id: (client, asyncio.Semaphore(settings.max_concurrency), asyncio.Lock())}
        return self._clients[loop_id]

    async def aclose(self) -> None:
        """Close the clients this instance created (a client passed in stays the caller's)."""
        if self._own_client:
            for client, _, _ in self._clients.values():
                await client.close()
        self._clients = {}

    # -- capabilities ---------------------------------------------------------------------------------
    async def capabilities(self, meter: Meter) -> Capabilities:
        if self._caps is not None:
            return self._caps
        _, _, lock = self._loop_state()
        async with lock:
            if self._caps is None:
                self._caps = await self._probe(meter)
        return self._caps

    async def _probe(self, meter: Meter) -> Capabilities:
        model = self._endpoint.settings.model or await self._first_model(meter)
        messages = [{"role": "user", "content": 'Is the sky blue? Reply as JSON: {"answer": "yes"} or "no".'}]
        schema_format = {"type": "json_schema", "json_schema": {"name": "probe", "schema": PROBE_SCHEMA, "strict": True}}
        combined = await self._try(meter, model=model, messages=messages, max_tokens=16, response_format=schema_format,
                                   logprobs=True, top_logprobs=5, n=2)
        if combined is not None:
            return Capabilities(model, "json_schema", _has_logprobs(combined), len(combined.choices or []) == 2)
        structured = "none"
        for flavour, response_format in (
            ("json_schema", schema_format),
            ("json_object_schema", {"type": "json_object", "schema": PROBE_SCHEMA}),
            ("json_object", {"type": "json_object"}),
        ):
            if await self._try(meter, model=model, messages=messages, max_tokens=16, response_format=response_format):
                structured = flavour
                break
        logprob_reply = await self._try(meter, model=model, messages=messages, max_tokens=1, logprobs=True, top_logprobs=5)
        n_reply = await self._try(meter, model=model, messages=messages, max_tokens=1, n=2)
        return Capabilities(
            model,
            structured,
            logprob_reply is not None and _has_logprobs(logprob_reply),
            n_reply is not None and len(n_reply.choices or []) == 2,
        )

    async def _first_model(self, meter: Meter) -> str:
        client, semaphore, _ = self._loop_state()
        async with semaphore:
            meter.llm_calls += 1
            try:
                page = await client.with_options(max_retries=0).models.list()
            except openai.APIError as error:
                raise _translate(error, self._endpoint.api_key) from None
        ids = [m.id for m in page.data] if page and page.data else []
        if not ids:
            raise FatalLLMError("the endpoint lists no models: pass --model")
        return ids[0]

    async def _try(self, meter: Meter, **params: Any) -> Any | None:
        """One probe request without retries: the reply, or None when the server rejects the feature."""
        client, semaphore, _ = self._loop_state()
        async with semaphore:
            meter.llm_calls += 1
            try:
                reply = await client.with_options(max_retries=0).chat.completions.create(**params)
            except (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError) as error:
                raise _translate(error, self._endpoint.api_key) from None
            except (openai.APIStatusError, openai.APIResponseValidationError):
                return None
            except openai.APIConnectionError as error:
                raise _translate(error, self._endpoint.api_key) from None
        if not getattr(reply, "choices", None):
            return None
        _add_usage(meter, reply.usage, "")
        return reply

    # -- calls ----------------------------------------------------------------------------------------
    async def chat(self, request: ChatRequest, meter: Meter) -> ChatResponse:
        caps = await self.capabilities(meter)
        params = self._params(request, caps)
        client, semaphore, _ = self._loop_state()
        async with semaphore:
            try:
                raw = await client.chat.completions.with_raw_response.create(**params)
            except openai.APIError as error:
                meter.llm_calls += _attempts_spent(error, self._endpoint.settings.max_retries)
                meter.failed_calls += 1
                raise _translate(error, self._endpoint.api_key) from None
            meter.llm_calls += 1 + raw.retries_taken
        try:
            completion = raw.parse()
        except (json.JSONDecodeError, ValueError) as error:
            meter.failed_calls += 1
            raise LLMError(f"the endpoint sent a body that is not a chat completion ({type(error).__name__})") from None
        return _response(completion, meter)

    def _params(self, request: ChatRequest, caps: Capabilities) -> dict[str, Any]:
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        schema = request.schema.model_json_schema()
        params: dict[str, Any] = {
            "model": caps.model,
            "messages": messages,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if caps.structured == "json_schema":
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.schema.__name__, "schema": schema, "strict": True},
            }
        elif caps.structured == "json_object_schema":
            params["response_format"] = {"type": "json_object", "schema": schema}
        elif caps.structured == "json_object":
            params["response_format"] = {"type": "json_object"}
        if caps.structured in ("json_object", "none"):
            hint = "Reply with one JSON object only, matching this JSON schema:\n" + json.dumps(schema)
            messages[0] = {**messages[0], "content": messages[0]["content"] + "\n\n" + hint}
        if request.logprobs and caps.logprobs:
            params["logprobs"] = True
            params["top_logprobs"] = self._endpoint.settings.top_logprobs
        return params


def _has_logprobs(completion: Any) -> bool:
    choice = (completion.choices or [None])[0]
    return bool(choice and choice.logprobs and choice.logprobs.content)


def _response(completion: Any, meter: Meter) -> ChatResponse:
    """Check the response contract and turn a completion into a ChatResponse."""
    if isinstance(completion, str) or not getattr(completion, "choices", None):
        meter.failed_calls += 1
        raise LLMError("the endpoint answered without choices (an error page or an empty completion)")
    choice = completion.choices[0]
    message = getattr(choice, "message", None)
    if message is None:
        meter.failed_calls += 1
        raise LLMError("the endpoint answered a choice without a message")
    tokens = None
    if choice.logprobs is not None and choice.logprobs.content:
        tokens = tuple(
            TokenLogprob(t.token, t.logprob, tuple((alt.token, alt.logprob) for alt in (t.top_logprobs or ())))
            for t in choice.logprobs.content
        )
    text = message.content or ""
    prompt_tokens, completion_tokens, cached = _add_usage(meter, completion.usage, text)
    return ChatResponse(text, tokens, choice.finish_reason or "stop", prompt_tokens, completion_tokens, cached)


def _add_usage(meter: Meter, usage: Any, text: str) -> tuple[int, int, int]:
    """Count a reply's tokens; without usage, estimate the completion from its length and say so."""
    if usage is None:
        meter.estimated_usage = True
    prompt_tokens = (usage.prompt_tokens or 0) if usage else 0
    completion_tokens = (usage.completion_tokens or 0) if usage else max(1, len(text) // 4)
    details = getattr(usage, "prompt_tokens_details", None) if usage else None
    cached = (getattr(details, "cached_tokens", 0) or 0) if details else 0
    meter.prompt_tokens += prompt_tokens
    meter.completion_tokens += completion_tokens
    meter.cached_tokens += cached
    return prompt_tokens, completion_tokens, cached


def _attempts_spent(error: openai.APIError, max_retries: int) -> int:
    """HTTP requests behind a failed call: the SDK retries connection errors, 408/409/429 and 5xx."""
    status = getattr(error, "status_code", None)
    retried = isinstance(error, openai.APIConnectionError) or status in RETRYABLE or (status or 0) >= 500
    return 1 + max_retries if retried else 1


def _translate(error: openai.APIError, api_key: str) -> LLMError:
    """An SDK error as one of ours, with a one-line message that never holds the key."""
    status = getattr(error, "status_code", None)
    request_id = getattr(error, "request_id", None)
    code = getattr(error, "code", None)
    detail = str(getattr(error, "message", "") or error).replace(api_key, "***").splitlines()[0][:300]
    if isinstance(error, openai.AuthenticationError):
        return FatalLLMError("the endpoint rejected the API key (401): check the key for this endpoint",
                             status=status, request_id=request_id)
    if isinstance(error, openai.PermissionDeniedError):
        return FatalLLMError(f"the endpoint refused access (403): {detail}", status=status, request_id=request_id)
    if isinstance(error, openai.NotFoundError):
        return FatalLLMError(f"not found (404), unknown model or wrong base URL: {detail}",
                             status=status, request_id=request_id)
    if isinstance(error, openai.RateLimitError) and code == "insufficient_quota":
        return FatalLLMError("the account's quota is exhausted (429 insufficient_quota)", status=status,
                             request_id=request_id)
    if isinstance(error, openai.APITimeoutError):
        return LLMError("the endpoint did not answer in time (timeout after retries)")
    if isinstance(error, openai.APIConnectionError):
        return LLMError("cannot reach the endpoint (connection failed after retries): is the server running?")
    if isinstance(error, openai.BadRequestError) and code == "context_length_exceeded":
        return LLMError(f"the prompt is longer than the model's context: {detail}", status=status,
                        request_id=request_id)
    return LLMError(f"the endpoint answered {status}: {detail}", status=status, request_id=request_id)
