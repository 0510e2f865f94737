"""② Retrieve or not, and with which query; then fetch the chunks.

The decision rule (paper §3.3, normalised over all three labels):

    p_ret = (P(yes) + P(continue)) / (P(yes) + P(continue) + P(no));  retrieve iff p_ret > threshold
    once retrieving, `continue` only if P(continue) > P(yes) and the beam has cached chunks.

Without logprobs the label decides, biased to retrieve: only a valid "no" skips retrieval; an invalid label
means "yes"; "continue" with nothing cached means "yes". Modes `always` and `never` bypass the rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..errors import FatalLLMError, LLMError
from ..labels import Decision, Mode
from ..llm.logprobs import label_distribution
from ..llm.structured import Parsed
from ..replies import DecideReply
from ..schema import Beam, Chunk, Plan
from .context import Run, run_all

DECISION_LABELS = [d.value for d in Decision]


def decide(
    raw_label: str, dist: Mapping[str, float] | None, threshold: float, has_cache: bool
) -> tuple[Decision, float | None]:
    """The retrieval decision from the model's label and, when available, its label probabilities."""
    if dist is not None:
        p_yes, p_no, p_cont = (dist.get(label, 0.0) for label in DECISION_LABELS)
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


def plan_from(parsed: Parsed, label_field: str, query_field: str, run: Run, has_cache: bool) -> Plan:
    """A Plan from any reply that carries a decision label and a query."""
    value, response = parsed.value, parsed.response
    raw_label = str(getattr(value, label_field))
    dist = None
    if response.tokens is not None:
        found = label_distribution(response.text, response.tokens, label_field, DECISION_LABELS)
        dist = found.probs if found else None
    decision, p_ret = decide(raw_label, dist, run.config.threshold, has_cache)
    query = str(getattr(value, query_field)).strip()
    return Plan(decision, query, p_ret, raw_label)


async def plan(live: Sequence[Beam], run: Run) -> tuple[Plan, ...]:
    """This step's plan for every live beam; asks the model only for beams that carry no plan yet."""
    mode = run.config.mode
    if mode is Mode.NEVER:
        return tuple(Plan(Decision.NO, "", 0.0, "never") for _ in live)
    if mode is Mode.ALWAYS:
        return tuple(Plan(Decision.YES, _query(b.plan.query if b.plan else "", run), 1.0, "always") for b in live)
    missing = [beam for beam in live if beam.plan is None]
    if missing:
        run.meter.rounds += 1
    asked = dict(zip((b.id for b in missing), await run_all(_ask(b, run) for b in missing), strict=True))
    return tuple(asked.get(beam.id) or _recheck(beam) for beam in live)


def _recheck(beam: Beam) -> Plan:
    """A carried plan stays, except `continue` with no cached chunks, which becomes `yes`."""
    assert beam.plan is not None
    if beam.plan.decision is Decision.CONTINUE and not beam.evidence:
        return Plan(Decision.YES, beam.plan.query, beam.plan.p_retrieve, beam.plan.raw_label)
    return beam.plan


async def _ask(beam: Beam, run: Run) -> Plan:
    try:
        parsed = await run.ask(
            "retrieve_decide", conversation=run.history(), question=run.question, draft=run.draft(beam.text)
        )
    except FatalLLMError:
        raise
    except LLMError:  # no usable decision: retrieve, as the rules lean
        return Plan(Decision.YES, "", None, "decision failed")
    assert isinstance(parsed.value, DecideReply)
    return plan_from(parsed, "retrieve", "query", run, has_cache=bool(beam.evidence))


def _query(query: str, run: Run) -> str:
    return query.strip() or run.question


def gather(live: Sequence[Beam], plans: Sequence[Plan], run: Run) -> tuple[tuple[Chunk, ...], ...]:
    """The chunks each live beam writes from this step: new hits, its cached chunks, or none."""
    found: list[tuple[Chunk, ...]] = []
    for beam, step_plan in zip(live, plans, strict=True):
        if step_plan.decision is Decision.NO:
            found.append(())
        elif step_plan.decision is Decision.CONTINUE:
            found.append(beam.evidence)
        else:
            found.append(search(_query(step_plan.query, run), run))
    return tuple(found)


def search(query: str, run: Run) -> tuple[Chunk, ...]:
    """Top-ndocs chunks for the query; the bare question when the query finds nothing."""
    hits = run.deps.index.find_relevant_chunks(query, run.config.ndocs)
    if not hits and query != run.question:
        hits = run.deps.index.find_relevant_chunks(run.question, run.config.ndocs)
    return tuple(hit.chunk for hit in hits)
