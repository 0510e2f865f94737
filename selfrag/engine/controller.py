"""① The segment loop: retrieve → generate → critique → prune, one sentence per step, streaming events.

Each step: every live beam decides (②), fetches chunks (②), writes one candidate per chunk with its critique
(③ ④, all beams' candidates in flight at once), and the best `beam_width` drafts survive (⑤). The loop stops when
every kept beam is final or has `max_depth` sentences, or a budget or the deadline runs out; then the finishing
policies (`FINISHING`, in order: an answer the documents decide instead of an abstention, the second hop, the
short answer, the model's check for the confidence) hand on the best beam's answer. Sentences that every kept beam
shares are streamed as soon as they are settled.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from ..errors import BudgetError, CritiqueError, LLMError
from ..labels import Mode, QuestionKind
from ..result import Abstention, DoneEvent, Event, LeadEvent, StepEvent, TraceStep
from ..schema import Beam, Candidate, Chunk, Plan
from . import beam, check, confirm, critic, generator, hops, lead, questions, report, retriever
from .context import Run
from .state import Checked, Evidence, Lead, RunInfo, StepOutcome, StopReason

T = TypeVar("T")


async def search(run: Run, info: RunInfo, deadline: float | None = None) -> AsyncIterator[Event]:
    """Segment-level beam search for one question; yields StepEvent, SegmentEvent, ..., DoneEvent. `deadline`
    (event-loop time) defaults to now + the config's deadline."""
    started, loop = time.monotonic(), asyncio.get_running_loop()
    deadline = loop.time() + run.config.deadline if deadline is None else deadline
    frontier: tuple[Beam, ...] = (Beam("0"),)
    steps, citations, streamed, stop, failure, read = [], report.Citations(), 0, StopReason.MAX_DEPTH, None, ()
    written: list[Candidate] = []  # every candidate of every step, for the second hop
    kind = questions.question_kind(run.question) if run.config.lead else None  # a short answer is printed first
    # a question the regexes cannot read (another language) is put to a model that reads, which says its kind
    asks = kind is not None or (run.config.lead and not run.config.embedded and not questions.read_here(run.question))
    ahead = asks and run.config.lead_ahead and not run.config.embedded
    early = lead.EarlyLead(run, kind) if ahead else None  # the lead's call, sent while a step writes
    for depth in range(run.config.max_depth):
        try:
            async with asyncio.timeout_at(deadline):
                step = await _step(frontier, run, early)
        except BudgetError:
            stop = StopReason.BUDGET
            break
        except TimeoutError:
            stop = StopReason.DEADLINE
            break
        written += [candidate for candidate, _ in step.outcomes]
        children = [child for _, child in step.outcomes if child is not None]
        if not children and not any(c.by_rule for c, _ in step.outcomes):
            stop, failure = StopReason.LLM_FAILURE, _first_failure(step)
            break
        pool = [*(b for b in frontier if b.final), *_stopped(step), *children]
        if not pool:  # every candidate of every beam was declined before a sentence was written
            steps.append(report.trace_step(depth, step, frontier, run.meter, time.monotonic() - started))
            yield StepEvent(step=steps[-1])
            stop, read = StopReason.UNSUPPORTED, _chunks(step)
            break
        frontier = beam.prune(pool, run.config.beam_width)  # ⑤
        steps.append(report.trace_step(depth, step, frontier, run.meter, time.monotonic() - started))
        yield StepEvent(step=steps[-1])
        settled = 0 if asks else report.committed_prefix(frontier)
        for index in range(streamed, settled):
            event = citations.event(index, frontier[0].segments[index])
            if event is not None:
                yield event
        streamed = settled
        if beam.is_finished(frontier, run.config.max_depth):
            stop = StopReason.FINAL if all(b.final for b in frontier) else StopReason.MAX_DEPTH
            break
    abstention = report.abstention_from(steps, run.abstain_below) if stop is StopReason.UNSUPPORTED else None
    searched = Searched(stop, failure, tuple(read), tuple(written), kind, deadline, asks, early)
    done = Finished(beam.best(frontier), steps, abstention)
    try:
        for finishing in FINISHING:  # after the paper's loop, the finishing policies, in order
            done = await finishing(done, searched, run)
    finally:
        if early is not None:
            early.close()  # sent ahead for documents the answer did not end on, or not needed
    best, steps, abstention, short = done.best, done.steps, done.abstention, done.short
    said = short.text if short and short.text else None
    if short and said:
        yield LeadEvent(text=citations.marked(said, short.cites))  # standing alone, it cites what decided it
    for index in range(streamed, len(best.segments)):
        event = citations.event(index, best.segments[index])
        if event is not None:
            yield event
    wall = time.monotonic() - started
    read_as = short.kind if short and short.kind else kind
    source = short.source if short and said else None
    counted = lead.counted_kind(read_as, said, [segment.text for segment in best.segments], source)
    result = report.build_result(
        run.question, best, stop, steps, run.meter, wall, run.config, info, rater=run.deps.rater,
        abstention=abstention, short=short, short_kind=counted, checked=done.checked,
    )  # fmt: skip
    yield DoneEvent(result=result)


