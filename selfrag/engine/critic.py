"""④ Critique: labels as probability distributions, the evidence-quote check, the optional hard gates,
and (in `separate` mode) one critic call per candidate, possibly on another model.

Label probabilities come from token logprobs when the endpoint returns them, else from the labels (one-hot).
A failed critic call leaves the candidate with conservative labels (irrelevant, no support, utility 3,
not final) marked `defaulted`, so a chunk is never favoured because its critique happened to fail. A refusal or
content filter is not a verdict on support: that candidate is dropped with the reason instead.

`assess` runs the policies on written sentences, each in its own module: `tidy` (a superseded document's sentence
declined, then `filters` and `grounding`), `ask_plainly`, `extract` and `disowned`; then the rater (`rate`) and
the gates (`gate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial

from ..errors import FatalLLMError, LLMError, RefusalError
from ..labels import Decision, Mode, QuestionKind, Relevance, Support, Utility
from ..llm.replies import CritiqueReply, check_quote, critique_from, plan_from
from ..schema import Candidate, Critique, Flag, Plan
from .ask_plainly import asked_again
from .beam import s_rel, s_sup
from .calibration import CandidateView
from .context import Run, run_all
from .disowned import disowned
from .evidence import drawn_on
from .extract import extract
from .filters import cut_to_one, degeneracy_of, draft_of, unframe
from .grounding import grounded, unstated_verdict
from .questions import question_kind


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
    return replace(candidate, flag=Flag.GATED) if irrelevant or unsupported else candidate


async def assess(candidates: Sequence[Candidate], run: Run) -> tuple[Candidate, ...]:
    """Separate mode: one critic call per written candidate, all at once. Then, in both modes, degenerate
    sentences are cut or declined, one that restated the question is asked for again (`asked_again`), the chunks'
    own sentences are extracted (`extract`, evidence scorer), sentences the model disowns are declined where
    nothing else is left (`disowned`, paper's scorer), the rater gives P(relevant) and P(supported), and the
    gates run."""
    candidates = await _judged(candidates, run)
    ground = run.config.ground and run.deps.rater.from_documents  # the paper's scorer keeps the paper's sentences
    verdicts = run.deps.rater.trusts(QuestionKind.YES_NO)  # the model's own yes or no may stand as a sentence
    filters = bool(run.config.filters)
    tidied = [tidy(c, run.question, ground=ground, verdicts=verdicts, filters=filters) for c in candidates]
    if run.config.ask_plainly:
        again = partial(tidy, question=run.question, ground=ground, verdicts=verdicts)  # filters on: they flagged it
        tidied += await asked_again(tidied, run, judged=_judged, tidied=again)
    if ground and run.config.extract:
        tidied += extract(tidied, run.question)
    if run.config.disowned and not run.deps.rater.from_documents:
        tidied = disowned(tidied, gated=lambda c: gate(c, run).gated)
    candidates = rate([sourced(c, run.question) for c in tidied], run)
    return tuple(gate(c, run) for c in candidates)


async def _judged(candidates: Sequence[Candidate], run: Run) -> list[Candidate]:
    """Separate mode: the candidates with the critic's labels, one call each for those written without them."""
    pending = [c for c in candidates if c.error is None and c.critique is None and c.chunk is not None]
    if not pending:
        return list(candidates)
    run.meter.rounds += 1
    judged = dict(zip(map(id, pending), await run_all(_judge(c, run) for c in pending), strict=True))
    return [judged.get(id(c), c) for c in candidates]


# the flags `tidy` declines a candidate with, whatever its ratings (several_sentences is cut and kept; unsupported
# is the rater's own verdict, in `rate`)
DECLINED = frozenset(
    {
        Flag.SUPERSEDED,
        Flag.RESTATES_QUESTION,
        Flag.REPEATS_DRAFT,
        Flag.ABOUT_THE_DOCUMENT,
        Flag.NO_AMOUNT,
        Flag.UNSTATED,
    }
)


def tidy(candidate: Candidate, question: str, *, ground: bool, verdicts: bool, filters: bool = True) -> Candidate:
    """The engine's rules on one written sentence, in order; the first that declines it ends them (its flag says
    which):
    1. `outdated`: written from a superseded document whose current version is also in hand, it is declined (it
       yields to that version).
    2. `unframe`: a report's frame is taken off what it reports ("The document states that ...") and a topic's off
       the topic ("The document is about ...").
    3. `degeneracy_of` (with `filters`): one that restates the question, repeats the draft, speaks of the document
       instead of the world, or states no amount where the question asks how many or how much is declined.
    4. `cut_to_one` (with `filters`): several sentences at once are cut to the one worth keeping, declined if even
       that one is degenerate.
    5. `grounded` (with `ground`): one that states what its documents do not is put right from them, or declined.
    6. `unstated_verdict` (with `ground`, where the model's `verdicts` are not taken): a bare "Yes." or "No, they
       are not." to a yes/no question is declined (it is the model's own verdict, stated on no document's word; the
       short answer says what the documents decide).
    Without `filters` (`Config.filters` off) no sentence is declined or cut as degenerate."""
    if candidate.error or candidate.critique is None or candidate.gated:
        return candidate
    if outdated(candidate):
        return replace(candidate, flag=Flag.SUPERSEDED)
    if not filters and not ground:
        return candidate
    draft = draft_of(candidate)
    candidate, topic = unframe(candidate)
    flaw = degeneracy_of(candidate, question, draft, topic=topic) if filters else None
    if flaw is Flag.SEVERAL_SENTENCES:
        candidate, flaw = cut_to_one(candidate, question, draft)
    if ground and flaw is None:
        candidate, flaw = grounded(candidate, question, draft)
    if ground and flaw is None and not verdicts:
        flaw = unstated_verdict(candidate, question)
    return replace(candidate, flag=flaw) if flaw else candidate


def sourced(candidate: Candidate, question: str) -> Candidate:
    """A pooled sentence's other sources: the chunks besides the cited one that hold its words (a sentence joining
    two facts is backed by two chunks, and is rated against both)."""
    if not candidate.pooled or candidate.error or candidate.gated:
        return candidate
    chunks = candidate.evidence  # a pooled candidate's index is the rank of the chunk it cites among them
    picked = drawn_on(question, candidate.text, [chunk.text for chunk in chunks], candidate.index)
    return replace(candidate, also=tuple(chunks[i] for i in picked[1:]))


def outdated(candidate: Candidate) -> bool:
    """Its chunk's document is superseded by one of the documents this beam retrieved this step."""
    version = candidate.chunk.version if candidate.chunk is not None else None
    if version is None or version.current:
        return False
    present = {chunk.doc_id for chunk in candidate.evidence}
    return any(doc in present for doc in version.newer)


def rate(candidates: Sequence[Candidate], run: Run) -> list[Candidate]:
    """P(relevant) and P(supported) for the usable candidates written from chunks, each beam's rated
    together (agreement between them is evidence); a candidate whose answer support (`SupportEstimate.support`) is under
    `run.abstain_below` is declined. A sentence written without documents (the model chose not to retrieve, or the
    search found nothing) is declined too where it may not be kept (`_documents_needed`): a beam with no sentence
    yet that chose not to retrieve reads instead (controller), one with sentences stops. A pooled
    candidate is rated as one written from the chunks it draws on (`sourced`): its features are computed against
    their text together, the best rank and score among them, and its agreement against the sentences written
    from the other chunks alone."""
    ratable = [c for c in candidates if not c.error and not c.gated and c.critique and c.chunk and c.critique.support]
    views = [_view(c, ratable) for c in ratable]
    estimates = dict(zip(map(id, ratable), run.deps.rater.rate(run.question, views), strict=True))
    out = []
    for candidate in candidates:
        estimate = estimates.get(id(candidate))
        if estimate is not None:
            assert candidate.critique is not None
            critique = replace(
                candidate.critique,
                p_relevant=estimate.p_relevant,
                p_supported=estimate.p_supported,
                answer_support=estimate.support,
                features=estimate.features,
            )
            candidate = replace(candidate, critique=critique)
            if estimate.support < run.abstain_below:
                candidate = replace(candidate, flag=Flag.UNSUPPORTED)
        elif _without_documents(candidate) and _documents_needed(run):
            candidate = replace(candidate, flag=Flag.UNSUPPORTED)
        out.append(candidate)
    return out


def _documents_needed(run: Run) -> bool:
    """A sentence written without documents may not be kept (unless retrieval is turned off): under a cut above 0,
    since nothing supports it, so every sentence kept has cleared the cut; and for a question that asks for a fact
    (yes/no, choice, factoid) when the rater answers those from the documents (the evidence scorer: it rates only
    sentences written from chunks, so an answer from the model's memory would carry a nil confidence)."""
    if run.config.mode is Mode.NEVER:
        return False
    return run.abstain_below > 0 or (run.deps.rater.from_documents and question_kind(run.question) is not None)


def _without_documents(candidate: Candidate) -> bool:
    """A sentence written without documents (the model chose not to retrieve, or the search found nothing), not
    otherwise declined."""
    unflagged = candidate.error is None and candidate.critique is not None and not candidate.gated
    return candidate.chunk is None and unflagged


def _view(candidate: Candidate, ratable: Sequence[Candidate]) -> CandidateView:
    """What the rater is shown of `candidate`, one of the step's `ratable` candidates (the others of its beam are
    what it agrees with or not)."""
    critique, chunk = candidate.critique, candidate.chunk
    assert critique is not None and chunk is not None and critique.relevance and critique.support
    scores = getattr(candidate.evidence, "scores", ())
    top = max(scores) if scores else None
    score_rel = candidate.retrieval_score / top if top and candidate.retrieval_score is not None else None
    rank, drawn = candidate.index, (chunk, *candidate.also)
    if candidate.also:  # a sentence drawing on several chunks ranks with the best of them
        rank = min(candidate.evidence.index(c) for c in drawn)
        score_rel = scores[rank] / top if top else score_rel
    others = tuple(  # sentences written from other chunks alone: a pooled one read this chunk too
        c.text
        for c in ratable
        if c.parent.id == candidate.parent.id
        and c is not candidate
        and c.chunk not in drawn
        and not c.pooled
        and not c.extracted  # the documents' own sentences agree with nothing by being extracted
    )
    return CandidateView(
        sentence=candidate.text,
        chunk_text="\n\n".join(c.text for c in drawn),
        chunk_key=chunk.key,
        rank=rank,
        score_rel=score_rel,
        quote_ok=critique.quote_ok,
        model_rel=s_rel(critique.relevance),
        model_sup=s_sup(critique.support),
        others=others,
        extracted=candidate.extracted,
    )


async def _judge(candidate: Candidate, run: Run) -> Candidate:
    assert candidate.chunk is not None
    document = run.document_values(candidate.parent.id, candidate.chunk)
    try:
        parsed = await run.ask(
            "critique_candidate",
            critic=True,
            question=run.question,
            draft=run.draft(candidate.parent.text),
            sentence=candidate.text,
            **document,
            **run.version_values(candidate.chunk, document["nonce"]),
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
