"""What `selfrag doctor` and `selfrag config` report, as values: checks, the resolved settings, config paths.

Nothing here prints (the cli package does). Secrets never leave this module: keys are reported by where they
came from (`key_source`), never by value, and `public_settings` masks every secret field with "***".

Checks run in order and the endpoint chain stops at its first failure (a server that cannot be reached has
no model to report):

    index         readable? chunks, documents, format          (only with --index)
    config        which config file was read (or why the configuration is invalid)
    endpoint      where requests go (URL redacted) and where the key comes from
    reachable     the capability probe got answers (time, requests)
    model         the model name used (configured, or the endpoint's first)
    capabilities  structured-output flavour, logprobs, n (probed, never guessed)
    costs         logprobs used or not and why (--logprobs, or what they cost); the schema's cost
    parallel      calls the server serves at once: its slot count (or why it was not trusted), else latency
    call          one tiny structured call: its latency and whether the reply validated
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .config import Config, EndpointConfig, ResolvedEndpoint, redact_url, resolve_endpoint
from .errors import ConfigError, CritiqueError, LLMError, SelfRagError
from .llm.base import Capabilities, ChatModel, ChatRequest, Message
from .llm.structured import ask
from .schema import Meter

SECRET_FIELDS = frozenset({"api_key", "nonce_seed"})  # printed as "***" when set
MASK = "***"
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
    from .index import Index  # bm25s is imported only when an index is checked
    from .store import open_current

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
    location = config_location(explicit, environ)
    used = f"{location.path} (from {location.reason})" if location.exists else f"no file ({location.path} not found)"
    return Check("config", True, f"{used}; SELFRAG_* variables and flags override it")


# -- endpoint ---------------------------------------------------------------------------------------


def nothing_configured(resolved: ResolvedEndpoint) -> bool:
    """No base URL and no key anywhere: the default chat model is the embedded one (see api.default_chat)."""
    return resolved.base_url is None and resolved.key_source == "placeholder"


def describe_endpoint(resolved: ResolvedEndpoint) -> str:
    if nothing_configured(resolved):
        return "nothing configured: the embedded local model, served in this process (no key)"
    url = redact_url(resolved.base_url) if resolved.base_url else "https://api.openai.com/v1 (the SDK's default)"
    key = (
        "no key (a placeholder is sent)" if resolved.key_source == "placeholder" else f"key from {resolved.key_source}"
    )
    return f"{url}, {key}"


async def check_endpoint(config: Config, environ: Mapping[str, str], make_chat: ChatFactory) -> list[Check]:
    """The endpoint checks, in order, stopping at the first failure. `make_chat` is api.default_chat (a seam)."""
    resolved = resolve_endpoint(config.endpoint, environ)
    checks = [Check("endpoint", True, describe_endpoint(resolved))]
    try:
        chat = make_chat(config.endpoint, environ)
    except SelfRagError as error:
        return [*checks, Check("reachable", False, str(error), _hint(error, resolved))]
    if nothing_configured(resolved):
        from .local import served  # what the embedded model serves, if make_chat built it

        server = served()
        if server is not None:
            checks.append(Check("local model", True, server.describe()))
    try:
        meter = Meter()
        started = time.perf_counter()
        try:
            caps = await chat.capabilities(meter)
        except LLMError as error:
            return [*checks, Check("reachable", False, str(error), _hint(error, resolved))]
        seconds = time.perf_counter() - started
        checks.append(Check("reachable", True, f"answered {meter.llm_calls} probe requests in {seconds:.2f} s"))
        source = "configured" if config.endpoint.model else "the endpoint's first listed model"
        checks.append(Check("model", True, f"{caps.model} ({source})"))
        checks.append(_capabilities(caps))
        checks.append(_costs(caps))
        checks.append(_parallel(caps))
        checks.append(await _tiny_call(chat))
    finally:
        close = getattr(chat, "aclose", None)
        if close is not None:
            await close()
    return checks


def _capabilities(caps: Capabilities) -> Check:
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


def public_settings(config: Config) -> dict[str, Any]:
    """The resolved configuration as plain values (enums as strings), every secret masked."""
    settings: dict[str, Any] = _public(config)
    return settings


def _public(value: Any) -> Any:
    if isinstance(value, Config | EndpointConfig):
        out = {}
        for spec in fields(value):
            item = getattr(value, spec.name)
            if spec.name in SECRET_FIELDS:
                out[spec.name] = MASK if item is not None else None
            elif spec.name == "base_url" and item is not None:
                out[spec.name] = redact_url(item)
            else:
                out[spec.name] = _public(item)
        return out
    return getattr(value, "value", value)


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


@dataclass(frozen=True, slots=True)
class ConfigLocation:
    """Where the config file is looked for, and whether that file is used."""

    path: Path
    reason: str  # --config, $SELFRAG_CONFIG, $XDG_CONFIG_HOME, ~/.config
    exists: bool


def config_location(explicit: str | None, environ: Mapping[str, str]) -> ConfigLocation:
    """The one file `load_config` reads (the same order as settings.config_path), even when it is missing."""
    if explicit:
        return _location(Path(explicit), "--config")
    if environ.get("SELFRAG_CONFIG"):
        return _location(Path(environ["SELFRAG_CONFIG"]), "$SELFRAG_CONFIG")
    if environ.get("XDG_CONFIG_HOME"):
        return _location(Path(environ["XDG_CONFIG_HOME"]) / "selfrag" / "config.toml", "$XDG_CONFIG_HOME")
    home = Path(environ.get("HOME") or "~").expanduser()
    return _location(home / ".config" / "selfrag" / "config.toml", "~/.config")


def _location(path: Path, reason: str) -> ConfigLocation:
    return ConfigLocation(path, reason, path.is_file())
