"""What a hostile or unlucky user still found (issue 47): bytes that are not UTF-8, output paths that cannot be
written, FIFOs named like session files, settings of the wrong type, flags that would be ignored, a session
turn that could be lost. Each case ends in one line and the right exit code, never a traceback or a hang."""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import plain

from selfrag.cli import main
from selfrag.errors import SessionError, SettingTypeError
from selfrag.memory.sessions import ChatSession, SessionStore
from selfrag.settings import load_config
from selfrag.testing.fake_server import FakeOpenAIServer, echo_responder
from selfrag.text import escape_name, repair_text

UNREACHABLE = "http://127.0.0.1:9/v1"  # nothing listens: a test that gets past its check fails loudly
QUESTION = "How many days do I have for refunds?"
ANSWER = "Refunds are accepted within 30 days of purchase"
SHIPPED_WEIGHTS = Path(__file__).resolve().parents[1] / "selfrag" / "data" / "critic-v1.json"


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SELFRAG_API_KEY", "SELFRAG_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SELFRAG_HOME", str(tmp_path / "home"))


def one_line(err: str) -> str:
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and "internal error" not in err, err
    return err


# --- settings are of their declared types ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    ["max_depth = 2.5", "ndocs = 2.7", "beam_width = 2.5", "max_llm_calls = 1.5", "use_seqscore = 1",
     "max_depth = true", "threshold = true", "nonce_seed = 5"],
)  # fmt: skip
def test_a_config_file_value_of_the_wrong_type_is_a_usage_error_naming_the_setting_and_the_file(
    line, index_dir, tmp_path, capsys
):
    path = tmp_path / "c.toml"
    path.write_text(line + "\n")
    name = line.split(" =")[0]
    with pytest.raises(SettingTypeError, match=rf"^{name} must be of type \w+ .*config file {path}"):
        load_config({}, environ={}, config_file=str(path))
    assert main(["ask", "q?", "--index", str(index_dir), "--config", str(path), "--base-url", UNREACHABLE]) == 2
    err = one_line(capsys.readouterr().err)
    assert name in err and str(path) in err


@pytest.mark.parametrize(("name", "value"), [("NDOCS", "2.7"), ("MAX_LLM_CALLS", "1.5"), ("USE_SEQSCORE", "2")])
def test_an_environment_value_of_the_wrong_type_is_a_usage_error_naming_the_variable(
    name, value, index_dir, monkeypatch, capsys
):
    monkeypatch.setenv(f"SELFRAG_{name}", value)
    assert main(["ask", "q?", "--index", str(index_dir), "--base-url", UNREACHABLE]) == 2
    err = one_line(capsys.readouterr().err)
    assert name.lower() in err and f"$SELFRAG_{name}" in err


def test_whole_numbers_still_read_as_numbers_and_true_false_as_yes_no(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("threshold = 1\nmax_depth = 3\nuse_seqscore = true\n[endpoint]\nlogprobs = false\n")
    config = load_config({}, environ={}, config_file=str(path))
    assert (config.threshold, config.max_depth, config.use_seqscore, config.endpoint.logprobs) == (1, 3, True, "off")


# --- text in, whatever its bytes; names out on one line ------------------------------------------------------


def test_repair_text_turns_bytes_that_are_not_utf8_into_replacement_characters_and_drops_controls():
    typed = "caf\udcc3\udca9 \udcff fees?\x1b[2J\x07\r\nnext\ud800\x00"  # é as two escaped bytes, then junk
    assert repair_text(typed) == "café \ufffd fees?\nnext\ufffd"
    assert repair_text(repair_text(typed)) == repair_text(typed)
    repair_text(typed).encode("utf-8")  # what an HTTP body or a session file needs


def test_escape_name_keeps_a_name_on_one_line_and_shows_every_hidden_character():
    name = "fake\n  2.   9.999  evil.md#0\tx\x1b[31m\u202egpj.md\udcff"
    assert escape_name(name) == "fake\\n  2.   9.999  evil.md#0\\tx\\x1b[31m\\u202egpj.md\\xff"
    assert escape_name("plain/name-1.md") == "plain/name-1.md"


def test_a_question_with_bytes_that_are_not_utf8_is_answered_from_the_argument_and_from_stdin(
    index_dir, server, capsys, monkeypatch
):
    base = ["--index", str(index_dir), "--base-url", server.base_url]
    assert main(["ask", "How many days \udcff do I have for refunds?", *base]) == 0
    assert ANSWER in capsys.readouterr().out
    monkeypatch.setattr(sys, "stdin", io.StringIO("How many days \udcff\x1b[2J for refunds?\n"))
    assert main(["ask", "-", *base]) == 0
    assert ANSWER in capsys.readouterr().out


def test_a_chat_line_with_bytes_that_are_not_utf8_is_answered_and_the_chat_goes_on(
    index_dir, server, capsys, monkeypatch
):
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"refunds \udcff\x07 days?\n{QUESTION}\n"))
    assert main(["chat", "--index", str(index_dir), "--base-url", server.base_url, "--no-history"]) == 0
    out, err = capsys.readouterr()
    assert out.count("Sources:") == 2 and "error" not in err


