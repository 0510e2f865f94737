"""The engine's state between stages: what one step produced, why a search stopped, the short answer, and what the
run reports about itself. Frozen values; the controller builds them and `report` turns them into the output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from ..labels import QuestionKind
from ..result import LeadSource
from ..schema import Beam, Candidate, Chunk, Plan

UNSETTLED = "The documents don't settle it."  # the short answer where the documents say neither yes nor no


class StopReason(StrEnum):
    """Why the segment loop ended (`Result.stop_reason`)."""

    FINAL = "final"  # every kept beam is final
    MAX_DEPTH = "max_depth"  # a beam reached max_depth sentences, or the loop ran out of steps
    BUDGET = "budget"  # the per-answer budget of calls or tokens ran out
    DEADLINE = "deadline"  # the per-answer deadline passed
    LLM_FAILURE = "llm_failure"  # every candidate of a step failed
    UNSUPPORTED = "unsupported"  # every candidate was declined before a sentence was written: an abstention,
    # or a short answer the documents decide standing alone (`lead.standing`)


class Evidence(tuple[Chunk, ...]):
    """The chunks one beam writes from this step (a plain tuple to the stages), plus how they were found:
    the retriever's score of each chunk (same order; empty when unknown), the queries searched when variants
    are on, and why a variant call or the dense search fell back."""

    scores: tuple[float, ...]
    queries: tuple[str, ...]
    note: str | None

    def __new__(
        cls,
        chunks: Sequence[Chunk] = (),
        queries: Sequence[str] = (),
        note: str | None = None,
        scores: Sequence[float] = (),
    ) -> Evidence:
        self = super().__new__(cls, chunks)
        self.queries, self.note = tuple(queries), note
        self.scores = tuple(scores) if len(scores) == len(self) else ()
        return self

    @classmethod
    def of(cls, chunks: Sequence[Chunk]) -> Evidence:
        """Cached evidence again (on `continue`), keeping its scores when it has them."""
        return cls(chunks, scores=getattr(chunks, "scores", ()))


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """One step: the beams that were live, their plans and evidence, and each candidate with the child beam
    it became (None when it failed or was gated)."""

    live: tuple[Beam, ...]
    plans: tuple[Plan, ...]
    evidence: tuple[Evidence, ...]
    outcomes: tuple[tuple[Candidate, Beam | None], ...]


@dataclass(frozen=True, slots=True)
class RunInfo:
    """What the run reports beside the answer: prompt versions, the endpoint's capabilities, the model name, and
    the model the evidence scorer's weights were fitted for (with the warning when that is another one)."""

    prompts: Mapping[str, int] = field(default_factory=dict)  # prompt name -> version
    capabilities: Mapping[str, object] = field(default_factory=dict)
    model: str = ""
    fitted_for: str = ""  # engine.fitted.FittedFor.describe of the weights in use ("": the paper's scorer)
    weights_warning: str = ""  # engine.fitted.other_model: the weights were fitted for another model


@dataclass(frozen=True, slots=True)
class Lead:
    """A short answer as printed (None: nothing usable to print), where it came from, the model's own reply when
    one call asked it (kept in the trace, printed or not: why a lead is missing can be read off it), the chunks
    it cites when it stands alone (`standing`), and the model's short answer as checked where the rater does not
    trust its kind and it is not printed (`held`: kept, so its rate can still be counted, `fit.lead`). Written
    by `engine.lead`, checked by `engine.denials` and `engine.confirm`."""

    text: str | None
    source: LeadSource
    reply: str | None = None
    cites: tuple[Chunk, ...] = ()
    held: str | None = None
    clause: str | None = None  # what a decided lead rests on
    refused: str | None = None  # a short answer the checks refused (`refuted`, `denial`, the model's disagreement): why
    kind: QuestionKind | None = None  # the question's kind as the model read it (None: not read, or the embedded model)
    confirm: str | None = None  # the decision the model was asked to confirm, and its reply (`Config.confirm`)


@dataclass(frozen=True, slots=True)
class Checked:
    """The model's verdict that an answer's sentences give what the question asks: P(agree) + P(unclear) / 2
    (`llm.replies.verdict_credit`), None where none was had; what was asked and replied, for the trace; and whether
    the endpoint failed it. Written by `engine.check`, read by the confidence."""

    credit: float | None
    said: str
    outage: bool = False  # the call failed at the endpoint (asked again later, it may be answered)
