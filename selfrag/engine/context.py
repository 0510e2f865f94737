"""What every stage of one answer shares: the dependencies, the question, the config, the meter.

`Run.ask` is the stages' only way to call a model: it renders the prompt, checks the per-answer budgets,
and hands over to the structured layer (parse, re-ask). Nothing here is global: a Run lives for one answer.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from collections.abc import Coroutine, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from ..config import Config
from ..errors import BudgetError
from ..llm.base import ChatModel, ChatRequest
from ..llm.replies import shortened
from ..llm.structured import Parsed, ask
from ..prompts import PromptBook
from ..retrieval import Searcher, describe_version
from ..schema import Chunk, Meter
from ..text import neutralise_document
from .calibration import PaperRater, Rater

T = TypeVar("T")
NO_DRAFT = "(nothing yet)"
NO_CONVERSATION = "(none)"
MAX_TOKENS = {"retrieve_decide": 120, "generate_segment": 200, "answer_lead": 60}
DEFAULT_MAX_TOKENS = 400


@dataclass(frozen=True, slots=True)
class Deps:
    """The outside world of the engine; tests build it from fakes."""

    chat: ChatModel
    index: Searcher  # a plain retriever is made one by retrieval.as_searcher (SelfRAG does it)
    prompts: PromptBook
    critic_chat: ChatModel | None = None  # separate critic on another model; None: the same as chat
    rater: Rater = field(default_factory=PaperRater)  # labels (+ evidence) -> P(relevant), P(supported)


@dataclass(frozen=True, slots=True)
class Run:
    deps: Deps
    config: Config
    question: str
    conversation: str
    meter: Meter
    secret: bytes  # keys the per-call document delimiters

    async def ask(
        self, prompt_name: str, *, critic: bool = False, logprobs: bool = True, **values: str
    ) -> Parsed[BaseModel]:
        self.check_budget()
        prompt = self.deps.prompts[prompt_name]
        model = (self.deps.critic_chat or self.deps.chat) if critic else self.deps.chat
        request = ChatRequest(
            prompt=prompt_name,
            messages=prompt.render(**values),
            schema=shortened(prompt.reply_model) if self.config.short_replies else prompt.reply_model,
            max_tokens=MAX_TOKENS.get(prompt_name, DEFAULT_MAX_TOKENS),
            logprobs=logprobs,
            values=tuple(values.items()),
        )
        return await ask(model, request, self.meter, reasks=self.config.reasks)

    @property
    def abstain_below(self) -> float:
        """P(supported) under which a candidate is declined: the config's, else the rater's default."""
        below = self.config.abstain_below
        return self.deps.rater.threshold if below is None else below

    def check_budget(self) -> None:
        meter, config = self.meter, self.config
        if meter.llm_calls >= config.max_llm_calls:
            raise BudgetError(f"the answer used its budget of {config.max_llm_calls} LLM calls")
        if meter.prompt_tokens + meter.completion_tokens >= config.max_total_tokens:
            raise BudgetError(f"the answer used its budget of {config.max_total_tokens} tokens")

    def draft(self, text: str) -> str:
        return text or NO_DRAFT

    def history(self) -> str:
        return self.conversation or NO_CONVERSATION

    def document_values(self, beam_id: str, chunk: Chunk, max_chars: int | None = None) -> dict[str, str]:
        """The delimiter nonce, id and text of one chunk, ready for a prompt (the text cannot close the block)."""
        nonce = hmac.new(self.secret, f"{beam_id}|{chunk.key}".encode(), hashlib.sha256).hexdigest()[:16]
        body = f"{chunk.title}\n{chunk.text}" if chunk.title else chunk.text
        return {
            "nonce": nonce,
            "doc_id": neutralise_document(chunk.key, nonce)[:200].replace('"', "'"),
            "document": neutralise_document(body[: max_chars or self.config.max_chunk_chars], nonce),
        }

    def documents(self, beam_id: str, chunks: Sequence[Chunk], max_chars: int | None = None) -> str:
        """Several chunks for one prompt (`generate_pooled`), each in its own block with its own delimiter nonce,
        id and version, rendered as the one-document prompts render theirs."""
        blocks = []
        for chunk in chunks:
            values = self.document_values(beam_id, chunk, max_chars)
            version = self.version_values(chunk, values["nonce"])["version"]
            blocks.append(
                f'<document nonce="{values["nonce"]}" id="{values["doc_id"]}" version="{version}">\n'
                f'{values["document"]}\n</document nonce="{values["nonce"]}">'
            )
        return "\n\n".join(blocks)

    def version_values(self, chunk: Chunk, nonce: str) -> dict[str, str]:
        """Where the chunk's document stands among its versions ("current", "superseded by ..."), for the
        prompts that write from or judge a document; made as inert as the document id."""
        return {"version": neutralise_document(describe_version(chunk.version), nonce)[:300].replace('"', "'")}


async def run_all(jobs: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
    """Run jobs concurrently, results in input order. Jobs catch their own expected failures; the first
    unexpected one (a fatal endpoint error, an exhausted budget) cancels the rest and is raised as itself."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(job) for job in jobs]
    except BaseExceptionGroup as failed:
        first: BaseException = failed
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None
    return [task.result() for task in tasks]
