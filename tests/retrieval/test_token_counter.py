"""Token counting offline, from the packaged vocabulary, without touching tiktoken's cache or the environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from selfrag.errors import ConfigError
from selfrag.tokens import TiktokenCounter, TokenCounter, TokenOffsets, WhitespaceCounter, head, make_counter

TEXT = "Self-RAG retrieves on demand; naïve café ☕ costs 3.50 € — 日本語も大丈夫。"


def test_known_cl100k_counts() -> None:
    counter = TiktokenCounter()
    assert counter.count("hello world") == 2
    assert counter.encode("hello world") == [15339, 1917]  # cl100k_base ids, as tiktoken's own encoding gives
    assert counter.count("") == 0
    assert counter.count("<|endoftext|>") > 1  # special-token text counts as ordinary text
    assert counter.decode(counter.encode(TEXT)) == TEXT


def test_token_starts_partition_the_text() -> None:
    counter = TiktokenCounter()
    starts = [int(s) for s in counter.token_starts(TEXT)]
    assert len(starts) == counter.count(TEXT)
    assert starts[0] == 0 and starts == sorted(starts) and starts[-1] <= len(TEXT)
    pieces = [TEXT[a:b] for a, b in zip(starts, [*starts[1:], len(TEXT)], strict=True)]
    assert "".join(pieces) == TEXT


def test_no_cache_folder_and_no_environment_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    before = dict(os.environ)
    assert TiktokenCounter().count("offline please") > 0
    assert list(cache.iterdir()) == []
    assert dict(os.environ) == before


def test_a_damaged_vocabulary_is_refused(tmp_path: Path) -> None:
    damaged = tmp_path / "cl100k_base.tiktoken"
    damaged.write_bytes(b"aGVsbG8= 0\n")
    with pytest.raises(ConfigError, match="SHA-256 mismatch"):
        TiktokenCounter(damaged).count("x")


def test_protocols_and_factory() -> None:
    assert isinstance(WhitespaceCounter(), TokenOffsets) and isinstance(TiktokenCounter(), TokenCounter)
    assert isinstance(make_counter("whitespace"), WhitespaceCounter)
    assert isinstance(make_counter("cl100k_base"), TiktokenCounter)
    with pytest.raises(ConfigError, match="unknown tokenizer"):
        make_counter("gpt2")


def test_whitespace_counter_and_head() -> None:
    counter = WhitespaceCounter()
    assert counter.count("  one two\tthree\n") == 3
    assert counter.token_starts("  one two") == [2, 6]
    assert head("one two three four", 2, counter) == "one two"
    assert head("one two", 5, counter) == "one two"
    assert TiktokenCounter().count(head(TEXT, 7, TiktokenCounter())) <= 7
