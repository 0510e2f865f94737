"""Pydantic models of what the model must reply, one per prompt kind. The JSON schema sent as
`response_format` is generated from these, and every reply is validated against them locally.

Field order is the order the model writes in: relevance before the sentence, the evidence quote and support
after it, then utility, is_final and the decision for the next step (the paper's token order).
The decision field is a free string with an enum hint: an invalid label is not a parse failure, it means
"yes" (retrieve), as the engine's rules say.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

MAX_SENTENCE_CHARS = 1200
DECISIONS = ["yes", "no", "continue"]


class _Reply(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _sentence_ok(value: str) -> str:
    value = value.strip()
    if not value:
        raise ValueError("sentence is empty")
    if len(value) > MAX_SENTENCE_CHARS:
        raise ValueError(f"sentence is longer than {MAX_SENTENCE_CHARS} characters: write one sentence")
    return value


Sentence = Annotated[str, AfterValidator(_sentence_ok)]


class DecideReply(_Reply):
    """retrieve_decide: should the next sentence be written from retrieved evidence, and with what query."""

    retrieve: str = Field(json_schema_extra={"enum": DECISIONS})
    query: str


class FusedReply(_Reply):
    """generate_fused: one next sentence from one document, with its critique and the next decision."""

    relevance: Literal["relevant", "irrelevant"]
    sentence: Sentence
    evidence: str
    support: Literal["fully", "partially", "no"]
    utility: Literal[1, 2, 3, 4, 5]
    is_final: bool
    retrieve_next: str = Field(json_schema_extra={"enum": DECISIONS})
    next_query: str


class PlainReply(_Reply):
    """generate_plain: one next sentence written without evidence."""

    sentence: Sentence
    utility: Literal[1, 2, 3, 4, 5]
    is_final: bool
    retrieve_next: str = Field(json_schema_extra={"enum": DECISIONS})
    next_query: str


class WriteReply(_Reply):
    """generate_segment (separate critic mode): the writer returns only the sentence."""

    sentence: Sentence


class CritiqueReply(_Reply):
    """critique_candidate (separate critic mode): the labels of one sentence against its document."""

    relevance: Literal["relevant", "irrelevant"]
    evidence: str
    support: Literal["fully", "partially", "no"]
    utility: Literal[1, 2, 3, 4, 5]
    is_final: bool
    retrieve_next: str = Field(json_schema_extra={"enum": DECISIONS})
    next_query: str


REPLY_MODELS: dict[str, type[_Reply]] = {
    model.__name__: model for model in (DecideReply, FusedReply, PlainReply, WriteReply, CritiqueReply)
}
