"""The adaptive concurrency limit (pure AIMD state), the gate that enforces it, and the pause after a 429."""

from __future__ import annotations

import asyncio
import random

import pytest

from selfrag.errors import FatalLLMError
from selfrag.llm.limiter import SPACING, AdaptiveLimit, Gate, retry_after
from selfrag.llm.ratelimit import BACKOFF, Pause


def test_one_cut_per_episode_and_the_next_waits_for_the_spacing_or_the_servers_retry_after():
    limit = AdaptiveLimit(cap=10)
    limit.rate_limited(100.0)
    limit.rate_limited(101.0)  # same episode
    assert limit.allowed == 8
    limit.rate_limited(100.0 + SPACING, wait=60.0)  # a new episode; the server asks for a minute
    assert limit.allowed == 6
    limit.rate_limited(100.0 + 2 * SPACING)  # within the minute: no cut
    assert limit.allowed == 6
    limit.rate_limited(100.0 + SPACING + 60.0)
    assert [allowed for _, allowed, _ in limit.changes] == [8, 6, 5]


def test_the_limit_never_falls_below_one_and_never_grows_past_the_cap():
    limit = AdaptiveLimit(cap=3)
    for episode in range(20):
        limit.rate_limited(episode * SPACING)
    assert limit.allowed == 1
    for _ in range(1000):
        limit.succeeded(0.0)
    assert limit.allowed == 3 and limit.limit == 3.0


def test_retry_after_reads_seconds_milliseconds_and_rejects_garbage():
    assert retry_after({"retry-after-ms": "250"}) == 0.25
    assert retry_after({"retry-after": "7"}) == 7.0
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({"retry-after": "inf"}) is None
    assert retry_after({}) is None


async def test_the_gate_holds_the_limit_and_a_cancelled_waiter_never_leaks_a_slot():
    gate, inside, peak = Gate(AdaptiveLimit(cap=2)), [0], [0]

    async def call(seconds):
        async with gate:
            inside[0] += 1
            peak[0] = max(peak[0], inside[0])
            try:
                await asyncio.sleep(seconds)
            finally:
                inside[0] -= 1

    tasks = [asyncio.create_task(call(0.02)) for _ in range(6)]
    await asyncio.sleep(0)
    tasks[3].cancel()  # waiting in the queue
    await asyncio.sleep(0.025)  # the first two leave; two waiters are handed their slots
    tasks[2].cancel()  # may be cancelled after it was handed a slot: it must give it back
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert peak[0] == 2
    assert sum(isinstance(r, asyncio.CancelledError) for r in results) >= 1
    assert gate.in_flight == 0 and not gate._waiters
    async with gate:  # and the gate still lets callers through
        assert gate.in_flight == 1


async def test_a_waiter_cancelled_between_its_wake_up_and_its_turn_passes_the_slot_on():
    gate = Gate(AdaptiveLimit(cap=1))
    order = []

    async def call(name):
        async with gate:
            order.append(name)

    await gate.__aenter__()  # the test holds the one slot
    woken, next_in_line = asyncio.create_task(call("woken")), asyncio.create_task(call("next"))
    await asyncio.sleep(0)  # both queue
    await gate.__aexit__()  # hands the slot to "woken" (no suspension: its task has not run yet)
    woken.cancel()
    async with asyncio.timeout(2):  # a leaked slot would leave "next" waiting for ever
        await asyncio.gather(woken, next_in_line, return_exceptions=True)
    assert order == ["next"] and gate.in_flight == 0


def test_a_429_pauses_every_caller_for_the_servers_retry_after_or_a_jittered_backoff():
    pause = Pause(rng=random.Random(7))
    pause.rate_limited(100.0, 2.0, attempt=0)
    assert pause.wait(100.0, left=10.0) == 2.0 and pause.wait(101.5, left=10.0) == 0.5
    pause.rate_limited(100.5, 0.0, attempt=0)  # a shorter answer later does not cut the longer wait short
    assert pause.wait(101.0, left=None) == 1.0
    waits = []
    for attempt in (0, 1, 3, 12):
        backoff = Pause(rng=random.Random(attempt))
        backoff.rate_limited(0.0, None, attempt)
        waits.append(backoff.wait(0.0, left=None))
    low, high = BACKOFF
    for wait, attempt in zip(waits, (0, 1, 3, 12), strict=True):
        full = min(high, low * 2**attempt)
        assert 0.75 * full <= wait <= full  # exponential, capped, less up to a quarter at random


def test_a_wait_past_the_deadline_is_refused_at_once_naming_the_wait():
    pause = Pause()
    pause.rate_limited(0.0, 30.0, attempt=0)
    with pytest.raises(FatalLLMError, match=r"asks to wait 30 s .*deadline \(9 s left\)"):
        pause.wait(0.0, left=9.0)
    assert pause.wait(0.0, left=31.0) == 30.0
    pause.rate_limited(0.0, 600.0, attempt=0)
    with pytest.raises(FatalLLMError, match="asks to wait 600 s"):
        pause.wait(0.0, left=None)  # no deadline: a wait over two minutes is not waited


def test_fitting_the_server_lowers_the_cap_so_growth_never_passes_it():
    limit = AdaptiveLimit(cap=32)
    limit.fit(0.0, 2, "parallel")
    assert limit.allowed == 2 and limit.changes[-1] == (0.0, 2, "parallel")
    for _ in range(100):
        limit.succeeded(1.0)
    assert limit.allowed == 2
    limit.fit(2.0, 50, "parallel")  # never raises the configured cap
    assert limit.allowed == 2
