"""⑥ The short answer first: a yes/no, choice or factoid question gets its answer stated plainly before the
supported sentences and their citations (one more call: after the search, or with an endpoint's model beside its
last step, `EarlyLead`). What a question asks (its kind, the names it weighs) is read in `engine.questions`.

    documents_decide what the documents decide with no call: a choice, a yes/no question about two names, one
                    about one thing that a clause of the documents states or denies, or a value asked that the
                    clauses holding the question's words state (`engine.values`; not a superseded document's:
                    `current_texts`)
    standing        the answer instead of an abstention: what the documents decide, citing what it was read from
    lead_chunks     what the lead reads: the answer's last retrieval, then the chunks it cites that it does not hold
    EarlyLead       the lead's call sent while the last step writes (an endpoint's model), not after the loop
    lead_text       the model's short answer, checked: yes / no / "The documents don't settle it." for yes/no
                    (the last also when a sentence of the answer opens with the other word, and when the rater
                    does not trust the model's yes or no: `Rater.trusts`);
                    one of the two options, as the question writes it, for a choice; for a factoid, a phrase
                    copied from the documents read or the answer's sentences (`copied`: it can add no fact of its
                    own) with some word the question lacks, and none where the rater does not trust the
                    model's factoids
    counted_kind    the kind the confidence counts the short answer as, when it says more than the sentences,
                    or when it is "The documents don't settle it." (`UNSETTLED_KINDS`: such answers are counted whole)
    echoes          a lead that only repeats the answer's first sentence ("We Move." over "We Move"): not printed
    without_opening_answers
                    the sentences under "Yes.", "No." or "The documents don't settle it.": none opens with a yes
                    or no of its own (`denials.opening_answer`: "Yes, the card ..." prints as "The card ...")
    write_lead      the lead of a question of a kind: a choice or a yes/no question the documents decide
                    (`engine.decide`, no call: "Who was born first, A or B?" by their dates, "Which composer was
                    Hungarian, A or B?" by what each option's own sentences say, "Are A and B from the same
                    country?" by the peoples they name, "Is a helmet required?" by "Wearing a helmet is not
                    required by law", "Day pass price?" by "A day pass costs $6.00", cited), else one call asks
                    the model

What speaks against a short answer is read in `engine.denials`: a decision is checked against the kept sentences
(`refuted`), a yes/no lead against a sentence opening with the other word (`contradicted`), and with
`Config.denials` the model's own "Yes." or pick against a sentence that denies it (`denial`). With
`Config.confirm`, a decision prints only where the model agrees (`engine.confirm`).

The lead reads the documents, not the kept sentences: a yes/no or choice question is often decided by two
documents, and a sentence copied from one of them does not say "no"; shown the sentences, a small model mostly
copies the first one back (docs/decisions.md, `lead`). A question
with a longer answer (why, how, explain) gets no lead. A failed or unusable lead call leaves the answer as the
search wrote it: the lead is a courtesy, never a reason to fail.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace

from pydantic import BaseModel

from ..errors import FatalLLMError, LLMError, PromptNotSupportedError
from ..labels import QuestionKind
from ..llm.replies import LeadReply
from ..llm.structured import Parsed
from ..result import DECIDED, UNSETTLED_KINDS
from ..schema import Beam, Chunk, Segment
from .confirm import confirmed, confirms
from .context import Run
from .decide import Proposal, decide, decide_stated, decide_yes_no, read_from
from .denials import OPENING_ANSWER, contradicted, denial, refuted
from .evidence import terms, words
from .questions import choice_options, options, pair
from .state import UNSETTLED, Lead
from .values import decide_value

_VERDICTS = ("Yes.", "No.", UNSETTLED)  # the leads that say what a sentence's own opening yes or no would
MAX_LEAD_WORDS = 12
# what a model that reads is asked besides (the embedded model is not: its kind is the regexes')
READING = """
First read what the question asks, in whatever language it is written, and say it as "kind", before
"answer": "yes_no" (answered by yes or no), "choice" (which of two options the question names), "factoid" (one
name, number, date or short phrase), "list" (several things: steps, side effects, changes, rules),
"explanation" (why, how, under what circumstances) or "other". The kind named below is a first guess, and may
be wrong: answer by your own reading, and for a list, an explanation or other, answer ""."""


def documents_decide(
    question: str, kind: QuestionKind | None, texts: Sequence[str], written: Sequence[str] = ()
) -> Proposal | None:
    """What the documents decide with no call: a choice (`decide.decide`), a yes/no question about two names
    (`decide.decide_yes_no`), one about one thing that a clause of `texts` states or denies
    (`decide.decide_stated`), or the value a factoid question asks that the clauses holding its words state
    (`values.decide_value`). The answer's own sentences, `written`, are read by the first two only: a sentence
    the model wrote does not state what the documents say. None for other questions and where they cannot."""
    if kind == QuestionKind.CHOICE and (offered := options(question)) is not None:
        return decide(question, offered, [*texts, *written])
    if kind == QuestionKind.YES_NO and (named := pair(question)) is not None:
        return decide_yes_no(question, named, [*texts, *written])
    if kind == QuestionKind.FACTOID:
        return decide_value(question, texts)
    return decide_stated(question, texts) if kind == QuestionKind.YES_NO else None


def standing(question: str, kind: QuestionKind | None, chunks: Sequence[Chunk]) -> Lead | None:
    """The answer instead of an abstention, when no sentence was supported well enough: a choice, a yes/no
    question or a value that the chunks read decide (`documents_decide`) is answered by that alone, citing the
    chunks it was read from; None otherwise. Only a decision stands so: the documents decided it by their dates,
    peoples, words or stated values; the model's own short answer never stands alone."""
    texts = current_texts(chunks)
    decision = documents_decide(question, kind, texts)
    if decision is None or refuted(question, kind, decision, []):
        return None
    read = decision.read or _read_from(question, kind, texts)
    return Lead(f"{decision.option}.", decision.by, cites=tuple(chunks[n] for n in read), clause=decision.clause)


