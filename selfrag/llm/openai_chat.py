"""The real endpoint: `AsyncOpenAI` chat completions, over any OpenAI-compatible server.

- Transport retries (connection errors, timeouts, 408/409/5xx) belong to the SDK (`max_retries`).
- Rate limits (429) belong to this module, on the clients it builds: a response hook marks every 429
  `x-should-retry: false`, which the SDK obeys, and `_patiently` waits what the server asks (ratelimit.py:
  Retry-After or retry-after-ms, else exponential backoff with jitter) and sends again, until the answer's
  deadline or call budget (Meter.deadline, Meter.max_calls); one 429 makes every caller wait, not only the one
  that got it. A wait that would pass the deadline ends the answer at once, naming the wait. A client passed
  in by the caller is not observed, so there the SDK keeps its own 429 retries (never two owners).
- Capabilities (structured-output flavour, logprobs and their cost, n, calls served at once) are probed once
  per instance (probe.py), never guessed from model names, and reported in results. With a `cache`
  (capcache.py; `open_chat` passes one) they are remembered on disk and reused by later processes while the
  server reports the same identity: a new process then sends `GET /props` and `GET /v1/models` and no probe
  call. The first process probes `quick` (at most two rounds). An error that contradicts a remembered entry
  (a 400 on a call shaped by it, a call timing out in a queue the learned slot count should have kept it out
  of) forgets the entry; after a 400 the endpoint is probed again and the call sent once more.
- An adaptive gate per endpoint bounds requests in flight: the configured cap, lowered to what the server
  serves at once, cut by a fifth per 429 episode and grown back on clean responses (limiter.py). The client is
  created inside the running event loop (one per loop), so the sync door can call `asyncio.run` repeatedly.
- Every HTTP request is counted in the answer's Meter, retries and probes included.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import logging
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx2
import openai
from openai import AsyncOpenAI, DefaultAsyncHttpxClient
from pydantic import BaseModel

from ..config import ResolvedEndpoint, is_openai, is_private_host, redact_url
from ..errors import BudgetError, ContextLengthError, FatalLLMError, LLMError, RefusalError
from ..schema import Meter
from ..tokens import TokenCounter, make_counter
from .base import Capabilities, ChatRequest, ChatResponse, TokenLogprob
from .breaker import Breaker
from .capcache import CapCache, Remembered, entry_key, server_identity
from .costs import Timed
from .limiter import AdaptiveLimit, Gate, retry_after
from .probe import Trial, probe
from .ratelimit import UNBOUNDED_ATTEMPTS, Pause

T = TypeVar("T")
log = logging.getLogger("selfrag.capabilities")  # remembered capabilities: the command line shows these lines

RETRYABLE = (408, 409, 429)
MAX_RETRY_AFTER = 120.0  # the SDK honours Retry-After up to two minutes and does not retry beyond
PROBE_RETRIES = 1
TRUNCATION_RATIO = 0.5  # prompt_tokens below this share of the estimate means the server cut the prompt
TRUNCATION_MIN_TOKENS = 128  # below this, template and tokenizer differences dominate; skip the check
REASONING_FIELDS = ("reasoning_content", "reasoning")  # where reasoning models put their thinking
SENT, SERVER_SECONDS = "selfrag_sent", "selfrag_server_seconds"  # request and response extensions we set


class OpenAIChatModel:
    """A ChatModel backed by one OpenAI-compatible endpoint."""

    PROTOCOL_NAME = "chat"  # part of the capability cache's key

    def __init__(
        self,
        endpoint: ResolvedEndpoint,
        *,
        client: AsyncOpenAI | None = None,
        http_client_factory: Callable[[], httpx2.AsyncClient] | None = None,
        cache: CapCache | None = None,
        known: Capabilities | None = None,
    ) -> None:
        """`client`: use this AsyncOpenAI as it is (the caller owns it; its responses are not observed, so the
        limit on requests in flight stays at max_concurrency). `http_client_factory`: build our own
        client per event loop over this transport (an ASGI app, a test's mock transport). `cache`: remember
        the probe's findings there and reuse them (capcache.py); None probes in full, once per instance.
        `known`: the capabilities of a server the caller runs itself (the embedded model), used with no probe;
        `capabilities(refresh=True)` probes all the same."""
        self._endpoint = endpoint
        self._own_client = client is None
        self._http_client_factory = http_client_factory
        self._clients: dict[int, tuple[AsyncOpenAI, Gate, asyncio.Lock]] = {}
        if client is not None:
            self._given = client
        self._caps: Capabilities | None = known
        self._cache = cache
        settings = endpoint.settings
        self._cache_key = entry_key(endpoint.base_url, settings.model, self.PROTOCOL_NAME, settings.logprobs)
        self._remembered = False  # the capabilities in use came from the cache, not from this process's probe
        self._checking: asyncio.Task[None] | None = None  # the identity check running beside the first calls
        self.origin = "known to the process that serves it (not probed)" if known else ""  # for `selfrag doctor`
        self.identity = ""  # the server's identity when it reported one (capcache.server_identity; a cache only)
        self._ssl: ssl.SSLContext | None = None
        self.breaker = Breaker(threshold=settings.breaker_threshold, cooldown=settings.breaker_cooldown)
        self.limit = AdaptiveLimit(cap=settings.max_concurrency)  # requests in flight, cut on 429s
        if known is not None and known.parallel is not None:
            self.limit.fit(time.monotonic(), known.parallel, "parallel")
        self._pause = Pause()  # when the server will take requests again, after a 429 (ratelimit.py)

    @property
    def name(self) -> str:
        model = self._caps.model if self._caps else self._endpoint.settings.model
        return f"{model or '?'}@{redact_url(self._endpoint.base_url or 'openai')}"

    def _loop_state(self) -> tuple[AsyncOpenAI, Gate, asyncio.Lock]:
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
                    http_client=self._http_client(),
                )
            )
            self._clients = {loop_id: (client, Gate(self.limit), asyncio.Lock())}
        return self._clients[loop_id]

    def _http_client(self) -> httpx2.AsyncClient:
        """A fresh HTTP client for this loop that reports every response (SDK retries included) to the adaptive
        limit; the TLS context (costly to build) is made once and shared."""
        if self._http_client_factory is not None:
            client = self._http_client_factory()
        else:
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            client = DefaultAsyncHttpxClient(verify=self._ssl)
        hooks = client.event_hooks
        client.event_hooks = {
            **hooks,
            "request": [*hooks.get("request", []), _stamp],
            "response": [*hooks.get("response", []), self._observe],
        }
        return client

    async def _observe(self, response: httpx2.Response) -> None:
        sent = response.request.extensions.get(SENT)
        if sent is not None:  # the server's time, without the SDK's own work (the probe compares these)
            response.extensions[SERVER_SECONDS] = time.perf_counter() - sent
        if response.status_code == 429:
            self.limit.rate_limited(time.monotonic(), retry_after(response.headers))
            response.headers["x-should-retry"] = "false"  # 429s are ours (`_patiently`), not the SDK's
        elif response.status_code < 400:
            self.limit.succeeded(time.monotonic())

    async def aclose(self) -> None:
        """Close the clients this instance created (a client passed in stays the caller's)."""
        if self._checking is not None and not self._checking.done():
            self._checking.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._checking
        self._checking = None
        if self._own_client:
            for client, _, _ in self._clients.values():
                await client.close()
        self._clients = {}

    # -- capabilities ---------------------------------------------------------------------------------
    async def capabilities(self, meter: Meter, *, refresh: bool = False, thorough: bool = False) -> Capabilities:
        """The endpoint's capabilities: this instance's, else remembered (with a cache), else probed.
        `refresh`: probe afresh in full (all costs, latency waves) and remember that. `thorough`: when nothing
        is remembered, probe in full rather than quick (`selfrag doctor`)."""
        if self._caps is not None and not refresh:
            return self._caps
        _, _, lock = self._loop_state()
        async with lock:
            if self._caps is None or refresh:
                trial = self.breaker.check()  # an endpoint that keeps failing is not probed again and again
                try:
                    caps = await (self._probe(meter) if self._cache is None else self._recall(meter, refresh, thorough))
                finally:
                    if trial:
                        self.breaker.end_trial()
                self.breaker.success()
                if caps.parallel is not None:
                    self.limit.fit(time.monotonic(), caps.parallel, "parallel")
                self._caps = caps
        return self._caps

    async def _recall(self, meter: Meter, refresh: bool, thorough: bool) -> Capabilities:
        """Remembered capabilities when the server still reports the identity they were learned from and they
        are young enough; else a probe (quick in a normal run, full on `refresh`), remembered for later.

        With the model configured (so the remembered requests name the right model) a young entry is used at
        once and the identity checked while the first calls run: a changed identity forgets the entry, and the
        next call probes again. Without it (the remembered model may be gone), and for doctor, it is checked first.
        """
        assert self._cache is not None
        entry = None
        if not refresh:
            entry, note = self._cache.read(self._cache_key)
            if note:
                log.warning("selfrag: %s", note)
            if entry is not None and entry.capabilities.protocol != self.PROTOCOL_NAME:
                entry = None
        young = entry is not None and entry.fresh(entry.identity, time.time(), self._cache.max_age) is None
        if entry is not None and young and not thorough and self._endpoint.settings.model:
            self._use_remembered(entry)
            self._checking = asyncio.create_task(self._check_identity(meter, entry))
            return entry.capabilities
        props, models = await asyncio.gather(self._fetch(meter, "/props"), self._models(meter))
        identity = self.identity = server_identity(props, models)
        why = "asked to probe afresh (--refresh)" if refresh else "nothing remembered"
        if entry is not None:
            why = entry.fresh(identity, time.time(), self._cache.max_age) or ""
            if not why:
                self._use_remembered(entry)
                return entry.capabilities
        prefetched = {"/props": props, "/models": models}
        caps = await self._probe(meter, quick=not (refresh or thorough), prefetched=prefetched)
        learned_at = time.time()
        note = self._cache.write(self._cache_key, Remembered(caps, identity, learned_at), self._endpoint.base_url)
        if note:
            log.warning("selfrag: %s; the next process probes again", note)
        self._remembered = False
        where = f"remembered in {self._cache.path(self._cache_key)}" if not note else "not remembered"
        self.origin = f"probed {_when(learned_at)} ({why or 'the entry was stale'}); {where}"
        return caps

    def _use_remembered(self, entry: Remembered) -> None:
        assert self._cache is not None
        self._remembered, self.identity = True, entry.identity
        self.origin = f"remembered, probed {_when(entry.learned_at)} ({self._cache.path(self._cache_key)})"

    async def _check_identity(self, meter: Meter, entry: Remembered) -> None:
        """Beside the first calls: does the server still report the identity `entry` was learned from? If not,
        forget it (on disk and here: the next call probes again). A failed GET says nothing (the calls see it)."""
        try:
            props, models = await asyncio.gather(self._fetch(meter, "/props"), self._models(meter))
        except Exception:  # noqa: BLE001 - the answer's own calls meet the same failure and report it
            return
        if server_identity(props, models) == entry.identity or self._cache is None:
            return
        self._cache.forget(self._cache_key)
        log.warning(
            "selfrag: the server reports another identity (model, build or slots) than when its capabilities "
            "were remembered: forgotten, probing again"
        )
        if self._caps is entry.capabilities:
            self._caps, self._remembered = None, False

    def forget(self, caps: Capabilities, error: LLMError, *, probe_again: bool) -> bool:
        """An error contradicted the remembered `caps`: drop the entry on disk (and, with `probe_again`, in this
        instance, so the next call probes). True when `caps` were remembered and are now forgotten."""
        if self._cache is None or not self._remembered or caps is not self._caps:
            return False
        self._cache.forget(self._cache_key)
        self._remembered = False
        then = "probing again" if probe_again else "the next process probes again"
        log.warning("selfrag: the remembered capabilities are contradicted (%s): forgotten, %s", str(error)[:200], then)
        if probe_again:
            self._caps = None
        return True

    async def _post_shaped(
        self, caps: Capabilities, path: str, shape: Callable[[Capabilities], dict[str, Any]], meter: Meter
    ) -> Any:
        """POST a request shaped by `caps`; a 400 that contradicts remembered capabilities forgets them, probes
        again and sends the request once more, shaped by what the probe found."""
        try:
            return await self._post(path, shape(caps), meter)
        except LLMError as error:
            if error.status != 400 or isinstance(error, ContextLengthError):
                raise
            if not self.forget(caps, error, probe_again=True):
                raise
        return await self._post(path, shape(await self.capabilities(meter)), meter)

    async def _probe(
        self, meter: Meter, *, quick: bool = False, prefetched: dict[str, object] | None = None
    ) -> Capabilities:
        known = prefetched or {}
        model = self._endpoint.settings.model or first_id(known.get("/models")) or await self._first_model(meter)
        attempt = functools.partial(self._try, meter)

        async def fetch(path: str) -> object:
            return known[path] if path in known else await self._fetch(meter, path)

        private = is_private_host(self._endpoint.base_url)
        return await probe(attempt, fetch, model, self._endpoint.settings, private=private, quick=quick)

    async def _models(self, meter: Meter) -> object:
        """`GET /models` beside the chat route: its JSON, or None. Not sent to OpenAI itself unless the model
        is not configured (its list is long and says nothing about a change of server)."""
        base = self._endpoint.base_url
        if (base is None or is_openai(base)) and self._endpoint.settings.model:
            return None

        async def once() -> object:
            client, gate, _ = self._loop_state()
            async with gate:
                try:
                    raw = await client.with_options(max_retries=0).get("/models", cast_to=httpx2.Response)
                except openai.APIError as error:
                    if self._ours(error):
                        raise
                    meter.llm_calls += 1
                    if isinstance(error, (openai.AuthenticationError, openai.PermissionDeniedError)):
                        raise self._failed(error) from None
                    return None
            meter.llm_calls += 1
            try:
                return raw.json()
            except ValueError:
                return None

        return await self._patiently(meter, once)

    async def _first_model(self, meter: Meter) -> str:
        async def once() -> Any:
            client, gate, _ = self._loop_state()
            async with gate:
                try:
                    page = await client.with_options(max_retries=0).models.list()
                except openai.APIError as error:
                    if self._ours(error):
                        raise
                    meter.llm_calls += 1
                    raise self._failed(error) from None
            meter.llm_calls += 1
            return page

        page = await self._patiently(meter, once)
        ids = [m.id for m in page.data] if page and page.data else []
        if not ids:
            raise FatalLLMError("the endpoint lists no models: pass --model")
        return ids[0]

    async def _try(self, meter: Meter, **params: Any) -> Trial | None:
        """One probe request: the reply and its time, or None when the server rejects the feature. One SDK
        retry, so a passing 5xx is not mistaken for a missing feature (llama.cpp answers an unknown format
        with 500); a 429 is waited out like any call's."""

        async def once() -> Trial | None:
            client, gate, _ = self._loop_state()
            async with gate:
                try:
                    raw = await client.with_options(
                        max_retries=PROBE_RETRIES
                    ).chat.completions.with_raw_response.create(**params)
                    meter.llm_calls += 1 + raw.retries_taken
                    reply = raw.parse()
                except (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError) as error:
                    meter.llm_calls += 1
                    raise self._failed(error) from None
                except openai.RateLimitError as error:  # a rate limit says nothing about features
                    if self._ours(error):
                        raise
                    meter.llm_calls += attempts_spent(error, PROBE_RETRIES)
                    raise self._failed(error) from None
                except (openai.APIStatusError, openai.APIResponseValidationError) as error:
                    meter.llm_calls += attempts_spent(error, PROBE_RETRIES) if isinstance(error, openai.APIError) else 1
                    return None
                except openai.APIConnectionError as error:
                    meter.llm_calls += 1 + PROBE_RETRIES
                    raise self._failed(error) from None
                except (ValueError, TypeError):  # a 200 that is not a completion (an HTML page, a cut body)
                    meter.llm_calls += 1
                    return None
            if not getattr(reply, "choices", None):
                return None
            _, completion_tokens, _ = add_usage(meter, reply.usage, "")
            seconds = raw.http_response.extensions.get(SERVER_SECONDS)  # None: a client passed in, not observed
            return Trial(reply, Timed(seconds, completion_tokens) if seconds is not None else None)

        return await self._patiently(meter, once)

    async def _fetch(self, meter: Meter, path: str) -> object:
        """GET `path` at the server's root, beside /v1 (llama.cpp's /props and /slots): its JSON, or None when
        the server has no such route or answers something else. Not sent to OpenAI itself."""
        base = self._endpoint.base_url
        if base is None or is_openai(base):
            return None
        root = base.rstrip("/").removesuffix("/v1")

        async def once() -> object:
            client, gate, _ = self._loop_state()
            async with gate:
                try:
                    raw = await client.with_options(max_retries=0).get(root + path, cast_to=httpx2.Response)
                except openai.APIError as error:
                    if self._ours(error):
                        raise
                    meter.llm_calls += 1
                    return None
            meter.llm_calls += 1
            try:
                return raw.json()
            except ValueError:
                return None

        return await self._patiently(meter, once)

    # -- rate limits ----------------------------------------------------------------------------------
    def _ours(self, error: openai.APIError) -> bool:
        """A 429 this module waits out: on its own clients, unless the quota is gone (no wait brings it back)."""
        return (
            self._own_client
            and isinstance(error, openai.RateLimitError)
            and getattr(error, "code", None) != "insufficient_quota"
        )

    async def _patiently(self, meter: Meter, once: Callable[[], Awaitable[T]]) -> T:
        """`once()` (one gated request) until it is not rate limited; waits happen outside the gate."""
        for attempt in itertools.count():
            await self._await_turn(meter)
            try:
                return await once()
            except openai.RateLimitError as error:
                meter.llm_calls += 1 + _retries_before(error)
                self._pause.rate_limited(time.monotonic(), retry_after(error.response.headers), attempt)
                if meter.max_calls is not None and meter.llm_calls >= meter.max_calls:
                    raise BudgetError(
                        f"the endpoint kept answering 429 (rate limited) until the answer's budget of "
                        f"{meter.max_calls} LLM calls ran out"
                    ) from None
                if meter.deadline is None and attempt + 1 >= UNBOUNDED_ATTEMPTS:
                    raise LLMError(
                        f"the endpoint answered 429 (rate limited) {UNBOUNDED_ATTEMPTS} times in a row", status=429
                    ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    async def _await_turn(self, meter: Meter) -> None:
        """Wait until the server said it would take requests again, if the answer can afford it."""
        left = None if meter.deadline is None else meter.deadline - asyncio.get_running_loop().time()
        wait = self._pause.wait(time.monotonic(), left)
        if wait > 0:
            await asyncio.sleep(wait)

    # -- calls ----------------------------------------------------------------------------------------
    async def chat(self, request: ChatRequest, meter: Meter) -> ChatResponse:
        """One chat completion through the SDK's generic `post` (its retries, auth and errors), read by our own
        contract check rather than the SDK's models: OpenAI-compatible servers vary in what they send."""
        caps = await self.capabilities(meter)
        data = await self._post_shaped(caps, "/chat/completions", functools.partial(self._params, request), meter)
        try:
            response = read_completion(data, meter)
        except RefusalError:
            self.breaker.success()  # the endpoint works; the model declined
            raise
        except LLMError:
            self.breaker.failure()
            raise
        self.breaker.success()
        self._check_not_truncated(request, response)
        return response

    async def _post(self, path: str, params: dict[str, Any], meter: Meter, *, guarded: bool = True) -> Any:
        """One POST through the SDK (its retries, auth and errors), 429s waited out (`_patiently`), counted in
        the meter; the JSON body. `guarded`: ask the breaker first (a capability probe is already inside its
        own breaker check)."""
        raw = await self._patiently(meter, functools.partial(self._send, path, params, meter, guarded))
        meter.llm_calls += 1 + _retry_count(raw.request)
        try:
            return raw.json()
        except ValueError:
            meter.failed_calls += 1
            self.breaker.failure()  # a proxy's error page with status 200 is an endpoint failure too
            raise LLMError("the endpoint answered 200 with a body that is not JSON (an error page?)") from None

    async def _send(self, path: str, params: dict[str, Any], meter: Meter, guarded: bool) -> httpx2.Response:
        """One request through the gate and the breaker (the SDK retries transport failures within)."""
        client, gate, _ = self._loop_state()
        async with gate:
            trial = self.breaker.check() if guarded else False
            try:
                return await client.post(path, body=params, cast_to=httpx2.Response)
            except asyncio.CancelledError:  # given up on in flight (a short answer sent ahead, a deadline): the
                meter.llm_calls += 1  # server has it, and a hosted one bills it
                raise
            except openai.APIError as error:
                if self._ours(error):
                    raise
                meter.llm_calls += attempts_spent(error, self._endpoint.settings.max_retries)
                meter.failed_calls += 1
                failed = self._failed(error)
                if isinstance(error, openai.APITimeoutError) and self._caps and self._caps.parallel is not None:
                    self.forget(self._caps, failed, probe_again=False)  # queued past the learned slots
                raise failed from None
            finally:
                if trial:
                    self.breaker.end_trial()

    def _failed(self, error: openai.APIError) -> LLMError:
        """Our error for an SDK error; the breaker learns from it (a fatal one opens it for good)."""
        translated = translate_error(error, self._endpoint.api_key)
        if isinstance(translated, FatalLLMError):
            self.breaker.trip(str(translated))
        elif not isinstance(translated, ContextLengthError):
            self.breaker.failure()
        return translated

    def _check_not_truncated(self, request: ChatRequest, response: ChatResponse) -> None:
        """Some servers (Ollama's OpenAI route) cut an over-long prompt and answer 200. A prompt reported at
        under half its client-side estimate (cl100k tokens) was cut: fail the call rather than trust it."""
        if not response.prompt_tokens:
            return
        counter = _estimator()
        estimate = sum(counter.count(m.content) for m in request.messages)
        if estimate >= TRUNCATION_MIN_TOKENS and response.prompt_tokens < TRUNCATION_RATIO * estimate:
            raise ContextLengthError(
                f"the server read {response.prompt_tokens} prompt tokens of about {estimate}: it silently "
                "truncated the prompt; raise its context size (e.g. Ollama's num_ctx)"
            )

    def _params(self, request: ChatRequest, caps: Capabilities) -> dict[str, Any]:
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        schema = json_schema(request.schema)
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


def first_id(models: object) -> str | None:
    """The first model id of a `GET /models` body, or None."""
    data = models.get("data") if isinstance(models, dict) else None
    first = data[0] if isinstance(data, list) and data else None
    model = first.get("id") if isinstance(first, dict) else None
    return model if isinstance(model, str) and model else None


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


@functools.cache
def _estimator() -> TokenCounter:
    """The cl100k counter behind the truncation check: read-only, loaded once per process (about 0.2 s)."""
    return make_counter("cl100k_base")


@functools.cache
def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The reply model's JSON schema, built once per model (pydantic rebuilds it on every call otherwise)."""
    return model.model_json_schema()


def first_choice(data: Any, meter: Meter) -> dict[str, Any]:
    """The first choice of a completion body (chat or legacy), or LLMError naming what came instead."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        meter.failed_calls += 1
        error = data.get("error") if isinstance(data, dict) else None
        detail = f": {str(error.get('message', ''))[:200]}" if isinstance(error, dict) else ""
        raise LLMError(f"the endpoint answered without choices{detail}")
    return choices[0]


def read_completion(data: Any, meter: Meter) -> ChatResponse:
    """A chat completion body (JSON) as a ChatResponse, or LLMError when it breaks the contract: no choices,
    an error object instead of a completion, a choice without a message. A refusal or a content filter is a
    RefusalError even when the content parses; reasoning without content is flagged, never used as the answer."""
    choice = first_choice(data, meter)
    message = choice.get("message")
    if not isinstance(message, dict):
        meter.failed_calls += 1
        raise LLMError("the endpoint answered a choice without a message")
    text = message.get("content") or ""
    if not isinstance(text, str):
        meter.failed_calls += 1
        raise LLMError("the endpoint answered a message whose content is not text")
    prompt_tokens, completion_tokens, cached = add_usage(meter, data.get("usage"), text)
    finish = str(choice.get("finish_reason") or "stop")
    refused = _refusal(message, finish)
    if refused is not None:
        meter.failed_calls += 1
        raise refused
    reasoning_only = not text.strip() and _has_reasoning(message)
    tokens = _tokens(choice.get("logprobs"))
    return ChatResponse(text, tokens, finish, prompt_tokens, completion_tokens, cached, reasoning_only)


def _refusal(message: dict[str, Any], finish: str) -> RefusalError | None:
    """The typed outcome of a reply the model declined (`refusal`) or a filter stopped (`content_filter`)."""
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal.strip():
        said = " ".join(refusal.split())[:200]
        return RefusalError(f"the model refused to answer: {said}", kind="refusal")
    if finish == "content_filter":
        return RefusalError(
            "the endpoint's content filter stopped the reply (finish_reason content_filter)", kind="content_filter"
        )
    return None


def _has_reasoning(message: dict[str, Any]) -> bool:
    """Reasoning text where the answer should be (vLLM and DeepSeek: `reasoning_content`; Ollama: `reasoning`)."""
    return any(isinstance(message.get(key), str) and message[key].strip() for key in REASONING_FIELDS)


def _tokens(logprobs: Any) -> tuple[TokenLogprob, ...] | None:
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list) or not content:
        return None
    try:
        return tuple(
            TokenLogprob(
                str(t["token"]),
                float(t["logprob"]),
                tuple((str(a["token"]), float(a["logprob"])) for a in (t.get("top_logprobs") or ())),
            )
            for t in content
        )
    except (KeyError, TypeError, ValueError):
        return None  # malformed logprobs: fall back to the labels


def add_usage(meter: Meter, usage: Any, text: str) -> tuple[int, int, int]:
    """Count a reply's tokens; without usage, estimate the completion from its length and say so."""
    if not isinstance(usage, dict):
        usage = usage.model_dump() if hasattr(usage, "model_dump") else None
    if not usage:
        meter.estimated_usage = True
    usage = usage or {}
    prompt_tokens = int(usage.get("prompt_tokens") or 0)
    completion_tokens = int(usage.get("completion_tokens") or 0) if usage else max(1, len(text) // 4)
    details = usage.get("prompt_tokens_details") or {}
    cached = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    meter.prompt_tokens += prompt_tokens
    meter.completion_tokens += completion_tokens
    meter.cached_tokens += cached
    return prompt_tokens, completion_tokens, cached


async def _stamp(request: httpx2.Request) -> None:
    request.extensions[SENT] = time.perf_counter()


def _retry_count(request: httpx2.Request) -> int:
    """The SDK's retries before this request (it numbers every attempt in a header)."""
    try:
        return int(request.headers.get("x-stainless-retry-count", "0") or 0)
    except ValueError:
        return 0


def _retries_before(error: openai.APIError) -> int:
    response = getattr(error, "response", None)
    return _retry_count(response.request) if response is not None else 0


def attempts_spent(error: openai.APIError, max_retries: int) -> int:
    """HTTP requests behind a failed call: exact where the server answered (the SDK numbers its attempts in a
    header); else the most the SDK makes, as it retries connection errors, 408/409/429 and 5xx."""
    if getattr(error, "response", None) is not None:
        return 1 + _retries_before(error)
    status = getattr(error, "status_code", None)
    if _long_retry_after(error) is not None:
        return 1
    retried = isinstance(error, openai.APIConnectionError) or status in RETRYABLE or (status or 0) >= 500
    return 1 + max_retries if retried else 1


def _long_retry_after(error: openai.APIError) -> float | None:
    """The wait a 429/503 asks for when it is longer than the SDK will wait (it then gives up at once)."""
    response = getattr(error, "response", None)
    seconds = retry_after(response.headers) if response is not None else None
    return seconds if seconds is not None and seconds > MAX_RETRY_AFTER else None


def translate_error(error: openai.APIError, api_key: str) -> LLMError:
    """An SDK error as one of ours, with a one-line message that never holds the key."""
    status = getattr(error, "status_code", None)
    request_id = getattr(error, "request_id", None)
    code = getattr(error, "code", None)
    detail = str(getattr(error, "message", "") or error).replace(api_key, "***").splitlines()[0][:300]
    if isinstance(error, openai.AuthenticationError):
        return FatalLLMError(
            "the endpoint rejected the API key (401): check the key for this endpoint",
            status=status,
            request_id=request_id,
        )
    if isinstance(error, openai.PermissionDeniedError):
        return FatalLLMError(f"the endpoint refused access (403): {detail}", status=status, request_id=request_id)
    if isinstance(error, openai.NotFoundError):
        return FatalLLMError(
            f"not found (404), unknown model or wrong base URL: {detail}", status=status, request_id=request_id
        )
    if isinstance(error, openai.RateLimitError) and code == "insufficient_quota":
        return FatalLLMError(
            "the account's quota is exhausted (429 insufficient_quota)", status=status, request_id=request_id
        )
    wait = _long_retry_after(error)
    if wait is not None:
        return FatalLLMError(
            f"the endpoint asks to wait {wait:.0f} s before any retry ({status} Retry-After); try again later",
            status=status,
            request_id=request_id,
        )
    if isinstance(error, openai.APITimeoutError):
        return LLMError("the endpoint did not answer in time (timeout after retries)")
    if isinstance(error, openai.APIConnectionError):
        return LLMError("cannot reach the endpoint (connection failed after retries): is the server running?")
    if isinstance(error, openai.BadRequestError) and (code == "context_length_exceeded" or "context" in detail):
        return ContextLengthError(
            f"the prompt is longer than the model's context: {detail}", status=status, request_id=request_id
        )
    return LLMError(f"the endpoint answered {status}: {detail}", status=status, request_id=request_id)
