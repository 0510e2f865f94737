"""Pydantic models of what the model must reply, one per prompt kind. The JSON schema sent as
`response_format` is generated from these, and every reply is validated against them locally.

Field order is the order the model writes in: relevance before the sentence, the evidence quote and support
after it, then utility, is_final and the decision for the next step (the paper's token order).
The decision field is a free string with an enum hint: an invalid label is not a parse failure, it means
"yes" (retrieve), as the engine's rules say.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from ..labels import Decision, Relevance, Support, Utility

MAX_SENTENCE_CHARS = 1200
DECISIONS = [decision.value for decision in Decision]


def one_of(labels: type[Enum]) -> Any:
    """The Literal type of a label enum's values, in the enum's order (the JSON schema's `enum`)."""
    return Literal[tuple(label.value for label in labels)]


RelevanceLabel = one_of(Relevance)
SupportLabel = one_of(Support)
UtilityLabel = one_of(Utility)


class Reply(BaseModel):
    """Base of every reply model: unknown fields are an error, values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _sentence_ok(value: str) -> str:
    value = value.strip()
    if not value:
        raise ValueError("sentence is empty")
    if len(value) > MAX_SENTENCE_CHARS:
        raise ValueError(f"sentence is longer than {MAX_SENTENCE_CHARS} characters: write one sentence")
    return value


Sentence = Annotated[str, AfterValidator(_sentence_ok)]


class DecideReply(Reply):
    """retrieve_decide: should the next sentence be written from retrieved evidence, and with what query."""

    retrieve: str = Field(json_schema_extra={"enum": DECISIONS})
    query: str


class FusedReply(Reply):
    """generate_fused: one next sentence from one document, with its critique and the next decision."""

    relevance: RelevanceLabel
    sentence: Sentence
    evidence: str
    support: SupportLabel
    utility: UtilityLabel
    is_final: bool
    retrieve_next: str = Field(json_schema_extra={"enum": DECISIONS})
    next_query: str


class PlainReply(Reply):
    """generate_plain: one next sentence written without evidence."""

    sentence: Sentence
    utility: UtilityLabel
    is_final: bool
    retrieve_next: str = Field(json_schema_extra={"enum": DECISIONS})
    next_query: str


class WriteReply(Reply):
    """generate_segment (separate critic mode): the writer returns only the sentence."""

    sentence: Sentence


class CritiqueReply(Reply):
    """critique_candidate (separate critic mode): the labels of one sentence against its document."""

    relevance: RelevanceLabel
    evidence: str
    support: SupportLabel
    utility: UtilityLabel
    is_final: bool
    retrieve_next: str = Field(json_schema_extra={"enum": DECISIONS})
    next_query: str


class VariantsReply(Reply):
    """retrieve_variants: other queries for the same need; fields not asked for are left empty.

    Lengths are not validated here (a fourth paraphrase is no reason to re-ask): the engine keeps what it
    asked for and drops empty or repeated queries.
    """

    paraphrases: list[str]  # multi-query: rewordings of the query
    hypothetical_answer: str  # HyDE: a short passage that would answer the query
    sub_questions: list[str]  # decomposition: simpler questions whose answers together answer it


REPLY_MODELS: dict[str, type[Reply]] = {
    model.__name__: model for model in (DecideReply, FusedReply, PlainReply, WriteReply, CritiqueReply, VariantsReply)
}