def _read_from(question: str, kind: QuestionKind | None, texts: Sequence[str]) -> tuple[int, ...]:
    """The texts a decision about two names (a choice's options, a yes/no question's pair) read from."""
    names = options(question) if kind == QuestionKind.CHOICE else pair(question)
    return read_from(names, texts) if names else ()


def current_texts(chunks: Sequence[Chunk]) -> list[str]:
    """The texts the documents decide from: a superseded document's is left empty (a policy a newer one replaced
    says neither yes nor no, whether or not the newer one was retrieved); in order, so an index is a chunk's."""
    return ["" if chunk.version is not None and not chunk.version.current else chunk.text for chunk in chunks]


def lead_chunks(best: Beam, limit: int) -> list[Chunk]:
    """The documents the lead reads: the answer's last retrieval in its order (`limit` at most), then the chunks
    the answer cites that it does not hold (earlier retrievals', second sources of two-source sentences). Known
    once a step has retrieved, before its sentence is chosen: `EarlyLead` sends the call then."""
    return read_by_lead(best.evidence, best.segments, limit)


def read_by_lead(evidence: Sequence[Chunk], segments: Sequence[Segment], limit: int) -> list[Chunk]:
    cited = [c for s in segments for c in (s.chunk, *s.also) if c is not None]
    return list({chunk.key: chunk for chunk in [*evidence[: max(limit, 1)], *cited]}.values())


class EarlyLead:
    """The lead's call sent while a step writes its sentences, so that it is no round of its own after the loop
    (an endpoint's model; the embedded one shares this CPU, where a call sent for nothing costs time). It is sent
    for the documents the lead reads if the step ends the answer (`read_by_lead` of a child of the step's first
    beam) and taken where the finished answer reads exactly those; else it is cancelled and the lead asks then.
    The prompt is the same either way, so the answer is too."""

    def __init__(self, run: Run, kind: QuestionKind | None) -> None:
        self._run, self._kind = run, kind
        self._sent: tuple[tuple[str, ...], asyncio.Task[Parsed[BaseModel]]] | None = None

    def send(self, parent: Beam, evidence: Sequence[Chunk]) -> None:
        """The call for what a child of `parent` reading `evidence` would lead with (none sent twice)."""
        chunks = read_by_lead(evidence, parent.segments, self._run.config.ndocs)
        keys = tuple(chunk.key for chunk in chunks)
        if self._sent is not None and self._sent[0] == keys:
            return
        self.close()
        if self._decided_alone(chunks):
            return
        task = asyncio.ensure_future(_lead_reply(self._run, self._kind, chunks))
        task.add_done_callback(_consumed)
        self._sent = (keys, task)

    def _decided_alone(self, chunks: Sequence[Chunk]) -> bool:
        """These documents decide the lead and the model is not asked to confirm it: no call is needed."""
        run, kind = self._run, self._kind
        if not run.config.decide or kind is None:
            return False
        decision = documents_decide(run.question, kind, current_texts(chunks))
        return decision is not None and not confirms(run, kind, decision.by)

    def take(self, chunks: Sequence[Chunk]) -> asyncio.Task[Parsed[BaseModel]] | None:
        """The call sent for these documents (None: none was, or for others: cancelled)."""
        sent, self._sent = self._sent, None
        if sent is not None and sent[0] == tuple(chunk.key for chunk in chunks):
            return sent[1]
        if sent is not None:
            sent[1].cancel()
        return None

    def close(self) -> None:
        """Cancels a call sent and not taken."""
        self.take(())


