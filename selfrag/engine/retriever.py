"""② Retrieve or not, and with which query; then fetch the chunks.

The decision rule (paper §3.3, normalised over all three labels):

    p_ret = (P(yes) + P(continue)) / (P(yes) + P(continue) + P(no));  retrieve iff p_ret > threshold
    once retrieving, `continue` only if P(continue) > P(yes) and the beam has cached chunks.

Without logprobs the label decides, biased to retrieve: only a valid "no" skips retrieval; an invalid label
means "yes"; "continue" with nothing cached means "yes". Modes `always` and `never` bypass the rule.

Query variants (`query_variants`: multi, hyde, decompose): every beam that retrieves this step asks for other
queries for its need, all beams in one concurrent round (`retrieve_variants`, one call per beam returning the
kinds asked for). The query and its variants are each searched and fused by RRF (k = 60) into the top ndocs.
A failed variant call falls back to the plain query and is recorded in the trace; only a FatalLLMError (or an
exhausted budget) stops the answer. A retriever with `asearch` (retrieval.Retriever) does the searching and
fusing itself, dense lists included; any other retriever's `find_relevant_chunks` is called once per query.
When dense query embedding fails (not fatally) the search is redone with BM25 only, and the trace says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from ..config import variant_kinds
from ..errors import FatalLLMError, LLMError
from ..labels import Decision, Mode
from ..llm.logprobs import label_distribution
from ..llm.structured import Parsed
from ..replies import DecideReply, VariantsReply
from ..retrieval import rrf
from ..schema import Beam, Chunk, Hit, Meter, Plan
from .context import Run, run_all

DECISION_LABELS = [d.value for d in Decision]
MAX_VARIANT_CHARS = 1000  # a longer variant (a rambling HyDE passage) is cut before it is searched


class Evidence(tuple[Chunk, ...]):
    """The chunks one beam writes from this step (a plain tuple to the stages), plus how they were found:
    the queries searched when variants are on, and why a variant call or the dense search fell back."""

    queries: tuple[str, ...]
    note: str | None

    def __new__(cls, chunks: Sequence[Chunk] = (), queries: Sequence[str] = (), note: str | None = None) -> Evidence:
        self = super().__new__(cls, chunks)
        self.queries, self.note = tuple(queries), note
        return self


@runtime_checkable
class GroupSearch(Protocol):
    """A retriever that searches groups of queries and fuses each group itself (retrieval.Retriever)."""

    async def asearch(
        self, groups: Sequence[Sequence[str]], k: int, meter: Meter, *, offline: bool = False
    ) -> list[list[Hit]]: ...


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
    if response.native is not None:
        dist = response.native.probs.get(label_field)
    elif response.tokens is not None:
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
        return tuple(Plan(Decision.YES, b.plan.query if b.plan else "", 1.0, "always") for b in live)
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
    """What BM25 searches: the model's query plus the question. A weak model's query can add words (a new
    entity for the next hop) but never lose the question's (the 135M default once searched for a timestamp)."""
    query = " ".join(query.split())
    if not query or query.lower() in run.question.lower():
        return run.question
    return f"{query} {run.question}"


async def gather(live: Sequence[Beam], plans: Sequence[Plan], run: Run) -> tuple[Evidence, ...]:
    """The chunks each live beam writes from this step: new hits, its cached chunks, or none."""
    searching = [i for i, p in enumerate(plans) if p.decision is Decision.YES]
    queries = [_query(plans[i].query, run) for i in searching]
    kinds = variant_kinds(run.config.query_variants)
    asked: list[tuple[tuple[str, ...], str | None]] = [((), None)] * len(queries)
    if kinds and queries:
        run.meter.rounds += 1
        written = [" ".join(plans[i].query.split()) or run.question for i in searching]  # the model's own words
        asked = await run_all(_variants(query, kinds, run) for query in written)
    groups = [(query, *variants) for query, (variants, _) in zip(queries, asked, strict=True)]
    found, dense_note = await search_groups(groups, run)
    fetched = {
        i: Evidence(chunks, group if kinds else (), _join(note, dense_note))
        for i, chunks, group, (_, note) in zip(searching, found, groups, asked, strict=True)
    }
    out: list[Evidence] = []
    for i, (beam, step_plan) in enumerate(zip(live, plans, strict=True)):
        if step_plan.decision is Decision.CONTINUE:
            out.append(Evidence(beam.evidence))
        else:
            out.append(fetched.get(i, Evidence()))
    return tuple(out)


async def _variants(query: str, kinds: Sequence[str], run: Run) -> tuple[tuple[str, ...], str | None]:
    """The variant queries for one need (none, with the reason, when the call failed)."""
    count = run.config.variant_count
    try:
        parsed = await run.ask(
            "retrieve_variants",
            logprobs=False,
            question=run.question,
            query=query,
            paraphrases=str(count if "multi" in kinds else 0),
            passage="yes" if "hyde" in kinds else "no",
            sub_questions=str(count if "decompose" in kinds else 0),
        )
    except FatalLLMError:
        raise
    except LLMError as error:
        return (), f"query variants failed, searched the plain query: {error}"
    reply = parsed.value
    assert isinstance(reply, VariantsReply)
    wanted = [
        *(reply.paraphrases[:count] if "multi" in kinds else ()),
        *((reply.hypothetical_answer,) if "hyde" in kinds else ()),
        *(reply.sub_questions[:count] if "decompose" in kinds else ()),
    ]
    cleaned = (" ".join(v.split())[:MAX_VARIANT_CHARS] for v in wanted)
    return tuple(v for v in dict.fromkeys(cleaned) if v and v.lower() != query.lower()), None


async def search_groups(groups: Sequence[Sequence[str]], run: Run) -> tuple[list[tuple[Chunk, ...]], str | None]:
    """Top-ndocs chunks for each group of queries (fused); the bare question when a group finds nothing.
    The second value says why dense search was left out, if it was."""
    if not groups:
        return [], None
    hits, note = await _search(groups, run)
    retry = [i for i, found in enumerate(hits) if not found and run.question not in groups[i]]
    if retry:
        again, again_note = await _search([(run.question,)] * len(retry), run)
        for i, found in zip(retry, again, strict=True):
            hits[i] = found
        note = note or again_note
    return [tuple(hit.chunk for hit in found) for found in hits], note


async def _search(groups: Sequence[Sequence[str]], run: Run) -> tuple[list[list[Hit]], str | None]:
    index, k = run.deps.index, run.config.ndocs
    if isinstance(index, GroupSearch):
        try:
            return await index.asearch(groups, k, run.meter), None
        except FatalLLMError:
            raise
        except LLMError as error:  # the query embedding failed: BM25 still works
            note = f"dense search failed, BM25 only: {error}"
            return await index.asearch(groups, k, run.meter, offline=True), note
    results = []
    for group in groups:
        lists = [index.find_relevant_chunks(query, k) for query in group]
        results.append(lists[0] if len(lists) == 1 else rrf(lists, k=60)[:k])
    return results, None


def _join(*notes: str | None) -> str | None:
    return "; ".join(n for n in notes if n) or None
