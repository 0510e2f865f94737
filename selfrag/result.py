"""What an answer returns and streams, as pydantic models: `Result` serialised is the CLI's `--json`,
and the events serialised are its `--jsonl`. Built from the engine's frozen values at the edge.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from .schema import Flag


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True)


class CritiqueOut(_Out):
    relevance: str | None  # relevant | irrelevant; None for a sentence written without evidence
    support: str | None  # fully | partially | no
    utility: int  # 1..5
    is_final: bool
    probs: dict[str, dict[str, float]]  # label set -> label -> probability
    estimator: str  # logprobs | labels | reflection-tokens | reflection-labels
    truncated: bool = False
    quote_ok: bool | None = None
    seq_prob: float | None = None
    status: str = "ok"
    p_relevant: float | None = None  # the scorer's calibrated probabilities (None: not rated)
    p_supported: float | None = None
    answer_support: float | None = None  # what the abstention cut is applied to
    features: dict[str, float] | None = None  # the evidence features behind them (evidence scorer)


class SegmentOut(_Out):
    text: str
    citation: int | None  # the [n] of its source in `sources`; None when written without evidence
    chunk: str | None  # the chunk key (doc_id#chunk_id)
    critique: CritiqueOut
    score: float | None  # the paper's f(y_t, d)
    pooled: bool = False  # written from all of its step's chunks at once (Config.pooled); `chunk` is the one cited
    also: list[int] = []  # pooled: the [n] of the other sources its words come from (a two-hop sentence has two)
    also_chunks: list[str] = []  # their chunk keys


class Source(_Out):
    n: int
    doc_id: str
    chunk_id: int
    title: str
    source: str
    text: str
    date: str | None = None  # the document's date, when known
    superseded_by: list[str] = []  # doc ids of the newer versions that replace this document (supersession)
    current: bool | None = None  # True: the current version of a document with older versions; None: no versions


class PromptUsage(_Out):
    calls: int  # replies to the prompt (re-asks included)
    tokens: int  # their prompt and completion tokens


class Usage(_Out):
    llm_calls: int  # HTTP requests sent to the endpoint(s), retries and capability probes included
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    total_tokens: int
    rounds: int  # sequential rounds of LLM calls
    steps: int
    retrieval_steps: int  # beam-steps that retrieved (or reused) evidence
    retrieval_frequency: float  # retrieval_steps / beam-steps
    reasks: int
    parse_failures: int
    failed_calls: int
    wall_time: float
    estimated: bool = False  # some reply lacked usage and its tokens were estimated
    by_prompt: dict[str, PromptUsage] = {}  # replies and tokens per prompt name (what each kind of call costs)


class TraceCandidate(_Out):
    parent: str  # beam id it extends
    child: str | None  # beam id it became (None when it failed or was gated)
    chunk: str | None
    rank: int | None = None  # the chunk's place in its retrieval (0 = top); None without a chunk
    retrieval_score: float | None = None  # the retriever's score of the chunk, when known
    text: str
    critique: CritiqueOut | None
    score: float | None
    aggregate: float | None
    status: Literal["kept", "pruned", "failed", "gated"]
    flag: Flag | None = None  # why it was declined, cut or replaced (a gate's drop shows in `status` alone)
    fallback: bool = False
    pooled: bool = False  # written from all of its beam's chunks at once (Config.pooled); `chunk` is the one cited
    second_hop: bool = False  # pruned in its step, then added to the answer by the second hop (engine.hops): kept
    written: str | None = None  # quoted: the model's own sentence, which stated what its chunk does not hold
    extracted: bool = False  # its chunk's own sentence, extracted beside the model's (Config.extract): no call wrote it
    asked_again: bool = False  # asked for plainly after its chunk's first sentence restated the question
    also: list[str] = []  # pooled: the other chunks its words come from, rated with the cited one
    error: str | None = None
    suspicious: list[str] = []  # injection markers in its chunk (text.looks_like_injection); a report only


class TraceBeam(_Out):
    beam: str
    decision: str  # yes | no | continue
    p_retrieve: float | None
    raw_label: str
    query: str
    chunks: list[str]
    queries: list[str] = []  # with query variants on: every query searched (the query first, then the variants)
    retrieval_note: str | None = None  # a variant call or the dense search fell back, and why
    suspicious: dict[str, list[str]] = {}  # chunk key -> injection markers in its text; scored like any other


class TraceStep(_Out):
    step: int
    beams: list[TraceBeam]
    candidates: list[TraceCandidate]
    kept: list[str]
    llm_calls: int  # cumulative after this step
    elapsed: float


class Trace(_Out):
    steps: list[TraceStep] = Field(default_factory=list)
    prompts: dict[str, int] = Field(default_factory=dict)  # prompt name -> version
    capabilities: dict[str, object] = Field(default_factory=dict)
    final_path: list[str] = Field(default_factory=list)  # beam ids from the root to the returned beam
    lead_reply: str | None = None  # the short-answer call's reply as the model gave it, printed or not (no call: None)
    lead_held: str | None = None  # that reply as checked, not printed: its kind is more often wrong than right
    lead_clause: str | None = None  # what a short answer the documents decided rests on (the rule: `lead_from`)
    lead_refused: str | None = None  # a short answer the checks refused (a rule's or the model's), by whom, and why
    lead_confirm: str | None = None  # the decision the model was asked to confirm, the clause, and its reply
    answer_check: float | None = None  # the model's verdict that the sentences give what is asked (engine.check)
    answer_check_reply: str | None = None  # that call's verdict, or why it gave none (not asked: None)
    policies: str = ""  # which preset, scorer and policies were in force (engine.policies.explain)
    weights_warning: str = ""  # the scorer's weights were fitted for another model than the one that answered


ABSTAIN_ANSWER = "The documents do not say."
# where a short answer came from: one call, the two options' dates, a trait found for one option only, the counts
# their own sentences state ("more species"); for a yes/no question about two names, their peoples, years,
# families or US states compared, the words asked found for both, or for one only; for one about one thing, a
# clause that states it; for a value asked ("How much is a day pass?"), the clauses holding the question's words
# that state it
LeadSource = Literal["model", "dates", "traits", "counts", "same", "both", "one", "stated", "value"]
DECIDED: tuple[str, ...] = get_args(LeadSource)[1:]  # the documents decided it, no call (engine.decide, engine.values)
# what the confidence counts an answer as whose short answer is "The documents don't settle it." (engine.lead):
# it answers nothing, so it is right only where its sentences happen to be
UNSETTLED_KINDS = {"yes_no": "yes_no_unsettled", "choice": "choice_unsettled"}


class Abstention(_Out):
    """The engine declined to answer: no candidate was supported well enough."""

    reason: Literal["no_support"] = "no_support"
    best_support: float | None  # the highest answer support among the declined candidates
    threshold: float  # the cut it did not reach (Config.abstain_below, or the scorer's default)
    message: str


class Result(_Out):
    question: str
    answer: str  # sentences with inline [n] citations
    segments: list[SegmentOut]
    sources: list[Source]
    confidence: float  # P(the answer is supported and right): evidence scorer, calibrated; paper: mean support
    stop_reason: str  # final | max_depth | budget | deadline | llm_failure | unsupported
    abstention: Abstention | None = None  # set when the answer is ABSTAIN_ANSWER: the documents did not say
    lead: str | None = None  # the short answer that opens `answer` (yes/no, choice and factoid questions); with
    # no segments and stop_reason "unsupported" it is the whole answer: what the documents decide, no sentence
    # having been supported well enough (cited in `answer` and `sources`)
    lead_from: LeadSource | None = None  # one call to the model, or the documents decided it (`DECIDED`)
    usage: Usage
    trace: Trace
    model: str
    config: dict[str, object]


class StepEvent(_Out):
    type: Literal["step"] = "step"
    step: TraceStep


class SegmentEvent(_Out):
    """A sentence every kept beam agrees on: it will be in the final answer."""

    type: Literal["segment"] = "segment"
    index: int
    text: str
    citation: int | None
    source: Source | None
    also: list[int] = []  # more sources of the same sentence (a pooled sentence joining two chunks' facts)


class LeadEvent(_Out):
    """The short answer of a yes/no, choice or factoid question, sent before the sentences that back it."""

    type: Literal["lead"] = "lead"
    text: str


class DoneEvent(_Out):
    type: Literal["done"] = "done"
    result: Result


Event = StepEvent | LeadEvent | SegmentEvent | DoneEvent