def _consumed(task: asyncio.Task[Parsed[BaseModel]]) -> None:
    """A call sent ahead and never taken fails quietly (its error, if taken, is raised where it is awaited)."""
    if not task.cancelled():
        task.exception()


def lead_text(kind: QuestionKind, answer: str, read: Sequence[str], question: str = "") -> str | None:
    """The lead to print, or None when the model's short answer cannot be used as one. `read`: the texts the
    lead may take its words from (the documents it read and the answer's sentences)."""
    said = " ".join(answer.split()).strip(" .!\"'")
    word = said.lower().split(maxsplit=1)[0].strip(",.;:!") if said else ""
    if kind == QuestionKind.YES_NO:
        if word in ("yes", "no"):
            return f"{word.capitalize()}."
        return UNSETTLED
    if said.lower().startswith("not settled"):
        return UNSETTLED if kind == QuestionKind.CHOICE else None
    if kind == QuestionKind.CHOICE:
        return _chosen(said, choice_options(question))
    if not said or len(said.split()) > MAX_LEAD_WORDS:
        return None
    said_terms = terms(said)
    if not said_terms or not copied(said, read):
        return None  # a name or number the documents and sentences do not state is not stated as the answer
    if not said_terms - terms(question):
        return None  # the question's own words ("... starred which actress?" -> "Moment by Moment") answer nothing
    return f"{said[0].upper()}{said[1:]}."


def copied(said: str, read: Sequence[str]) -> bool:
    """The short answer is copied from one text read: its words stand together there, in its order (a leading
    "the", "a" or "an" aside). Words gathered from here and there ("4 days" from "4 docks" and "30 days") are
    no phrase any document states."""
    asked = words(said)
    if asked and asked[0] in ("the", "a", "an"):
        asked = asked[1:]
    phrase = f" {' '.join(asked)} "
    return bool(asked) and any(phrase in f" {' '.join(words(text))} " for text in read)


def without_opening_answers(best: Beam, lead: str | None) -> Beam:
    """The answer as printed under its lead: where the lead answers yes or no, or says "The documents don't settle
    it.", a sentence does not open with a yes or no of its own ("Yes. Yes, the card ..." says it twice, "... don't
    settle it. Yes, the card ..." says both). The yes or no is taken off and the rest of the sentence kept, with its
    citation; a sentence that was only "Yes." goes."""
    if lead not in _VERDICTS:
        return best
    kept = []
    for segment in best.segments:
        found = OPENING_ANSWER.match(segment.text)
        if found is None:
            kept.append(segment)
            continue
        rest = segment.text[found.end() :]
        if any(ch.isalnum() for ch in rest):  # "Yes." alone says nothing else
            kept.append(replace(segment, text=_capitalized(rest)))
    return replace(best, segments=tuple(kept))


def _capitalized(text: str) -> str:
    """`text` with a capital first letter, unless its second is one already ("iPhone", "eBay")."""
    return text if text[1:2].isupper() else text[:1].upper() + text[1:]


def echoes(lead: str, sentences: Sequence[str]) -> bool:
    """The lead says the same words as the answer's first sentence, and nothing else: printing it adds nothing."""
    said = terms(lead)
    return bool(sentences) and bool(said) and said == terms(sentences[0])


def counted_kind(
    kind: QuestionKind | None, lead: str | None, sentences: Sequence[str], source: str | None = "model"
) -> str | None:
    """The kind whose training rate the confidence takes for this short answer, or None: a stated answer that
    says more than the sentences after it, or "The documents don't settle it." (`UNSETTLED_KINDS`: it states no
    answer, and the confidence is how often such answers were right). A yes/no always says more; a name or
    number whose words all occur in the sentences restates their answer, right or wrong with them. A choice the
    documents decided counts as what decided it (`DECIDED`): how often that is right is not the model's rate."""
    if lead == UNSETTLED:
        return UNSETTLED_KINDS.get(kind or "")
    if kind is None or not lead:
        return None
    if kind == QuestionKind.YES_NO or not terms(lead) <= terms(" ".join(sentences)):
        return source if source in DECIDED else kind
    return None


def _chosen(said: str, offered: tuple[str, str] | None) -> str | None:
    """The option the short answer names, as the question writes it; None when it names neither or both."""
    if offered is None:
        return None
    first, second = (terms(option) or frozenset(words(option)) for option in offered)  # "before", "after"
    named = terms(said) | frozenset(words(said))
    picks = [option for option, own in zip(offered, (first - second, second - first), strict=True) if own & named]
    return f"{picks[0][:1].upper()}{picks[0][1:]}." if len(picks) == 1 else None  # "Kept." of "refunded or kept"


