"""Internal values of the search: chunks, critiques, plans, segments, beams. All frozen.

A beam branches by `dataclasses.replace`, so a child never shares mutable state with its parent.
Outside text (model replies, files) is parsed with pydantic at the boundary and arrives here typed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeVar, overload

from .labels import Decision, Relevance, Support, Utility

L = TypeVar("L")  # a label type (Relevance, Support, Utility)


class Flag(StrEnum):
    """Why a candidate was declined, cut or replaced (None: kept as written). A flag that `drops` it makes it
    never an answer; `several_sentences` and `quoted` change its text and keep it."""

    GATED = "gated"  # an optional hard gate dropped it (Config.gate_irrelevant, Config.gate_unsupported)
    SUPERSEDED = "superseded"  # its document yields to a newer version in hand
    RESTATES_QUESTION = "restates_question"
    REPEATS_DRAFT = "repeats_draft"
    ABOUT_THE_DOCUMENT = "about_the_document"  # speaks of the document, or copies the prompt's machinery
    NO_AMOUNT = "no_amount"  # the question asks how many or how much and nothing states an amount
    UNSTATED = "unstated"  # states what its documents do not hold (or a bare verdict no document states)
    DISOWNED = "disowned"  # the model calls it irrelevant and unsupported, and nothing else is left
    UNSUPPORTED = "unsupported"  # its support is under the abstention cut, or it needed documents and had none
    SEVERAL_SENTENCES = "several_sentences"  # cut to the one worth keeping
    QUOTED = "quoted"  # replaced by the sentence of its chunk it was drawn from

    @property
    def drops(self) -> bool:
        return self not in (Flag.SEVERAL_SENTENCES, Flag.QUOTED)


@dataclass(frozen=True, slots=True)
class Version:
    """Where a chunk's document stands among the dated versions of its topic (supersession.py)."""

    current: bool  # False: a newer version replaces it
    date: str | None  # the document's date (YYYY-MM-DD, YYYY-MM or YYYY) when known
    newer: tuple[str, ...] = ()  # doc ids of the current versions that replace it
    older: tuple[str, ...] = ()  # doc ids of the versions it replaces directly


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrievable piece of a document; `key` (document id + chunk number) is stable across rebuilds."""

    doc_id: str  # the document's own id (file path relative to the indexed folder, or the jsonl `id`)
    chunk_id: int  # position of the chunk inside its document, from 0
    text: str
    title: str = ""
    source: str = ""  # where the document came from (path, URL, dataset name)
    date: str | None = None  # ISO date of the document when known (used by the freshness bonus)
    version: Version | None = None  # set by retrieval when the document has other versions (not stored)

    @property
    def key(self) -> str:
        return f"{self.doc_id}#{self.chunk_id}"


@dataclass(frozen=True, slots=True)
class Hit:
    """A chunk returned for a query, with the retriever's score (higher is better)."""

    chunk: Chunk
    score: float


@dataclass(frozen=True, slots=True)
class Critique:
    """The reflection labels of one candidate, as probability distributions over each label set.

    With discrete labels each distribution is one-hot. `relevance` and `support` are None for a segment written
    without evidence. `estimator` says where the numbers came from: "logprobs" or "labels"; for the fine-tuned
    Self-RAG models "reflection-tokens" (their tokens' top-k logprobs) or "reflection-labels" (read as text, one-hot).
    """

    utility: Mapping[Utility, float]
    is_final: bool
    relevance: Mapping[Relevance, float] | None = None
    support: Mapping[Support, float] | None = None
    estimator: str = "labels"
    truncated: bool = False  # some label fell outside the endpoint's top-k logprobs and got a floor
    quote_ok: bool | None = None  # did the evidence quote occur in the chunk (None: no quote needed)
    seq_prob: float | None = None  # geometric-mean token probability of the sentence, when logprobs exist
    status: str = "ok"  # ok | defaulted (the critic failed and conservative labels stand in)
    p_relevant: float | None = None  # the scorer's P(relevant) (engine.calibration); None: not rated
    p_supported: float | None = None  # the scorer's P(supported)
    answer_support: float | None = None  # what the abstention cut is applied to (engine.calibration)
    features: Mapping[str, float] | None = None  # the evidence features behind them (engine.evidence)

    @overload
    @staticmethod
    def top(dist: Mapping[L, float]) -> L: ...

    @overload
    @staticmethod
    def top(dist: Mapping[L, float] | None) -> L | None: ...

    @staticmethod
    def top(dist: Mapping[L, float] | None) -> L | None:
        """The most probable label of a distribution (None for no distribution)."""
        return max(dist, key=lambda label: dist[label]) if dist else None


