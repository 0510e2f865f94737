"""The capability probe: what an endpoint supports, what each capability costs, how many calls it serves at once.

Run once per endpoint (openai_chat.py sends the requests; every one is counted in the answer's Meter):

1. **Features.** One combined call (JSON schema + logprobs + n=2). If the server rejects it, one call per
   feature: structured-output flavours in order, then logprobs, then n.
2. **Costs** (costs.py), only when that call took `MEASURABLE` seconds or more (below, no cost matters): the
   same small call at temperature 0, plain, with logprobs (for `--logprobs auto` only), and with the schema. A
   cost over the limit is measured once more and the lower figure kept: a passing stall is not a cost.
3. **Parallelism** (parallel.py), unless even one slot could not make a request time out: the server's slot
   count from its root (`GET /props`, else `GET /slots`), else, for a server on this machine or a private
   network, waves of identical plain calls sent together, unless a call is too fast to show a queue or too
   slow for a wave to fit the request timeout.

`quick` (the first process of an endpoint whose findings are remembered, capcache.py): at most two rounds of
calls stand before the first answer. The feature call goes out together with the server's slot report; the
logprobs cost is measured only when `--logprobs auto` must decide on it, its plain and logprobs calls sent
together unless the server serves one call at a time (then one after the other, as before); the schema's cost
rides in that round or is left to `selfrag doctor --refresh`. Without a slot report, and only where a queue could
make a request time out, one latency wave (of 4, or 2 when 4 would not fit the timeout) sent once, in the second
round: a slow reply taken for a queue costs speed until the entry ages out (`selfrag doctor --refresh` sends
the waves twice), a queue missed costs timeouts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..config import EndpointConfig
from .base import Capabilities
from .costs import LOGPROBS_WORTH, Timed, choose_logprobs, relative_cost
from .parallel import (
    MEASURABLE,
    WAVES,
    Parallelism,
    cannot_queue_past,
    reported_slots,
    wave_parallelism,
    worth_learning,
)

PROBE_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["answer"],
    "additionalProperties": False,
}
SCHEMA_FORMAT = {"type": "json_schema", "json_schema": {"name": "probe", "schema": PROBE_SCHEMA, "strict": True}}
FLAVOURS = (
    ("json_schema", SCHEMA_FORMAT),
    ("json_object_schema", {"type": "json_object", "schema": PROBE_SCHEMA}),
    ("json_object", {"type": "json_object"}),
)
ASK = [{"role": "user", "content": 'Is the sky blue? Reply as JSON: {"answer": "yes"} or "no".'}]
COUNT = [{"role": "user", "content": "Count from one to twenty in words, separated by spaces."}]
COST_TOKENS = 16


@dataclass(frozen=True, slots=True)
class Trial:
    """A probe call the server accepted: the parsed completion and how long it took."""

    reply: Any
    timed: Timed | None  # None: the HTTP client was passed in by the caller and its responses are not observed


Attempt = Callable[..., Awaitable[Trial | None]]  # one chat call with these params; None: the server rejected it
Fetch = Callable[[str], Awaitable[object]]  # GET a path at the server's root: its JSON, or None


async def probe(
    attempt: Attempt,
    fetch: Fetch,
    model: str,
    settings: EndpointConfig,
    *,
    private: bool = True,
    quick: bool = False,
) -> Capabilities:
    """`private`: the server runs on this machine or a private network, where latency shows a queue; a hosted
    API's latency varies too much for that (its limits come as 429s), so it is asked for slots only. `quick`:
    at most two rounds of calls (see the module's docstring)."""
    if quick:
        return await _quick(attempt, fetch, model, settings, private)
    structured, offered, n, first = await _features(attempt, model)
    costs: dict[str, float] = {}
    solo = first.seconds if first is not None else None  # the server's time for one call (None: not observed)
    if solo is not None and solo >= MEASURABLE:
        measure_logprobs = offered and settings.logprobs == "auto"  # on / off: the user decided, spare the calls
        costs, solo = await _costs(attempt, model, structured, measure_logprobs, settings.top_logprobs, solo)
    use, reason = choose_logprobs(settings.logprobs, offered, costs.get("logprobs"))
    parallel = await _parallelism(attempt, fetch, model, solo, settings, private)
    return Capabilities(
        model,
        structured,
        use,
        n,
        logprobs_offered=offered,
        logprobs_reason=reason,
        costs=tuple(costs.items()),
        parallel=parallel.limit,
        parallel_reason=parallel.detail,
    )


async def _quick(attempt: Attempt, fetch: Fetch, model: str, settings: EndpointConfig, private: bool) -> Capabilities:
    """The features and the slot report in one round; the logprobs cost, or one latency wave, in a second only
    when needed (both: a third)."""
    features, props = await asyncio.gather(_features(attempt, model), fetch("/props"))
    structured, offered, n, first = features
    slots = None if isinstance(props, dict) and "total_slots" in props else await fetch("/slots")
    count, note = reported_slots(props, slots)
    solo = first.seconds if first is not None else None
    costs: dict[str, float] = {}
    if solo is not None and solo >= MEASURABLE and offered and settings.logprobs == "auto":
        costs = await _costs_together(attempt, model, structured, settings.top_logprobs, together=count != 1)
    use, reason = choose_logprobs(settings.logprobs, offered, costs.get("logprobs"))
    if count is not None:
        parallel = Parallelism(count, "server", f"the server reports {note}")
    elif solo is None:
        parallel = Parallelism(None, "none", "not measured: no probe call was timed")
    elif harmless := cannot_queue_past(solo, settings.max_concurrency, settings.timeout):
        parallel = Parallelism(None, "none", harmless)
    elif not private:
        parallel = Parallelism(None, "none", "not measured: a hosted API (its limits come as 429s)")
    else:
        parallel = _skipped(solo, settings.timeout) or await _one_wave(attempt, model, solo, settings)
    return Capabilities(
        model, structured, use, n, logprobs_offered=offered, logprobs_reason=reason, costs=tuple(costs.items()),
        parallel=parallel.limit, parallel_reason=parallel.detail,
    )  # fmt: skip


async def _costs_together(
    attempt: Attempt, model: str, structured: str, top_logprobs: int, *, together: bool
) -> dict[str, float]:
    """The logprobs cost (and the schema's, where offered) from calls sent in one round when the server serves
    several at once (`together`), else one after the other. A logprobs cost over the limit is measured once
    more, one call after the other, and the lower figure kept: a queue or a passing stall is not a cost."""
    base = {"model": model, "messages": COUNT, "max_tokens": COST_TOKENS, "temperature": 0}
    response_format = dict(FLAVOURS).get(structured) if structured != "json_object" else None
    calls = [base, {**base, "logprobs": True, "top_logprobs": top_logprobs}]
    if response_format is not None and together:
        calls.append({**base, "response_format": response_format})
    if together:
        trials = await asyncio.gather(*(attempt(**params) for params in calls))
    else:
        trials = [await attempt(**params) for params in calls]
    timed = [t.timed if t is not None else None for t in trials]
    plain = timed[0]
    costs: dict[str, float] = {}
    if plain is None:
        return costs
    if timed[1] is not None:
        cost = relative_cost(timed[1], plain)
        if cost > LOGPROBS_WORTH:
            again_plain, again = await attempt(**calls[0]), await attempt(**calls[1])
            if again_plain is not None and again is not None and again_plain.timed and again.timed:
                cost = min(cost, relative_cost(again.timed, again_plain.timed))
        costs["logprobs"] = cost
    if len(timed) > 2 and timed[2] is not None:
        costs["schema"] = relative_cost(timed[2], plain)
    return costs


async def _features(attempt: Attempt, model: str) -> tuple[str, bool, bool, Timed | None]:
    """(structured flavour, logprobs offered, n offered, the time of the first accepted call)."""
    combined = await attempt(
        model=model, messages=ASK, max_tokens=16, response_format=SCHEMA_FORMAT, logprobs=True, top_logprobs=5, n=2
    )
    if combined is not None:
        return "json_schema", has_logprobs(combined.reply), len(combined.reply.choices or []) == 2, combined.timed
    structured, trials = "none", []
    for flavour, response_format in FLAVOURS:
        trial = await attempt(model=model, messages=ASK, max_tokens=16, response_format=response_format)
        if trial is not None:
            structured = flavour
            trials.append(trial)
            break
    logprob_trial = await attempt(model=model, messages=ASK, max_tokens=1, logprobs=True, top_logprobs=5)
    n_trial = await attempt(model=model, messages=ASK, max_tokens=1, n=2)
    offered = logprob_trial is not None and has_logprobs(logprob_trial.reply)
    n = n_trial is not None and len(n_trial.reply.choices or []) == 2
    first = next((t.timed for t in (*trials, logprob_trial, n_trial) if t is not None), None)
    return structured, offered, n, first


async def _costs(
    attempt: Attempt, model: str, structured: str, logprobs: bool, top_logprobs: int, solo: float
) -> tuple[dict[str, float], float]:
    """Relative costs of logprobs (when `logprobs`) and of the schema (where offered), and a plain call's time."""
    base = {"model": model, "messages": COUNT, "max_tokens": COST_TOKENS, "temperature": 0}
    plain = await attempt(**base)
    if plain is None or plain.timed is None:
        return {}, solo
    costs: dict[str, float] = {}
    if logprobs:
        cost = await _logprobs_cost(attempt, base, plain.timed, top_logprobs)
        if cost is not None:
            costs["logprobs"] = cost
    response_format = dict(FLAVOURS).get(structured)
    if response_format is not None and structured != "json_object":
        constrained = await attempt(**base, response_format=response_format)
        if constrained is not None and constrained.timed is not None:
            costs["schema"] = relative_cost(constrained.timed, plain.timed)
    return costs, plain.timed.seconds


async def _logprobs_cost(attempt: Attempt, base: dict[str, Any], plain: Timed, top_logprobs: int) -> float | None:
    with_logprobs = await attempt(**base, logprobs=True, top_logprobs=top_logprobs)
    if with_logprobs is None or with_logprobs.timed is None:
        return None
    cost = relative_cost(with_logprobs.timed, plain)
    if cost > LOGPROBS_WORTH:  # measure once more: a passing stall of either call is not a cost
        again_plain, again = await attempt(**base), await attempt(**base, logprobs=True, top_logprobs=top_logprobs)
        if again_plain is not None and again is not None and again_plain.timed and again.timed:
            cost = min(cost, relative_cost(again.timed, again_plain.timed))
    return cost


async def _parallelism(
    attempt: Attempt, fetch: Fetch, model: str, solo: float | None, settings: EndpointConfig, private: bool
) -> Parallelism:
    if solo is None:
        why = "no probe call was timed (the server refused them, or a client passed in is not observed)"
        return Parallelism(None, "none", f"not measured: {why}")
    harmless = cannot_queue_past(solo, settings.max_concurrency, settings.timeout)
    if harmless is not None:
        return Parallelism(None, "none", harmless)
    props = await fetch("/props")
    slots = None if isinstance(props, dict) and "total_slots" in props else await fetch("/slots")
    count, note = reported_slots(props, slots)
    if count is not None:
        return Parallelism(count, "server", f"the server reports {note}")
    prefix = f"{note}; " if "not trusted" in note else ""
    if not private:
        why = "a hosted API: its latency varies too much to show a queue, and its limits come as 429s"
        return Parallelism(None, "none", f"{prefix}not measured: {why}")
    learned = _skipped(solo, settings.timeout) or await _waves(attempt, model, settings.max_concurrency)
    return Parallelism(learned.limit, learned.source, prefix + learned.detail)


async def _one_wave(attempt: Attempt, model: str, solo: float, settings: EndpointConfig) -> Parallelism:
    """One wave of identical plain calls, of 4 (2 when 4 one after the other would not fit the timeout)."""
    size = 4 if 4 * solo <= 0.8 * settings.timeout else 2
    size = min(size, settings.max_concurrency)
    if size < 2:
        return Parallelism(None, "none", "not measured (max_concurrency 1)")
    params = {"model": model, "messages": COUNT, "max_tokens": COST_TOKENS, "temperature": 0}
    wave = await _wave(attempt, params, size)
    if wave is None:
        return Parallelism(None, "none", "a latency wave failed: not limited")
    served, ratio = wave
    if served is None:
        detail = f"at least {size}: {size} identical calls sent together took about as long as one"
        return Parallelism(None, "latency", detail)
    return Parallelism(
        served, "latency",
        f"learned from latency: {size} identical calls sent together once, the slowest took {ratio:.1f}x the fastest",
    )  # fmt: skip


def _skipped(solo: float, timeout: float) -> Parallelism | None:
    why = worth_learning(solo, timeout)
    if why is None:
        return None
    return Parallelism(None if solo < MEASURABLE else 1, "latency", why)


async def _waves(attempt: Attempt, model: str, cap: int) -> Parallelism:
    """Learn from latency: identical plain calls sent together, 2 then 4. A wave that looks queued is sent once
    more and the larger estimate kept, so one slow reply is not taken for a queue."""
    params = {"model": model, "messages": COUNT, "max_tokens": COST_TOKENS, "temperature": 0}
    together = 0
    for size in (s for s in WAVES if s <= cap):
        wave = await _wave(attempt, params, size)
        if wave is not None and wave[0] is not None:
            again = await _wave(attempt, params, size)
            if again is not None:
                wave = (None if again[0] is None else max(wave[0], again[0]), wave[1])
        if wave is None:
            return Parallelism(None, "none", "a latency wave failed: not limited")
        served, ratio = wave
        if served is None:
            together = size
            continue
        return Parallelism(
            served,
            "latency",
            f"learned from latency: {size} identical calls sent together, the slowest took {ratio:.1f}x the fastest",
        )
    if together == 0:
        return Parallelism(None, "none", "not measured (max_concurrency 1)")
    return Parallelism(
        None, "latency", f"at least {together}: {together} identical calls sent together took about as long as one"
    )


async def _wave(attempt: Attempt, params: dict[str, Any], size: int) -> tuple[int | None, float] | None:
    """(requests served at once, or None when served together; slowest over fastest), None when a call failed."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(attempt(**params)) for _ in range(size)]
    except BaseExceptionGroup as failed:  # the first failure as itself (an LLMError, a BudgetError), not a group
        first: BaseException = failed
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None
    trials = [task.result() for task in tasks]
    timed = [trial.timed for trial in trials if trial is not None and trial.timed is not None]
    if len(timed) < size:
        return None
    seconds = [t.seconds for t in timed]
    return wave_parallelism(seconds), max(seconds) / max(min(seconds), 1e-9)


def has_logprobs(completion: Any) -> bool:
    choice = (completion.choices or [None])[0]
    return bool(choice and choice.logprobs and choice.logprobs.content)