async def write_lead(run: Run, best: Beam, kind: QuestionKind | None, early: EarlyLead | None = None) -> Lead | None:
    """The lead of a question of this kind (`question_kind`): from the documents where they decide it
    (`documents_decide`), else from one call. None when the call failed; a lead with no text when the reply is
    no usable short answer or only repeats the answer's first sentence."""
    if not best.segments:
        return None
    lead = await _written_lead(run, best, kind, early)
    if lead is not None and lead.text is not None and echoes(lead.text, [s.text for s in best.segments]):
        return replace(lead, text=None)
    return lead


async def _written_lead(run: Run, best: Beam, kind: QuestionKind | None, early: EarlyLead | None) -> Lead | None:
    chunks = lead_chunks(best, run.config.ndocs)
    written = [s.text for s in best.segments]
    decision = documents_decide(run.question, kind, current_texts(chunks), written) if run.config.decide else None
    why = refuted(run.question, kind, decision, written) if decision is not None else None
    if decision is not None and why is None:  # cites the clause that decided it where the rule knows it
        cites = tuple(chunks[n] for n in decision.read)
        decided = Lead(f"{decision.option}.", decision.by, cites=cites, clause=decision.clause or None)
        if kind is None or not confirms(run, kind, decision.by):
            return decided
        return await confirmed(run, best, kind, chunks, decided, _asked_lead(run, best, kind, chunks, early))
    refused = f"{decision.option}. by {decision.by}: {why}" if decision is not None else None
    lead = await _asked_lead(run, best, kind, chunks, early)
    if refused is None:
        return lead
    if lead is None or (
        lead.text is None and kind == QuestionKind.CHOICE
    ):  # the rule's pick was refused, the model's is none
        return Lead(UNSETTLED, "model", lead.reply if lead else None, refused=refused)
    return replace(lead, refused=refused)


async def _lead_reply(run: Run, kind: QuestionKind | None, chunks: Sequence[Chunk]) -> Parsed[BaseModel]:
    """The lead's one call: the question, its kind and the documents (the same prompt sent ahead or after)."""
    return await run.ask(
        "answer_lead",
        logprobs=False,
        question=run.question,
        kind={"yes_no": "yes/no", "choice": "choice between two"}.get(kind or "", kind or "factoid"),
        reading="" if run.config.embedded else READING,
        reply='{"answer": "..."}' if run.config.embedded else '{"kind": "...", "answer": "..."}',
        documents=run.documents("lead", chunks) if chunks else "(no documents)",
    )


async def _asked_lead(
    run: Run, best: Beam, kind: QuestionKind | None, chunks: list[Chunk], early: EarlyLead | None = None
) -> Lead | None:
    """The model's own short answer, asked in one call and checked (`lead_text`); None when the call failed. An
    endpoint's model also reads the question's kind (any language), and its reading decides: a list or an
    explanation gets no short answer, a yes/no question its yes or no; the embedded model's kind is the
    regexes' (`questions.question_kind`)."""
    sent = early.take(chunks) if early is not None else None
    try:
        parsed = await (sent if sent is not None else _lead_reply(run, kind, chunks))
    except FatalLLMError:
        raise
    except (LLMError, PromptNotSupportedError):  # a model that cannot pose the lead prompt gets no lead
        return None
    assert isinstance(parsed.value, LeadReply)
    read_as = QuestionKind(parsed.value.kind) if parsed.value.kind and not run.config.embedded else None
    if read_as is not None and not read_as.short:
        return Lead(None, "model", parsed.value.answer, kind=read_as)  # a list or an explanation: no short answer
    kind = read_as or kind
    if kind is None:
        return None
    read = [*(s.text for s in best.segments), *(c.text for c in chunks)]
    text = lead_text(kind, parsed.value.answer, read, run.question)
    if text not in (None, UNSETTLED) and not run.deps.rater.trusts(kind):
        # more often wrong than right in training: a yes/no question is not settled by what was read, and a
        # factoid gets no short answer (its sentences and their sources stand)
        return Lead(
            UNSETTLED if kind == QuestionKind.YES_NO else None, "model", parsed.value.answer, held=text, kind=read_as
        )
    if kind == QuestionKind.YES_NO and text is not None and contradicted(text, [s.text for s in best.segments]):
        text = UNSETTLED  # the documents read together and a sentence written from one of them disagree
    if run.config.denials and text not in (None, UNSETTLED):
        texts = [*(s.text for s in best.segments), *current_texts(chunks)]
        part = denial(run.question, kind, text.rstrip("."), texts, plainly=True)
        if part is not None:  # the model's own "Yes." or pick, over a clause that says the opposite
            why = f"{text} by the model: it is denied in {part!r}"
            return Lead(UNSETTLED, "model", parsed.value.answer, kind=read_as, refused=why)
    return Lead(text, "model", parsed.value.answer, kind=read_as)
