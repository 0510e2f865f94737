"""Named sessions: a follow-up in a new process sees the earlier turn; the files are written and read with care;
bad names and damaged, oversized, newer or busy sessions get one line and are never overwritten."""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import plain

from selfrag.cli import main
from selfrag.errors import InputError, SessionError
from selfrag.memory import MemoryTurn
from selfrag.memory.sessions import MAX_SESSION_BYTES, SessionStore
from selfrag.testing.fake_server import FakeOpenAIServer

FIRST = "How many days for refunds?"
FOLLOW_UP = "And for members?"


def decide_prompts(server: FakeOpenAIServer) -> list[str]:
    return [
        body["messages"][1]["content"]
        for body in server.stats.bodies
        if (body.get("response_format") or {}).get("json_schema", {}).get("name") == "DecideReply"
    ]


def selfrag(*argv: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SELFRAG_"))}
    env["SELFRAG_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "selfrag", *argv], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_a_follow_up_in_a_new_process_is_answered_with_the_earlier_turn_in_context(index_dir, tmp_path) -> None:
    home = tmp_path / "home"
    with FakeOpenAIServer() as server:
        common = ["--index", str(index_dir), "--base-url", server.base_url, "--session", "work"]
        first = selfrag("ask", FIRST, *common, home=home)
        assert first.returncode == 0, first.stderr
        assert all("User:" not in p for p in decide_prompts(server))  # a new session starts empty
        seen = len(server.stats.bodies)
        second = selfrag("ask", FOLLOW_UP, *common, home=home)
        assert second.returncode == 0, second.stderr
        later = ["\n".join(str(m.get("content")) for m in b.get("messages", [])) for b in server.stats.bodies[seen:]]
    prompts = [text for text in later if "Conversation so far" in text]
    assert prompts and all(f"User: {FIRST}\nAssistant: " in p for p in prompts)  # decide and generate saw it
    answer = first.stdout.split("\n\nSources:")[0].strip()
    assert answer and f"Assistant: {answer}" in prompts[0]
    stored = json.loads((home / "sessions" / "work.json").read_text())["memory"]["turns"]
    assert [t["question"] for t in stored] == [FIRST, FOLLOW_UP]
    assert stored[0]["cited"] and stored[0]["time"].endswith("Z")
    assert oct((home / "sessions" / "work.json").stat().st_mode & 0o777) == "0o600"


def test_the_python_session_continues_across_engines(engine, tmp_path) -> None:
    script = {"retrieve_decide": {"retrieve": "no", "query": ""}, "generate_plain": plain("Thirty days.")}
    first = engine(script, lead=False).session("work", folder=tmp_path)
    assert first.ask(FIRST).answer == "Thirty days."
    rag = engine(script, lead=False)
    assert rag.session("work", folder=tmp_path).ask(FOLLOW_UP).answer == "Thirty days."
    (decide,) = rag.chat.calls_to("retrieve_decide")
    assert f"User: {FIRST}\nAssistant: Thirty days." in decide.messages[1].content
    unnamed = engine(script, lead=False).session()  # in memory only: nothing on disk
    unnamed.ask(FIRST)
    assert [t.question for t in unnamed.memory.turns] == [FIRST]
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["work.json"]


@pytest.mark.parametrize("name", ["a/b", "..", "../x", "a..b", "", ".hidden", "x" * 65, "a\x00b", "a b"])
def test_a_session_name_that_could_leave_its_folder_is_refused(name, tmp_path) -> None:
    with pytest.raises(InputError, match="session name"):
        SessionStore(tmp_path).load(name)
    assert list(tmp_path.iterdir()) == []


def test_the_cli_refuses_a_bad_session_name_in_one_line(index_dir, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("SELFRAG_HOME", str(tmp_path / "home"))
    argv = ["ask", FIRST, "--index", str(index_dir), "--base-url", "http://127.0.0.1:9/v1", "--session"]
    assert main([*argv, "../escape"]) == 1
    err = capsys.readouterr().err
    assert "session name '../escape' is not allowed" in err and len(err.strip().splitlines()) == 1
    assert main([*argv, "a\x00b"]) == 2
    assert "NUL" in capsys.readouterr().err
    assert not (tmp_path / "home").exists() and not (tmp_path / "escape.json").exists()


def stored_session(folder: Path) -> Path:
    SessionStore(folder).add("s", MemoryTurn(FIRST, "Thirty days."))
    return folder / "s.json"


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-40])


def tamper(path: Path) -> None:
    path.write_text(path.read_text().replace("Thirty", "Ninety"))


def oversize(path: Path) -> None:
    path.write_bytes(b" " * (MAX_SESSION_BYTES + 1))


def newer(path: Path) -> None:
    path.write_text(path.read_text().replace('"version": 1', '"version": 7'))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (truncate, "is damaged (not valid JSON; it may be truncated)"),
        (tamper, "is damaged (checksum mismatch)"),
        (oversize, "is larger than 4 MiB"),
        (newer, "was written by a newer selfrag (session format 7; this one reads 1)"),
    ],
)
def test_a_damaged_session_gets_one_line_and_is_never_overwritten(
    damage, message, index_dir, tmp_path, capsys, monkeypatch
) -> None:
    monkeypatch.setenv("SELFRAG_HOME", str(tmp_path))
    path = stored_session(tmp_path / "sessions")
    damage(path)
    before = path.read_bytes()
    with FakeOpenAIServer() as server:
        code = main(["ask", FIRST, "--index", str(index_dir), "--base-url", server.base_url, "--session", "s"])
        assert server.stats.requests == 0  # refused before any answer was written
    err = capsys.readouterr().err
    assert code == 1 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "left as it is" in err
    assert path.read_bytes() == before
    with pytest.raises(SessionError):
        SessionStore(tmp_path / "sessions").add("s", MemoryTurn("q", "a"))
    assert path.read_bytes() == before
    assert main(["session", "list"]) == 0
    assert "s\tunreadable" in capsys.readouterr().out
    assert main(["session", "delete", "s"]) == 0 and not path.exists()  # the way out the message names