@dataclass(frozen=True, slots=True)
class Searched:
    """What the paper's loop leaves to the finishing policies: why it stopped, the first failure, the chunks its
    last step read (when every candidate was declined), every candidate written, the question's kind as the
    regexes read it (None: none they know), the deadline, whether a short answer is asked for (a kind, or a
    question only a model that reads can read), and its call if one was sent ahead."""

    stop: StopReason
    failure: Candidate | None
    read: tuple[Chunk, ...]
    written: tuple[Candidate, ...]
    kind: QuestionKind | None
    deadline: float
    asks: bool = False
    early: lead.EarlyLead | None = None


@dataclass(frozen=True, slots=True)
class Finished:
    """The answer as each finishing policy hands it on: the best beam, the trace's steps, the abstention (None:
    an answer), the short answer and the model's check of the answer's sentences."""

    best: Beam
    steps: list[TraceStep]
    abstention: Abstention | None
    short: Lead | None = None
    checked: Checked | None = None


async def _standing(done: Finished, searched: Searched, run: Run) -> Finished:
    """decide: where every sentence was declined, what the documents decide answers instead of an abstention
    (confirm: where the model, asked about the clause, agrees)."""
    if done.abstention is None or not run.config.decide:
        return done
    standing = lead.standing(run.question, searched.kind, searched.read)
    if standing is None or searched.kind is None:
        return done
    if confirm.confirms(run, searched.kind, standing.source):
        agrees, asked = await _confirm_standing(run, standing, searched.deadline)
        if agrees is False:
            return done  # the model does not agree: the abstention stands (None: it cannot be asked)
        standing = replace(standing, confirm=asked)
    return replace(done, abstention=None, short=standing)


async def _confirm_standing(run: Run, standing: Lead, deadline: float) -> tuple[bool | None, str]:
    """The model's agreement with an answer that stands alone; none when the budget or the deadline is spent."""
    clause = standing.clause or " ".join(chunk.text for chunk in standing.cites)
    try:
        async with asyncio.timeout_at(deadline):
            return await confirm.confirm(run, "standing", clause, standing.text or "")
    except (BudgetError, TimeoutError):
        return False, "no reply (budget or deadline)"


async def _hop(done: Finished, searched: Searched, run: Run) -> Finished:
    """hops: the answer's second hop (evidence scorer)."""
    if done.abstention is not None or not run.config.hops or not run.deps.rater.from_documents:
        return done
    best, steps = _second_hop(done.best, list(searched.written), done.steps, run)
    return replace(done, best=best, steps=steps)


async def _written(done: Finished, searched: Searched, run: Run) -> Finished:
    """No policy: an answer with no sentence, no abstention and no standing short answer is an error."""
    if not done.best.segments and done.abstention is None and done.short is None:
        _nothing_written(searched.stop, run, searched.failure)
    return done


async def _short_answer(done: Finished, searched: Searched, run: Run) -> Finished:
    """lead (and decide, inside it): the short answer of a yes/no, choice or factoid question."""
    if done.short is not None or not searched.asks or done.abstention is not None:
        return done
    return replace(done, short=await _lead(done.best, run, searched.kind, searched.deadline, searched.early))


async def _said_once(done: Finished, searched: Searched, run: Run) -> Finished:
    """lead: no sentence opens with a yes or no of its own under "Yes.", "No." or "The documents don't settle
    it."."""
    said = done.short.text if done.short else None
    return replace(done, best=lead.without_opening_answers(done.best, said))


async def _checked(done: Finished, searched: Searched, run: Run) -> Finished:
    """check: the model's verdict that the answer's sentences give what the question asks, for the confidence."""
    if done.abstention is not None or not done.best.segments or not check.asks(run):
        return done
    said = " ".join(segment.text for segment in done.best.segments)
    return replace(done, checked=await check.check(run, said, searched.deadline))


# the finishing policies, in the order they run after the paper's loop (engine.policies)
FINISHING: tuple[Callable[[Finished, Searched, Run], Awaitable[Finished]], ...] = (
    _standing, _hop, _written, _short_answer, _said_once, _checked,
)  # fmt: skip


async def _step(frontier: tuple[Beam, ...], run: Run, early: lead.EarlyLead | None) -> StepOutcome:
    live = tuple(b for b in frontier if not b.final)
    plans = await retriever.plan(live, run)  # ②
    evidence, candidates = await _write(live, plans, run, early)  # ② ③ ④
    unread = retriever.unread(live, plans, candidates) if run.config.mode is Mode.ADAPTIVE else []
    if unread:  # chose not to retrieve and had its sentence declined: it reads before the answer may abstain
        again = tuple(retriever.read_instead(plans[i]) for i in unread)
        found, written = await _write(tuple(live[i] for i in unread), again, run)  # ② ③ ④
        plans, evidence = _put(plans, unread, again), _put(evidence, unread, found)
        candidates += written
    candidates += await generator.fallback(live, candidates, run)  # ③ only for beams left with nothing
    return StepOutcome(live, plans, evidence, tuple(_grow(candidates, run)))


