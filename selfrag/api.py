"""The Python API: `SelfRAG(index, config).answer(question)`, `await aanswer()`, `astream()` events.

`answer()` is the one sync door (it runs the async engine with `asyncio.run`); everything inside is async.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from .config import Config, EndpointConfig, resolve_endpoint, resolve_scorer
from .conversation import clip_history
from .engine.calibration import EvidenceRater, Rater, rater_for
from .engine.context import Deps, Run
from .engine.controller import search
from .engine.fitted import other_model, scoring
from .engine.state import RunInfo
from .errors import BudgetError, ConfigError, InputError
from .llm.base import ChatModel
from .llm.reflection_chat import open_chat
from .prompts import PromptBook
from .result import DoneEvent, Event, Result
from .retrieval import FindsChunks, Searcher, as_searcher
from .schema import Meter
from .text import without_surrogates

if TYPE_CHECKING:
    from .memory.sessions import ChatSession
    from .retrieval.embeddings import Embedder

MAX_QUESTION_CHARS = 8_000


class SelfRAG:
    """A Self-RAG engine over one index and one chat endpoint (plus, optionally, a critic endpoint)."""

    def __init__(
        self,
        index: Searcher | FindsChunks,
        config: Config | None = None,
        *,
        chat: ChatModel | None = None,
        critic_chat: ChatModel | None = None,
        prompts: PromptBook | None = None,
        environ: Mapping[str, str] | None = None,
        rater: Rater | None = None,
    ) -> None:
        self.config = config or Config()
        env = os.environ if environ is None else environ
        if chat is None:  # the embedded model's shipped weights, or those calibrated for (or named for) an endpoint's
            self.config = scoring(self.config, env)
        else:  # a chat passed in: rated as the config says
            self.config = resolve_scorer(self.config, embedded=False)
        rater = rater or rater_for(self.config.scorer, self.config.scorer_weights)
        self.fitted_for = rater.model.made_for if isinstance(rater, EvidenceRater) else None
        self.chat = chat or default_chat(self.config.endpoint, env, self.config)
        if critic_chat is None and self.config.critic_endpoint is not None:
            critic_chat = open_chat(self.config.critic_endpoint, env, self.config)
        self.deps = Deps(self.chat, as_searcher(index), prompts or PromptBook(), critic_chat, rater)
        self._runner: asyncio.Runner | None = None
        self._finalizer: weakref.finalize | None = None
        seed = self.config.nonce_seed
        self._secret = seed.encode() if seed is not None else os.urandom(16)

    @classmethod
    def from_index(
        cls, path: str | Path, config: Config | None = None, *, embedder: Embedder | None = None, **kwargs: object
    ) -> SelfRAG:
        """An engine over a saved index, searched with the config's retrieval strategy. When the index holds
        dense vectors (and `dense` is not off), queries are embedded on the config's endpoint, or by
        `embedder`, and the cosine ranking is fused with BM25."""
        from .retrieval import RetrievalSettings, Retriever
        from .retrieval.dense import open_dense
        from .retrieval.index import Index  # bm25s is imported only when an index is actually opened
        from .retrieval.supersession import load_versions

        config = config or Config()
        settings = RetrievalSettings(
            strategy=config.strategy, fusion=config.fusion, rerank=config.rerank, freshness=config.freshness,
            supersession=config.supersession,
        )  # fmt: skip
        index = Index.load(Path(path))
        versions = load_versions(path) if config.supersession else None
        environ = kwargs.get("environ")
        env = os.environ if environ is None else environ
        dense = open_dense(path, index, config, env, embedder)  # type: ignore[arg-type]
        retriever = Retriever(index, settings, extra=[(dense, 1.0)] if dense else (), versions=versions)
        return cls(retriever, config, **kwargs)  # type: ignore[arg-type]

    async def astream(
        self, question: str, *, conversation: str = "", config: Config | None = None
    ) -> AsyncIterator[Event]:
        """Events of one answer: a StepEvent per step, a SegmentEvent per settled sentence, then a DoneEvent.

        `conversation` is the history before this question, as text (e.g. `Conversation.render()`: "User: ..." /
        "Assistant: ..." lines). Only its most recent `MAX_HISTORY_CHARS` (4,000) characters reach the prompts:
        older turns are dropped first, cut at the start of a turn where possible (`clip_history`), as the chat
        does. A question longer than `MAX_QUESTION_CHARS` is refused with InputError.
        """
        question = check_question(question)
        history = clip_history(check_conversation(conversation))
        run = Run(self.deps, self._per_call(config), question, history, Meter(), self._secret)
        deadline = asyncio.get_running_loop().time() + run.config.deadline  # the probe counts against it too
        run.meter.deadline, run.meter.max_calls = deadline, run.config.max_llm_calls  # rate-limit waits stop here
        try:
            async with asyncio.timeout_at(deadline):
                capabilities = await self.chat.capabilities(run.meter)
        except TimeoutError:
            raise BudgetError(
                f"the deadline of {run.config.deadline:g}s passed before a sentence was written"
            ) from None
        fitted, weights = self.fitted_for, self.config.scorer_weights or "shipped"
        info = RunInfo(
            prompts=self.deps.prompts.versions(),
            capabilities=capabilities.report(),
            model=str(self.chat.name),
            fitted_for=fitted.describe() if fitted else "",
            weights_warning=other_model(fitted, capabilities.model, weights) if fitted else "",
        )
        async for event in search(run, info, deadline):
            yield event

    def _per_call(self, config: Config | None) -> Config:
        """One answer's config: the engine's, or the one given, whose scorer is the engine's. The rater is built
        with the engine, so a call's "auto" (the default) is the engine's scorer, and another scorer or weights
        file is refused: a new SelfRAG rates with it."""
        if config is None:
            return self.config
        mine = (self.config.scorer, self.config.scorer_weights)
        if config.scorer not in ("auto", mine[0]) or config.scorer_weights not in (None, mine[1]):
            raise ConfigError(
                f"this engine rates with scorer {mine[0]!r} (weights {mine[1] or 'shipped'}); "
                "a call cannot change it: make a SelfRAG with that config"
            )
        return config.with_values(scorer=mine[0], scorer_weights=mine[1], embedded=self.config.embedded)

    async def aanswer(self, question: str, *, conversation: str = "", config: Config | None = None) -> Result:
        """The answer's Result; `conversation` as in `astream` (its most recent 4,000 characters are used)."""
        async for event in self.astream(question, conversation=conversation, config=config):
            if isinstance(event, DoneEvent):
                return event.result
        raise AssertionError("the engine ended without a result")  # pragma: no cover

    def answer(self, question: str, *, conversation: str = "", config: Config | None = None) -> Result:
        """The sync door: one answer, from code that is not already inside an event loop.

        Successive calls share one private event loop, so HTTP connections and the probed capabilities are
        reused; `close()` (or a `with` block) releases them.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            if self._runner is None:
                self._runner = asyncio.Runner()
                self._finalizer = weakref.finalize(self, _close_runner, self._runner)
            return self._runner.run(self.aanswer(question, conversation=conversation, config=config))
        raise ConfigError("answer() was called inside a running event loop: use `await aanswer(...)` there")

    def session(self, name: str | None = None, *, folder: str | Path | None = None) -> ChatSession:
        """A conversation with managed memory (memory.py): `ask`/`aask` recall earlier turns, then remember the
        new one. With a `name` it is a named session kept on disk (under $SELFRAG_HOME/sessions, or `folder`)
        that another process can continue; without, it lives in the returned object."""
        from .memory.sessions import ChatSession, SessionStore

        if name is None:
            return ChatSession(self)
        store = SessionStore(folder) if folder is not None else SessionStore.default()
        return ChatSession(self, store, name)

    def close(self) -> None:
        """Close the HTTP clients and the private loop of the sync door."""
        if self._runner is not None:
            self._runner.run(self.aclose())
            self._finalizer.detach()
            self._runner.close()
            self._runner = None

    def __enter__(self) -> SelfRAG:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def aclose(self) -> None:
        """Close HTTP clients this engine opened in the running loop (the retriever's embedder too)."""
        for model in (self.deps.chat, self.deps.critic_chat, self.deps.index):
            close = getattr(model, "aclose", None)
            if close is not None:
                await close()


def _close_runner(runner: asyncio.Runner) -> None:
    """Finalizer of a forgotten sync door: close its loop unless another loop is running in this thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        runner.close()


def check_question(question: str) -> str:
    """The question stripped, bytes that are not UTF-8 as U+FFFD (`text.without_surrogates`: no request or
    session file could hold them); InputError when it is empty or too long."""
    if not isinstance(question, str) or not question.strip():
        raise InputError("the question is empty: ask something")
    if len(question) > MAX_QUESTION_CHARS:
        raise InputError(f"the question is {len(question)} characters long; the limit is {MAX_QUESTION_CHARS}")
    return without_surrogates(question.strip())


def check_conversation(conversation: str) -> str:
    if not isinstance(conversation, str):
        kind = type(conversation).__name__
        raise InputError(f"the conversation must be text (e.g. Conversation.render()), not {kind}")
    return conversation


def default_chat(
    endpoint: EndpointConfig, environ: Mapping[str, str], config: Config | None = None, *, remeasure: bool = False
) -> ChatModel:
    """The configured endpoint (JSON chat, or a Self-RAG checkpoint's reflection tokens: `open_chat`); with
    nothing configured at all (no base URL, no key), the embedded local model (`remeasure`: its weights timed
    again, as `selfrag doctor --refresh` asks)."""
    resolved = resolve_endpoint(endpoint, environ)
    if resolved.nothing_configured:
        if endpoint.protocol == "reflection-tokens":
            raise ConfigError("protocol reflection-tokens needs --base-url: a server running a Self-RAG checkpoint")
        from .llm.local import embedded_chat  # imports llama_cpp only when it is used

        return embedded_chat(endpoint, environ, remeasure=remeasure)
    return open_chat(endpoint, environ, config)
