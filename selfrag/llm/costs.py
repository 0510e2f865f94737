"""What a capability costs, and whether the engine uses it.

The probe times the same small call (temperature 0, 16 tokens) plain, with logprobs and with the JSON-schema
constraint, and compares time per completion token, so a schema reply shorter than the plain one is not
counted as cheap. Logprobs buy soft scores (the retrieval threshold, label probabilities); on some servers
they cost several times the call (llama-cpp-python ranks the whole vocabulary in Python for every token).
`--logprobs auto` uses them only while they cost at most `LOGPROBS_WORTH` times a plain call; `on` and `off`
are the user's word. The schema constraint is always used where offered: a reply that fails validation costs
a whole re-ask, more than any grammar; its cost is measured and reported.

Pure functions; the probe (probe.py) sends the calls.
"""

from __future__ import annotations

from dataclasses import dataclass

LOGPROBS_WORTH = 2.0  # auto: use logprobs while a call with them takes at most this many times one without


@dataclass(frozen=True, slots=True)
class Timed:
    """One probe call: its wall time and the completion tokens it reported (0 when it did not say)."""

    seconds: float
    tokens: int = 0


def relative_cost(feature: Timed, plain: Timed) -> float:
    """Time per completion token of `feature` over that of `plain` (raw time when a count is missing)."""
    if feature.tokens > 0 and plain.tokens > 0:
        per_token = (feature.seconds / feature.tokens) / max(plain.seconds / plain.tokens, 1e-9)
    else:
        per_token = feature.seconds / max(plain.seconds, 1e-9)
    return round(per_token, 2)


def choose_logprobs(mode: str, offered: bool, cost: float | None) -> tuple[bool, str]:
    """(use logprobs?, why), for `mode` auto | on | off, given whether the endpoint offers them and what they
    cost relative to a plain call (None: not measured, the calls were too fast to matter)."""
    if not offered:
        asked = " (--logprobs on was asked)" if mode == "on" else ""
        return False, f"the endpoint gives no logprobs{asked}"
    if mode == "off":
        return False, "off: asked (--logprobs off)"
    if mode == "on":
        measured = f", {cost:g}x a call without" if cost is not None else ""
        return True, f"on: asked (--logprobs on{measured})"
    if cost is None:
        return True, "on: calls are too fast for their cost to matter"
    if cost <= LOGPROBS_WORTH:
        return True, f"on: cheap, {cost:g}x a call without (auto uses them up to {LOGPROBS_WORTH:g}x)"
    return False, (
        f"off: they cost {cost:g}x a call without (auto uses them up to {LOGPROBS_WORTH:g}x); "
        "--logprobs on to use them anyway"
    )
