"""The adaptive concurrency limit (pure AIMD state) and the gate that enforces it."""

from __future__ import annotations

import asyncio

from selfrag.llm.limiter import SPACING, AdaptiveLimit, Gate, retry_after


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
