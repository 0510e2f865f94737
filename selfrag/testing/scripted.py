"""Public fakes for tests and examples: a scripted chat model keyed by prompt name, and a list retriever.

`ScriptedChatModel` answers each call from the script entry of its prompt name: a reply (dict, JSON string,
pydantic model, `Scripted`), a list of replies consumed in order, a function of the request returning a reply,
or an exception to raise. A call whose prompt has no entry (or whose queue ran dry) fails loudly.
`Scripted(value, probs=...)` also produces token logprobs consistent with the JSON text, so the real
logprob-reading code runs against it.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ..llm.base import Capabilities, ChatRequest, ChatResponse, TokenLogprob
from ..retrieval.strategies import SearchEachQuery
from ..schema import Chunk, Hit, Meter


@dataclass(frozen=True)
class Scripted:
    """One scripted reply: the JSON value, optional label probabilities per field, and a finish reason."""

    value: Any
    probs: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    finish_reason: str = "stop"


Reply = Any  # dict | str | BaseModel | Scripted | BaseException


class ScriptedChatModel:
    def __init__(
        self,
        script: Mapping[str, Reply | Sequence[Reply] | Callable[[ChatRequest], Reply]],
        *,
        latency: float = 0.0,
        logprobs: bool = False,
        name: str = "scripted",
    ) -> None:
        self._script = {key: (list(v) if isinstance(v, list | tuple) else v) for key, v in script.items()}
        self.latency = latency
        self._caps = Capabilities(model=name, structured="json_schema", logprobs=logprobs, n=False)
        self.calls: list[ChatRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0

    @property
    def name(self) -> str:
        return self._caps.model

    async def capabilities(self, meter: Meter) -> Capabilities:
        return self._caps

    def calls_to(self, prompt: str) -> list[ChatRequest]:
        return [call for call in self.calls if call.prompt == prompt]

    async def chat(self, request: ChatRequest, meter: Meter) -> ChatResponse:
        self.calls.append(request)
        meter.llm_calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.latency:
                await asyncio.sleep(self.latency)
            reply = self._next(request)
        finally:
            self.in_flight -= 1
        if isinstance(reply, BaseException):
            raise reply
        response = self._response(reply, request)
        meter.prompt_tokens += response.prompt_tokens
        meter.completion_tokens += response.completion_tokens
        return response

    def _next(self, request: ChatRequest) -> Reply:
        if request.prompt not in self._script:
            raise AssertionError(f"unscripted call to prompt {request.prompt!r}")
        entry = self._script[request.prompt]
        if isinstance(entry, list):
            if not entry:
                raise AssertionError(f"the script for prompt {request.prompt!r} ran out of replies")
            return entry.pop(0)
        if callable(entry) and not isinstance(entry, BaseModel | BaseException | type):
            return entry(request)
        return entry

    def _response(self, reply: Reply, request: ChatRequest) -> ChatResponse:
        scripted = reply if isinstance(reply, Scripted) else Scripted(reply)
        value = scripted.value
        if isinstance(value, BaseModel):
            text = value.model_dump_json()
        elif isinstance(value, str):
            text = value
        else:
            text = json.dumps(value)
        tokens = fake_logprobs(text, scripted.probs) if self._caps.logprobs and request.logprobs else None
        prompt_tokens = sum(len(m.content) for m in request.messages) // 4
        return ChatResponse(text, tokens, scripted.finish_reason, prompt_tokens, max(1, len(text) // 4), 0)


_PIECES = re.compile(r"\w+|\s+|[^\w\s]")


def fake_logprobs(text: str, probs: Mapping[str, Mapping[str, float]]) -> tuple[TokenLogprob, ...]:
    """Tokens of `text` (words, spaces, punctuation) with top alternatives at the start of each field in
    `probs`; every other token is certain (logprob 0)."""
    starts: dict[int, Mapping[str, float]] = {}
    for name, dist in probs.items():
        match = re.search(rf'"{re.escape(name)}"\s*:\s*"?', text)
        if match:
            starts[match.end()] = dist
    tokens, position = [], 0
    for piece in _PIECES.findall(text):
        dist = starts.get(position)
        if dist:
            top = tuple((label, math.log(p)) for label, p in dist.items() if p > 0)
            tokens.append(TokenLogprob(piece, math.log(dist.get(piece, 1e-9) or 1e-9), top))
        else:
            tokens.append(TokenLogprob(piece, 0.0))
        position += len(piece)
    return tuple(tokens)


STOPWORDS = frozenset(
    "a an and are as at be by can do does for from how i in is it many much of on or the this to was what when "
    "where which who why with you".split()
)


class ListRetriever(SearchEachQuery):
    """A retriever over a fixed list of chunks: scores by shared lower-cased words, stopwords aside (for tests).
    The engine asks it through `asearch` (SearchEachQuery): each query alone, a group's lists fused by RRF."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = list(chunks)
        self.queries: list[str] = []

    def find_relevant_chunks(self, question: str, k: int) -> list[Hit]:
        self.queries.append(question)
        words = set(re.findall(r"\w+", question.lower())) - STOPWORDS
        scored = [(len(words & set(re.findall(r"\w+", c.text.lower()))), i, c) for i, c in enumerate(self.chunks)]
        ranked = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))
        return [Hit(chunk, float(score)) for score, _, chunk in ranked[:k]]
