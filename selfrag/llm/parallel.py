"""How many requests an endpoint really serves at once, so the fan-out never waits in the server's queue.

Nothing is learned when even one slot could not make a request time out: `max_concurrency` calls of about
`REAL_CALL` probe calls each, served one after another, inside the request timeout. Otherwise two sources, in
order:

- **What the server reports.** llama.cpp's `llama-server` answers `GET /props` with `total_slots` (its
  `--parallel`) and `GET /slots` with one object per slot (501 when started with `--no-slots`); both live at
  the server's root, beside `/v1`. A count is trusted only when it is a whole number from 1 to
  `MAX_TRUSTED_SLOTS`: 0, a negative number, a string or a million is a broken report, and says so.
- **Latency growing with requests in flight.** Otherwise, for a server on this machine or a private network
  (a hosted API's latency varies too much, and its limits come as 429s), the probe sends waves of identical
  small requests at once (2, then 4; a wave that looks queued is sent again, so one slow reply is not taken
  for a queue). A server that queues finishes a wave's last reply about k times later than its first (one
  slot) or k/n times (n slots); a wave whose slowest reply took under `QUEUED` times its fastest was served
  together. The first queued wave gives the estimate, k x fastest / slowest, rounded, at least 1.

Nothing here does I/O: the probe (probe.py) sends the requests and hands the answers and timings in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

MAX_TRUSTED_SLOTS = 256  # more than any single server runs; a larger count is a broken report
WAVES = (2, 4)  # identical requests sent at once while learning from latency
QUEUED = 1.5  # a wave whose slowest reply took this many times its fastest was queued
MEASURABLE = 0.05  # seconds: a probe call faster than this is not worth measuring (queues drain at once)
REAL_CALL = 20  # a real call (a sentence and its critique) takes up to about this many probe calls' time


@dataclass(frozen=True, slots=True)
class Parallelism:
    """What the probe learned: at most `limit` requests in flight (None: no limit found), and why."""

    limit: int | None
    source: str  # server | latency | none
    detail: str  # one line for `selfrag doctor` and the result's capabilities


def reported_slots(props: object, slots: object) -> tuple[int | None, str]:
    """The slot count a server reports, and a note on where it came from or why it is not trusted.

    `props` is the JSON of `GET /props` and `slots` that of `GET /slots` (None where the server had no such
    route). `/props` wins when it holds `total_slots`; `/slots` counts its slot objects otherwise."""
    if isinstance(props, dict) and "total_slots" in props:
        return _trusted(props["total_slots"], "total_slots in /props")
    if isinstance(slots, list) and slots:
        if all(isinstance(slot, dict) and "id" in slot for slot in slots):
            return _trusted(len(slots), "slots listed by /slots")
        return None, "/slots does not list slot objects: not trusted"
    return None, "the server reports no slot count"


def _trusted(value: object, where: str) -> tuple[int | None, str]:
    if isinstance(value, bool) or not isinstance(value, int):
        return None, f"the server reported {_shown(value)} {where}: not a count, not trusted"
    if not 1 <= value <= MAX_TRUSTED_SLOTS:
        return None, f"the server reported {value} {where}: not trusted (1 to {MAX_TRUSTED_SLOTS} expected)"
    return value, f"{value} ({where})"


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def wave_parallelism(latencies: Sequence[float]) -> int | None:
    """Requests served at once, from the latencies of identical requests sent together: None when the wave
    was served together (no sign of a queue), else len x fastest / slowest, rounded (timing noise makes a 2-slot
    server's 2.0 come out as 1.98), from 1 to len - 1."""
    if len(latencies) < 2 or min(latencies) <= 0:
        return None
    fastest, slowest = min(latencies), max(latencies)
    if slowest < QUEUED * fastest:
        return None
    return max(1, min(len(latencies) - 1, math.floor(len(latencies) * fastest / slowest + 0.5)))


def cannot_queue_past(solo: float, cap: int, timeout: float) -> str | None:
    """Why nothing is learned (None: learn): `cap` real calls served one at a time would still end within
    the request timeout, so no queue can make a request time out."""
    if solo * REAL_CALL * cap < timeout:
        return (
            f"not measured: {cap} calls served one at a time would end inside the {timeout:g} s request timeout "
            f"(a probe call took {solo * 1000:.0f} ms)"
        )
    return None


def worth_learning(solo: float, timeout: float) -> str | None:
    """Why the latency waves are skipped (None: run them). A wave of two to a one-slot server takes two calls'
    time, so it must fit well inside the request timeout; a call under `MEASURABLE` seconds shows no queue."""
    if solo < MEASURABLE:
        return f"a probe call took {solo * 1000:.0f} ms: too fast to show a queue, not limited"
    if 2 * solo > 0.8 * timeout:
        return f"a probe call took {solo:.1f} s of the {timeout:g} s request timeout: one request at a time"
    return None
