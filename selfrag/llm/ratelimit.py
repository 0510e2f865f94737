"""Rate limits (429) ridden out: when to send again, and whether the answer can afford to wait that long.

One `Pause` per endpoint, shared by every caller: a 429 sets the time before which nobody sends (the server's
Retry-After or retry-after-ms; without one, exponential backoff from 0.5 s doubling to 30 s, less up to a
quarter at random so callers do not come back together). Each caller then waits that out before its next
request, if the answer's deadline leaves room; otherwise the answer ends at once, naming the wait. Without a
deadline (doctor, a judge's own calls) a wait over two minutes is not waited, and a call gives up after
`UNBOUNDED_ATTEMPTS` 429s in a row. The loop that retries lives in openai_chat.py (`_patiently`), the single
owner of 429 retries on the clients it builds; the adaptive limit (limiter.py) still cuts calls in flight.

Pure: the clock and the random source are passed in.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ..errors import FatalLLMError

BACKOFF = (0.5, 30.0)  # first wait and largest wait when the server names none (seconds)
UNBOUNDED_WAIT = 120.0  # without a deadline, a longer wait is not waited (the SDK's own limit)
UNBOUNDED_ATTEMPTS = 10  # without a deadline, 429s in a row one call rides out


@dataclass
class Pause:
    until: float = 0.0  # clock time before which no request is sent
    why: str = ""  # what set it, for the error when the wait cannot be afforded
    rng: random.Random = field(default_factory=random.Random)

    def rate_limited(self, now: float, asked: float | None, attempt: int) -> None:
        """A 429 on a call's `attempt`-th try (0 first); `asked` is the server's Retry-After in seconds."""
        if asked is not None:
            wait, why = max(0.0, asked), f"asks to wait {asked:.0f} s before any retry (429 Retry-After)"
        else:
            first, largest = BACKOFF
            wait = min(largest, first * 2 ** min(attempt, 16)) * (1 - 0.25 * self.rng.random())
            why = f"kept answering 429 (rate limited); the next try is {wait:.0f} s away"
        if now + wait > self.until:
            self.until, self.why = now + wait, why

    def wait(self, now: float, left: float | None) -> float:
        """Seconds to wait before sending; FatalLLMError when that is past the answer's deadline (`left`
        seconds away; None: no deadline, then waits over UNBOUNDED_WAIT are refused)."""
        wait = self.until - now
        if wait <= 0:
            return 0.0
        if left is not None and wait >= left:
            raise FatalLLMError(
                f"the endpoint {self.why}, beyond the answer's deadline ({max(0.0, left):.0f} s left); try again later",
                status=429,
            )
        if left is None and wait > UNBOUNDED_WAIT:
            raise FatalLLMError(f"the endpoint {self.why}; try again later", status=429)
        return wait
