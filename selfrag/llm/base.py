"""What the engine asks of a chat model, and what comes back. No HTTP here.

`ChatModel` is the seam: `OpenAIChatModel` speaks to a real endpoint, `selfrag.testing.ScriptedChatModel`
answers from a script keyed by prompt name. Both return raw text (plus token logprobs when available); parsing,
re-asking and label probabilities live in `structured.py`, so tests of those run against the fake too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from pydantic import BaseModel

from ..schema import Meter


@dataclass(frozen=True, slots=True)
class Message:
    role: str  # system | user | assistant
    content: str


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One structured call: the prompt it came from, the messages, and the reply schema."""

    prompt: str  # prompt file name; the scripted fake keys its replies on it
    messages: tuple[Message, ...]
    schema: type[BaseModel]
    max_tokens: int = 400
    logprobs: bool = False  # ask for token logprobs if the endpoint offers them
    temperature: float = 0.0


@dataclass(frozen=True, slots=True)
class TokenLogprob:
    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()  # alternatives at this position: (token, logprob)


@dataclass(frozen=True, slots=True)
class ChatResponse:
    text: str
    tokens: tuple[TokenLogprob, ...] | None = None  # None when the endpoint gave no logprobs
    finish_reason: str = "stop"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_only: bool = False  # no answer text, only reasoning (`reasoning_content`), never used as the answer


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What an endpoint was found to support, probed once and cached."""

    model: str
    structured: str = "json_schema"  # json_schema | json_object_schema | json_object | none
    logprobs: bool = False
    n: bool = False

    def describe(self) -> dict[str, object]:
        return {"model": self.model, "structured": self.structured, "logprobs": self.logprobs, "n": self.n}


class ChatModel(Protocol):
    """An endpoint the engine can ask; `name` identifies it in traces and results."""

    @property
    def name(self) -> str: ...

    async def capabilities(self, meter: Meter) -> Capabilities: ...

    async def chat(self, request: ChatRequest, meter: Meter) -> ChatResponse: ...
