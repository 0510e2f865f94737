"""A request cache for benchmark runs: a `ChatModel` wrapper that keeps replies as JSON in SQLite.

- Key: SHA-256 of the canonical JSON (sorted keys, compact) of the whole request as the endpoint sees it:
  a cache-format version, the endpoint id (base URL without credentials, plus settings that shape requests),
  the resolved model and probed capabilities (they decide `response_format` and logprobs), the prompt name,
  every message, the reply schema, max_tokens, temperature and the logprobs flag. Never the API key.
- Stored: the reply (text, token logprobs, finish reason, usage), what the call cost in the answer's Meter
  (requests incl. SDK retries, tokens) and its latency. A hit replays those into the Meter, so calls, tokens
  and model seconds per question are the same on a rerun as on the first run; hits are counted apart.
- JSON text in SQLite (WAL), never pickle. An entry that fails to decode (malformed, nested too deep for the
  parser, or longer than `MAX_ENTRY_CHARS`, which is never read into memory) is a miss and is deleted. A file
  that is not a SQLite database is refused with a hint; a write that fails (disk full, read-only file)
  turns caching off for the rest of the run and is reported, and the run goes on.
- Only temperature-0 requests are cached (a sampled reply is not a function of the request).
- Capabilities are cached per endpoint too, so a fully cached rerun sends no request at all.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..llm.base import Capabilities, ChatModel, ChatRequest, ChatResponse, NativeLabels, TokenLogprob
from ..llm.openai_chat import json_schema
from ..schema import Meter

CACHE_VERSION = 1
MAX_ENTRY_CHARS = 16 * 2**20  # a stored reply with logprobs is well under 2 MiB; a longer one was not written by us
METER_FIELDS = ("llm_calls", "prompt_tokens", "completion_tokens", "cached_tokens", "failed_calls")


class RequestCache:
    """JSON values in one SQLite file, keyed by hex digests."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.corrupt = 0
        self.write_error: str | None = None  # set by the first failed write; later writes are skipped
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS cache (key TEXT PRIMARY KEY, kind TEXT NOT NULL, value TEXT NOT NULL,"
                " endpoint TEXT NOT NULL, created REAL NOT NULL)"
            )
        except (sqlite3.Error, OSError, ValueError) as error:  # ValueError: a NUL byte in the path
            raise InputError(
                f"the request cache {self.path} cannot be used ({error}): delete it, or pass --no-cache"
            ) from None

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            row = self._db.execute(
                "SELECT CASE WHEN length(value) <= ? THEN value END FROM cache WHERE key = ?", (MAX_ENTRY_CHARS, key)
            ).fetchone()
        except sqlite3.DatabaseError:  # a damaged page: a miss, like a damaged entry
            self.corrupt += 1
            return None
        if row is None:
            return None
        try:
            if row[0] is None:
                raise ValueError("longer than MAX_ENTRY_CHARS")
            value = json.loads(row[0])
            if not isinstance(value, dict):
                raise ValueError("not an object")
        except (ValueError, TypeError, RecursionError):  # RecursionError: nested deeper than the parser goes
            self.discard(key)
            return None
        return value

    def put(self, key: str, kind: str, value: dict[str, Any], endpoint: str) -> None:
        """Store a value; a failed write (disk full, read-only) turns writing off instead of failing the call."""
        if self.write_error is not None:
            return
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        self._write(
            "INSERT OR REPLACE INTO cache (key, kind, value, endpoint, created) VALUES (?, ?, ?, ?, ?)",
            (key, kind, text, endpoint, time.time()),
        )

    def discard(self, key: str) -> None:
        self.corrupt += 1
        self._write("DELETE FROM cache WHERE key = ?", (key,))

    def _write(self, sql: str, args: tuple[Any, ...]) -> None:
        try:
            self._db.execute(sql, args)
        except sqlite3.Error as error:
            self.write_error = str(error)

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM cache").fetchone()[0])

    def close(self) -> None:
        self._db.close()


def digest(value: Any) -> str:
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def request_key(endpoint: str, capabilities: Capabilities, request: ChatRequest) -> str:
    return digest(
        {
            "v": CACHE_VERSION,
            "endpoint": endpoint,
            "capabilities": capabilities.describe(),
            "prompt": request.prompt,
            "messages": [[m.role, m.content] for m in request.messages],
            "schema": {"name": request.schema.__name__, "json": json_schema(request.schema)},
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "logprobs": request.logprobs,
        }
    )


@dataclass(slots=True)
class Counters:
    """What one question (or one run) cost and how much of it the cache answered."""

    hits: int = 0
    misses: int = 0
    sent: int = 0  # HTTP requests actually sent (probes excluded)
    model_seconds: float = 0.0  # summed latency of the calls, replayed from the cache on hits

    def add(self, other: Counters) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