def _add_turns(folder: str, tag: str, count: int) -> None:
    store = SessionStore(folder)
    for i in range(count):
        store.add("shared", MemoryTurn(f"{tag} question {tag}{i}x about {tag}{i}y", f"answer {tag}{i}z"))


def test_two_processes_writing_one_session_keep_every_turn(tmp_path) -> None:
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_add_turns, args=(str(tmp_path), tag, 15)) for tag in ("alpha", "beta")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    turns = SessionStore(tmp_path).load("shared").turns
    assert len(turns) == 30 and sorted(t.number for t in turns) == list(range(1, 31))
    assert [t.question for t in turns if t.question.startswith("alpha")] == [
        f"alpha question alpha{i}x about alpha{i}y" for i in range(15)
    ]  # each process's turns in its own order
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]  # no temporary file left behind


def test_a_session_busy_in_another_process_is_a_clear_error_after_a_wait(tmp_path) -> None:
    store = SessionStore(tmp_path, lock_wait=0.2)
    store.add("busy", MemoryTurn(FIRST, "Thirty days."))
    fd = os.open(tmp_path / "busy.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(SessionError, match="another process has been writing session 'busy'"):
            store.add("busy", MemoryTurn("q", "a"))
    finally:
        os.close(fd)
    assert [t.question for t in store.load("busy").turns] == [FIRST]
    store.add("busy", MemoryTurn("Where do orders ship from?", "Lyon."))  # free again
    assert len(store.load("busy").turns) == 2


def test_list_show_and_delete_from_the_cli(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("SELFRAG_HOME", str(tmp_path))
    assert main(["session", "list"]) == 0
    assert "no sessions" in capsys.readouterr().err
    stored_session(tmp_path / "sessions")
    assert main(["session", "list"]) == 0
    assert capsys.readouterr().out.startswith("s\t1 turns, last 20")
    assert main(["session", "show", "s"]) == 0
    out = capsys.readouterr().out
    assert f"User: {FIRST}" in out and "Assistant: Thirty days." in out
    assert main(["session", "show", "s", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["question"] == FIRST
    assert main(["session", "delete", "s"]) == 0
    assert main(["session", "show", "s"]) == 1 and "no session named 's'" in capsys.readouterr().err
    assert main(["session", "delete", "../s"]) == 1


def test_chat_and_ask_share_a_named_session(index_dir, tmp_path) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SELFRAG_"))}
    env["SELFRAG_HOME"] = str(home)
    with FakeOpenAIServer() as server:
        argv = ["--index", str(index_dir), "--base-url", server.base_url, "--session", "desk"]
        chat = subprocess.run(
            [sys.executable, "-m", "selfrag", "chat", *argv, "--no-history"],
            input=f"{FIRST}\n/exit\n", env=env, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert chat.returncode == 0, chat.stderr
        assert selfrag("ask", FOLLOW_UP, *argv, home=home).returncode == 0
        assert f"User: {FIRST}" in decide_prompts(server)[-1]
    stored = SessionStore(home / "sessions").load("desk")
    assert [t.question for t in stored.turns] == [FIRST, FOLLOW_UP]