def test_bytes_that_are_not_utf8_on_a_strict_stdin_are_answered_by_ask_and_chat(index_dir, server, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SELFRAG_"))}
    env |= {"SELFRAG_HOME": str(tmp_path / "home"), "PYTHONIOENCODING": "utf-8:strict"}  # as a UTF-8 locale reads
    base = ["--index", str(index_dir), "--base-url", server.base_url]
    for argv, text in ((["ask", "-"], b"How many days \xff for refunds?\n"),
                       (["chat", "--no-history"], b"refunds \xff days?\n" + QUESTION.encode() + b"\n")):  # fmt: skip
        done = subprocess.run([sys.executable, "-m", "selfrag", *argv, *base], input=text, env=env,
                              capture_output=True, timeout=60, check=False)  # fmt: skip
        assert done.returncode == 0 and b"error" not in done.stderr, done.stderr
        assert done.stdout.count(b"Sources:") == (1 if argv[0] == "ask" else 2)


def test_a_python_caller_s_question_with_escaped_bytes_is_answered_and_kept_in_its_session(engine, tmp_path):
    rag = engine(
        {"retrieve_decide": {"retrieve": "no", "query": ""}, "generate_plain": plain("Thirty days.")}, lead=False
    )
    session = ChatSession(rag, SessionStore(tmp_path), "s")
    assert session.ask("How many days \udcff for refunds?").answer == "Thirty days."
    (decide,) = rag.chat.calls_to("retrieve_decide")
    assert "How many days \ufffd for refunds?" in decide.messages[1].content
    assert [t.question for t in SessionStore(tmp_path).load("s").turns] == ["How many days \ufffd for refunds?"]


def test_a_file_whose_name_is_not_utf8_is_skipped_in_one_line_and_a_root_so_named_is_refused(tmp_path, capsys):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "refunds.md").write_text("Refunds are accepted within 30 days of purchase.")
    with open(os.fsencode(corpus) + b"/bad\xffname.md", "w") as handle:
        handle.write("Bikes cost 9 euros a day.")
    assert main(["index", str(corpus), "--out", str(tmp_path / "index"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "indexed 1 documents" in err
    assert "skipped bad\\xffname.md: its name is not valid UTF-8" in err
    root = os.fsencode(tmp_path) + b"/corpus\xff"  # a root whose own name is not UTF-8: refused in one line
    os.mkdir(root)
    with open(root + b"/a.md", "w") as handle:
        handle.write("Bikes cost 9 euros a day.")
    assert main(["index", os.fsdecode(root), "--out", str(tmp_path / "index2"), "--quiet"]) == 1
    assert "corpus\\xff is not valid UTF-8" in one_line(capsys.readouterr().err)


CRAFTED = "fake\n  2.   9.999  evil.md#0  Trust me.md"  # a name that would print a hit of its own


def test_a_newline_in_a_file_name_cannot_split_a_search_hit_or_a_source_line(tmp_path, server, capsys):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / CRAFTED).write_text('---\ntitle: "Bike\\nfees"\n---\nBikes cost 5 euros a day.')
    (corpus / "refunds.md").write_text("Refunds are accepted within 30 days of purchase.")
    index = str(tmp_path / "index")
    assert main(["index", str(corpus), "--out", index, "--quiet"]) == 0
    capsys.readouterr()
    assert main(["search", "bikes cost euros", "--index", index]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and re.match(r"\s+1\. ", lines[0])  # the one hit on one line
    assert "fake\\n  2.   9.999  evil.md#0  Trust me.md#0" in lines[0]
    assert main(["ask", "What do bikes cost?", "--index", index, "--base-url", server.base_url]) == 0
    out = capsys.readouterr().out
    (source,) = [line for line in out.splitlines() if line.startswith("  [1]")]
    assert "Bike\\nfees — fake\\n  2.   9.999  evil.md#0  Trust me.md (chunk 0)" in source
    assert not any(line.lstrip().startswith(("2.", "fees", "evil")) for line in out.splitlines())


def test_doctor_prints_one_line_per_check_whatever_the_index_path_holds(tmp_path, server, capsys):
    assert main(["doctor", "--index", str(tmp_path / "no\nsuch index"), "--base-url", server.base_url]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(line.startswith(("ok  ", "FAIL")) for line in lines)
    assert "no\\nsuch index" in lines[0]


# --- output paths are checked before the work ------------------------------------------------------------------


@pytest.mark.parametrize("target", ["missing/page.html", ".", "fifo"])
def test_a_trace_html_path_that_cannot_be_written_fails_before_any_model_call(
    target, index_dir, server, tmp_path, capsys
):
    os.mkfifo(tmp_path / "fifo")
    path = str(tmp_path / target)
    argv = ["ask", QUESTION, "--index", str(index_dir), "--base-url", server.base_url, "--trace-html", path]
    assert main(argv) == 2
    err = one_line(capsys.readouterr().err)
    assert "--trace-html" in err and str(tmp_path) in err
    assert server.stats.requests == 0 and not capsys.readouterr().out  # no call made, no answer printed


def test_a_chat_save_that_cannot_be_written_is_a_message_and_the_queued_questions_are_answered(
    index_dir, server, tmp_path, capsys, monkeypatch
):
    lines = [QUESTION, f"/save {tmp_path / 'missing' / 'page.html'}", f"/save {tmp_path}", "Where do orders ship from?",
             f"/save {tmp_path / 'page.html'}"]  # fmt: skip
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(lines) + "\n"))
    assert main(["chat", "--index", str(index_dir), "--base-url", server.base_url, "--no-history"]) == 0
    out, err = capsys.readouterr()
    assert out.count("Sources:") == 2  # the question after the failed saves was answered
    assert f"error: /save {tmp_path / 'missing' / 'page.html'}: the folder {tmp_path / 'missing'} does not exist" in err
    assert f"error: /save {tmp_path} is a folder" in err
    assert (tmp_path / "page.html").read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize(
    "argv",
    [
        ["critic", "fit", "{tmp}/judgments.jsonl", "--out", "{out}"],
        ["bench", "judgments", "{tmp}", "--out", "{out}"],
        ["bench", "fit-confidence", "{tmp}", "--out", "{out}"],
    ],
)
def test_an_out_file_in_a_missing_folder_is_a_usage_error_before_the_command_runs(argv, tmp_path, capsys):
    out = tmp_path / "missing" / "out.json"
    assert main([a.format(tmp=tmp_path, out=out) for a in argv]) == 2
    err = one_line(capsys.readouterr().err)
    assert f"--out {out}: the folder {out.parent} does not exist" in err


def test_judge_generate_makes_the_folders_of_its_out_file_but_refuses_a_folder_before_any_call(
    index_dir, tmp_path, capsys
):
    argv = ["judge", "generate", "--index", str(index_dir), "--base-url", UNREACHABLE, "--out", str(tmp_path)]
    assert main(argv) == 2
    assert f"--out {tmp_path} is a folder" in one_line(capsys.readouterr().err)


def test_a_bench_run_folder_that_is_a_file_is_a_usage_error_before_the_run(tmp_path, capsys):
    (tmp_path / "runs").write_text("not a folder")
    argv = ["bench", "run", "--dataset", "hotpotqa_smoke", "--system", "rag", "--out", str(tmp_path / "runs"),
            "--base-url", UNREACHABLE, "--no-cache"]  # fmt: skip
    assert main(argv) == 2
    assert "--out" in one_line(capsys.readouterr().err)


# --- only regular files are read -------------------------------------------------------------------------------


def run_cli(*argv: str, home: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """selfrag in a subprocess: a read that blocks on a FIFO fails the test by timing out, never hangs it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SELFRAG_"))}
    env["SELFRAG_HOME"] = str(home)
    try:
        return subprocess.run([sys.executable, "-m", "selfrag", *argv], env=env, capture_output=True, text=True,
                              timeout=timeout, check=False, stdin=subprocess.DEVNULL)  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"selfrag {' '.join(argv)} hung (a blocking read?)")


def test_a_fifo_named_like_a_session_is_refused_in_one_line_and_session_list_does_not_hang(index_dir, tmp_path):
    home = tmp_path / "home"
    (home / "sessions").mkdir(parents=True)
    os.mkfifo(home / "sessions" / "work.json")
    SessionStore(home / "sessions").add("other", __import__("selfrag.memory", fromlist=["MemoryTurn"]).MemoryTurn(
        QUESTION, "Thirty days."))  # fmt: skip
    listed = run_cli("session", "list", home=home, timeout=20)
    assert listed.returncode == 0
    rows = listed.stdout.splitlines()
    assert rows[0].startswith("other\t1 turns") and rows[1].startswith("work\tunreadable: ")
    assert "not a regular file (a FIFO, socket or device)" in rows[1] and len(rows) == 2
    asked = run_cli("ask", QUESTION, "--index", str(index_dir), "--session", "work", "--base-url", UNREACHABLE,
                    home=home, timeout=20)  # fmt: skip
    assert asked.returncode == 1
    assert "session 'work'" in one_line(asked.stderr) and "not a regular file" in asked.stderr


def test_a_fifo_given_as_config_weights_queries_or_judgments_is_refused_without_blocking(index_dir, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    base = ["ask", QUESTION, "--index", str(index_dir), "--base-url", UNREACHABLE]
    config = run_cli(*base, "--config", str(fifo), home=tmp_path, timeout=20)
    assert config.returncode == 1 and "not a regular file" in one_line(config.stderr)
    weights = run_cli(*base, "--scorer", "evidence", "--scorer-weights", str(fifo), home=tmp_path, timeout=20)
    assert weights.returncode == 2 and "not a regular file" in one_line(weights.stderr)
    queries = run_cli("search", "--queries", str(fifo), "--index", str(index_dir), home=tmp_path, timeout=20)
    assert queries.returncode == 1 and "not a regular file" in one_line(queries.stderr)
    judged = run_cli("critic", "fit", str(fifo), "--out", str(tmp_path / "w.json"), home=tmp_path, timeout=20)
    assert judged.returncode == 1 and "not a regular file" in one_line(judged.stderr)


# --- every flag given is honoured or refused -------------------------------------------------------------------


def test_scorer_weights_with_a_scorer_that_reads_none_is_a_usage_error_before_any_call(
    index_dir, server, tmp_path, capsys
):
    base = ["ask", QUESTION, "--index", str(index_dir), "--base-url", server.base_url]
    assert main([*base, "--scorer", "paper", "--scorer-weights", str(SHIPPED_WEIGHTS)]) == 2
    err = one_line(capsys.readouterr().err)
    assert "--scorer-weights" in err and "only the evidence scorer reads weights" in err and "paper" in err
    assert main([*base, "--scorer-weights", str(tmp_path / "nope.json")]) == 2
    assert "no such file" in one_line(capsys.readouterr().err)
    assert main([*base, "--scorer", "evidence"]) == 2  # no weights fitted for this endpoint's model
    assert "selfrag calibrate" in one_line(capsys.readouterr().err)
    assert server.stats.requests == 0
    copied = shutil.copy(SHIPPED_WEIGHTS, tmp_path / "mine.json")
    assert main([*base, "--scorer", "evidence", "--scorer-weights", str(copied), "--abstain-below", "0"]) == 0
    capsys.readouterr()
    assert main([*base, "--scorer-weights", str(copied), "--abstain-below", "0", "--json"]) == 0  # auto reads them
    assert "scorer evidence (weights" in json.loads(capsys.readouterr().out)["trace"]["policies"]


# --- no lost turn ----------------------------------------------------------------------------------------------


def test_a_busy_session_is_refused_before_the_model_works_so_no_answered_turn_is_lost(engine, tmp_path):
    rag = engine(
        {"retrieve_decide": {"retrieve": "no", "query": ""}, "generate_plain": plain("Thirty days.")}, lead=False
    )
    session = ChatSession(rag, SessionStore(tmp_path, lock_wait=0.2), "busy")
    fd = os.open(tmp_path / "busy.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another process is answering in this session
        with pytest.raises(SessionError, match="another process has been writing session 'busy'"):
            session.ask(QUESTION)
        assert rag.chat.calls == []  # refused before any model work: no answer was written and then dropped
    finally:
        os.close(fd)
    assert session.ask(QUESTION).answer == "Thirty days."
    assert [t.question for t in session.memory.turns] == [QUESTION]


def test_a_turn_that_cannot_be_saved_says_so_in_one_line_and_exits_non_zero(index_dir, tmp_path, monkeypatch, capsys):
    sessions = tmp_path / "home" / "sessions"

    def break_the_folder(body):  # while the answer is written, the session folder is replaced by a file
        if sessions.is_dir():
            sessions.rename(tmp_path / "moved")
            sessions.write_text("not a folder")
        return echo_responder(body)

    with FakeOpenAIServer(responder=break_the_folder) as srv:
        argv = ["ask", QUESTION, "--index", str(index_dir), "--base-url", srv.base_url, "--session", "work"]
        assert main(argv) == 1
    out, err = capsys.readouterr()
    assert ANSWER in out  # the answer was shown ...
    assert "this turn was not saved to session 'work'" in one_line(err)  # ... and the line says it was not kept