class CachedChatModel:
    """A ChatModel that answers from `cache` when it can and asks `inner` otherwise.

    `endpoint` identifies the server for the key (base URL without credentials, model setting, top_logprobs).
    `scoped()` gives a view with its own Counters (one per question), sharing the inner model and the cache.
    """

    def __init__(self, inner: ChatModel, cache: RequestCache | None, *, endpoint: str) -> None:
        self.inner, self.cache, self.endpoint = inner, cache, endpoint
        self.counters = Counters()
        self.probe_meter = Meter()  # capability probes: counted for the run, never in a question
        self._shared: dict[str, Any] = {"caps": None, "probed": False}

    @property
    def name(self) -> str:
        return self.inner.name

    def scoped(self) -> CachedChatModel:
        view = CachedChatModel(self.inner, self.cache, endpoint=self.endpoint)
        view.probe_meter, view._shared = self.probe_meter, self._shared
        return view

    async def capabilities(self, meter: Meter) -> Capabilities:
        if self._shared["caps"] is not None:
            return self._shared["caps"]
        key = digest({"v": CACHE_VERSION, "kind": "capabilities", "endpoint": self.endpoint})
        stored = self.cache.get(key) if self.cache is not None else None
        caps = _caps_from(stored) if stored is not None else None
        if caps is None:
            caps = await self._probe()
            if self.cache is not None:
                self.cache.put(key, "capabilities", caps.describe(), self.endpoint)
        self._shared["caps"] = caps
        return caps

    async def _probe(self) -> Capabilities:
        self._shared["probed"] = True
        return await self.inner.capabilities(self.probe_meter)

    async def chat(self, request: ChatRequest, meter: Meter) -> ChatResponse:
        caps = await self.capabilities(meter)
        cacheable = self.cache is not None and request.temperature == 0
        key = request_key(self.endpoint, caps, request) if cacheable else ""
        if cacheable:
            stored = self.cache.get(key)  # type: ignore[union-attr]
            replayed = _replay(stored, meter) if stored is not None else None
            if stored is not None and replayed is None:
                self.cache.discard(key)  # type: ignore[union-attr]
            if replayed is not None:
                self.counters.hits += 1
                self.counters.model_seconds += float(stored.get("seconds", 0.0))  # type: ignore[union-attr]
                return replayed
        if not self._shared["probed"]:
            await self._probe()  # probe outside the question's meter, so its cost is not the question's
        self.counters.misses += 1
        scratch, started = Meter(), time.monotonic()
        try:
            response = await self.inner.chat(request, scratch)
        finally:
            seconds = time.monotonic() - started
            self.counters.sent += scratch.llm_calls
            self.counters.model_seconds += seconds
            _apply(meter, _delta(scratch))
        if cacheable:
            self.cache.put(key, "chat", _record(response, scratch, seconds), self.endpoint)  # type: ignore[union-attr]
        return response

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()


def _delta(meter: Meter) -> dict[str, Any]:
    return {**{name: getattr(meter, name) for name in METER_FIELDS}, "estimated_usage": meter.estimated_usage}


def _apply(meter: Meter, delta: dict[str, Any]) -> None:
    for name in METER_FIELDS:
        setattr(meter, name, getattr(meter, name) + int(delta.get(name, 0)))
    meter.estimated_usage = meter.estimated_usage or bool(delta.get("estimated_usage"))


def _record(response: ChatResponse, scratch: Meter, seconds: float) -> dict[str, Any]:
    tokens = None
    if response.tokens is not None:
        tokens = [[t.token, t.logprob, [[a, p] for a, p in t.top]] for t in response.tokens]
    return {
        "text": response.text,
        "tokens": tokens,
        "finish_reason": response.finish_reason,
        "usage": [response.prompt_tokens, response.completion_tokens, response.cached_tokens],
        **({"native": _native_record(response.native)} if response.native is not None else {}),
        "meter": _delta(scratch),
        "seconds": round(seconds, 4),
    }


def _replay(stored: dict[str, Any], meter: Meter) -> ChatResponse | None:
    """The stored reply, its cost applied to `meter`; None (a miss) when the entry is malformed."""
    try:
        raw_tokens = stored["tokens"]
        tokens = None
        if raw_tokens is not None:
            tokens = tuple(
                TokenLogprob(str(t), float(lp), tuple((str(a), float(p)) for a, p in top)) for t, lp, top in raw_tokens
            )
        prompt_tokens, completion_tokens, cached = (int(x) for x in stored["usage"])
        response = ChatResponse(
            str(stored["text"]),
            tokens,
            str(stored["finish_reason"]),
            prompt_tokens,
            completion_tokens,
            cached,
            native=_native_from(stored["native"]) if "native" in stored else None,
        )
        delta = stored["meter"]
        cost = {name: int(delta.get(name, 0)) for name in METER_FIELDS}
        cost["estimated_usage"] = bool(delta.get("estimated_usage"))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    _apply(meter, cost)
    return response


def _native_record(native: NativeLabels) -> dict[str, Any]:
    """Label distributions a backend read itself (reflection tokens), as stored JSON."""
    return {
        "probs": {name: dict(probs) for name, probs in native.probs.items()},
        "truncated": sorted(native.truncated),
        "estimator": native.estimator,
        "seq_prob": native.seq_prob,
    }


def _native_from(stored: dict[str, Any]) -> NativeLabels:
    probs = {str(name): {str(k): float(p) for k, p in dist.items()} for name, dist in stored["probs"].items()}
    seq = stored.get("seq_prob")
    return NativeLabels(probs, frozenset(map(str, stored["truncated"])), str(stored["estimator"]), seq and float(seq))


def _caps_from(stored: dict[str, Any]) -> Capabilities | None:
    try:
        return Capabilities(
            str(stored["model"]),
            str(stored["structured"]),
            bool(stored["logprobs"]),
            bool(stored["n"]),
            str(stored.get("protocol", "chat")),
            str(stored.get("reading", "")),
            str(stored.get("note", "")),
        )
    except KeyError:
        return None
