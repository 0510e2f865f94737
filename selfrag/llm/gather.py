"""Requests that arrive together are handled together: a gathering window in front of a batch function.

The engine fans a step's candidates out at once; a server that can decode several sequences in one pass (the
embedded model does) wants them as one batch. A `Batcher` owns one worker thread. `submit(job)` hands a job
over and returns a future; the worker takes the first waiting job, keeps gathering while jobs keep coming
(until none came for `Window.idle` seconds, `Window.max_wait` seconds passed since the first, or
`Window.max_size` jobs are in), then calls `handle(jobs)` once and settles each job's future with its own
slot of the result, in input order.

- One slot's failure is that job's alone: `handle` returns an exception in its slot and the others get their
  results. If `handle` itself raises, or returns the wrong number of slots, every job of that batch fails with
  that error; the worker goes on with the next batch.
- A job whose future was cancelled before its batch started (its client gave up) is left out of the batch.
- Loop-agnostic: jobs may come from any thread or event loop (`run` awaits the future in the caller's loop).
  Batches run one at a time, in the worker thread; jobs that arrive meanwhile form the next batch.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Generic, TypeVar

J = TypeVar("J")
R = TypeVar("R")

Handle = Callable[[Sequence[J]], Sequence["R | BaseException"]]


@dataclass(frozen=True, slots=True)
class Window:
    """When a batch closes: whichever comes first."""

    idle: float = 0.03  # seconds without a new job after the last one
    max_wait: float = 0.25  # seconds after the first job, however busy the arrivals
    max_size: int = 8  # jobs in one batch

    def __post_init__(self) -> None:
        if not (self.idle >= 0 and self.max_wait >= self.idle and self.max_size >= 1):
            raise ValueError(f"a gathering window needs 0 <= idle <= max_wait and max_size >= 1, got {self}")


class Batcher(Generic[J, R]):
    """Gathers concurrent jobs into batches for `handle` (see the module docstring)."""

    def __init__(self, handle: Handle[J, R], window: Window = Window(), *, name: str = "batcher") -> None:
        self._handle = handle
        self.window = window
        self._queue: queue.SimpleQueue[tuple[J, Future[R]] | None] = queue.SimpleQueue()
        self._worker = threading.Thread(target=self._work, name=name, daemon=True)
        self._started = threading.Lock()
        self._closed = False
        self.batches: list[int] = []  # the size of every batch handled so far (read by tests and benchmarks)

    def submit(self, job: J) -> Future[R]:
        """Queue `job`; its future settles when its batch has been handled."""
        with self._started:
            if self._closed:
                raise RuntimeError("this batcher is closed")
            if self._worker.ident is None:
                self._worker.start()
        future: Future[R] = Future()
        self._queue.put((job, future))
        return future

    async def run(self, job: J) -> R:
        """Submit `job` and await its result in the running event loop (cancelling it drops the job if its
        batch has not started)."""
        return await asyncio.wrap_future(self.submit(job))

    def close(self) -> None:
        """Stop the worker once the jobs already queued are handled; later submissions raise RuntimeError."""
        with self._started:
            self._closed = True
        if self._worker.ident is not None:
            self._queue.put(None)
            self._worker.join()

    def _work(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch, stop = self._gather(first)
            self._settle(batch)
            if stop:
                return

    def _gather(self, first: tuple[J, Future[R]]) -> tuple[list[tuple[J, Future[R]]], bool]:
        """The first job and those that follow it closely enough; True when a stop came in meanwhile."""
        window, batch = self.window, [first]
        deadline = time.monotonic() + window.max_wait
        while len(batch) < window.max_size:
            wait = min(window.idle, deadline - time.monotonic())
            if wait <= 0:
                break
            try:
                item = self._queue.get(timeout=wait)
            except queue.Empty:
                break
            if item is None:
                return batch, True
            batch.append(item)
        return batch, False

    def _settle(self, batch: list[tuple[J, Future[R]]]) -> None:
        live = [(job, future) for job, future in batch if future.set_running_or_notify_cancel()]
        if not live:
            return
        self.batches.append(len(live))
        try:
            results = list(self._handle([job for job, _ in live]))
            if len(results) != len(live):
                raise RuntimeError(f"a batch of {len(live)} jobs was handled into {len(results)} results")
        except Exception as error:  # handed to every job of the batch
            results = [error] * len(live)
        for (_, future), result in zip(live, results, strict=True):
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(result)
