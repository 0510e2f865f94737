"""A canary key must never appear in anything selfrag prints or writes, on success or failure."""

from __future__ import annotations

import pytest

from selfrag.cli import main
from selfrag.fake_server import FakeOpenAIServer

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
