"""Fitting the server: send no more than it serves at once, ride out its rate limits, use logprobs only where
they are worth their cost. Through the real command line (or the real client), real HTTP and the loopback
server in its llama.cpp-like modes (slots that queue the rest, 429 bursts, slow logprobs)."""

from __future__ import annotations

import asyncio
import json
import time
from types import SimpleNamespace

import pytest

from selfrag.cli import main
from selfrag.config import EndpointConfig, ResolvedEndpoint
from selfrag.llm.base import ChatRequest, Message
from selfrag.llm.costs import Timed, choose_logprobs, relative_cost
from selfrag.llm.openai_chat import OpenAIChatModel
from selfrag.llm.parallel import reported_slots, wave_parallelism
from selfrag.llm.probe import Trial, probe
from selfrag.llm.replies import DecideReply
from selfrag.schema import Meter
from selfrag.testing.fake_server import FakeOpenAIServer

QUESTION = "How many days for refunds?"
DOCS = {
    "refunds.md": "Refunds are accepted within 30 days of purchase. A receipt is required for refunds.",
    "members.md": "Members get free express shipping and 60 days for refunds.",
    "returns.md": "Returned items must be unused. Refunds for returns go to the original card.",
    "sales.md": "Sale items can be refunded within 14 days. Refunds on sale items need a receipt.",
    "gifts.md": "Gift cards are not refunded. Refunds for gifts go to the giver within 30 days.",
    "shipping.md": "Refunds do not cover shipping costs. Shipping refunds take 5 days.",
}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SELFRAG_API_KEY", "SELFRAG_MAX_RETRIES"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def wide_index(tmp_path):
    """Six documents that all match the question, so --ndocs 5 gives five candidates per step."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in DOCS.items():
        (corpus / name).write_text(text)
    out = tmp_path / "index"
    assert main(["index", str(corpus), "--out", str(out), "--quiet"]) == 0
    return out


def answer(index, server, capsys, *extra):
    code = main(["ask", QUESTION, "--index", str(index), "--base-url", server.base_url, "--json", *extra])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if code == 0 else None), captured.err


# -- fan-out that fits the server -------------------------------------------------------------------


def test_a_one_slot_server_is_sent_one_call_at_a_time_and_no_request_is_sent_twice(wide_index, capsys):
    """One slot, 1 s per call, a 3 s request timeout, five candidates per step: sent all at once, the fourth
    and fifth would wait past the timeout in the server's queue and be sent again."""
    with FakeOpenAIServer(slots=1, latency=1.0) as server:
        code, result, err = answer(wide_index, server, capsys, "--timeout", "3", "--ndocs", "5", "--max-depth", "2")
        stats = server.stats
    assert code == 0, err
    assert result["usage"]["llm_calls"] == len(stats.authorizations)  # every request the server saw, no more
    assert stats.abandoned == 0  # no request timed out in the queue
    assert len({json.dumps(b, sort_keys=True) for b in stats.bodies}) >= 6  # a real fan-out: decide + 5 candidates
    capabilities = result["trace"]["capabilities"]
    assert capabilities["parallel"] == 1 and "total_slots in /props" in capabilities["parallel_reason"]


