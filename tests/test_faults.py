"""The endpoint misbehaves: each fault mode of the loopback server gets a defined, bounded outcome through
the real command line, the real AsyncOpenAI client and real HTTP."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import pytest
from helpers import default_ctrl_c

from selfrag.api import SelfRAG
from selfrag.cli import main
from selfrag.config import Config, EndpointConfig
from selfrag.errors import BudgetError
from selfrag.testing.fake_server import FakeOpenAIServer

QUESTION = "How many days for refunds?"
EPSILON = 0.5  # seconds past the deadline allowed for cancelling the calls and closing their connections


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SELFRAG_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SELFRAG_MAX_RETRIES", "1")


def ask(index_dir, server, *extra):
    started = time.monotonic()
    code = main(
        [
            "ask",
            QUESTION,
            "--index",
            str(index_dir),
            "--base-url",
            server.base_url,
            "--timeout",
            "0.5",
            "--deadline",
            "10",
            *extra,
        ]
    )
    return code, time.monotonic() - started


@pytest.mark.parametrize(
    ("fault", "message", "max_requests"),
    [
        # each count includes GET /props and GET /v1/models, the server's identity (remembered capabilities)
        ("auth", "rejected the API key (401)", 3),  # fatal at once: no retry
        ("quota", "quota is exhausted", 4),  # no retry storm
        ("wait-long", "asks to wait 600 s", 3),  # Retry-After over two minutes: the identity, one call
        ("hang", "did not answer in time", 5),  # per-request timeout, bounded attempts
        ("reset", "cannot reach the endpoint", 5),
        ("cut", "cannot reach the endpoint", 5),  # Content-Length larger than the body sent, then close
        ("html", "body that is not JSON", 30),  # bad shape: candidates dropped, then a clear error
        ("no-choices", "every call to the endpoint failed", 30),
        ("error-object", "every call to the endpoint failed", 30),
        ("truncated-json", "every call to the endpoint failed", 30),
        ("malformed", "no reply of the model could be used", 30),  # re-asked once, then dropped: the model's
        ("500", "every call to the endpoint failed", 40),
        ("cut-prompt", "silently truncated the prompt", 30),  # usage far below the estimate: not trusted
    ],
)
def test_failing_endpoint_ends_with_one_line_and_exit_1(fault, message, max_requests, index_dir, capsys):
    with FakeOpenAIServer(fault=fault) as server:
        code, elapsed = ask(index_dir, server)
        requests = len(server.stats.authorizations)
        bodies = server.stats.bodies
    err = capsys.readouterr().err
    assert code == 1
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert requests <= max_requests
    assert elapsed < 10
    assert not any(body.get("stream") for body in bodies)  # never streamed: no partial text to discard


@pytest.mark.parametrize("fault", ["reset", "cut"])
def test_a_reset_or_cut_body_is_retried_by_the_sdk_before_it_fails(fault, index_dir, capsys):
    """A connection closed before the whole body arrived is a transport failure: the SDK sends the request again
    (the first request is the capability probe, which gets one SDK retry), then our one-line error."""
    with FakeOpenAIServer(fault=fault) as server:
        code, _ = ask(index_dir, server)
        chat_requests = server.stats.requests
    assert code == 1 and "cannot reach the endpoint" in capsys.readouterr().err
    assert 2 <= chat_requests <= 4  # the retry happened, and the attempts stay bounded


@pytest.mark.parametrize("fault", ["flaky", "429", "429-burst"])
def test_transient_failures_are_retried_by_the_sdk_and_the_answer_completes(fault, index_dir, capsys):
    with FakeOpenAIServer(fault=fault) as server:
        code, _ = ask(index_dir, server)
        bodies = server.stats.bodies
    assert code == 0
    assert "[1]" in capsys.readouterr().out
    assert bodies and not any(body.get("stream") for body in bodies)  # the engine never streams a model call


def test_malformed_replies_are_reasked_exactly_once(index_dir, capsys):
    with FakeOpenAIServer(fault="malformed") as server:
        ask(index_dir, server)
        fused = [b for b in server.stats.bodies if "FusedReply" in str(b.get("response_format"))]
    reasks = [b for b in fused if b["messages"][-1]["content"].startswith("That reply was not valid")]
    first_tries = len(fused) - len(reasks)
    assert reasks and len(reasks) == first_tries  # one re-ask per candidate, never more


def test_ctrl_c_exits_130_without_a_traceback(index_dir, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SELFRAG_"))}
    with FakeOpenAIServer(fault="hang") as server:
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "selfrag",
                "ask",
                "refunds?",
                "--index",
                str(index_dir),
                "--base-url",
                server.base_url,
                "--timeout",
                "30",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            preexec_fn=default_ctrl_c,
        )
        deadline = time.monotonic() + 15
        while not server.stats.authorizations and time.monotonic() < deadline:
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=15)
    assert child.returncode == 130
    assert "interrupted" in err and "Traceback" not in err


async def _until(condition, seconds=5.0):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


async def test_cancelled_answer_cancels_its_calls_and_leaves_no_task_or_connection(index_dir):
    """Ctrl-C in chat, or a caller's own timeout, cancels an answer: the server sees every in-flight call hang
    up, no task of ours outlives it, and closing the engine closes every pooled connection."""
    with FakeOpenAIServer() as server:
        config = Config(nonce_seed="t", endpoint=EndpointConfig(base_url=server.base_url, model="m"))
        rag = SelfRAG.from_index(index_dir, config, environ={})
        await rag.aanswer("How many days for refunds?")  # probes done, connections pooled
        server.latency = 60
        task = asyncio.create_task(rag.aanswer("How many days for refunds?"))
        await _until(lambda: server.stats.in_flight >= 1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await _until(lambda: server.stats.in_flight == 0)
        assert server.stats.abandoned >= 1
        assert asyncio.all_tasks() == {asyncio.current_task()}
        await rag.aclose()
        await _until(lambda: server.stats.open_connections == 0)


async def test_a_deadline_shorter_than_the_request_timeout_ends_a_slow_answer_on_time(index_dir):
    """A server slower (5 s) than the deadline (1 s), with a per-request timeout (30 s) that would wait for it:
    the deadline wins, the in-flight calls hang up, and the answer ends with a clear BudgetError."""
    with FakeOpenAIServer() as server:
        endpoint = EndpointConfig(base_url=server.base_url, model="m", timeout=30)
        rag = SelfRAG.from_index(index_dir, Config(nonce_seed="t", endpoint=endpoint, deadline=1), environ={})
        await rag.aanswer(QUESTION)  # the endpoint is probed while it is fast
        server.latency = 5
        started = time.monotonic()
        with pytest.raises(BudgetError, match="deadline of 1s passed"):
            await rag.aanswer(QUESTION)
        elapsed = time.monotonic() - started
        await rag.aclose()
    assert elapsed <= 1 + EPSILON


def test_the_deadline_also_bounds_the_first_request_to_a_slow_endpoint(index_dir, capsys):
    with FakeOpenAIServer(latency=5) as server:
        code, elapsed = ask(index_dir, server, "--timeout", "30", "--deadline", "1")
    assert code == 1 and "deadline" in capsys.readouterr().err
    assert elapsed <= 1 + 2 * EPSILON  # the CLI also loads the index
