"""What `selfrag doctor` and `selfrag config` report, as values: checks, the resolved settings, config paths.

Nothing here prints (the cli package does). Secrets never leave this module: keys are reported by where they
came from (`key_source`), never by value (`config.config_dict(public=True)` masks every secret with "***").

Checks run in order and the endpoint chain stops at its first failure (a server that cannot be reached has
no model to report):

    index         readable? chunks, documents, format          (only with --index)
    config        which config file was read (or why the configuration is invalid)
    endpoint      where requests go (URL redacted) and where the key comes from
    reachable     the capability probe got answers (time, requests)
    threads       the embedded model's threads and why ($SELFRAG_THREADS, or the cores busy when it was built)
    remembered    whether the capabilities were remembered from an earlier run or probed now, and when
    model         the model name used (configured, or the endpoint's first)
    capabilities  structured-output flavour, logprobs, n (probed, never guessed)
    costs         logprobs used or not and why (--logprobs, or what they cost); the schema's cost
    parallel      calls the server serves at once: its slot count (or why it was not trusted), else latency
    call          one tiny structured call: its latency and whether the reply validated
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from ..config import Config, EndpointConfig, ResolvedEndpoint, redact_url, resolve_endpoint
from ..errors import ConfigError, CritiqueError, LLMError, SelfRagError, UsageError
from ..llm.base import Capabilities, ChatModel, ChatRequest, Message
from ..llm.openai_chat import OpenAIChatModel
from ..llm.structured import ask
from ..schema import Meter
from ..settings import config_location

PING_PROMPT = 'Is the sky blue? Reply as JSON: {"answer": "yes"} or {"answer": "no"}.'

ChatFactory = Callable[[EndpointConfig, Mapping[str, str]], ChatModel]


@dataclass(frozen=True, slots=True)
class Check:
    """One line of `selfrag doctor`."""

    name: str
    ok: bool
    detail: str
    hint: str = ""  # what to do about it (set on failures, sometimes on warnings)


class Ping(BaseModel):
    """The tiny call's reply."""

    answer: str


# -- index ------------------------------------------------------------------------------------------


def check_index(path: Path) -> Check:
    """Is the index at `path` readable and usable? (It is loaded and verified as `selfrag ask` would.)"""
    from ..retrieval.index import Index  # bm25s is imported only when an index is checked
    from ..retrieval.store import open_current

    try:
        manifest = open_current(path).manifest
        index = Index.load(path)
    except SelfRagError as error:
        message = str(error)
        hint = "" if "selfrag index" in message else f"rebuild it with: selfrag index PATH --out {path}"
        return Check("index", False, message, hint)
    created = f", built {manifest['created']}" if manifest.get("created") else ""
    return Check(
        "index",
        True,
        f"{path}: {len(index)} chunks from {index.document_count} documents "
        f"(format {manifest.get('format')} v{manifest.get('format_version')}{created})",
    )


def check_config(explicit: str | None, environ: Mapping[str, str]) -> Check:
    """Which config file was read (the configuration itself loaded without error)."""
    location = config_location(explicit, environ)  # the file load_config read
    used = f"{location.path} (from {location.reason})" if location.exists else f"no file ({location.path} not found)"
    return Check("config", True, f"{used}; SELFRAG_* variables and flags override it")


# -- endpoint ---------------------------------------------------------------------------------------


def describe_endpoint(resolved: ResolvedEndpoint) -> str:
    if resolved.nothing_configured:
        return "nothing configured: the embedded local model, served in this process (no key)"
    url = redact_url(resolved.base_url) if resolved.base_url else "https://api.openai.com/v1 (the SDK's default)"
    key = (
        "no key (a placeholder is sent)" if resolved.key_source == "placeholder" else f"key from {resolved.key_source}"
    )
    return f"{url}, {key}"


async def check_endpoint(
    config: Config, environ: Mapping[str, str], make_chat: ChatFactory, *, refresh: bool = False
) -> list[Check]:
    """The endpoint checks, in order, stopping at the first failure. `make_chat` is api.default_chat (a seam).
    `refresh`: probe afresh in full instead of reusing remembered capabilities (an OpenAIChatModel's)."""
    resolved = resolve_endpoint(config.endpoint, environ)
    checks = [Check("endpoint", True, describe_endpoint(resolved))]
    try:
        chat = make_chat(config.endpoint, environ)
    except UsageError:
        raise  # a bad $SELFRAG_THREADS: a usage error (exit 2), as for every command
    except SelfRagError as error:
        return [*checks, Check("reachable", False, str(error), _hint(error, resolved))]
    if resolved.nothing_configured:
        from ..llm.local import served  # what the embedded model serves, if make_chat built it

        server = served()
        if server is not None:
            checks.append(Check("local model", True, server.describe()))
            checks.append(Check("threads", True, f"{server.n_threads}: {server.threads_reason}"))
    try:
        meter = Meter()
        started = time.perf_counter()
        try:
            if isinstance(chat, OpenAIChatModel):
                caps = await chat.capabilities(meter, refresh=refresh, thorough=True)
            else:
                caps = await chat.capabilities(meter)
        except LLMError as error:
            return [*checks, Check("reachable", False, str(error), _hint(error, resolved))]
        seconds = time.perf_counter() - started
        checks.append(Check("reachable", True, f"answered {meter.llm_calls} probe requests in {seconds:.2f} s"))
        origin = getattr(chat, "origin", "")
        if origin:
            hint = "" if origin.startswith("probed") else "selfrag doctor --refresh probes afresh"
            checks.append(Check("remembered", True, origin, hint))
        source = "configured" if config.endpoint.model else "the endpoint's first listed model"
        checks.append(Check("model", True, f"{caps.model} ({source})"))
        checks.append(_capabilities(caps))
        if caps.protocol == "chat":  # a Self-RAG checkpoint's probe was already a real completion
            checks.append(_costs(caps))
            checks.append(_parallel(caps))
            checks.append(await _tiny_call(chat))
    finally:
        close = getattr(chat, "aclose", None)
        if close is not None:
            await close()
    return checks


