"""Adaptive concurrency per endpoint (AIMD): fewer requests in flight while the server answers 429.

The limit starts at the configured cap (`max_concurrency`). Every HTTP response is seen, the SDK's own retries
included. A 429 cuts the limit by a fifth, once per rate-limit episode: the next cut waits `spacing` seconds or
what the server's Retry-After asks, whichever is longer, so one burst of 429s across a fan-out of 30 calls
costs one cut, not thirty. Each successful response grows the limit by 1/limit (about one slot per clean round),
back up to the cap. 5xx and network errors neither cut nor grow it: fewer connections do not fix an outage,
and the circuit breaker owns that case. What the server serves at once (parallel.py: its slot count, or
learned from latency) lowers the cap itself with `fit`, so growth never passes it and 429 cuts start below it.
The last 256 changes are kept in `changes` (time, new limit, cause).
"""

from __future__ import annotations

import asyncio
import collections
import datetime
import email.utils
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

CUT = 0.8  # multiplicative decrease per rate-limit episode
SPACING = 15.0  # seconds between two cuts at least


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds a response asks to wait (`retry-after-ms`, or `retry-after` in seconds or as an HTTP date);
    None when absent or unreadable."""
    try:
        if "retry-after-ms" in headers:
            seconds = float(headers["retry-after-ms"]) / 1000
        elif "retry-after" in headers:
            value = headers["retry-after"]
            try:
                seconds = float(value)
            except ValueError:
                when = email.utils.parsedate_to_datetime(value)
                seconds = (when - datetime.datetime.now(when.tzinfo or datetime.UTC)).total_seconds()
        else:
            return None
    except (TypeError, ValueError, OverflowError):
        return None
    return seconds if math.isfinite(seconds) else None


@dataclass
class AdaptiveLimit:
    """The AIMD state, a pure function of the events it is told about and the clock values passed in."""

    cap: int
    limit: float = 0.0
    next_cut_at: float = -math.inf
    changes: collections.deque[tuple[float, int, str]] = field(default_factory=lambda: collections.deque(maxlen=256))

    def __post_init__(self) -> None:
        self.limit = float(self.cap)

    @property
    def allowed(self) -> int:
        """Requests that may be in flight now."""
        return max(1, int(self.limit))

    def rate_limited(self, now: float, wait: float | None = None) -> None:
        """A 429: cut once per episode."""
        if now < self.next_cut_at:
            return
        self.limit = max(1.0, self.limit * CUT)
        self.next_cut_at = now + max(SPACING, wait or 0.0)
        self.changes.append((now, self.allowed, "429"))

    def fit(self, now: float, parallel: int, cause: str) -> None:
        """The server serves `parallel` requests at once: never send more (cause: server | latency)."""
        if parallel < self.cap:
            self.cap = max(1, parallel)
            self.limit = min(self.limit, float(self.cap))
            self.changes.append((now, self.allowed, cause))

    def succeeded(self, now: float) -> None:
        """A successful response: grow additively, back to the cap."""
        before = self.allowed
        self.limit = min(float(self.cap), self.limit + 1.0 / self.limit)
        if self.allowed != before:
            self.changes.append((now, self.allowed, "clean"))


class Gate:
    """At most `limit.allowed` callers inside at once, first come first served (one gate per event loop).
    A freed slot is handed to the next waiter directly; leaving never awaits, and a waiter cancelled after
    it was handed a slot gives it back, so a cancelled call never leaks a slot."""

    def __init__(self, limit: AdaptiveLimit) -> None:
        self.limit = limit
        self.in_flight = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    async def __aenter__(self) -> None:
        if self.in_flight < self.limit.allowed and not self._waiters:
            self.in_flight += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter  # _wake counts the slot as ours before it sets the result
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.in_flight -= 1
                self._wake()
            elif waiter in self._waiters:
                self._waiters.remove(waiter)
            raise

    async def __aexit__(self, *_: object) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.limit.allowed:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.in_flight += 1
                waiter.set_result(None)
