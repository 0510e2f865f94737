"""What `selfrag doctor` and `selfrag config` report, as values: checks, the resolved settings, config paths.

Nothing here prints (the cli package does). Secrets never leave this module: keys are reported by where they
came from (`key_source`), never by value (`config.config_dict(public=True)` masks every secret with "***").

Checks run in order and the endpoint chain stops at its first failure (a server that cannot be reached has
no model to report):

    index         readable? chunks, documents, format          (only with --index)
    files         do the indexed files still match the index? size and mtime, hashed where they differ; then
                  one `changed` / `vanished` / `touched` warning per file (at most `LISTED` of each)
    versions      supersessions applied, which folders may supersede; then one `supersedes` line per link
                  (which document replaces which, and why) and one `version note` warning per refused date or
                  claim (a future date is an error in its document)
    config        which config file was read (or why the configuration is invalid)
    endpoint      where requests go (URL redacted) and where the key comes from
    reachable     the capability probe got answers (time, requests)
    threads       the embedded model's threads and why ($SELFRAG_THREADS, or the cores busy when it was built)
    local weights the embedded model's weights (Q4_1, F16 or BF16), why, and the timings per option behind it
    remembered    whether the capabilities were remembered from an earlier run or probed now, and when
    model         the model name used (configured, or the endpoint's first)
    weights       (a warning) the evidence scorer's weights were fitted for another model than this one
    capabilities  structured-output flavour, logprobs, n (probed, never guessed)
    costs         logprobs used or not and why (--logprobs, or what they cost); the schema's cost
    parallel      calls the server serves at once: its slot count (or why it was not trusted), else latency
    call          one tiny structured call: its latency and whether the reply validated
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from ..config import Config, EndpointConfig, ResolvedEndpoint, redact_url, resolve_endpoint
from ..errors import ConfigError, CritiqueError, LLMError, SelfRagError, UsageError
from ..llm.base import Capabilities, ChatModel, ChatRequest, Message
from ..llm.local_weights import WeightsChoice
from ..llm.openai_chat import OpenAIChatModel
from ..llm.structured import ask
from ..schema import Meter
from ..settings import config_location

if TYPE_CHECKING:
    from ..engine.calibration import CriticModel

PING_PROMPT = 'Is the sky blue? Reply as JSON: {"answer": "yes"} or {"answer": "no"}.'

ChatFactory = Callable[[EndpointConfig, Mapping[str, str]], ChatModel]


@dataclass(frozen=True, slots=True)
class Check:
    """One line of `selfrag doctor`."""

    name: str
    ok: bool
    detail: str
    hint: str = ""  # what to do about it (set on failures, sometimes on warnings)
    warn: bool = False  # ok, but worth a look (doctor prints "warn"; the exit status stays 0)
    found: str = ""  # what the check found that a later one reads (the model id the endpoint reports)


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


LISTED = 50  # files named per kind of difference; the rest are counted


def check_sources(path: Path) -> list[Check]:
    """Do the indexed files still match the index (staleness.py, hashes where size or mtime differ)?"""
    from ..retrieval.staleness import load_sources, stale

    try:
        sources = load_sources(path)
    except SelfRagError as error:
        return [Check("files", False, str(error), _REINDEX.format(path))]
    if sources is None:
        return [Check("files", True, "not recorded (an index built before files were recorded)", _REINDEX.format(path))]
    found = stale(sources, hashes=True)
    if not found and not found.touched:
        return [Check("files", True, f"the {found.checked} indexed files are as they were indexed (size and mtime)")]
    differ = len(found.changed) + len(found.vanished)
    detail = f"{differ} of {found.checked} indexed files differ from the index ({len(found.changed)} changed, " + (
        f"{len(found.vanished)} vanished); {len(found.touched)} touched with the same bytes"
    )
    checks = [Check("files", True, detail, f"update it: {sources.reindex_hint(path)}", warn=True)]
    for kind, keys, what in (
        ("changed", found.changed, "its bytes differ from the indexed ones: answers may quote the old text"),
        ("vanished", found.vanished, "gone from disk: answers may still quote it"),
        ("touched", found.touched, "a new mtime over the same bytes: no answer changes; ask warns until reindexed"),
    ):
        checks += [Check(kind, True, f"{key}: {what}", warn=True) for key in keys[:LISTED]]
        if len(keys) > LISTED:
            checks.append(Check(kind, True, f"... and {len(keys) - LISTED} more", warn=True))
    return checks


def check_versions(path: Path) -> list[Check]:
    """What the index's `versions.json` says: the supersessions applied (each with why) and the refused dates and
    claims, one check each (supersession.py)."""
    from ..retrieval.store import open_current
    from ..retrieval.supersession import MAX_VERSIONS_BYTES, VERSIONS

    try:
        generation = open_current(path)
        if VERSIONS not in generation.manifest["files"]:
            return [Check("versions", True, "none recorded (an index built before versions)", _REINDEX.format(path))]
        body = json.loads(generation.read(VERSIONS, limit=MAX_VERSIONS_BYTES))
        links = [(str(a), str(b), str(why)) for a, b, why in body["links"]]
        reasons = {(str(a), str(b)): str(r) for a, b, r in body.get("reasons", [])}
        notes = [str(note) for note in body["notes"]]
        folders = [str(f) for f in body.get("supersede_from", [])]
    except (SelfRagError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as error:
        return [Check("versions", False, f"{VERSIONS} cannot be read: {error}", _REINDEX.format(path))]
    who = f"only documents under {', '.join(f + '/' for f in folders)}" if folders else "documents in any folder"
    summary = f"{len(links)} supersession(s) applied, {len(notes)} refused date(s) or claim(s); {who} may supersede"
    hint = "each refusal is a note below: fix the document, then run selfrag index again" if notes else ""
    checks = [Check("versions", True, summary, hint, warn=bool(notes))]
    for old, new, why in links:
        checks.append(Check("supersedes", True, f"{new} replaces {old}: {reasons.get((old, new)) or why}"))
    checks += [Check("version note", True, note, warn=True) for note in notes]
    return checks


_REINDEX = "run selfrag index PATH --out {} again"


def check_config(explicit: str | None, environ: Mapping[str, str]) -> Check:
    """Which config file was read (the configuration itself loaded without error)."""
    location = config_location(explicit, environ)  # the file load_config read
    used = f"{location.path} (from {location.reason})" if location.exists else f"no file ({location.path} not found)"
    return Check("config", True, f"{used}; SELFRAG_* variables and flags override it")


def check_policies(config: Config, environ: Mapping[str, str]) -> Check:
    """Which preset, scorer and policies answers run with, why the scorer is the one it is, and with the evidence
    scorer its weights and the model they were fitted for (`engine.fitted`)."""
    from ..engine.policies import explain

    try:
        resolved, fitted = _rating(config, environ)
    except ConfigError as error:
        return Check("policies", False, str(error), "run selfrag calibrate, or pass --scorer-weights FILE")
    embedded = resolve_endpoint(config.endpoint, environ).nothing_configured
    writer = "the embedded model" if embedded else "an endpoint"
    writer += " with weights for its model" if fitted and not embedded else ""
    why = f" (scorer auto: {writer})" if config.scorer == "auto" else ""
    if config.confirm and config.decide and config.lead and embedded:
        why += " (confirm: the embedded model only where its own counts beat the rule's)"
    described = fitted.made_for.describe() if fitted else ""
    checks = fitted is not None and fitted.reads_check
    return Check(
        "policies", True, explain(resolved, evidence=fitted is not None, fitted_for=described, checks=checks) + why
    )


def check_weights(config: Config, environ: Mapping[str, str], model: str) -> Check | None:
    """A warning when the evidence scorer's weights were fitted for another model than `model`, the one the
    endpoint reports (`engine.fitted.other_model`); None when they were fitted for it, or none are read."""
    from ..engine.fitted import other_model

    try:
        resolved, fitted = _rating(config, environ)
    except ConfigError:
        return None  # the policies check said why
    warning = other_model(fitted.made_for, model, resolved.scorer_weights or "shipped") if fitted else ""
    return Check("weights", True, warning, "selfrag calibrate fits weights for it", warn=True) if warning else None


def _rating(config: Config, environ: Mapping[str, str]) -> tuple[Config, CriticModel | None]:
    """The config as the engine would rate with it (`engine.fitted.scoring`) and, with the evidence scorer, its
    weights (the file read and checked); ConfigError as the engine would raise it."""
    from ..engine.calibration import load_critic_model
    from ..engine.fitted import scoring

    resolved = scoring(config, environ)
    if resolved.scorer != "evidence":
        return resolved, None
    return resolved, load_critic_model(resolved.scorer_weights)


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
            if server.weights is not None:
                checks.append(check_local_weights(server.weights))
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
        checks.append(Check("model", True, f"{caps.model} ({source})", found=caps.model))
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


def check_local_weights(choice: WeightsChoice) -> Check:
    """The embedded model's weights: which kind, why, and the timings behind the choice (per option, when, on which
    CPU and llama.cpp build)."""
    if choice.forced:
        hint = "unset SELFRAG_WEIGHTS to time the shipped file against the F16 copy on this CPU"
    else:
        hint = "selfrag doctor --refresh times the weights again; SELFRAG_WEIGHTS=q4_1, f16 or bf16 forces one"
    return Check("local weights", True, choice.describe(), hint)


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
