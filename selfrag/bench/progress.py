"""The benchmark progress line on stderr: done/total, errors, cache hits, tokens, rate and ETA."""

from __future__ import annotations

import math
import time
from typing import Any, TextIO


class Progress:
    """One status line on stderr: done/total, errors, cache hits, tokens, ETA (a new line per question when
    stderr is not a terminal, at most every few seconds)."""

    def __init__(self, total: int, done: int, stream: TextIO, *, enabled: bool = True) -> None:
        self.total, self.done, self.stream, self.enabled = total, done, stream, enabled
        self.errors = self.hits = self.tokens = self.count = 0
        self.started = time.monotonic()
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self._last = 0.0

    def update(self, record: dict[str, Any]) -> None:
        self.done += 1
        self.count += 1
        usage = record.get("usage") or {}
        self.errors += record["status"] != "ok"
        self.hits += int(usage.get("cache_hits", 0))
        self.tokens += int(usage.get("total_tokens", 0) or 0)
        now = time.monotonic()
        if self.enabled and (self.tty or now - self._last >= 5 or self.done == self.total):
            self._last = now
            self.stream.write(("\r" if self.tty else "") + self.line() + ("" if self.tty else "\n"))
            self.stream.flush()

    def line(self) -> str:
        elapsed = time.monotonic() - self.started
        rate = elapsed / self.count if self.count else math.nan
        left = (self.total - self.done) * rate if self.count else math.nan
        eta = "?" if math.isnan(left) else _duration(left)
        return (
            f"[{self.done}/{self.total}] errors {self.errors} · cache hits {self.hits} · "
            f"tokens {self.tokens / 1000:.1f}k · {rate:.1f} s/q · ETA {eta}"
        )

    def close(self) -> None:
        if self.enabled and self.tty and self.count:
            self.stream.write("\n")
            self.stream.flush()


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return (
        f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"
    )