@dataclass(frozen=True, slots=True)
class Plan:
    """The retrieval decision for a beam's next step and the query to retrieve with."""

    decision: Decision
    query: str
    p_retrieve: float | None = None  # (P(yes) + P(continue)) / total, when logprobs exist
    raw_label: str = ""  # what the model said, before the rules turned it into `decision`


@dataclass(frozen=True, slots=True)
class Segment:
    """One committed sentence of a draft, with the chunk it was written from (None: written without evidence)."""

    text: str
    critique: Critique
    chunk: Chunk | None = None
    score: float | None = None  # the paper's f(y_t, d); None for segments written without evidence
    pooled: bool = False  # written from all of its step's chunks at once; `chunk` is the one it cites
    also: tuple[Chunk, ...] = ()  # pooled: the other chunks its words come from (engine.evidence.drawn_on)


@dataclass(frozen=True, slots=True)
class Beam:
    """A partial answer: its segments, the evidence of its last retrieval, and the plan for its next step."""

    id: str  # path in the search tree, e.g. "0.3.1": child 1 of child 3 of the root
    segments: tuple[Segment, ...] = ()
    evidence: tuple[Chunk, ...] = ()  # chunks of the last retrieval, reused on `continue`
    plan: Plan | None = None
    final: bool = False
    aggregate: float = 0.0  # length-aware score of the whole draft (see engine.beam.aggregate)

    @property
    def text(self) -> str:
        return " ".join(segment.text for segment in self.segments)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One proposed next segment of a beam, before pruning. `error` set means it failed and carries no text."""

    parent: Beam
    index: int  # position among the parent's candidates this step (the chunk's rank, or 0; pooled: the cited one's)
    chunk: Chunk | None = None
    retrieval_score: float | None = None  # the retriever's score of the chunk, when known
    evidence: tuple[Chunk, ...] = ()  # every chunk this step gave the parent (kept for `continue`)
    text: str = ""
    critique: Critique | None = None
    plan: Plan | None = None
    error: str | None = None
    botched: bool = False  # failed with a reply that cannot be used (errors.MODEL_FAILURES): asking again gets the same
    flag: Flag | None = None  # why it was declined, cut or replaced
    pooled: bool = False  # written from every chunk of `evidence` at once; `chunk` is the one it cites
    also: tuple[Chunk, ...] = ()  # pooled: the other chunks its words come from; it is rated against all of them
    written: str | None = None  # quoted: the sentence the model wrote, which stated what its chunk does not hold
    extracted: bool = False  # its chunk's own sentence, extracted beside the model's (engine.extract)
    asked_again: bool = False  # written when its chunk's first sentence restated the question (Config.ask_plainly)

    @property
    def gated(self) -> bool:
        """Declined or dropped by a gate: never an answer."""
        return self.flag is not None and self.flag.drops

    @property
    def by_rule(self) -> bool:
        """Declined, cut or replaced by one of the engine's rules (not dropped by an optional gate)."""
        return self.flag is not None and self.flag is not Flag.GATED


@dataclass(slots=True)
class Meter:
    """Accounting for one answer; the only mutable value of a run, owned by that run."""

    llm_calls: int = 0  # HTTP requests sent, retries and capability probes included
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasks: int = 0
    parse_failures: int = 0
    failed_calls: int = 0
    rounds: int = 0  # sequential rounds of LLM calls
    estimated_usage: bool = False  # some reply carried no usage and its tokens were estimated
    notes: list[str] = field(default_factory=list)
    # per prompt name: (replies, their prompt plus completion tokens); retries and probes count only above
    by_prompt: dict[str, tuple[int, int]] = field(default_factory=dict)
    # the answer's limits, so a call waiting out a rate limit knows when to stop (None: no such limit)
    deadline: float | None = None  # event-loop time the answer must end by
    max_calls: int | None = None  # HTTP requests the answer may send

    def count_reply(self, prompt: str, tokens: int) -> None:
        """One reply to `prompt` (a re-ask counts again), with its tokens."""
        calls, spent = self.by_prompt.get(prompt, (0, 0))
        self.by_prompt[prompt] = (calls + 1, spent + tokens)
