"""A canary key must never appear in anything selfrag prints or writes, on success or failure: `ask`,
`chat`, and a benchmark run (its run folder, its request cache, its output)."""

from __future__ import annotations

import io
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from bench.fixtures import write_hotpot

from selfrag.cli import main
from selfrag.testing.fake_server import FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[1]

CANARY = "sk-canary-7f3e9b1c"
OPENAI_CANARY = "sk-canary-openai-42d1"


@pytest.mark.parametrize("fault", [None, "auth", "500", "malformed"])
def test_no_output_or_file_holds_a_key(fault, index_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SELFRAG_API_KEY", CANARY)  # the key configured for this endpoint: it is sent, never shown
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_CANARY)  # the user's OpenAI key: never sent here
    monkeypatch.setenv("SELFRAG_MAX_RETRIES", "0")
    page = tmp_path / "trace.html"
    with FakeOpenAIServer(fault=fault) as server:
        for head, extra in (
            ([], ["--json"]),
            ([], ["--jsonl"]),
            ([], ["--trace", "--trace-html", str(page)]),
            (["--debug"], []),
        ):
            main(
                [
                    *head,
                    "ask",
                    "refunds?",
                    "--index",
                    str(index_dir),
                    "--base-url",
                    server.base_url,
                    "--timeout",
                    "1",
                    *extra,
                ]
            )
        sent = server.stats.authorizations
    captured = capsys.readouterr()
    written = page.read_text() if page.exists() else ""
    for text in (captured.out, captured.err, written):
        assert CANARY not in text and OPENAI_CANARY not in text
    assert all(OPENAI_CANARY not in header for header in sent)
    assert any(CANARY in header for header in sent)  # the configured key did go to its own endpoint


def leaks(text: str | bytes) -> list[str]:
    data = text.encode() if isinstance(text, str) else text
    return [key for key in (CANARY, OPENAI_CANARY) if key.encode() in data]


def test_no_benchmark_file_cache_or_output_holds_a_key(tmp_path):
    """Three runs, each in its own folder (the endpoint is part of the config): healthy, every call failing
    (errors recorded per question), and a rejected key (the run aborts). Keys come from the environment."""
    write_hotpot(tmp_path / "data")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SELFRAG_", "OPENAI_"))}
    env.update(SELFRAG_HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "config"),
               SELFRAG_API_KEY=CANARY, OPENAI_API_KEY=OPENAI_CANARY, SELFRAG_MAX_RETRIES="0")  # fmt: skip
    cache, out, printed, sent = tmp_path / "cache.sqlite3", tmp_path / "runs", [], []
    for fault, code in ((None, 0), ("500", 3), ("auth", 1)):
        with FakeOpenAIServer(fault=fault) as server:
            argv = [sys.executable, "-m", "selfrag", "--debug", "bench", "run", "--dataset", "hotpotqa_smoke",
                    "--data", str(tmp_path / "data"), "--system", "selfrag", "--limit", "2", "--base-url",
                    server.base_url, "--out", str(out), "--cache", str(cache), "--timeout", "2"]  # fmt: skip
            done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
            sent += server.stats.authorizations
        assert done.returncode == code, done.stderr
        printed += [done.stdout, done.stderr]
    folders = sorted(out.glob("hotpotqa_smoke/selfrag/*"))
    assert len(folders) == 3
    for folder in folders:
        assert {"config.json", "samples.jsonl", "results.json", "results.md"} <= {p.name for p in folder.iterdir()}
    with sqlite3.connect(cache) as db:
        assert db.execute("SELECT count(*) FROM cache").fetchone()[0] > 0  # the cache did store replies
    files = [p for p in tmp_path.rglob("*") if p.is_file()]  # run folders, cache (+ -wal), home, config
    assert {p.name for p in files} >= {"cache.sqlite3", "samples.jsonl"}
    for path in files:
        assert not leaks(path.read_bytes()), path
    for text in printed:
        assert not leaks(text)
    assert any(CANARY in header for header in sent)  # the configured key did go to its endpoint, as a header
    assert not any(OPENAI_CANARY in header for header in sent)


@pytest.mark.parametrize("fault", [None, "auth"])
def test_chat_never_shows_a_key(fault, index_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SELFRAG_API_KEY", CANARY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_CANARY)
    monkeypatch.setenv("SELFRAG_MAX_RETRIES", "0")
    page = tmp_path / "page.html"
    script = f"/trace on\nHow many days for refunds?\nAnd for members?\n/show\n/sources\n/save {page}\n/exit\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO(script))  # no terminal: chat reads one message per line
    with FakeOpenAIServer(fault=fault) as server:
        code = main(["--debug", "chat", "--index", str(index_dir), "--base-url", server.base_url, "--timeout", "2",
                     "--history-file", str(tmp_path / "history")])  # fmt: skip
        sent = server.stats.authorizations
    captured = capsys.readouterr()
    assert code == (0 if fault is None else 1)
    if fault is None:
        assert "[1]" in captured.out and page.exists()
    for text in (captured.out, captured.err, *(p.read_text() for p in tmp_path.rglob("*") if p.suffix == ".html")):
        assert not leaks(text)
    assert any(CANARY in header for header in sent) and not any(OPENAI_CANARY in header for header in sent)
