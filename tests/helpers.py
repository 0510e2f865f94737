"""Reply builders and the tiny corpus shared by the engine tests."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import selfrag
from selfrag import Chunk
from selfrag.llm.base import ChatRequest

# the embedded model's weights, named for a loopback endpoint's model that has none of its own (a warning says so)
SHIPPED_WEIGHTS = str(Path(selfrag.__file__).parent / "data" / "critic-v1.json")

CHUNKS = [
    Chunk("policy-2024.md", 0, "Refunds are accepted within 14 days of purchase.", title="Refund policy 2024"),
    Chunk(
        "policy-2026.md",
        0,
        "Since April 2026 refunds are accepted within 30 days of purchase.",
        title="Refund policy 2026",
    ),
    Chunk("shipping.md", 0, "Orders ship within two business days from the Lyon warehouse.", title="Shipping"),
    Chunk("warranty.md", 0, "The warranty covers manufacturing defects for two years.", title="Warranty"),
    Chunk("contact.md", 0, "Support answers email within one business day.", title="Contact"),
]
# two directors' documents: Argentine and Polish, born 1971 and 1908 (choices and yes/no questions the documents decide)
DIRECTORS = [
    Chunk("trapero.md", 0, "Pablo Trapero (born 4 October 1971) is an Argentine film producer and director."),
    Chunk("ford.md", 0, "Aleksander Ford (24 November 1908 – 4 April 1980) was a Polish film director."),
]


def document_of(request: ChatRequest) -> str:
    """The document block of a rendered prompt (what the model was shown)."""
    text = request.messages[1].content  # the user message (re-asks append more messages after it)
    start = text.find("<document")
    return text[start:] if start >= 0 else ""


def fused(
    sentence: str,
    *,
    relevance: str = "relevant",
    support: str = "fully",
    utility: int = 5,
    is_final: bool = True,
    evidence: str | None = None,
    retrieve_next: str = "no",
    next_query: str = "",
) -> dict[str, Any]:
    return {
        "relevance": relevance,
        "sentence": sentence,
        "evidence": sentence if evidence is None else evidence,
        "support": support,
        "utility": utility,
        "is_final": is_final,
        "retrieve_next": retrieve_next,
        "next_query": next_query,
    }


def distinct(make: Callable[[int], dict[str, Any]]) -> Callable[[ChatRequest], dict[str, Any]]:
    """A reply that differs at every call (`make(n)` for call n = 1, 2, ...): a model that keeps writing new
    sentences, so a test of caps and budgets is not cut short by the rule against repeated sentences."""
    calls = 0

    def reply(request: ChatRequest) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        return make(calls)

    return reply


def plain(sentence: str, *, utility: int = 3, is_final: bool = True, retrieve_next: str = "no") -> dict[str, Any]:
    return {
        "sentence": sentence,
        "utility": utility,
        "is_final": is_final,
        "retrieve_next": retrieve_next,
        "next_query": "",
    }


def by_document(table: dict[str, dict[str, Any]]) -> Callable[[ChatRequest], dict[str, Any]]:
    """A reply chosen by which chunk (doc id) the prompt shows."""

    def reply(request: ChatRequest) -> dict[str, Any]:
        doc = document_of(request)
        for doc_id, value in table.items():
            if f'id="{doc_id}' in doc:
                return value
        raise AssertionError(f"no scripted reply for document {doc[:80]!r}")

    return reply


def default_ctrl_c() -> None:
    """`preexec_fn` for a child that a test will send SIGINT: a child started under a background job (`cmd &`,
    nohup, some CI runners) inherits SIGINT ignored, and Python then never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
