"""What the engine asks of a chat model, and what comes back. No HTTP here.

`ChatModel` is the seam: `OpenAIChatModel` speaks to a real endpoint, `selfrag.testing.ScriptedChatModel`
answers from a script keyed by prompt name. Both return raw text (plus token logprobs when available); parsing,
re-asking and label probabilities live in `structured.py`, so tests of those run against the fake too.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    values: tuple[tuple[str, str], ...] = ()  # the prompt's inputs, for a backend that writes its own prompt


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
    native: NativeLabels | None = None  # labels the backend read itself (reflection tokens); None: read the JSON


@dataclass(frozen=True, slots=True)
class NativeLabels:
    """Label distributions a backend read from the model's own tokens (the fine-tuned Self-RAG models), keyed by
    the reply field they stand for (relevance, support, utility, retrieve, retrieve_next). A field missing here
    is read from the JSON reply, one-hot."""

    probs: Mapping[str, Mapping[str, float]]  # field -> label value -> probability (sums to 1)
    truncated: frozenset[str] = frozenset()  # fields where some label fell outside the top-k and got a floor
    estimator: str = "reflection-tokens"  # reflection-tokens (from logprobs) | reflection-labels (text, one-hot)
    seq_prob: float | None = None  # geometric-mean probability of the segment's own tokens


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What an endpoint was found to support and what the engine chose to use, probed once and cached."""

    model: str
    structured: str = "json_schema"  # json_schema | json_object_schema | json_object | none
    logprobs: bool = False  # asked for on calls that want them (offered, and chosen: see logprobs_reason)
    n: bool = False
    protocol: str = "chat"  # chat (JSON replies) | reflection-tokens (the fine-tuned Self-RAG models)
    reading: str = ""  # reflection-tokens: logprobs | labels (read from the text, one-hot)
    note: str = ""  # why the reading fell back, said once per endpoint
    logprobs_offered: bool | None = None  # None: the same as logprobs (a model with no choice to make)
    logprobs_reason: str = ""  # why logprobs are used or not ("cheap: 1.1x ...", "asked: --logprobs on")
    costs: tuple[tuple[str, float], ...] = ()  # (capability, time per token relative to a plain call)
    parallel: int | None = None  # requests the server serves at once (None: no limit found)
    parallel_reason: str = ""  # where that came from (the server's slot count, or latency)

    def describe(self) -> dict[str, object]:
        """What decides the requests' shape (the benchmark cache keys on it): model, format, logprobs, n, and
        for a Self-RAG checkpoint its protocol and reading (chat endpoints describe as before)."""
        described: dict[str, object] = {
            "model": self.model,
            "structured": self.structured,
            "logprobs": self.logprobs,
            "n": self.n,
        }
        if self.protocol != "chat":
            described.update(protocol=self.protocol, reading=self.reading, note=self.note)
        return described

    def report(self) -> dict[str, object]:
        """Everything, for results and `selfrag doctor`: what was chosen, what it costs, and why."""
        offered = self.logprobs if self.logprobs_offered is None else self.logprobs_offered
        return {
            **self.describe(),
            "logprobs_offered": offered,
            "logprobs_reason": self.logprobs_reason,
            "costs": dict(self.costs),
            "parallel": self.parallel,
            "parallel_reason": self.parallel_reason,
        }


class ChatModel(Protocol):
    """An endpoint the engine can ask; `name` identifies it in traces and results."""

    @property
    def name(self) -> str: ...

    async def capabilities(self, meter: Meter) -> Capabilities: ...

    async def chat(self, request: ChatRequest, meter: Meter) -> ChatResponse: ...