async def _write(
    live: tuple[Beam, ...], plans: tuple[Plan, ...], run: Run, early: lead.EarlyLead | None = None
) -> tuple[tuple[Evidence, ...], tuple[Candidate, ...]]:
    """The chunks each beam's plan fetches, and its candidates written from them and critiqued (with the lead's
    call sent ahead, for the first beam's chunks, where `early` is given)."""
    evidence = await retriever.gather(live, plans, run)
    if early is not None and live:
        early.send(live[0], evidence[0])
    return evidence, await critic.assess(await generator.expand(live, plans, evidence, run), run)


def _put(items: tuple[T, ...], at: list[int], new: Sequence[T]) -> tuple[T, ...]:
    """`items` with `new[k]` in place of `items[at[k]]`."""
    replaced = dict(zip(at, new, strict=True))
    return tuple(replaced.get(i, item) for i, item in enumerate(items))


def _grow(candidates: tuple[Candidate, ...], run: Run) -> list[tuple[Candidate, Beam | None]]:
    weights = _weights(run)
    return [(c, beam.extend(c, n, weights) if generator.usable(c) else None) for n, c in enumerate(candidates)]


def _weights(run: Run) -> beam.Weights:
    w_use = run.config.w_use if run.deps.rater.weighs_utility else 0.0  # the evidence scorer's f leaves ISUSE out
    return beam.Weights(run.config.w_rel, run.config.w_sup, w_use, run.config.use_seqscore)


def _second_hop(best: Beam, written: list[Candidate], steps: list[TraceStep], run: Run) -> tuple[Beam, list[TraceStep]]:
    """`best` with the sentence of the chunk its last one's chunk links to (`hops.second_hop`), and the trace
    saying so (asked with the evidence scorer and `Config.hops` on: the paper's scorer keeps the paper's answer)."""
    hop = hops.second_hop(run.question, best, written)
    if hop is None:
        return best, steps
    grown = beam.extend(replace(hop, parent=best, flag=None), 0, _weights(run))
    return replace(grown, id=best.id, final=True), report.hop_taken(steps, hop)


async def _lead(
    best: Beam, run: Run, kind: QuestionKind | None, deadline: float, early: lead.EarlyLead | None
) -> Lead | None:
    """The short answer of a yes/no, choice or factoid question (⑥); none when the budget or the deadline is
    spent."""
    try:
        async with asyncio.timeout_at(deadline):
            return await lead.write_lead(run, best, kind, early)
    except (BudgetError, TimeoutError):
        return None


def _stopped(step: StepOutcome) -> list[Beam]:
    """Live beams that got no child because their candidates were declined: a beam with sentences stops
    there (it does not grow by an unsupported or degenerate sentence); one without any has nothing to keep."""
    grown = {c.parent.id for c, child in step.outcomes if child is not None}
    declined = {c.parent.id for c, _ in step.outcomes if c.by_rule}
    return [replace(b, final=True) for b in step.live if b.id in declined - grown and b.segments]


def _chunks(step: StepOutcome) -> tuple[Chunk, ...]:
    """The chunks a step read, each once, in the order the beams read them."""
    return tuple({chunk.key: chunk for evidence in step.evidence for chunk in evidence}.values())


def _first_failure(step: StepOutcome) -> Candidate | None:
    """The first failed candidate, one the endpoint failed before one whose reply the model botched (asking again
    gets the same, so that is the question's failure, not the endpoint's)."""
    failed = [c for c, _ in step.outcomes if c.error]
    return next((c for c in failed if not c.botched), failed[0] if failed else None)


def _nothing_written(stop: StopReason, run: Run, failure: Candidate | None) -> None:
    """An answer that ends before its first sentence is an error, not an empty answer; says why it failed: the
    endpoint (LLMError), or, when every call was answered but no reply could be used, the model (CritiqueError)."""
    if stop is StopReason.DEADLINE:
        raise BudgetError(f"the deadline of {run.config.deadline:g}s passed before a sentence was written")
    if stop is StopReason.BUDGET:
        raise BudgetError("the answer's budget ran out before a sentence was written")
    error = failure.error if failure else None
    reason = f" (first failure: {error.partition(': ')[2] or error})" if error else ""
    if failure and failure.botched:
        raise CritiqueError(f"no reply of the model could be used; nothing could be written{reason}")
    raise LLMError(f"every call to the endpoint failed; nothing could be written{reason}")
