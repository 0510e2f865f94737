"""④ Critique: labels as probability distributions, the evidence-quote check, the optional hard gates,
and (in `separate` mode) one critic call per candidate, possibly on another model.

Label probabilities come from token logprobs when the endpoint returns them, else from the labels (one-hot).
A failed critic call leaves the candidate with conservative labels (irrelevant, no support, utility 3,
not final) marked `defaulted`, so a chunk is never favoured because its critique happened to fail. A refusal or
content filter is not a verdict on support: that candidate is dropped with the reason instead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from ..errors import FatalLLMError, LLMError, RefusalError
from ..labels import Decision, Relevance, Support, Utility
from ..llm.logprobs import label_distribution, mean_token_prob
from ..llm.structured import Parsed
from ..replies import CritiqueReply
from ..schema import Candidate, Critique, Plan
from .context import Run, run_all
from .retriever import plan_from

QUOTE_MIN_OVERLAP = 0.8  # share of the quote's words that must occur in the chunk


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


def defaulted_critique() -> Critique:
    return Critique(
        utility={u: (1.0 if u is Utility.U3 else 0.0) for u in Utility},
        is_final=False,
        relevance={Relevance.RELEVANT: 0.0, Relevance.IRRELEVANT: 1.0},
        support={Support.FULLY: 0.0, Support.PARTIALLY: 0.0, Support.NO: 1.0},
        status="defaulted",
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


def gate(candidate: Candidate, run: Run) -> Candidate:
    """Optional hard gates: drop irrelevant or unsupported candidates (off by default)."""
    critique = candidate.critique
    if candidate.error or critique is None or critique.relevance is None or critique.support is None:
        return candidate
    irrelevant = run.config.gate_irrelevant and Critique.top(critique.relevance) is Relevance.IRRELEVANT
    unsupported = run.config.gate_unsupported and Critique.top(critique.support) is Support.NO
    return replace(candidate, gated=True) if irrelevant or unsupported else candidate


async def assess(candidates: Sequence[Candidate], run: Run) -> tuple[Candidate, ...]:
    """Separate mode: one critic call per written candidate, all at once. Then the gates, in both modes."""
    pending = [c for c in candidates if c.error is None and c.critique is None and c.chunk is not None]
    if pending:
        run.meter.rounds += 1
        judged = dict(zip(map(id, pending), await run_all(_judge(c, run) for c in pending), strict=True))
        candidates = [judged.get(id(c), c) for c in candidates]
    return tuple(gate(c, run) for c in candidates)


async def _judge(candidate: Candidate, run: Run) -> Candidate:
    assert candidate.chunk is not None
    try:
        parsed = await run.ask(
            "critique_candidate",
            critic=True,
            question=run.question,
            draft=run.draft(candidate.parent.text),
            sentence=candidate.text,
            **run.document_values(candidate.parent.id, candidate.chunk),
        )
    except FatalLLMError:
        raise
    except RefusalError as error:  # a refusal says nothing about support: drop the candidate, say why
        return replace(candidate, error=f"{type(error).__name__}: {error}")
    except LLMError:  # CritiqueError included: conservative labels, the candidate stays comparable
        return replace(candidate, critique=defaulted_critique(), plan=Plan(Decision.YES, "", None, "critic failed"))
    assert isinstance(parsed.value, CritiqueReply)
    critique = critique_from(parsed, with_evidence=True, sentence_field=None)
    critique = check_quote(critique, parsed.value.evidence, candidate.chunk.text)
    plan = plan_from(parsed, "retrieve_next", "next_query", run, has_cache=True)
    return replace(candidate, critique=critique, plan=plan)
