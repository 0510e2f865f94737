"""The fine-tuned Self-RAG models as a ChatModel: `/v1/completions`, reflection tokens read natively.

The engine's stages ask by prompt name (`retrieve_decide`, `generate_fused`, ...) and read typed replies. For a
Self-RAG checkpoint (selfrag/selfrag_llama2_7b, _13b, served e.g. by `vllm serve`) this backend writes the
checkpoint's own prompt from the request's input values instead of our prompt files, sends one completion
request, reads the reflection tokens and their top-k logprobs (`reflection.py`), and answers with the reply the
stage expects plus the label distributions it read (`ChatResponse.native`). So the controller, the beam, the
trace, budgets, citations, streaming and the benchmark runner work as with any other endpoint.

    retrieve_decide  instruction + draft, a few tokens: P([Retrieval]) against P([No Retrieval]) (and
                     [Continue to Use Evidence]) at the first position; the engine applies the threshold
    generate_fused   instruction + draft + [Retrieval]<paragraph>chunk</paragraph>: ISREL, the segment, ISSUP,
                     ISUSE, and the next decision, in one call per (beam, chunk); the segment ends at the first
                     retrieval token the threshold says yes to, at `[Retrieval]`, or at the length cap
    generate_plain   instruction + draft + [No Retrieval]: a segment without evidence
    generate_segment the fused call, sentence only (separate critic on another endpoint)
    answer_direct    (benchmarks) the no-retrieval answer

Request shape: the legacy completions API (OpenAI's completions reference; vLLM's `CompletionRequest`):
`prompt`, `max_tokens`, `temperature` 0, `logprobs` = k, `stop` ["<paragraph>"], and vLLM's extensions
`skip_special_tokens` false (else vLLM drops the reflection tokens, which are added special tokens, from the
text) and `spaces_between_special_tokens` false. Reply shape: `choices[0].text`, `finish_reason`, and
`choices[0].logprobs` with `tokens`, `token_logprobs`, `top_logprobs` (a list of {token: logprob} dicts) and
`text_offset` (vLLM's `CompletionLogProbs`; OpenAI's legacy completions object).

The capability probe (one completion, once per endpoint) settles which reading the endpoint allows, says it
once in the log, and records it in the result's capabilities: `logprobs`, or `labels` (read from the text,
one-hot) when the endpoint ignores `logprobs` or its tokens are not the Self-RAG vocabulary. Fewer top entries
than asked keep the logprobs reading; labels outside them get a floor and are marked truncated.

The draft goes into the prompt as plain text (the engine keeps segments without their tokens), where the
reference code feeds the model's own earlier output, tokens included. The threshold that ends a segment at a
written `[No Retrieval]` is the one of the Config the model was opened with (`open_chat`); a per-call config
with another threshold still applies its own to the decision itself.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..config import Config, EndpointConfig, ResolvedEndpoint, resolve_endpoint
from ..errors import ConfigError, CritiqueError, LLMError, PromptNotSupportedError
from ..labels import CriticMode, Decision, Mode, Relevance, Support, Utility
from ..schema import Meter
from .base import Capabilities, ChatModel, ChatRequest, ChatResponse, NativeLabels, TokenLogprob
from .capcache import CapCache
from .openai_chat import OpenAIChatModel, add_usage, first_choice, first_id
from .reflection import (
    PARAGRAPH_OPEN,
    GroupReading,
    SegmentReading,
    format_prompt,
    read_decision,
    read_segment,
    vocabulary_seen,
)
from .replies import MAX_SENTENCE_CHARS, decide

log = logging.getLogger("selfrag")
PROTOCOL = "reflection-tokens"
NAME_HINT = re.compile(r"self[-_]?rag", re.IGNORECASE)  # selfrag_llama2_7b, selfrag/selfrag_llama2_13b, ...
TOP_LOGPROBS = 20  # vLLM's default --max-logprobs; the paper read every position's full distribution
DECIDE_TOKENS = 8  # enough for a retrieval token even when the vocabulary splits it into pieces
SEGMENT_TOKENS = 300  # the reference code's long-form cap per segment
NO_DRAFT = "(nothing yet)"  # what the engine passes as the draft of an empty answer
PROBE_QUESTION = "Who wrote the novel Frankenstein?"
SUPPORTED = ("retrieve_decide", "generate_fused", "generate_plain", "generate_segment", "answer_direct")


@dataclass(frozen=True, slots=True)
class Completion:
    """One legacy completion choice, checked: its text, how it ended, and its tokens when logprobs came."""

    text: str
    finish_reason: str
    tokens: tuple[TokenLogprob, ...] | None
    offsets: tuple[int, ...] | None
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int


def uses_reflection_tokens(endpoint: EndpointConfig) -> bool:
    """The explicit setting wins; `auto` means a model name that says Self-RAG."""
    if endpoint.protocol != "auto":
        return endpoint.protocol == PROTOCOL
    return bool(endpoint.model and NAME_HINT.search(endpoint.model))


def open_chat(endpoint: EndpointConfig, environ: Mapping[str, str], config: Config | None = None) -> ChatModel:
    """The ChatModel for one configured endpoint: JSON chat, or a Self-RAG checkpoint's reflection tokens."""
    resolved = resolve_endpoint(endpoint, environ)
    cache = CapCache.default(environ)
    if not uses_reflection_tokens(endpoint):
        return OpenAIChatModel(resolved, cache=cache)
    config = config or Config()
    if config.critic is CriticMode.SEPARATE and config.critic_endpoint is None:
        raise ConfigError(
            "protocol reflection-tokens judges while it writes: use --critic fused, or a separate critic on "
            "another endpoint (--critic-base-url / --critic-model)"
        )
    if config.query_variants:
        raise ConfigError("protocol reflection-tokens cannot write query variants: leave --query-variants unset")
    if config.pooled:
        raise ConfigError("protocol reflection-tokens writes from one passage at a time: leave --pooled off")
    return ReflectionChatModel(resolved, threshold=_threshold(config), cache=cache)


