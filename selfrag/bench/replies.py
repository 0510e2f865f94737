"""Pydantic models of what the model must reply to the benchmark's own prompts (prompts/bench/).
The engine never uses these; the benchmark's prompt book is given them beside the engine's reply models."""

from __future__ import annotations

from typing import Literal

from ..llm.replies import RelevanceLabel, Reply, SupportLabel, UtilityLabel

ClaimLabel = Literal["supports", "refutes", "nei"]


class AnswerReply(Reply):
    """answer_direct: a short answer written without documents (the no-retrieval baseline)."""

    answer: str


class RagAnswerReply(Reply):
    """rag_answer: plain RAG, one answer from all retrieved documents, citing them by number."""

    answer: str
    citations: list[int]


class VerdictReply(Reply):
    """verify_claim_direct: a claim's verdict without documents."""

    label: ClaimLabel


class RagVerdictReply(Reply):
    """rag_verify_claim: plain RAG for claims, one verdict from all retrieved documents, citing them."""

    label: ClaimLabel
    citations: list[int]


class ClaimCandidateReply(Reply):
    """verify_claim: the closed-set candidate of one document: ISREL, the verdict, evidence, ISSUP, ISUSE."""

    relevance: RelevanceLabel
    label: ClaimLabel
    evidence: str
    support: SupportLabel
    utility: UtilityLabel


class JudgeQuestionReply(Reply):
    """judge_question: one question that the chunk answers (judgment lists)."""

    question: str


class CalibrateQuestionReply(Reply):
    """calibrate_question: one question that the chunk answers, and its short answer copied from the chunk."""

    question: str
    answer: str


class JudgeScoreReply(Reply):
    """judge_answer: an LLM judge's contextual accuracy and completeness of an answer, 1-5 each."""

    contextual_accuracy: Literal[1, 2, 3, 4, 5]
    completeness: Literal[1, 2, 3, 4, 5]


BENCH_REPLY_MODELS: dict[str, type[Reply]] = {
    model.__name__: model
    for model in (
        AnswerReply,
        RagAnswerReply,
        VerdictReply,
        RagVerdictReply,
        ClaimCandidateReply,
        JudgeQuestionReply,
        CalibrateQuestionReply,
        JudgeScoreReply,
    )
}
