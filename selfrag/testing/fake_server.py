"""A loopback OpenAI-compatible server for tests and benchmarks: stdlib asyncio, no model.

It answers `GET /v1/models`, `POST /v1/embeddings` and `POST /v1/chat/completions` after a fixed latency, with
replies that fit the requested JSON schema (`echo_responder`: sentences copied from the document in the prompt,
so answers are grounded and citations checkable; `restating_responder`: a small model that restates every
question, and answers it only when the question comes after the document). It records every request's start
and end time, the peak number in flight, and can misbehave on purpose (`fault`, one of FAULTS: errors, hangs,
resets, bodies cut short, bad bodies, rate limits). It runs in a background thread with its own event loop and
binds only to 127.0.0.1.

Shaped like the servers people run locally, on request:
- `slots=N`: at most N chat requests are served at once, the rest wait in a first-come queue (as llama.cpp's
  `llama-server --parallel N` does), and `GET /props` / `GET /slots` at the root report the slots in
  llama.cpp's shapes (`total_slots`, one object per slot). `reported_slots` makes the report say something
  else (0, -1, "four", a million: a broken report); /slots then answers 501, as with `--no-slots`.
- `rate_limited={1, 2, 3}`: those chat requests (numbered from 1 in arrival order) get 429 with
  `rate_limit_headers` (default `retry-after: 0`; `{}` for none, so the client backs off on its own).
- `logprobs=True`: a request that asks for logprobs gets token logprobs, after `logprobs_latency` extra
  seconds (a server that computes them slowly, as llama-cpp-python does over a large vocabulary).

Embeddings (`hashed_embedding`) are deterministic hashed bags of words and character trigrams: texts that share
words or word pieces ("labour" and "labor") come out similar. They exercise the plumbing and carry no meaning
beyond that; never report retrieval quality measured with them. `embeddings=False` removes the route (404, as
a chat-only server answers), and `embedding_models` limits the models served (others get 404).

`completions=` adds the legacy `POST /v1/completions` (what vLLM serves for a non-chat model such as the Self-RAG
checkpoints): a function of the request body returning `choices[0]`, usually built by `legacy_choice`, which
writes vLLM's logprobs shape. The fault modes apply to it as to chat.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import math
import re
import struct
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

Responder = Callable[[dict[str, Any]], str]
CompletionResponder = Callable[[dict[str, Any]], dict[str, Any]]  # a /v1/completions body -> its choices[0]
SAME = object()  # reported_slots default: report the real slot count
RETRY_NOW = {"retry-after": "0"}
MAX_BODY = 8 * 1024 * 1024
JSON = {"content-type": "application/json"}
FAULT_REPLIES: dict[str, tuple[int, bytes, dict[str, str]]] = {
    "500": (500, b'{"error": {"message": "server exploded"}}', JSON),
    "503": (503, b'{"error": {"message": "overloaded"}}', JSON),
    "429": (429, b'{"error": {"message": "slow down"}}', {**JSON, "retry-after-ms": "50"}),
    "wait-long": (429, b'{"error": {"message": "come back later"}}', {**JSON, "retry-after": "600"}),
    "quota": (
        429,
        b'{"error": {"message": "quota", "code": "insufficient_quota", "type": "insufficient_quota"}}',
        JSON,
    ),
    "auth": (401, b'{"error": {"message": "invalid api key"}}', JSON),
    "html": (200, b"<html><body>502 Bad Gateway</body></html>", {"content-type": "text/html"}),
    "truncated-json": (200, b'{"id": "x", "object": "chat.completion", "choi', JSON),
    "no-choices": (200, b'{"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []}', JSON),
    "error-object": (200, b'{"error": {"message": "model overloaded"}}', JSON),
}
FAULTS = (
    "500",
    "flaky",
    "429",
    "429-burst",
    "wait-long",
    "quota",
    "auth",
    "hang",
    "reset",
    "cut",
    "html",
    "truncated-json",
    "no-choices",
    "error-object",
    "malformed",
    "cut-prompt",
    "no-schema",
    "no-logprobs",
)


@dataclass
class Stats:
    requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    spans: list[tuple[float, float, str]] = field(default_factory=list)  # (start, end, schema name)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    authorizations: list[str] = field(default_factory=list)  # the Authorization header of every request
    embedding_requests: int = 0  # POST /v1/embeddings (not counted in `requests`, which counts chat calls)
    embedding_inputs: list[str] = field(default_factory=list)  # every text embedded, in arrival order
    open_connections: int = 0  # client connections not yet closed
    abandoned: int = 0  # chat requests whose client hung up before the reply
    gets: list[str] = field(default_factory=list)  # the path of every GET (/props, /slots, /v1/models), in order
    get_starts: list[float] = field(default_factory=list)  # when each of those arrived (time.monotonic)

    def rounds(self, gap: float) -> int:
        """Sequential rounds: requests starting within `gap` seconds of a round's first start join it."""
        count, first = 0, None
        for start, _, _ in sorted(self.spans):
            if first is None or start - first > gap:
                count, first = count + 1, start
        return count


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if len(s.strip()) > 3]


