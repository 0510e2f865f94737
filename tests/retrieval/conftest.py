"""Fixtures for the retrieval-layer tests: small corpora on disk, a tiny index."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from selfrag.retrieval.chunking import ChunkingSettings
from selfrag.retrieval.index import Index, IndexSettings
from selfrag.schema import Chunk

from .helpers import OLD, WORDS, chunk, write


@pytest.fixture
def put(tmp_path: Path) -> Callable[..., Path]:
    """put("docs/a.md", "text") writes under tmp_path with an old mtime."""

    def _put(relative: str, content: str | bytes, *, mtime: float | None = OLD) -> Path:
        return write(tmp_path / relative, content, mtime=mtime)

    return _put


@pytest.fixture
def words() -> ChunkingSettings:
    return WORDS


@pytest.fixture
def pets() -> list[Chunk]:
    return [
        chunk("cats", 0, "Cats sleep for most of the day and hunt at dusk."),
        chunk("cats", 1, "A cat purrs when it is content or when it is stressed."),
        chunk("cats", 2, "Kittens open their eyes after about ten days."),
        chunk("dogs", 0, "Dogs need daily walks and enjoy fetching sticks."),
        chunk("dogs", 1, "A dog barks to warn its family about strangers."),
        chunk("fish", 0, "Goldfish remember things for months, not seconds."),
    ]


@pytest.fixture
def pet_index(pets: list[Chunk]) -> Index:
    return Index.build(pets, IndexSettings(unstemmed_view=True))
