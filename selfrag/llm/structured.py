"""Ask for a structured reply: parse, validate, re-ask on invalid output.

Retry ownership: transport failures belong to the SDK inside `ChatModel.chat`; this module owns exactly one
failure class, a reply that is not valid for its schema (malformed or fenced JSON, a wrong enum, an empty,
reasoning-only or truncated reply). It re-asks up to `reasks` times, telling the model what was wrong, then raises
CritiqueError. Everything `ChatModel.chat` raises (transport errors, RefusalError) passes through un-asked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt

from ..errors import CritiqueError
from ..schema import Meter
from .base import ChatModel, ChatRequest, ChatResponse, Message

T = TypeVar("T", bound=BaseModel)
MAX_REPLY_CHARS = 32_768


class InvalidReply(Exception):
    """The reply did not validate; internal to this module (becomes CritiqueError when re-asks run out)."""

    def __init__(self, reason: str, raw_text: str, *, larger_budget: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.raw_text = raw_text
        self.larger_budget = larger_budget  # the re-ask gets twice the max_tokens (the reply ran out of tokens)


@dataclass(frozen=True, slots=True)
class Parsed(Generic[T]):
    value: T
    response: ChatResponse  # the reply that validated, with its logprobs
    attempts: int


def extract_json(text: str) -> str:
    """The JSON object inside a reply: strips whitespace, one code fence, and prose around the braces."""
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0]
    start, end = body.find("{"), body.rfind("}")
    return body[start : end + 1] if start != -1 and end > start else body


def parse_reply(response: ChatResponse, schema: type[T]) -> T:
    """Validate one reply against its schema, or raise InvalidReply saying why."""
    text = response.text or ""
    if response.reasoning_only:
        reason = "the reply held only reasoning (reasoning_content) and no answer: write the JSON object itself"
        raise InvalidReply(reason, text, larger_budget=True)
    if not text.strip():
        raise InvalidReply("the reply was empty", text)
    if len(text) > MAX_REPLY_CHARS:
        raise InvalidReply("the reply was far too long", text[:200])
    if response.finish_reason == "length":
        raise InvalidReply("the reply was cut off by the token limit: answer more briefly", text, larger_budget=True)
    body = extract_json(text)
    try:
        return schema.model_validate_json(body)
    except ValidationError as error:
        first = error.errors()[0]
        if first.get("type") == "json_invalid" and (lenient := _lenient_json(body)) is not None:
            try:
                return schema.model_validate(lenient)
            except ValidationError as second:
                first = second.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ())) or "reply"
        raise InvalidReply(f"{where}: {first.get('msg', 'invalid')}", text) from None


def _lenient_json(body: str) -> object | None:
    """The reply read with raw control characters allowed inside strings: small models often write a literal
    newline or tab in an answer, which strict JSON forbids and which costs nothing to accept (text shown later
    is sanitised anyway). None when it is not JSON even so."""
    try:
        return json.loads(body, strict=False)
    except (ValueError, RecursionError):
        return None


def _reask(request: ChatRequest, failure: InvalidReply) -> ChatRequest:
    fix = (
        f"That reply was not valid ({failure.reason}). "
        "Reply again with only the JSON object, every field filled, using only the allowed values."
    )
    messages = (*request.messages, Message("assistant", failure.raw_text[:2000]), Message("user", fix))
    budget = request.max_tokens * 2 if failure.larger_budget else request.max_tokens
    return replace(request, messages=messages, max_tokens=budget)


async def ask(model: ChatModel, request: ChatRequest, meter: Meter, *, reasks: int = 1) -> Parsed[BaseModel]:
    """One structured call with up to `reasks` corrective re-asks; raises CritiqueError when they run out."""
    current = request
    attempt = 0
    try:
        async for attempt_state in AsyncRetrying(
            stop=stop_after_attempt(1 + reasks),
            retry=retry_if_exception_type(InvalidReply),
            reraise=True,
        ):
            with attempt_state:
                attempt += 1
                response = await model.chat(current, meter)
                meter.count_reply(request.prompt, response.prompt_tokens + response.completion_tokens)
                try:
                    value = parse_reply(response, request.schema)
                except InvalidReply as failure:
                    meter.parse_failures += 1
                    if attempt <= reasks:
                        meter.reasks += 1
                        current = _reask(current, failure)
                    raise
                return Parsed(value, response, attempt)
    except InvalidReply as failure:
        raise CritiqueError(
            f"prompt {request.prompt!r}: reply still invalid after {attempt} attempt(s): {failure.reason}",
            raw_text=failure.raw_text,
            reason=failure.reason,
        ) from None
    raise AssertionError("unreachable")  # pragma: no cover