def _threshold(config: Config) -> float:
    """Where a written `[No Retrieval]` still ends the segment: the engine's threshold, or the mode's."""
    return {Mode.ALWAYS: 0.0, Mode.NEVER: 1.0}.get(config.mode, config.threshold)


class ReflectionChatModel(OpenAIChatModel):
    """A ChatModel over a Self-RAG checkpoint's `/v1/completions` (transport, limits, breaker and the capability
    cache inherited: a 400 on a call that asks for logprobs the remembered probe found forgets them)."""

    PROTOCOL_NAME = PROTOCOL

    def __init__(
        self, endpoint: ResolvedEndpoint, *, threshold: float = 0.2, max_tokens: int = SEGMENT_TOKENS, **kw: Any
    ) -> None:
        super().__init__(endpoint, **kw)
        self.threshold = threshold
        self.max_tokens = max_tokens

    # -- capabilities ---------------------------------------------------------------------------------
    async def _probe(
        self, meter: Meter, *, quick: bool = False, prefetched: dict[str, object] | None = None
    ) -> Capabilities:
        """One completion, quick or not; the model from `prefetched` `/models` when it is not configured."""
        model = (
            self._endpoint.settings.model or first_id((prefetched or {}).get("/models"))
            or await self._first_model(meter)
        )  # fmt: skip
        prompt = format_prompt(PROBE_QUESTION)
        refused = False
        try:
            params = self._params(model, prompt, DECIDE_TOKENS, True)
            data = await self._post("/completions", params, meter, guarded=False)
        except LLMError as error:
            if error.status != 400:
                raise
            refused = True  # a server that refuses `logprobs` outright: ask once more without
            params = self._params(model, prompt, DECIDE_TOKENS, False)
            data = await self._post("/completions", params, meter, guarded=False)
        completion = read_text_completion(data, meter)
        reading, note = classify(completion, TOP_LOGPROBS)
        if refused:
            note = "the endpoint refuses `logprobs` (400): reflection labels are read from the text, one-hot"
        if note:
            log.warning("selfrag: %s", note)
        return Capabilities(model, "none", reading == "logprobs", False, PROTOCOL, reading, note)

    # -- calls ----------------------------------------------------------------------------------------
    async def chat(self, request: ChatRequest, meter: Meter) -> ChatResponse:
        if request.prompt not in SUPPORTED:
            raise PromptNotSupportedError(
                f"prompt {request.prompt!r} has no form for protocol reflection-tokens (it has: {', '.join(SUPPORTED)})"
            )
        caps = await self.capabilities(meter)
        values = dict(request.values)
        question, draft = values.get("question", ""), values.get("draft", "")
        draft = "" if draft == NO_DRAFT else draft
        if request.prompt == "retrieve_decide":
            completion = await self._complete(caps, format_prompt(question, draft), DECIDE_TOKENS, meter)
            return _decide_reply(completion, caps)
        if request.prompt in ("generate_plain", "answer_direct"):
            prompt = format_prompt(question, draft, no_retrieval=True)
        else:
            prompt = format_prompt(question, draft, paragraph=values.get("document", ""))
        completion = await self._complete(caps, prompt, self.max_tokens, meter)
        segment = read_segment(
            completion.text, _usable(completion, caps), completion.finish_reason, self._retrieves, completion.offsets
        )
        return _segment_reply(request.prompt, segment, completion)

    def _retrieves(self, reading: GroupReading) -> bool:
        """The engine's own retrieval rule (llm.replies.decide) on the probabilities at this token."""
        return decide(reading.label, reading.probs, self.threshold, has_cache=True)[0] is not Decision.NO

    async def _complete(self, caps: Capabilities, prompt: str, max_tokens: int, meter: Meter) -> Completion:
        def shape(caps: Capabilities) -> dict[str, Any]:
            return self._params(caps.model, prompt, max_tokens, caps.reading == "logprobs")

        data = await self._post_shaped(caps, "/completions", shape, meter)
        try:
            completion = read_text_completion(data, meter)
        except LLMError:
            self.breaker.failure()
            raise
        self.breaker.success()
        return completion

    def _params(self, model: str, prompt: str, max_tokens: int, logprobs: bool) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": model,
            "prompt": prompt,
            "max_tokens": max_tokens,
            "temperature": 0.0,
            "top_p": 1.0,
            "stop": [PARAGRAPH_OPEN],
            "skip_special_tokens": False,
            "spaces_between_special_tokens": False,
        }
        if logprobs:
            params["logprobs"] = TOP_LOGPROBS
        return params


