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


class VariantsReply(_Reply):
    """retrieve_variants: other queries for the same need; fields not asked for are left empty.

    Lengths are not validated here (a fourth paraphrase is no reason to re-ask): the engine keeps what it
    asked for and drops empty or repeated queries.
    """

    paraphrases: list[str]  # multi-query: rewordings of the query
    hypothetical_answer: str  # HyDE: a short passage that would answer the query
    sub_questions: list[str]  # decomposition: simpler questions whose answers together answer it


REPLY_MODELS: dict[str, type[_Reply]] = {
    model.__name__: model for model in (DecideReply, FusedReply, PlainReply, WriteReply, CritiqueReply, VariantsReply)
}


# -- Benchmark prompts (selfrag.bench; their files live in selfrag/bench/prompts/) ---------------------------
# Appended by the benchmark work; the engine never uses these.

ClaimLabel = Literal["supports", "refutes", "nei"]


class AnswerReply(_Reply):
    """answer_direct: a short answer written without documents (the no-retrieval baseline)."""

    answer: str


class RagAnswerReply(_Reply):
    """rag_answer: plain RAG, one answer from all retrieved documents, citing them by number."""

    answer: str
    citations: list[int]


class VerdictReply(_Reply):
    """verify_claim_direct: a claim's verdict without documents."""

    label: ClaimLabel


class RagVerdictReply(_Reply):
    """rag_verify_claim: plain RAG for claims, one verdict from all retrieved documents, citing them."""

    label: ClaimLabel
    citations: list[int]


class ClaimCandidateReply(_Reply):
    """verify_claim: the closed-set candidate of one document: ISREL, the verdict, evidence, ISSUP, ISUSE."""

    relevance: Literal["relevant", "irrelevant"]
    label: ClaimLabel
    evidence: str
    support: Literal["fully", "partially", "no"]
    utility: Literal[1, 2, 3, 4, 5]


class JudgeQuestionReply(_Reply):
    """judge_question: one question that the chunk answers (judgment lists)."""

    question: str


class JudgeScoreReply(_Reply):
    """judge_answer: an LLM judge's contextual accuracy and completeness of an answer, 1-5 each."""

    contextual_accuracy: Literal[1, 2, 3, 4, 5]
    completeness: Literal[1, 2, 3, 4, 5]


REPLY_MODELS.update(
    {
        model.__name__: model
        for model in (
            AnswerReply,
            RagAnswerReply,
            VerdictReply,
            RagVerdictReply,
            ClaimCandidateReply,
            JudgeQuestionReply,
            JudgeScoreReply,
        )
    }
)
