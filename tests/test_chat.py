"""`selfrag chat` driven as a person would: in a pseudo-terminal, against a loopback endpoint."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pexpect

import selfrag
from selfrag.testing.fake_server import FakeOpenAIServer

PROMPT = ">>>"  # prompt_toolkit draws the trailing space with a cursor move


def spawn(index_dir, server, tmp_path, *extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SELFRAG_"))}
    env.update(SELFRAG_HOME=str(tmp_path / "home"), TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1")
    argv = ["-m", "selfrag", "chat", "--index", str(index_dir), "--base-url", server.base_url, *extra]
    child = pexpect.spawn(sys.executable, argv, env=env, encoding="utf-8", timeout=20, dimensions=(40, 160))
    child.expect_exact(PROMPT)
    return child


def exchange(child, line: str, reply: str) -> None:
    """Send a line; its reply, then the prompt again."""
    child.sendline(line)
    child.expect_exact(reply)
    child.expect_exact(PROMPT)


def left(child) -> None:
    """The chat ended on its own, with exit status 0."""
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def decide_requests(server) -> list[dict]:
    """The bodies of the retrieval decisions the server received: one per question searched."""
    schemas = [((b.get("response_format") or {}).get("json_schema", {}).get("name"), b) for b in server.stats.bodies]
    return [body for name, body in schemas if name == "DecideReply"]


def test_a_conversation_with_follow_ups_commands_and_exit(index_dir, tmp_path):
    with FakeOpenAIServer() as server:
        child = spawn(index_dir, server, tmp_path)
        child.sendline("How many days for refunds?")
        child.expect_exact("[1]")
        child.expect_exact("Sources:")
        child.expect_exact("Confidence: ")  # how sure the engine is, after the sources
        child.expect_exact(PROMPT)
        child.sendline("/set beam_width 2")
        child.expect_exact("beam_width = 2")
        child.sendline("/set beam_width 99")
        child.expect_exact("beam_width must be")
        child.sendline("/sources")
        child.expect_exact("refunds.md")
        child.sendline('"""')
        child.sendline("And for")
        child.sendline('members?"""')
        child.expect_exact("Sources:")
        child.expect_exact(PROMPT)
        child.sendcontrol("d")
        left(child)
        decides = decide_requests(server)
        follow_up = decides[-1]["messages"][1]["content"]
        assert "User: How many days for refunds?" in follow_up  # the follow-up saw the conversation
        assert "And for\nmembers?" in follow_up  # the multi-line message arrived whole
    history = (tmp_path / "home" / "chat_history").read_text()
    assert "How many days for refunds?" in history  # persistent history


def test_the_chat_shows_the_scorer_it_rates_with_and_keeps_it(index_dir, tmp_path):
    with FakeOpenAIServer() as server:
        child = spawn(index_dir, server, tmp_path)
        exchange(child, "/show", "scorer = paper")  # "auto" as the engine resolved it for a model at --base-url
        # the rater and the endpoints were built when the chat started
        exchange(child, "/set scorer evidence", "scorer is chosen when the chat starts (selfrag chat --scorer ...)")
        exchange(child, "/set endpoint x", "(selfrag chat --base-url ...)")
        exchange(child, "/show", "scorer = paper")
        child.sendcontrol("d")
        left(child)


def test_weights_fitted_for_another_model_are_said_once_per_chat(index_dir, tmp_path):
    shipped = str(Path(selfrag.__file__).parent / "data" / "critic-v1.json")  # the embedded model's
    with FakeOpenAIServer() as server:
        child = spawn(index_dir, server, tmp_path, "--scorer-weights", shipped)
        said = ""
        for question in ("How many days for refunds?", "And for members?"):
            child.sendline(question)
            child.expect_exact("Confidence: ")
            child.expect_exact(PROMPT)
            said += child.before
        child.sendcontrol("d")
        left(child)
    assert said.count("selfrag: warning: the critic weights") == 1 and "not fake-model" in said


def test_a_greeting_is_answered_without_a_search_and_left_out_of_the_memory(index_dir, tmp_path):
    with FakeOpenAIServer() as server:
        child = spawn(index_dir, server, tmp_path, "--no-history")
        exchange(child, "Hi there!", "Hello. Ask me a question about the documents.")
        exchange(child, "How many days for refunds?", "Sources:")
        exchange(child, "thanks, bye", "You're welcome. Goodbye.")
        child.sendline("/exit")
        left(child)
        decides = decide_requests(server)
    assert len(decides) == 1  # only the question was searched
    assert "Hi there!" not in decides[0]["messages"][1]["content"]  # the greeting is no turn of the conversation


def test_ctrl_c_cancels_the_answer_and_keeps_the_session(index_dir, tmp_path):
    with FakeOpenAIServer(latency=1.5) as server:
        child = spawn(index_dir, server, tmp_path, "--no-history")
        child.sendline("How many days for refunds?")
        child.expect_exact("How many days for refunds?")
        time.sleep(0.5)  # the answer's first round is in flight
        child.sendintr()
        child.expect_exact("[answer cancelled]")
        child.expect_exact(PROMPT)
        child.sendline("/exit")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0
    assert not (tmp_path / "home" / "chat_history").exists()