def _usable(completion: Completion, caps: Capabilities) -> tuple[TokenLogprob, ...] | None:
    return completion.tokens if caps.reading == "logprobs" else None


def classify(completion: Completion, asked: int) -> tuple[str, str]:
    """The reading an endpoint allows, from one probe completion, and the sentence that says why it fell back."""
    tokens = completion.tokens
    if not tokens:
        return "labels", "the endpoint ignores `logprobs`: reflection labels are read from the text, one-hot"
    if not vocabulary_seen(tokens):
        return "labels", (
            "the endpoint's tokens hold no Self-RAG reflection token (not a Self-RAG checkpoint, or special tokens "
            "skipped): reflection labels are read from the text, one-hot"
        )
    widest = max(len(t.top) for t in tokens)
    if widest < 2:
        return "labels", "the endpoint returns no alternatives in `top_logprobs`: reflection labels are one-hot"
    if widest < asked:
        return "logprobs", (
            f"the endpoint returned {widest} top logprobs where {asked} were asked: labels outside them get a "
            "floor and are marked truncated"
        )
    return "logprobs", ""


def read_text_completion(data: Any, meter: Meter) -> Completion:
    """A legacy completions body as a Completion, or LLMError when it breaks the contract. Malformed logprobs
    are dropped (the labels are then read from the text), never trusted in part."""
    choice = first_choice(data, meter)
    text = choice.get("text")
    if not isinstance(text, str):
        meter.failed_calls += 1
        raise LLMError("the endpoint answered a completion choice without text (is this /v1/completions?)")
    prompt_tokens, completion_tokens, cached = add_usage(meter, data.get("usage"), text)
    tokens, offsets = _logprobs(choice.get("logprobs"))
    finish = str(choice.get("finish_reason") or "stop")
    return Completion(text, finish, tokens, offsets, prompt_tokens, completion_tokens, cached)


