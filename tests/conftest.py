"""Shared fixtures: a tiny corpus, scripted replies, and a fixed nonce seed. Network is off (pytest-socket)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from helpers import CHUNKS

from selfrag import Chunk, Config
from selfrag.api import SelfRAG
from selfrag.testing import ListRetriever, ScriptedChatModel


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
        config = Config(nonce_seed="test", **knobs)
        rag = SelfRAG(ListRetriever(chunks or CHUNKS), config, chat=chat, critic_chat=critic_chat, environ={})
        made.append(rag)
        return rag

    yield make
    for rag in made:
        rag.close()
