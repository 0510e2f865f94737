"""What the model must reply, one pydantic model per prompt kind, and the pure reading of those replies.

The JSON schema sent as `response_format` is generated from these models, and every reply is validated
against them locally. Reading a validated reply needs no run and no I/O: label distributions (the ones a
backend read itself, `ChatResponse.native`, for the Self-RAG checkpoints' reflection tokens; else from logprobs
when the reply has them; else one-hot), the critique, the evidence-quote check, and the retrieval decision
under a threshold.

Field order is the order the model writes in: relevance before the sentence, the evidence quote and support
after it, then utility, is_final and the decision for the next step (the paper's token order).
The decision field is a free string with an enum hint: an invalid label is not a parse failure, it means
"yes" (retrieve), as the engine's rules say.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from enum import Enum
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from ..labels import Decision, QuestionKind, Relevance, Support, Utility
from ..schema import Critique, Plan
from .logprobs import label_distribution, mean_token_prob
from .structured import Parsed

MAX_SENTENCE_CHARS = 1200
# Config.short_replies: the most characters the reply schema lets the model write in these fields. The schema
# constrains the embedded model's grammar (a field ends at its cap); validation does not change, so an endpoint
# that ignores the cap is not re-asked. Replies of the 135M model ran to 270 characters per field, and the
# longest candidate sets the length of a decoding round.
SHORT_REPLY_CHARS = {"sentence": 200, "evidence": 100, "next_query": 60, "query": 60}
QUOTE_MIN_OVERLAP = 0.8  # share of the quote's words that must occur in the chunk
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


QUESTION_KINDS = tuple(kind.value for kind in QuestionKind)  # as the model reads a question (a Literal: the schema)
VERDICTS = ("agree", "disagree", "unclear")  # confirm_decision's and check_answer's closed set


class LeadReply(Reply):
    """answer_lead: the model's reading of the question's kind (None: not given; the regexes' reading stands) and
    its short answer, read off the documents."""

    kind: Literal[QUESTION_KINDS] | None = None  # type: ignore[valid-type]
    answer: str = Field(max_length=200)


class ConfirmReply(Reply):
    """confirm_decision: does the proposed short answer follow from the clause that decided it? check_answer: does
    the answer give what the question asks?"""

    verdict: Literal[VERDICTS]  # type: ignore[valid-type]


def verdict_probs(parsed: Parsed) -> Mapping[str, float] | None:
    """P(label) for each of a closed-set reply's `VERDICTS`, read at the verdict's first token; None where the reply
    has no logprobs there."""
    response = parsed.response
    if response.tokens is None:
        return None
    found = label_distribution(response.text, response.tokens, "verdict", list(VERDICTS))
    return found.probs if found is not None else None


def agreed(parsed: Parsed) -> tuple[bool, float | None]:
    """Whether the model agrees with a proposed short answer, and P(agree) where the reply has logprobs (then
    agreement is P(agree) over one half; else the label written)."""
    probs = verdict_probs(parsed)
    if probs is not None:
        p_agree = probs.get("agree", 0.0)
        return p_agree > 0.5, p_agree
    return getattr(parsed.value, "verdict", None) == "agree", None


def verdict_credit(parsed: Parsed) -> float:
    """A closed-set verdict as one number: P(agree) + P(unclear) / 2 where the reply has logprobs, else 1, 0 or
    1/2 for the label written ("agree", "disagree", "unclear")."""
    probs = verdict_probs(parsed)
    if probs is not None:
        return probs.get("agree", 0.0) + probs.get("unclear", 0.0) / 2
    return {"agree": 1.0, "disagree": 0.0}.get(str(getattr(parsed.value, "verdict", "")), 0.5)


@cache
def shortened(model: type[BaseModel]) -> type[BaseModel]:
    """`model` with the caps of SHORT_REPLY_CHARS in its JSON schema (`maxLength`), same name and validation;
    `model` itself when it has none of those fields."""
    caps = {name: chars for name, chars in SHORT_REPLY_CHARS.items() if name in model.model_fields}
    if not caps:
        return model

    def cap(schema: dict[str, Any]) -> None:
        for name, chars in caps.items():
            schema["properties"][name]["maxLength"] = chars

    config = ConfigDict(**{**model.model_config, "json_schema_extra": cap})  # type: ignore[typeddict-item]
    namespace = {"model_config": config, "__doc__": model.__doc__, "__module__": model.__module__}
    return type(model.__name__, (model,), namespace)


REPLY_MODELS: dict[str, type[Reply]] = {
    model.__name__: model
    for model in (
        DecideReply,
        FusedReply,
        PlainReply,
        WriteReply,
        CritiqueReply,
        VariantsReply,
        LeadReply,
        ConfirmReply,
    )  # fmt: skip
}


# -- Reading replies (pure) ----------------------------------------------------------------------------


def decide(
    raw_label: str, dist: Mapping[str, float] | None, threshold: float, has_cache: bool
) -> tuple[Decision, float | None]:
    """The retrieval decision from the model's label and, when available, its label probabilities."""
    if dist is not None:
        p_yes, p_no, p_cont = (dist.get(label, 0.0) for label in DECISIONS)
        total = p_yes + p_no + p_cont
        p_ret = (p_yes + p_cont) / total if total > 0 else 1.0
        if p_ret <= threshold:
            return Decision.NO, p_ret
        return (Decision.CONTINUE if p_cont > p_yes and has_cache else Decision.YES), p_ret
    label = raw_label.strip().lower()
    if label == Decision.NO.value:
        return Decision.NO, None
    if label == Decision.CONTINUE.value and has_cache:
        return Decision.CONTINUE, None
    return Decision.YES, None


def plan_from(parsed: Parsed, label_field: str, query_field: str, threshold: float, has_cache: bool) -> Plan:
    """A Plan from any reply that carries a decision label and a query, under the retrieval `threshold`."""
    value, response = parsed.value, parsed.response
    raw_label = str(getattr(value, label_field))
    dist = None
    if response.native is not None:
        dist = response.native.probs.get(label_field)
    elif response.tokens is not None:
        found = label_distribution(response.text, response.tokens, label_field, DECISIONS)
        dist = found.probs if found else None
    decision, p_ret = decide(raw_label, dist, threshold, has_cache)
    query = str(getattr(value, query_field)).strip()
    return Plan(decision, query, p_ret, raw_label)


def _dist(parsed: Parsed, field: str, kind: type, chosen: object) -> tuple[dict, bool, bool]:
    """(distribution, from_logprobs, truncated) for one label field of a reply."""
    labels = [str(member.value) for member in kind]
    response = parsed.response
    if response.native is not None and field in response.native.probs:
        probs = response.native.probs[field]
        return {member: probs.get(str(member.value), 0.0) for member in kind}, True, field in response.native.truncated
    if response.tokens is not None:
        found = label_distribution(response.text, response.tokens, field, labels)
        if found is not None:
            return {kind(_cast(kind, k)): p for k, p in found.probs.items()}, True, found.truncated
    return {member: (1.0 if member == kind(chosen) else 0.0) for member in kind}, False, False


def _cast(kind: type, label: str) -> object:
    return int(label) if kind is Utility else label


def critique_from(parsed: Parsed, *, with_evidence: bool, sentence_field: str | None) -> Critique:
    """A Critique from a reply holding utility and is_final, and relevance/support when written from a chunk."""
    value = parsed.value
    utility, lp_use, tr_use = _dist(parsed, "utility", Utility, value.utility)
    relevance = support = None
    lp_rel = lp_sup = tr_rel = tr_sup = False
    if with_evidence:
        relevance, lp_rel, tr_rel = _dist(parsed, "relevance", Relevance, value.relevance)
        support, lp_sup, tr_sup = _dist(parsed, "support", Support, value.support)
    tokens, native = parsed.response.tokens, parsed.response.native
    seq = mean_token_prob(parsed.response.text, tokens, sentence_field) if tokens and sentence_field else None
    estimator = "logprobs" if (lp_use or lp_rel or lp_sup) else "labels"
    return Critique(
        utility=utility,
        is_final=bool(value.is_final),
        relevance=relevance,
        support=support,
        estimator=native.estimator if native is not None else estimator,
        truncated=tr_use or tr_rel or tr_sup,
        seq_prob=native.seq_prob if native is not None and sentence_field else seq,
    )


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def quote_found(quote: str, chunk_text: str) -> bool:
    """Does the evidence quote occur in the chunk (after folding case, punctuation and spacing)?"""
    words = _words(quote)
    if not words:
        return False
    if " ".join(words) in " ".join(_words(chunk_text)):
        return True
    vocabulary = set(_words(chunk_text))
    return sum(word in vocabulary for word in words) / len(words) >= QUOTE_MIN_OVERLAP


def check_quote(critique: Critique, quote: str, chunk_text: str) -> Critique:
    """Claimed support needs a quote from the chunk; without one, support drops one level (fully -> partially
    -> no), probability mass included."""
    if critique.support is None or critique.estimator.startswith("reflection"):  # trained ISSUP tokens, no quote
        return critique
    claimed = Critique.top(critique.support)
    if claimed is Support.NO:
        return critique
    if quote_found(quote, chunk_text):
        return replace(critique, quote_ok=True)
    p = critique.support
    shifted = {
        Support.FULLY: 0.0,
        Support.PARTIALLY: p.get(Support.FULLY, 0.0),
        Support.NO: p.get(Support.PARTIALLY, 0.0) + p.get(Support.NO, 0.0),
    }
    return replace(critique, support=shifted, quote_ok=False)