def _logprobs(block: Any) -> tuple[tuple[TokenLogprob, ...] | None, tuple[int, ...] | None]:
    if not isinstance(block, dict) or not isinstance(block.get("tokens"), list) or not block["tokens"]:
        return None, None
    tokens, logprobs = block["tokens"], block.get("token_logprobs")
    tops = block.get("top_logprobs") or [None] * len(tokens)
    offsets = block.get("text_offset")
    try:
        if not isinstance(logprobs, list) or len(logprobs) != len(tokens) or len(tops) != len(tokens):
            return None, None
        read = tuple(
            TokenLogprob(
                str(token),
                float(logprob) if logprob is not None else -math.inf,
                tuple((str(alt), float(p)) for alt, p in (top or {}).items()),
            )
            for token, logprob, top in zip(tokens, logprobs, tops, strict=True)
        )
        where = tuple(int(o) for o in offsets) if isinstance(offsets, list) and len(offsets) == len(tokens) else None
    except (TypeError, ValueError, AttributeError):
        return None, None
    return read, where


# -- replies the stages expect ------------------------------------------------------------------------


def _decide_reply(completion: Completion, caps: Capabilities) -> ChatResponse:
    reading = read_decision(completion.text, _usable(completion, caps))
    label = reading.label if reading is not None else ""  # no retrieval token: the engine's rule says retrieve
    native = _native({"retrieve": reading})
    return _response({"retrieve": label, "query": ""}, completion, native)


def _segment_reply(prompt: str, segment: SegmentReading, completion: Completion) -> ChatResponse:
    if not segment.text:
        raise CritiqueError(
            f"the model wrote an empty segment (it ended at {segment.ended})",
            raw_text=completion.text[:2000],
            reason="empty segment",
        )
    sentence = _fit(segment.text)
    if prompt == "answer_direct":
        return _response({"answer": sentence}, completion, None)
    if prompt == "generate_segment":
        return _response({"sentence": sentence}, completion, _native({}, segment))
    decision = segment.decision.label if segment.decision is not None else ""
    reply: dict[str, Any] = {
        "sentence": sentence,
        "utility": int(segment.utility.label) if segment.utility else Utility.U3.value,  # missing: s_use 0
        "is_final": segment.ended == "eos",
        "retrieve_next": decision,
        "next_query": "",
    }
    fields = {"utility": segment.utility, "retrieve_next": segment.decision}
    if prompt == "generate_fused":  # missing ISREL / ISSUP: the conservative labels, as a failed critique
        reply = {
            "relevance": segment.relevance.label if segment.relevance else Relevance.IRRELEVANT.value,
            "sentence": sentence,
            "evidence": "",
            "support": segment.support.label if segment.support else Support.NO.value,
            **{k: v for k, v in reply.items() if k != "sentence"},
        }
        fields.update(relevance=segment.relevance, support=segment.support)
    return _response(reply, completion, _native(fields, segment))


def _fit(text: str) -> str:
    """A segment longer than a reply's sentence may be, cut at its last sentence end that fits."""
    if len(text) <= MAX_SENTENCE_CHARS:
        return text
    head = text[:MAX_SENTENCE_CHARS]
    end = max(head.rfind(". "), head.rfind("! "), head.rfind("? "))
    return head[: end + 1] if end > 0 else head


def _native(fields: Mapping[str, GroupReading | None], segment: SegmentReading | None = None) -> NativeLabels:
    read = {name: r for name, r in fields.items() if r is not None}
    probs = {name: dict(r.probs) for name, r in read.items() if r.source == "logprobs"}
    return NativeLabels(
        probs=probs,
        truncated=frozenset(name for name, r in read.items() if r.truncated),
        estimator="reflection-tokens" if probs else "reflection-labels",
        seq_prob=segment.seq_prob if segment is not None else None,
    )


def _response(reply: dict[str, Any], completion: Completion, native: NativeLabels | None) -> ChatResponse:
    """The stage's reply as JSON (finish "stop": the JSON is whole even when the segment hit the cap)."""
    return ChatResponse(
        json.dumps(reply),
        None,
        "stop",
        completion.prompt_tokens,
        completion.completion_tokens,
        completion.cached_tokens,
        native=native,
    )