def _capabilities(caps: Capabilities) -> Check:
    if caps.protocol != "chat":
        source = "token logprobs" if caps.reading == "logprobs" else "the text (one-hot)"
        return Check("capabilities", True, f"protocol {caps.protocol}, labels from {source}", caps.note)
    offered = caps.report()["logprobs_offered"]
    detail = f"structured output {caps.structured}, logprobs {_yes(bool(offered))}, n {_yes(caps.n)}"
    hint = ""
    if caps.structured in ("json_object", "none"):
        hint = "no schema-constrained output: replies are checked and re-asked, expect more failures"
    elif not caps.logprobs:
        hint = "no logprobs used: decisions and labels come from the labels the model writes (no soft scores)"
    return Check("capabilities", True, detail, hint)


def _costs(caps: Capabilities) -> Check:
    """Which logprobs choice was made and why, and what the probe measured (time per token vs a plain call)."""
    used = "logprobs used" if caps.logprobs else "logprobs not used"
    measured = ", ".join(f"{name} {cost:g}x" for name, cost in caps.costs)
    costs = f"; measured per token against a plain call: {measured}" if measured else ""
    reason = caps.logprobs_reason or ("the model gives them" if caps.logprobs else "the model gives none")
    return Check("costs", True, f"{used} ({reason}){costs}")


def _parallel(caps: Capabilities) -> Check:
    """How many calls are sent at once, and where that number came from."""
    limit = f"{caps.parallel} at once" if caps.parallel is not None else "no limit"
    return Check("parallel", True, f"{limit}: {caps.parallel_reason or 'not measured'}")


async def _tiny_call(chat: ChatModel) -> Check:
    request = ChatRequest("doctor_ping", (Message("user", PING_PROMPT),), Ping, max_tokens=16, logprobs=False)
    meter = Meter()
    started = time.perf_counter()
    try:
        parsed = await ask(chat, request, meter, reasks=0)
    except LLMError as error:
        hint = "the model does not write valid JSON for a schema: use a stronger model"
        return Check("call", False, str(error), hint if isinstance(error, CritiqueError) else "")
    seconds = time.perf_counter() - started
    response = parsed.response
    tokens = f"{response.prompt_tokens} prompt + {response.completion_tokens} completion tokens"
    return Check("call", True, f"a tiny structured call took {seconds:.2f} s ({tokens})")


def _hint(error: SelfRagError, resolved: ResolvedEndpoint) -> str:
    text = str(error)
    if isinstance(error, ConfigError):
        return "pass --base-url http://HOST:PORT/v1, or install the embedded model (see the README)"
    status = getattr(error, "status", None)
    if status == 401:
        return "set SELFRAG_API_KEY (or OPENAI_API_KEY for OpenAI itself); keys never go on the command line"
    if status == 404:
        return "check --model and --base-url (it usually ends in /v1)"
    if "cannot reach" in text or "did not answer" in text:
        where = redact_url(resolved.base_url) if resolved.base_url else "the endpoint"
        return f"is the server at {where} running? check --base-url or OPENAI_BASE_URL"
    return ""


def _yes(value: bool) -> str:
    return "yes" if value else "no"


# -- configuration ----------------------------------------------------------------------------------


def key_report(config: Config, environ: Mapping[str, str]) -> dict[str, dict[str, str | None]]:
    """For each endpoint: the base URL requests go to (redacted) and where the key comes from. Never the key."""
    endpoints = {"endpoint": config.endpoint}
    if config.critic_endpoint is not None:
        endpoints["critic_endpoint"] = config.critic_endpoint
    out = {}
    for name, endpoint in endpoints.items():
        resolved = resolve_endpoint(endpoint, environ)
        url = redact_url(resolved.base_url) if resolved.base_url else None
        out[name] = {"base_url": url, "key_source": resolved.key_source, "described": describe_endpoint(resolved)}
    return out