@pytest.mark.parametrize("nonsense", [0, -3, "four", 10**6])
def test_doctor_says_a_nonsense_slot_count_is_not_trusted_and_what_latency_showed(nonsense, capsys):
    with FakeOpenAIServer(slots=1, reported_slots=nonsense, latency=0.3) as server:
        assert main(["doctor", "--base-url", server.base_url, "--timeout", "1"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if " parallel " in line)
    assert str(nonsense) in line and "not trusted" in line
    assert "1 at once" in line and "learned from latency" in line


def test_with_a_nonsense_slot_count_the_answer_still_fits_the_server(wide_index, capsys):
    with FakeOpenAIServer(slots=1, reported_slots=0, latency=0.3) as server:
        code, result, err = answer(wide_index, server, capsys, "--timeout", "1", "--ndocs", "5", "--max-depth", "1")
        stats = server.stats
    assert code == 0, err
    assert result["trace"]["capabilities"]["parallel"] == 1
    assert result["usage"]["llm_calls"] == len(stats.authorizations)
    assert stats.abandoned == 0  # unlimited, the fifth candidate would wait 1.5 s for a 1 s timeout


def test_slot_counts_are_read_in_llama_cpps_shapes_and_nonsense_is_refused():
    assert reported_slots({"total_slots": 4, "default_generation_settings": {}}, None)[0] == 4
    assert reported_slots(None, [{"id": 0}, {"id": 1}])[0] == 2
    for nonsense in (0, -1, "4", 4.0, True, 10**6, None):
        count, note = reported_slots({"total_slots": nonsense}, [{"id": 0}])
        assert count is None and "not" in note
    assert reported_slots(None, [1, 2])[0] is None and reported_slots({}, None)[0] is None


def test_latency_waves_tell_a_queue_from_calls_served_together():
    assert wave_parallelism([1.0, 2.0]) == 1  # one slot: the second waited for the first
    assert wave_parallelism([1.0, 1.0, 2.0, 2.0]) == 2
    assert wave_parallelism([1.0, 2.0, 3.0, 4.0]) == 1
    assert wave_parallelism([1.0, 1.1, 1.2, 1.3]) is None  # served together


# -- rate limits ridden out -------------------------------------------------------------------------


@pytest.mark.parametrize("headers", [{"retry-after": "0"}, {"retry-after-ms": "30"}, {}])
def test_a_429_burst_on_the_first_requests_the_probe_is_ridden_out(headers, index_dir, capsys):
    with FakeOpenAIServer(rate_limited={1, 2, 3}, rate_limit_headers=headers) as server:
        code, result, err = answer(index_dir, server, capsys)
        seen = len(server.stats.authorizations)
    assert code == 0, err
    assert result["answer"] and result["usage"]["llm_calls"] == seen  # the three 429s are counted


def test_a_429_burst_in_the_middle_of_a_step_is_ridden_out(index_dir, capsys):
    """Request 1 is the probe, 2 the first decision, 3-5 the step's candidates: 4 and 5 are rate limited, and so
    is the first retry of each (6, 7); the step still ends with every candidate written."""
    with FakeOpenAIServer(rate_limited={4, 5, 6, 7}, rate_limit_headers={}) as server:
        code, result, err = answer(index_dir, server, capsys, "--max-depth", "1")
        seen, chat_requests = len(server.stats.authorizations), server.stats.requests
    assert code == 0, err
    assert chat_requests >= 8  # the burst was reached, and the calls it hit were sent again
    step = result["trace"]["steps"][0]
    assert all(candidate["status"] != "failed" for candidate in step["candidates"])
    assert result["usage"]["llm_calls"] == seen


def test_a_retry_after_beyond_the_deadline_ends_the_answer_at_once_naming_the_wait(index_dir, capsys):
    with FakeOpenAIServer(rate_limited={2}, rate_limit_headers={"retry-after": "30"}) as server:
        started = time.monotonic()
        code, _, err = answer(index_dir, server, capsys, "--deadline", "10")
        elapsed = time.monotonic() - started
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert "asks to wait 30 s" in err and "deadline" in err and "Traceback" not in err
    assert elapsed < 5


def test_endless_429s_stop_at_the_call_budget_with_one_line(index_dir, capsys):
    with FakeOpenAIServer(rate_limited=range(1, 10_000)) as server:
        code, _, err = answer(index_dir, server, capsys, "--max-llm-calls", "12")
        seen = server.stats.requests
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert "429" in err and "budget of 12" in err
    assert seen <= 12


# -- capabilities worth their cost ------------------------------------------------------------------

REQUEST = ChatRequest("retrieve_decide", (Message("user", "Q?"),), DecideReply, logprobs=True)


async def probed(server, mode):
    settings = EndpointConfig(model="m", logprobs=mode, max_concurrency=4)
    chat = OpenAIChatModel(ResolvedEndpoint(server.base_url, "sk-test", "test", settings))
    caps = await chat.capabilities(Meter())
    await chat.chat(REQUEST, Meter())
    await chat.aclose()
    return caps, server.stats.bodies[-1]


@pytest.mark.parametrize(
    ("extra", "mode", "used"),
    [
        (0.5, "auto", False),  # logprobs cost several times a call: not worth it
        (0.0, "auto", True),  # free: used
        (0.5, "on", True),  # costly, but asked for
        (0.0, "off", False),  # free, but turned off
    ],
)
async def test_the_probe_uses_logprobs_only_where_they_are_cheap_or_asked_for(extra, mode, used):
    with FakeOpenAIServer(latency=0.1, logprobs=True, logprobs_latency=extra) as server:
        caps, last_body = await probed(server, mode)
    assert caps.logprobs is used and caps.report()["logprobs_offered"] is True
    assert ("logprobs" in last_body) is used  # what the engine then sends
    assert (mode if mode != "auto" else ("cheap" if used else "cost")) in caps.logprobs_reason
    if mode == "auto":
        cost = dict(caps.costs)["logprobs"]
        assert cost > 3 if extra else cost < 1.5
    else:
        assert "logprobs" not in dict(caps.costs)  # the user decided: no calls spent measuring


def test_the_logprobs_choice_and_cost_arithmetic():
    assert relative_cost(Timed(2.0, 10), Timed(1.0, 10)) == 2.0
    assert relative_cost(Timed(1.0, 5), Timed(1.0, 10)) == 2.0  # per token: a short reply is not cheap
    assert choose_logprobs("auto", True, 5.2)[0] is False
    assert choose_logprobs("auto", True, 1.1)[0] is True
    assert choose_logprobs("auto", True, None)[0] is True
    assert choose_logprobs("on", False, None)[0] is False  # asked for, but not offered
    assert choose_logprobs("off", True, 1.0)[0] is False


@pytest.mark.parametrize(("flag", "asked"), [("off", False), ("auto", True)])
def test_the_logprobs_flag_decides_what_the_engine_sends_and_the_result_says_why(flag, asked, index_dir, capsys):
    with FakeOpenAIServer(logprobs=True) as server:
        code, result, err = answer(index_dir, server, capsys, "--logprobs", flag)
        after_probe = server.stats.bodies[1:]
    assert code == 0, err
    capabilities = result["trace"]["capabilities"]
    assert capabilities["logprobs"] is asked and capabilities["logprobs_offered"] is True
    assert capabilities["logprobs_reason"].startswith("off: asked" if flag == "off" else "on:")
    assert any(body.get("logprobs") for body in after_probe) is asked


def test_a_rate_limit_during_the_latency_waves_ends_with_one_line_not_a_traceback(index_dir, capsys):
    """Requests 1-3 are the feature and cost calls; 4 and 5 are the first latency wave, sent together."""
    with FakeOpenAIServer(slots=1, reported_slots=None, latency=0.3, rate_limited={4, 5}) as server:
        server.rate_limit_headers = {"retry-after": "30"}
        code, _, err = answer(index_dir, server, capsys, "--timeout", "1", "--deadline", "10")
    assert code == 1 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "asks to wait 30 s" in err


class SimulatedServer:
    """The probe's two seams over a simulated server: `slots` calls served at once, `latency` seconds each,
    the rest queued; `/props` reports `reported` (None: no such route)."""

    def __init__(self, slots: int, latency: float, reported: object = None) -> None:
        self.queue, self.latency, self.reported, self.calls = asyncio.Semaphore(slots), latency, reported, 0

    async def attempt(self, **params):
        self.calls += 1
        started = time.monotonic()
        async with self.queue:
            await asyncio.sleep(self.latency)
        choice = SimpleNamespace(logprobs=None)
        reply = SimpleNamespace(choices=[choice] * (params.get("n") or 1))
        return Trial(reply, Timed(time.monotonic() - started, 8))

    async def fetch(self, path):
        return {"total_slots": self.reported} if path == "/props" and self.reported is not None else None


@pytest.mark.parametrize(
    ("slots", "private", "expected"), [(1, True, 1), (2, True, 2), (8, True, None), (1, False, None)]
)
async def test_the_probe_learns_calls_at_once_from_latency_only_on_a_private_server(slots, private, expected):
    server = SimulatedServer(slots, latency=0.1)
    settings = EndpointConfig(model="m", timeout=5)
    caps = await probe(server.attempt, server.fetch, "m", settings, private=private)
    assert caps.parallel == expected
    reason = caps.parallel_reason
    assert ("learned from latency" in reason) if expected else ("at least 4" in reason or "hosted" in reason)
