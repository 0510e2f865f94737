"""A circuit breaker per endpoint: stop calling a server that keeps failing.

It opens after `threshold` consecutive transport failures (each already retried by the SDK), or at once on a
fatal error (bad key, unknown model, exhausted quota). While open, calls fail at once; after `cooldown`
seconds one trial call goes through (half-open): success closes it, failure opens it again; a trial that ends
without a verdict (cancelled by a deadline) frees the slot for the next one. A fatal opening never closes: the
configuration has to change. The capability probe goes through the breaker too, so a dead endpoint is not
probed again and again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import FatalLLMError, LLMError


@dataclass
class Breaker:
    threshold: int = 8
    cooldown: float = 30.0
    clock: Callable[[], float] = field(default=time.monotonic)
    failures: int = 0
    opened_at: float | None = None
    fatal: str | None = None
    trial_running: bool = False

    def check(self) -> bool:
        """Raise instead of calling when the breaker is open; let one trial through after the cooldown.
        True when this call is that trial: the caller ends it with `end_trial()` whatever happens."""
        self.check_fatal()
        if self.opened_at is None:
            return False
        waited = self.clock() - self.opened_at
        if waited < self.cooldown or self.trial_running:
            raise LLMError(
                f"the endpoint failed {self.failures} times in a row; not calling it for "
                f"{max(0.0, self.cooldown - waited):.0f}s more"
            )
        self.trial_running = True
        return True

    def end_trial(self) -> None:
        """The trial call is over: a cancelled or inconclusive trial must not block every later call."""
        self.trial_running = False

    def check_fatal(self) -> None:
        """Raise when a fatal error opened the breaker for good."""
        if self.fatal is not None:
            raise FatalLLMError(f"not calling the endpoint again: {self.fatal}")

    def success(self) -> None:
        self.failures, self.opened_at, self.trial_running = 0, None, False

    def failure(self) -> None:
        self.failures += 1
        self.trial_running = False
        if self.failures >= self.threshold:
            self.opened_at = self.clock()

    def trip(self, reason: str) -> None:
        self.fatal = reason
