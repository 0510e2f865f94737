"""② Retrieve or not, and with which query; then fetch the chunks.

The decision rule (paper §3.3, normalised over all three labels):

    p_ret = (P(yes) + P(continue)) / (P(yes) + P(continue) + P(no));  retrieve iff p_ret > threshold
    once retrieving, `continue` only if P(continue) > P(yes) and the beam has cached chunks.

Without logprobs the label decides, biased to retrieve: only a valid "no" skips retrieval; an invalid label
means "yes"; "continue" with nothing cached means "yes". Modes `always` and `never` bypass the rule.

Query variants (`query_variants`: multi, hyde, decompose): every beam that retrieves this step asks for other
queries for its need, all beams in one concurrent round (`retrieve_variants`, one call per beam returning the
kinds asked for). The query and its variants are searched together and fused into the top ndocs.
A failed variant call falls back to the plain query and is recorded in the trace; only a FatalLLMError (or an
exhausted budget) stops the answer. The retriever is asked one way, `asearch` (retrieval.Searcher): it searches
and fuses each group itself, dense lists included. When dense query embedding fails (not fatally) the search is
redone with BM25 only, and the trace says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..config import variant_kinds
from ..errors import FatalLLMError, LLMError
from ..labels import Decision, Mode
from ..llm.replies import DecideReply, VariantsReply, plan_from
from ..schema import Beam, Candidate, Hit, Plan
from .context import Run, run_all
from .questions import follows_on
from .state import Evidence

MAX_VARIANT_CHARS = 1000  # a longer variant (a rambling HyDE passage) is cut before it is searched


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
    return plan_from(parsed, "retrieve", "query", run.config.threshold, has_cache=bool(beam.evidence))


def unread(live: Sequence[Beam], plans: Sequence[Plan], candidates: Sequence[Candidate]) -> list[int]:
    """The live beams (their indexes) with no sentence yet that wrote without documents this step and had
    every sentence declined (it restated the question, say, or any sentence under an abstention cut: `critic.rate`):
    they read before the answer may say that the documents do not say. A beam with sentences stops instead, as
    when its candidates from documents are declined."""
    out = []
    for i, (beam, step_plan) in enumerate(zip(live, plans, strict=True)):
        own = [c for c in candidates if c.parent.id == beam.id]
        if not beam.segments and step_plan.decision is Decision.NO and own and all(c.by_rule for c in own):
            out.append(i)
    return out


def read_instead(step_plan: Plan) -> Plan:
    """The plan of a beam in `unread`: retrieve, with the question (the model's query was for no retrieval)."""
    said = step_plan.raw_label or Decision.NO.value
    return Plan(Decision.YES, "", step_plan.p_retrieve, f"{said}; its sentence was declined, so it read")


def _query(query: str, asked: str) -> str:
    """What BM25 searches: the model's query plus what was asked (the question, after the earlier one it follows
    on from). A weak model's query can add words (a new entity for the next hop) but never lose the question's
    (the 135M default once searched for a timestamp), nor a follow-up its subject (it left "Where can I borrow
    one?" as it was, after "Is a helmet required?")."""
    query = " ".join(query.split())
    if not query or query.lower() in asked.lower():
        return asked
    return f"{query} {asked}"


async def gather(live: Sequence[Beam], plans: Sequence[Plan], run: Run) -> tuple[Evidence, ...]:
    """The chunks each live beam writes from this step: new hits, its cached chunks, or none."""
    searching = [i for i, p in enumerate(plans) if p.decision is Decision.YES]
    earlier = follows_on(run.question, run.conversation)
    queries = [_query(plans[i].query, f"{earlier} {run.question}" if earlier else run.question) for i in searching]
    follow_note = f"a follow-up: searched with the question it goes on from too ({earlier})" if earlier else None
    kinds = variant_kinds(run.config.query_variants)
    asked: list[tuple[tuple[str, ...], str | None]] = [((), None)] * len(queries)
    if kinds and queries:
        run.meter.rounds += 1
        written = [" ".join(plans[i].query.split()) or run.question for i in searching]  # the model's own words
        asked = await run_all(_variants(query, kinds, run) for query in written)
    groups = [(query, *variants) for query, (variants, _) in zip(queries, asked, strict=True)]
    extra = max((len(_used(live[i])) for i in searching), default=0)  # room for fresh chunks past used ones
    found, dense_note = await search_groups(groups, run, run.config.ndocs + extra)
    fetched = {
        i: Evidence(
            [h.chunk for h in hits],
            group if kinds else (),
            _join(follow_note, note, dense_note),
            [h.score for h in hits],
        )
        for i, hits, group, (_, note) in zip(searching, found, groups, asked, strict=True)
    }
    out: list[Evidence] = []
    for i, (beam, step_plan) in enumerate(zip(live, plans, strict=True)):
        if step_plan.decision is Decision.CONTINUE:
            out.append(Evidence.of(beam.evidence))
        else:
            out.append(fresh_first(fetched.get(i, Evidence()), beam, run.config.ndocs))
    return tuple(out)


def _used(beam: Beam) -> set[str]:
    return {segment.chunk.key for segment in beam.segments if segment.chunk is not None}


def fresh_first(evidence: Evidence, beam: Beam, k: int) -> Evidence:
    """The top `k` of the hits with the chunks a beam has not yet written from first (in their order) and the
    ones it already cites last: the second hop of a multi-hop question needs the chunk the first hop did not
    use, and a search for the missing fact that still matches the first chunk best would otherwise hand back
    the same evidence (the search fetched k plus the number of used chunks, so fresh ones can fill k)."""
    used = _used(beam)
    scores = evidence.scores or (None,) * len(evidence)
    order = sorted(range(len(evidence)), key=lambda i: evidence[i].key in used)[:k]
    if order == list(range(len(evidence))):
        return evidence
    return Evidence(
        [evidence[i] for i in order],
        evidence.queries,
        evidence.note,
        [scores[i] for i in order] if evidence.scores else (),
    )


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


async def search_groups(
    groups: Sequence[Sequence[str]], run: Run, k: int | None = None
) -> tuple[list[list[Hit]], str | None]:
    """Top-ndocs hits for each group of queries (fused); the bare question when a group finds nothing.
    The second value says why dense search was left out, if it was."""
    if not groups:
        return [], None
    k = k or run.config.ndocs
    hits, note = await _search(groups, run, k)
    retry = [i for i, found in enumerate(hits) if not found and run.question not in groups[i]]
    if retry:
        again, again_note = await _search([(run.question,)] * len(retry), run, k)
        for i, found in zip(retry, again, strict=True):
            hits[i] = found
        note = note or again_note
    return hits, note


async def _search(groups: Sequence[Sequence[str]], run: Run, k: int) -> tuple[list[list[Hit]], str | None]:
    index = run.deps.index
    try:
        return await index.asearch(groups, k, run.meter), None
    except FatalLLMError:
        raise
    except LLMError as error:  # the query embedding failed: BM25 still works
        note = f"dense search failed, BM25 only: {error}"
        return await index.asearch(groups, k, run.meter, offline=True), note


def _join(*notes: str | None) -> str | None:
    return "; ".join(n for n in notes if n) or None
