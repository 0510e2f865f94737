"""Shared fixtures: a tiny corpus, scripted replies, and a fixed nonce seed. Network is off (pytest-socket)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import CHUNKS

from selfrag import Chunk, Config
from selfrag.api import SelfRAG
from selfrag.testing import ListRetriever, ScriptedChatModel
from selfrag.testing.fake_server import FakeOpenAIServer

SMALL_CORPUS = {
    "refunds.md": "Refunds are accepted within 30 days of purchase. A receipt is required.",
    "shipping.md": "Orders ship within two business days from Lyon. Express shipping costs 9 euros.",
    "members.md": "Members get free express shipping and 60 days for refunds.",
}


@pytest.fixture(autouse=True)
def cache_home(monkeypatch, tmp_path):
    """Remembered capabilities (and any other cache) go to the test's folder, never the user's home."""
    monkeypatch.setenv("SELFRAG_HOME", str(tmp_path / "selfrag-home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture
def index_dir(tmp_path):
    """A saved BM25 index of three short documents, built with `selfrag index`."""
    from selfrag.cli import main

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in SMALL_CORPUS.items():
        (corpus / name).write_text(text)
    out = tmp_path / "index"
    assert main(["index", str(corpus), "--out", str(out), "--quiet"]) == 0
    return out


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No endpoint or key from the developer's shell; no config file from their home."""
    for name in list(os.environ):
        if name.startswith(("SELFRAG_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    """The loopback fake OpenAI-compatible endpoint (chat only)."""
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture
def chunks() -> list[Chunk]:
    return list(CHUNKS)


@pytest.fixture
def engine() -> Iterator[Callable[..., SelfRAG]]:
    made: list[SelfRAG] = []

    def make(
        script: dict[str, Any],
        *,
        logprobs: bool = False,
        latency: float = 0.0,
        chunks: list[Chunk] | None = None,
        critic_chat: ScriptedChatModel | None = None,
        **knobs: Any,
    ) -> SelfRAG:
        chat = ScriptedChatModel(script, logprobs=logprobs, latency=latency)
        config = Config(
            **{"nonce_seed": "test", **knobs}
        )  # the product's defaults; a test that means lead=False says so
        rag = SelfRAG(ListRetriever(chunks or CHUNKS), config, chat=chat, critic_chat=critic_chat, environ={})
        made.append(rag)
        return rag

    yield make
    for rag in made:
        rag.close()