def echo_responder(body: dict[str, Any], final_after: int = 2) -> str:
    """A valid reply for the engine's prompts: copies a sentence of the document block, judges it supported,
    asks to retrieve again, and says the answer is final once it holds `final_after` sentences."""
    fmt = body.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema") or fmt.get("schema") or {}
    props = schema.get("properties", {})
    user = next((m["content"] for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
    question = re.search(r"Question: (.*)", user)
    question_text = question.group(1) if question else "the question"
    doc = re.search(r"<document[^>]*>\n(.*?)\n</document", user, re.S)
    doc_body = doc.group(1).split("\n", 1)[-1] if doc else ""  # the first line is the title when there is one
    doc_sentences = _sentences(doc_body)
    draft = user.split("Answer written so far:\n", 1)[-1].split("\n\n<document", 1)[0]
    done = 0 if "(nothing yet)" in draft else len(_sentences(draft))
    sentence = doc_sentences[done % len(doc_sentences)] if doc_sentences else "I cannot say more."
    values: dict[str, Any] = {
        "retrieve": "yes",
        "query": question_text,
        "relevance": "relevant",
        "sentence": sentence,
        "evidence": sentence,
        "support": "fully",
        "utility": 4,
        "is_final": done + 1 >= final_after,
        "retrieve_next": "yes",
        "next_query": question_text,
        "paraphrases": [question_text],
        "hypothetical_answer": question_text,
        "sub_questions": [],
        "kind": None,  # answer_lead: no reading of the question's kind (the regexes' stands)
        "verdict": "agree",  # confirm_decision: agrees with every decision
    }
    if not props:
        return json.dumps({"answer": "yes"})
    return json.dumps({name: values.get(name, "") for name in props})


_SHARED_STOPWORDS = frozenset(
    "a an and are as at be by can do does for from how i if in is it its many much my of on or the this to was what "
    "when where which who why will with you your".split()
)


def restating_responder(body: dict[str, Any], *, answers_plainly: bool = True, final_after: int = 2) -> str:
    """A valid reply for the engine's prompts from a model that restates the question (as a 0.5B instruct model
    did on the README's first question): every sentence it writes is the question itself, labelled relevant,
    fully supported, utility 5, unless `answers_plainly` and the prompt puts the question after the document
    (`generate_direct`). Asked so, it reads: it writes the document's sentence sharing most words with the
    question that the draft does not hold yet, and judges it by those words (irrelevant and unsupported when none
    are shared). A short answer (`answer_lead`) restates the question too; the answer is final once it holds
    `final_after` sentences."""
    fmt = body.get("response_format") or {}
    props = ((fmt.get("json_schema") or {}).get("schema") or fmt.get("schema") or {}).get("properties", {})
    user = next((m["content"] for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
    asked = re.search(r"^Question: (.*)$", user, re.M)
    question = asked.group(1).strip() if asked else "What is asked?"
    doc = re.search(r"<document[^>]*>\n(.*?)\n</document", user, re.S)
    draft_at = user.find("Answer written so far:\n")
    draft = user[draft_at:].split("\n\n", 1)[0].partition("\n")[2] if draft_at >= 0 else ""
    done = 0 if "(nothing yet)" in draft else len(_sentences(draft))
    plainly = doc is not None and asked is not None and asked.start() > doc.start()
    sentence, relevance, support = question, "relevant", "fully"
    if plainly and answers_plainly and doc is not None:
        sentence, shared = _best_read(question, doc.group(1), draft)
        relevance, support = ("relevant", "fully") if shared else ("irrelevant", "no")
    values: dict[str, Any] = {
        "retrieve": "yes",
        "query": question,
        "relevance": relevance,
        "sentence": sentence,
        "evidence": sentence,
        "support": support,
        "utility": 5,
        "is_final": done + 1 >= final_after,
        "retrieve_next": "yes",
        "next_query": question,
        "paraphrases": [question],
        "hypothetical_answer": question,
        "sub_questions": [],
        "answer": question[:200],
    }
    return json.dumps({name: values.get(name, "") for name in props})


def _best_read(question: str, document: str, draft: str) -> tuple[str, int]:
    """The document's sentence (its title line aside) sharing most words with the question, stopwords aside, and
    not already in the draft; with how many words it shares (ties: the earlier sentence)."""
    asked = set(_WORD.findall(question.lower())) - _SHARED_STOPWORDS
    lines = document.split("\n", 1)
    parts = [s for s in _sentences(lines[-1]) if s not in draft] or _sentences(document) or [question]
    scored = [(len(asked & set(_WORD.findall(part.lower()))), -i, part) for i, part in enumerate(parts)]
    shared, _, best = max(scored)
    return best, shared


EMBEDDING_DIMENSIONS = 256
_WORD = re.compile(r"\w+")


def hashed_embedding(text: str, dimensions: int = EMBEDDING_DIMENSIONS) -> list[float]:
    """A unit vector of signed hashed features: each lower-cased word, and each character trigram of
    "<word>" (so spelling variants overlap). Deterministic across runs and machines."""
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        padded = f"<{word}>"
        for feature in (word, *(padded[i : i + 3] for i in range(len(padded) - 2))):
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            bucket, sign = int.from_bytes(digest[:4], "little") % dimensions, 1.0 if digest[4] & 1 else -1.0
            vector[bucket] += sign * (2.0 if feature == word else 1.0)
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else vector


class FakeOpenAIServer:
    def __init__(
        self,
        *,
        latency: float = 0.0,
        responder: Responder = echo_responder,
        model: str = "fake-model",
        fault: str | None = None,
        embeddings: bool = True,
        embedding_models: tuple[str, ...] | None = None,
        embedding_dimensions: int = EMBEDDING_DIMENSIONS,
        slots: int | None = None,
        reported_slots: object = SAME,
        rate_limited: Collection[int] = (),
        rate_limit_headers: Mapping[str, str] = RETRY_NOW,
        logprobs: bool = False,
        logprobs_latency: float = 0.0,
        completions: CompletionResponder | None = None,
    ) -> None:
        self.latency, self.responder, self.model, self.fault = latency, responder, model, fault
        self.completions = completions  # serve the legacy POST /v1/completions (see legacy_choice)
        self.slots, self.reported_slots = slots, slots if reported_slots is SAME else reported_slots
        self.rate_limited, self.rate_limit_headers = frozenset(rate_limited), dict(rate_limit_headers)
        self.logprobs, self.logprobs_latency = logprobs, logprobs_latency
        if fault == "429-burst":  # the first three chat requests are rate limited (Retry-After 0)
            self.rate_limited |= {1, 2, 3}
        self._slot_queue: asyncio.Semaphore | None = None
        self.embeddings, self.embedding_models, self.embedding_dimensions = (
            embeddings,
            embedding_models,
            embedding_dimensions,
        )
        self.stats = Stats()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FakeOpenAIServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> str:
        ready = threading.Event()

        def serve() -> None:
            self._loop = asyncio.new_event_loop()
            self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=serve, daemon=True)
        self._thread.start()
        ready.wait(5)
        return self.base_url

    def stop(self) -> None:
        if self._loop is None or self._server is None:
            return

        async def shutdown() -> None:
            assert self._server is not None
            self._server.close()
            for task in [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
                task.cancel()

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread:
            self._thread.join(5)
        self._loop.close()
        self._loop = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.stats.open_connections += 1
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    break
                method, path, headers, body = request
                self.stats.authorizations.append(headers.get("authorization", ""))
                if not await self._respond(method, path, body, reader, writer):
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        except asyncio.CancelledError:  # the server is stopping: end quietly (a cancelled handler task is
            pass  # reported as an error by asyncio's stream callback on Python 3.11)
        finally:
            self.stats.open_connections -= 1
            writer.close()

    async def _respond(
        self, method: str, path: str, body: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        if method == "GET":
            self.stats.gets.append(path)
            self.stats.get_starts.append(time.monotonic())
        if method == "GET" and path in ("/props", "/slots") and self.reported_slots is not None:
            status, reply = self._slot_report(path)
            await _write(writer, status, json.dumps(reply).encode())
            return True
        if method == "GET" and path.endswith("/models"):
            data = {"object": "list", "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "me"}]}
            await _write(writer, 200, json.dumps(data).encode())
            return True
        if method == "POST" and path.endswith("/embeddings") and self.embeddings:
            await asyncio.sleep(self.latency)
            status, reply = self._embeddings(json.loads(body or b"{}"))
            await _write(writer, status, json.dumps(reply).encode())
            return True
        legacy = (
            self.completions is not None and path.endswith("/completions") and not path.endswith("/chat/completions")
        )
        if not (method == "POST" and (path.endswith("/chat/completions") or legacy)):
            await _write(writer, 404, b'{"error": {"message": "not found"}}')
            return True
        payload = json.loads(body or b"{}")
        stats = self.stats
        stats.requests += 1
        stats.in_flight += 1
        stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
        stats.bodies.append(payload)
        started, number = time.monotonic(), stats.requests
        try:
            if number in self.rate_limited:
                headers = {**JSON, **self.rate_limit_headers}
                await _write(writer, 429, b'{"error": {"message": "slow down"}}', headers=headers)
                return True
            if not await self._take_slot(reader):
                stats.abandoned += 1
                return False
            try:
                slow = self.logprobs and payload.get("logprobs")
                delay = self.latency + (self.logprobs_latency if slow else 0.0)
                if await _hung_up(reader, delay):
                    stats.abandoned += 1
                    return False
                return await self._answer(payload, reader, writer, number)
            finally:
                if self._slot_queue is not None:
                    self._slot_queue.release()
        finally:
            stats.in_flight -= 1
            fmt = payload.get("response_format") or {}
            stats.spans.append((started, time.monotonic(), (fmt.get("json_schema") or {}).get("name", "")))

    async def _answer(
        self, payload: dict[str, Any], reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int
    ) -> bool:
        """The reply to chat request `number` (1-based), misbehaving as `fault` says. False closes the socket."""
        fault = None if self.fault in ("none", "429-burst") else self.fault
        if fault in ("no-schema", "no-logprobs"):  # a server without the feature: 400 on a request asking for it
            fmt = payload.get("response_format") or {}
            asked = fmt.get("type") == "json_schema" if fault == "no-schema" else bool(payload.get("logprobs"))
            if asked:
                feature = "response_format json_schema" if fault == "no-schema" else "logprobs"
                await _write(writer, 400, json.dumps({"error": {"message": f"{feature} is not supported"}}).encode())
                return True
            fault = None
        if fault == "flaky":  # every other request fails with 503
            fault = "503" if number % 2 == 0 else None
        if fault == "429":  # every other request is rate limited, with a short Retry-After
            fault = "429" if number % 2 == 0 else None
        if fault == "hang":
            await _hung_up(reader, 3600)
            self.stats.abandoned += 1
            return False
        if fault == "reset":
            return False
        if fault == "cut":  # the headers promise the whole body, half of it arrives, then the connection closes
            body = json.dumps(self._completion(payload)).encode()
            await _write(writer, 200, body[: len(body) // 2], length=len(body))
            return False
        canned = FAULT_REPLIES.get(fault or "")
        if canned is not None:
            status, body, headers = canned
            await _write(writer, status, body, headers=headers)
            return True
        completion = self._completion(payload)
        if fault == "malformed" and "message" in completion["choices"][0]:
            completion["choices"][0]["message"]["content"] = '{"sentence": "half a reply'
        if fault == "cut-prompt":
            completion["usage"]["prompt_tokens"] = 16
        await _write(writer, 200, json.dumps(completion).encode())
        return True

    async def _take_slot(self, reader: asyncio.StreamReader) -> bool:
        """Wait for a free slot, first come first served (always free without `slots`); False when the client
        hung up while it waited in the queue."""
        if self.slots is None:
            return True
        if self._slot_queue is None:
            self._slot_queue = asyncio.Semaphore(self.slots)
        taking = asyncio.ensure_future(self._slot_queue.acquire())
        while not taking.done():
            if reader.at_eof():
                taking.cancel()
                try:
                    await taking
                except asyncio.CancelledError:
                    return False
                self._slot_queue.release()  # acquired just as it was cancelled
                return False
            await asyncio.wait({taking}, timeout=0.02)
        return True

    def _slot_report(self, path: str) -> tuple[int, Any]:
        """llama.cpp's shapes: /props holds total_slots; /slots lists one object per slot (501 when the count
        cannot be listed, as a server started with --no-slots answers)."""
        reported = self.reported_slots
        if path == "/props":
            settings = {"n_ctx": 4096, "temperature": 0.8, "n_probs": 0}
            return 200, {"default_generation_settings": settings, "total_slots": reported, "chat_template": ""}
        if isinstance(reported, int) and not isinstance(reported, bool) and 0 <= reported <= 64:
            return 200, [{"id": i, "state": 0, "n_ctx": 4096} for i in range(reported)]
        return 501, {
            "error": {
                "code": 501,
                "message": "This server does not support slots endpoint.",
                "type": "not_supported_error",
            }
        }

    def _embeddings(self, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """(status, body) of an embeddings request: hashed vectors, as floats or base64 as asked."""
        self.stats.embedding_requests += 1
        model, texts = payload.get("model"), payload.get("input")
        if self.embedding_models is not None and model not in self.embedding_models:
            return 404, {"error": {"message": f"model {model!r} not found", "code": "model_not_found"}}
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t for t in texts):
            return 400, {"error": {"message": "input must be a non-empty string or list of non-empty strings"}}
        self.stats.embedding_inputs.extend(texts)
        data = []
        for number, text in enumerate(texts):
            vector: Any = hashed_embedding(text, self.embedding_dimensions)
            if payload.get("encoding_format") == "base64":
                vector = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
            data.append({"object": "embedding", "index": number, "embedding": vector})
        tokens = sum(len(_WORD.findall(t)) for t in texts)
        return 200, {
            "object": "list",
            "data": data,
            "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def _completion(self, payload: dict[str, Any]) -> dict[str, Any]:
        if "prompt" in payload and self.completions is not None:
            return self._text_completion(payload)
        content = self.responder(payload)
        logprobs = None
        if payload.get("logprobs") and self.logprobs:
            logprobs = {"content": [{"token": content, "logprob": 0.0, "bytes": None, "top_logprobs": []}]}
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop",
            "logprobs": logprobs,
        }
        prompt = sum(len(str(m.get("content", ""))) for m in payload.get("messages", [])) // 4
        return {
            "id": f"chatcmpl-{self.stats.requests}",
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": len(content) // 4,
                "total_tokens": prompt + len(content) // 4,
            },
        }

    def _text_completion(self, payload: dict[str, Any]) -> dict[str, Any]:
        assert self.completions is not None
        choice = {"index": 0, **self.completions(payload)}
        prompt, text = len(str(payload.get("prompt", ""))) // 4, str(choice.get("text", ""))
        return {
            "id": f"cmpl-{self.stats.requests}",
            "object": "text_completion",
            "created": 0,
            "model": self.model,
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": len(text) // 4,
                "total_tokens": prompt + len(text) // 4,
            },
        }


def is_probe(body: dict[str, Any]) -> bool:
    """A chat request the capability probe sent (llm/probe.py's prompts), not one of the engine's own."""
    from ..llm.probe import ASK, COUNT

    messages = body.get("messages") or []
    first = messages[0].get("content") if messages and isinstance(messages[0], dict) else None
    return first in (ASK[0]["content"], COUNT[0]["content"])


def legacy_choice(
    pieces: list[tuple[str, float, dict[str, float]]], payload: dict[str, Any], finish_reason: str = "stop"
) -> dict[str, Any]:
    """A legacy completions choice in vLLM's shape (`CompletionLogProbs`; OpenAI's completions reference): `text`,
    `finish_reason`, and, only when the request asked for `logprobs` = k, `logprobs` with `tokens`,
    `token_logprobs`, `top_logprobs` (per position a {token: logprob} dict of the k best, plus the chosen token
    when it is not among them) and `text_offset` (character offsets from the start of the completion).
    `pieces`: (token, its logprob, the alternatives the model would have listed)."""
    text = "".join(token for token, _, _ in pieces)
    choice: dict[str, Any] = {"text": text, "finish_reason": finish_reason, "logprobs": None, "stop_reason": None}
    k = payload.get("logprobs")
    if isinstance(k, int) and not isinstance(k, bool) and pieces:
        tops, offsets, position = [], [], 0
        for token, logprob, alternatives in pieces:
            best = dict(sorted(alternatives.items(), key=lambda item: -item[1])[:k])
            best.setdefault(token, logprob)
            tops.append(best)
            offsets.append(position)
            position += len(token)
        choice["logprobs"] = {
            "text_offset": offsets,
            "token_logprobs": [logprob for _, logprob, _ in pieces],
            "tokens": [token for token, _, _ in pieces],
            "top_logprobs": tops,
        }
    return choice


async def _hung_up(reader: asyncio.StreamReader, seconds: float) -> bool:
    """Wait `seconds`, or less if the client closes the connection meanwhile: True when it did."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        if reader.at_eof():
            return True
        await asyncio.sleep(min(0.02, left))
    return reader.at_eof()


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str], bytes] | None:
    line = await reader.readline()
    if not line:
        return None
    method, path, _ = line.decode("latin-1").split(" ", 2)
    headers: dict[str, str] = {}
    while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = header.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0") or 0)
    if length > MAX_BODY:
        raise ValueError("body too large")
    return method, path, headers, await reader.readexactly(length) if length else b""


async def _write(
    writer: asyncio.StreamWriter,
    status: int,
    body: bytes,
    headers: dict[str, str] | None = None,
    *,
    length: int | None = None,  # the Content-Length to announce, when it should not match the body (a cut)
) -> None:
    reason = {
        200: "OK",
        400: "Bad Request",
        401: "Unauthorized",
        404: "Not Found",
        429: "Too Many Requests",
        500: "Internal Server Error",
        503: "Service Unavailable",
    }.get(status, "Error")
    announced = len(body) if length is None else length
    fields = {"content-type": "application/json", **(headers or {}), "content-length": str(announced)}
    head = f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items()) + "\r\n"
    writer.write(head.encode() + body)
    await writer.drain()


def main(argv: list[str] | None = None) -> int:
    """Run the fake server in its own process: prints its base URL, serves until stdin closes."""
    import argparse
    import sys
    from functools import partial

    parser = argparse.ArgumentParser(prog="python -m selfrag.testing.fake_server", description=main.__doc__)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--final-after", type=int, default=2)
    parser.add_argument("--fault", choices=FAULTS)
    parser.add_argument("--slots", type=int, help="serve this many chat requests at once, queue the rest")
    args = parser.parse_args(argv)
    server = FakeOpenAIServer(
        latency=args.latency,
        fault=args.fault,
        responder=partial(echo_responder, final_after=args.final_after),
        slots=args.slots,
    )
    print(server.start(), flush=True)
    try:
        for line in sys.stdin:
            if line.strip() == "stats":
                stats = server.stats
                print(
                    json.dumps(
                        {
                            "requests": stats.requests,
                            "max_in_flight": stats.max_in_flight,
                            "spans": stats.spans,
                            "gets": stats.gets,
                            "get_starts": stats.get_starts,
                            "probes": sum(1 for b in stats.bodies if is_probe(b)),
                        }
                    ),
                    flush=True,
                )
    except KeyboardInterrupt:
        pass
    server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
