"""Batched decoding without a model: the gathering window (gather.Batcher) and the pure planning of a batch
(batch_decode.prefix_tree, passes, batchable). The decode itself runs against the real model in
tests/local/test_batched.py."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence

import pytest

from selfrag.llm.batch_decode import Job, batchable, passes, prefix_tree
from selfrag.llm.gather import Batcher, Window
from selfrag.llm.kept import Keep, KeptPrefixes, Reuse, trunk


class Recorder:
    """A batch handler that answers each job with a function of it and records the batches it saw."""

    def __init__(self, answer=lambda job: job * 10, delay: float = 0.0) -> None:
        self.answer, self.delay = answer, delay
        self.seen: list[list[object]] = []

    def __call__(self, jobs: Sequence[object]) -> list[object]:
        self.seen.append(list(jobs))
        time.sleep(self.delay)
        return [self.answer(job) for job in jobs]


def batcher(handle, **window) -> Batcher:
    return Batcher(handle, Window(**{"idle": 0.05, "max_wait": 1.0, "max_size": 8, **window}))


async def test_a_fan_out_is_one_batch_and_each_caller_gets_its_own_result_in_order():
    handle = Recorder()
    gather = batcher(handle)
    results = await asyncio.gather(*(gather.run(job) for job in [3, 1, 4, 1, 5]))
    assert results == [30, 10, 40, 10, 50]
    assert handle.seen == [[3, 1, 4, 1, 5]]
    gather.close()


async def test_a_failing_slot_fails_only_its_own_caller():
    def answer(job):
        return ValueError(f"job {job} is bad") if job == 2 else job * 10

    gather = batcher(Recorder(answer))
    outcomes = await asyncio.gather(*(gather.run(job) for job in [1, 2, 3]), return_exceptions=True)
    assert outcomes[0] == 10 and outcomes[2] == 30
    assert isinstance(outcomes[1], ValueError) and str(outcomes[1]) == "job 2 is bad"
    gather.close()


async def test_a_handler_that_raises_fails_its_batch_and_the_next_batch_still_runs():
    calls = []

    def handle(jobs):
        calls.append(list(jobs))
        if len(calls) == 1:
            raise RuntimeError("decode failed")
        return [job * 10 for job in jobs]

    gather = batcher(handle)
    first = await asyncio.gather(gather.run(1), gather.run(2), return_exceptions=True)
    assert all(isinstance(outcome, RuntimeError) and str(outcome) == "decode failed" for outcome in first)
    assert await gather.run(7) == 70
    gather.close()


async def test_a_handler_that_returns_the_wrong_number_of_results_fails_the_batch_loudly():
    gather = batcher(lambda jobs: [1])
    outcomes = await asyncio.gather(gather.run(1), gather.run(2), return_exceptions=True)
    assert all(isinstance(outcome, RuntimeError) and "2 jobs" in str(outcome) for outcome in outcomes)
    gather.close()


def test_jobs_that_arrive_after_the_idle_gap_form_the_next_batch():
    handle = Recorder()
    gather = batcher(handle, idle=0.05)
    early = [gather.submit(job) for job in (1, 2)]
    time.sleep(0.3)  # longer than the idle gap: the first batch has closed
    late = [gather.submit(job) for job in (3, 4)]
    assert [f.result(5) for f in early + late] == [10, 20, 30, 40]
    assert handle.seen == [[1, 2], [3, 4]]
    gather.close()


def test_a_steady_trickle_is_cut_at_max_wait():
    handle = Recorder()
    gather = batcher(handle, idle=0.2, max_wait=0.25, max_size=8)
    futures = []
    for job in range(7):  # every 0.1 s: never idle for 0.2 s, so only max_wait closes a batch
        futures.append(gather.submit(job))
        time.sleep(0.1)
    assert [f.result(5) for f in futures] == [job * 10 for job in range(7)]
    sizes = [len(batch) for batch in handle.seen]
    assert sum(sizes) == 7 and max(sizes) <= 3 and len(sizes) >= 3
    assert [job for batch in handle.seen for job in batch] == list(range(7))  # arrival order kept
    gather.close()


def test_a_crowd_is_cut_at_max_size():
    handle = Recorder()
    gather = batcher(handle, idle=0.2, max_wait=1.0, max_size=3)
    futures = [gather.submit(job) for job in range(7)]
    assert [f.result(5) for f in futures] == [job * 10 for job in range(7)]
    assert handle.seen == [[0, 1, 2], [3, 4, 5], [6]]
    gather.close()


def test_jobs_arriving_while_a_batch_decodes_wait_and_form_the_next_one():
    handle = Recorder(delay=0.3)
    gather = batcher(handle, idle=0.02)
    first = gather.submit(1)
    time.sleep(0.1)  # the first batch (one job) is decoding now
    others = [gather.submit(job) for job in (2, 3, 4)]
    assert first.result(5) == 10 and [f.result(5) for f in others] == [20, 30, 40]
    assert handle.seen == [[1], [2, 3, 4]]
    gather.close()


def test_a_job_cancelled_before_its_batch_starts_is_left_out():
    started, release = threading.Event(), threading.Event()

    def handle(jobs):
        started.set()
        release.wait(5)
        return [job * 10 for job in jobs]

    gather = batcher(handle, idle=0.02)
    busy = gather.submit(1)
    assert started.wait(5)
    dropped, kept = gather.submit(2), gather.submit(3)
    dropped.cancel()
    release.set()
    assert busy.result(5) == 10 and kept.result(5) == 30
    assert gather.batches == [1, 1]
    gather.close()


def test_jobs_may_come_from_several_threads_and_event_loops():
    gather = batcher(Recorder(), idle=0.1)
    results: dict[int, int] = {}

    def caller(job: int) -> None:
        results[job] = asyncio.run(gather.run(job))

    threads = [threading.Thread(target=caller, args=(job,)) for job in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert results == {0: 0, 1: 10, 2: 20, 3: 30}
    gather.close()


def test_a_window_that_cannot_close_is_refused():
    with pytest.raises(ValueError, match="gathering window"):
        Window(idle=0.5, max_wait=0.1)
    with pytest.raises(ValueError, match="gathering window"):
        Window(max_size=0)


# -- planning a batch -----------------------------------------------------------------------------------------


def test_shared_prefixes_are_laid_out_once_and_each_sequence_reads_its_tokens_in_order():
    prompts = [(1, 2, 3, 7, 8), (1, 2, 3, 9), (1, 2, 4), (1, 2, 3, 7, 8)]
    entries = prefix_tree(prompts)
    assert [(e.token, e.pos, e.seqs) for e in entries[:3]] == [
        (1, 0, (0, 1, 2, 3)),
        (2, 1, (0, 1, 2, 3)),
        (3, 2, (0, 1, 3)),
    ]
    assert len(entries) == len({prompt[: n + 1] for prompt in prompts for n in range(len(prompt))})  # one per node
    for seq, prompt in enumerate(prompts):
        mine = [e for e in entries if seq in e.seqs]
        assert [e.token for e in mine] == list(prompt) and [e.pos for e in mine] == list(range(len(prompt)))
        assert [e for e in mine if seq in e.ends] == [mine[-1]]  # logits where (and only where) the prompt ends


def test_a_prompt_that_is_a_prefix_of_another_ends_inside_the_shared_part():
    entries = prefix_tree([(5, 6), (5, 6, 7), ()])
    assert [(e.token, e.seqs, e.ends) for e in entries] == [(5, (0, 1), ()), (6, (0, 1), (0,)), (7, (1,), (1,))]


def job(prompt: Sequence[int], max_tokens: int) -> Job:
    return Job(tuple(prompt), max_tokens, (), None, 0.0, 40, 0.95, 0.05, 1.0, 1.1, 0.0, 0.0, None, "m")


def test_passes_count_shared_prefixes_once_and_respect_the_cache_and_the_sequence_limit():
    shared = list(range(100))
    jobs = [job(shared + [1000 + i] * 10, 20) for i in range(4)]  # 100 shared + 10 own + 20 to write each
    assert passes(jobs, n_ctx=100 + 4 * 30, n_seq_max=8) == [[0, 1, 2, 3]]
    assert passes(jobs, n_ctx=100 + 4 * 30 - 1, n_seq_max=8) == [[0, 1, 2], [3]]
    assert passes(jobs, n_ctx=10_000, n_seq_max=3) == [[0, 1, 2], [3]]
    unrelated = [job([i] * 100, 20) for i in range(3)]
    assert passes(unrelated, n_ctx=250, n_seq_max=8) == [[0, 1], [2]]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"messages": [], "response_format": {"type": "json_object"}}, True),
        ({"messages": [], "n": 1, "stream": False, "logprobs": False}, True),
        ({"messages": [], "stream": True}, False),
        ({"messages": [], "logprobs": True, "top_logprobs": 5}, False),
        ({"messages": [], "n": 2}, False),
        ({"messages": [], "tools": [{"type": "function"}]}, False),
        ({"messages": [], "logit_bias": {"1": 5}}, False),
        ({"messages": [], "mirostat_mode": 2}, False),
    ],
)
def test_only_plain_chat_requests_are_batched(body, expected):
    assert batchable(body) is expected


def test_a_closed_batcher_finishes_what_was_queued_and_refuses_more():
    gather = batcher(Recorder(delay=0.1))
    queued = [gather.submit(job) for job in (1, 2)]
    gather.close()
    assert [f.result(5) for f in queued] == [10, 20]
    with pytest.raises(RuntimeError, match="closed"):
        gather.submit(3)


# -- kept prefixes (llm/kept.py): what a batch reads from the cache and what it leaves there ----------------

SYSTEM = tuple(range(100, 140))  # 40 tokens every candidate prompt starts with


def test_a_round_keeps_its_trunk_and_the_next_round_reads_it_up_to_where_its_prompts_part():
    kept = KeptPrefixes(min_reuse=8)
    first = [(*SYSTEM, 1, 2, 3), (*SYSTEM, 1, 2, 4)]
    assert kept.reuse(first) == Reuse(None, 0)
    assert kept.keep(first, Reuse(None, 0)) == Keep(slot=0, start=0, end=42)
    assert kept.prefixes[0] == (*SYSTEM, 1, 2) and kept.cells == 42
    second = [(*SYSTEM, 1, 9), (*SYSTEM, 7)]
    read = kept.reuse(second)
    assert read == Reuse(0, 40)  # the system prompt, not the first round's question
    assert kept.keep(second, read) == Keep(slot=0, start=40, end=40)  # the trunk is the system prompt: trimmed
    assert kept.prefixes[0] == SYSTEM


def test_every_prompt_still_evaluates_its_last_token():
    kept = KeptPrefixes(min_reuse=8)
    kept.keep([(*SYSTEM, 1), (*SYSTEM, 2)], Reuse(None, 0))
    assert kept.reuse([SYSTEM, (*SYSTEM, 5)]) == Reuse(0, 39)  # the prompt that is all kept reads one token less


def test_a_lone_prompt_or_a_short_trunk_is_not_kept():
    kept = KeptPrefixes(min_reuse=8)
    assert kept.keep([(*SYSTEM, 1)], Reuse(None, 0)) is None  # a lone request's trunk is its whole prompt
    assert kept.keep([(1, 2, 3, 4), (1, 2, 3, 5)], Reuse(None, 0)) is None  # 3 shared tokens: not worth a keeper
    assert kept.cells == 0


def test_a_trunk_is_kept_up_to_max_tokens():
    kept = KeptPrefixes(min_reuse=8, max_tokens=10)
    assert kept.keep([(*SYSTEM, 1), (*SYSTEM, 2)], Reuse(None, 0)) == Keep(0, 0, 10)
    assert kept.prefixes[0] == SYSTEM[:10]


def test_with_several_keepers_a_barely_read_one_is_not_overwritten_the_least_recently_used_is():
    kept = KeptPrefixes(slots=2, min_reuse=8)
    other = tuple(range(500, 540))
    kept.keep([(*SYSTEM, 1), (*SYSTEM, 2)], Reuse(None, 0))  # slot 0
    kept.keep([(*other, 1), (*other, 2)], kept.reuse([(*other, 1), (*other, 2)]))  # nothing read: slot 1
    assert kept.prefixes == [SYSTEM, other]
    header = [(100, 101, 7, 8), (100, 101, 7, 9)]  # shares 2 tokens with slot 0: read, but below min_reuse
    read = kept.reuse(header)
    assert read == Reuse(0, 2)
    third = tuple(range(900, 940))
    assert kept.keep([(*third, 1), (*third, 2)], read).slot == 1  # slot 0 was used last: slot 1 goes


def test_forget_empties_every_keeper_and_bad_settings_are_refused():
    kept = KeptPrefixes(min_reuse=8)
    kept.keep([(*SYSTEM, 1), (*SYSTEM, 2)], Reuse(None, 0))
    kept.forget()
    assert kept.cells == 0 and kept.reuse([(*SYSTEM, 1)]) == Reuse(None, 0)
    with pytest.raises(ValueError):
        KeptPrefixes(slots=0)
    assert trunk([]) == () and trunk([(1, 2, 3), (1, 2), (1, 2, 4)]) == (1, 2)


def client(gone: asyncio.Event | None = None):  # type: ignore[no-untyped-def]
    """An ASGI `receive` of a client whose body is empty and who disconnects when `gone` is set (never if None)."""
    sent = False

    async def receive():  # type: ignore[no-untyped-def]
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await (gone or asyncio.Event()).wait()
        return {"type": "http.disconnect"}

    return receive


def into(messages: list):  # type: ignore[no-untyped-def]
    """An ASGI `send` that keeps what it is sent."""

    async def send(message):  # type: ignore[no-untyped-def]
        messages.append(message)

    return send


async def test_a_request_whose_client_gave_up_waiting_for_the_gate_never_reaches_the_app():
    pytest.importorskip("llama_cpp.server.types")  # the gate reads the app's request schemas
    from selfrag.llm.local import Gate

    seen, release = [], asyncio.Event()

    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        seen.append(scope["path"])
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    gate, replies = Gate(app, logprobs=False), []
    scope = {"type": "http", "path": "/v1/models", "method": "GET"}
    first = asyncio.create_task(gate(scope, client(), into(replies)))
    await asyncio.sleep(0.05)  # the first request holds the gate
    gone, answered = asyncio.Event(), []
    waiting = asyncio.create_task(gate({**scope, "path": "/v1/second"}, client(gone), into(answered)))
    await asyncio.sleep(0.05)
    gone.set()  # its client times out while it waits for the lock
    await asyncio.wait_for(waiting, 1)
    release.set()
    await asyncio.wait_for(first, 1)
    assert seen == ["/v1/models"] and answered == [] and len(replies) == 2
    await asyncio.wait_for(gate({**scope, "path": "/v1/third"}, client(), into(replies)), 1)  # the lock is free
    assert seen == ["/v1/models", "/v1/third"]


async def test_a_batched_request_whose_client_gave_up_before_its_batch_is_not_decoded():
    pytest.importorskip("llama_cpp.server.types")
    from selfrag.llm.local import _while_connected

    started, release = threading.Event(), threading.Event()
    seen: list[list[int]] = []

    def handle(jobs):  # type: ignore[no-untyped-def]
        seen.append(list(jobs))
        started.set()
        release.wait(5)
        return [job * 10 for job in jobs]

    gather = batcher(handle, idle=0.02)
    busy = asyncio.ensure_future(_while_connected(gather.run(1), client()))
    assert await asyncio.to_thread(started.wait, 5)  # the first batch decodes
    gone = asyncio.Event()
    dropped = asyncio.ensure_future(_while_connected(gather.run(2), client(gone)))
    kept = asyncio.ensure_future(_while_connected(gather.run(3), client()))
    await asyncio.sleep(0.05)
    gone.set()
    assert await asyncio.wait_for(dropped, 1) is None  # answered at once: nothing to wait for
    release.set()
    assert await asyncio.wait_for(busy, 5) == 10 and await asyncio.wait_for(kept, 5) == 30
    assert seen == [[1], [3]]
    gather.close()
