"""④ Critique: labels as probability distributions, the evidence-quote check, the optional hard gates,
and (in `separate` mode) one critic call per candidate, possibly on another model.

Label probabilities come from token logprobs when the endpoint returns them, else from the labels (one-hot).
A failed critic call leaves the candidate with conservative labels (irrelevant, no support, utility 3,
not final) marked `defaulted`, so a chunk is never favoured because its critique happened to fail. A refusal or
content filter is not a verdict on support: that candidate is dropped with the reason instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..errors import FatalLLMError, LLMError, RefusalError
from ..labels import Decision, Relevance, Support, Utility
from ..schema import Candidate, Critique, Plan
from .context import Run, run_all
from .replies import CritiqueReply, check_quote, critique_from, plan_from


def defaulted_critique() -> Critique:
    return Critique(
        utility={u: (1.0 if u is Utility.U3 else 0.0) for u in Utility},
        is_final=False,
        relevance={Relevance.RELEVANT: 0.0, Relevance.IRRELEVANT: 1.0},
        support={Support.FULLY: 0.0, Support.PARTIALLY: 0.0, Support.NO: 1.0},
        status="defaulted",
    )


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
    plan = plan_from(parsed, "retrieve_next", "next_query", run.config.threshold, has_cache=True)
    return replace(candidate, critique=critique, plan=plan)
