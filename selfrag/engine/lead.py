"""⑥ The short answer first: a yes/no, choice or factoid question gets its answer stated plainly before the
supported sentences and their citations (one more call, after the search).

    question_kind   yes_no ("Is ...?", "Does ...?") | choice ("Which is older, A or B?") | factoid ("Who ...?",
                    "How many ...?", "What label ...?", "What was the population of X?") | None
    options         the two names a choice question offers
    pair            the two names a yes/no question joins with "and" ("Are Ann Lee and Bob Day both directors?")
    documents_decide what the documents decide with no call, for a choice or a yes/no question about two names
    standing        the answer instead of an abstention: what the documents decide, citing what it was read from
    lead_chunks     what the lead reads: the chunks the answer cites, then the rest of its last retrieval
    lead_text       the model's short answer, checked: yes / no / "The documents don't settle it." for yes/no
                    (the last also when a sentence of the answer opens with the other word: `contradicted`);
                    one of the two options, as the question writes it, for a choice; for a factoid, only words
                    the documents read or the answer's sentences contain (it can add no fact of its own), and
                    some word the question lacks
    counted_kind    the kind the confidence counts the short answer as, when it says more than the sentences
    echoes          a lead that only repeats the answer's first sentence ("We Move." over "We Move"): not printed
    write_lead      the lead of a question of a kind: a choice or a yes/no question about two names the
                    documents decide (`engine.compare`, no call: "Who was born first, A or B?" by their dates,
                    "Which composer was Hungarian, A or B?" by what each option's own sentences say, "Are A and B
                    from the same country?" by the peoples they name), else one call asks the model

The lead reads the documents, not the kept sentences: a yes/no or choice question is often decided by two
documents, and a sentence copied from one of them does not say "no"; shown the sentences, the 135M model mostly
copied the first one back (a factoid lead on 34 of 163 training questions, against 75 without them). A question
with a longer answer (why, how, explain) gets no lead. A failed or unusable lead call leaves the answer as the
search wrote it: the lead is a courtesy, never a reason to fail.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..errors import FatalLLMError, LLMError, PromptNotSupportedError
from ..result import DECIDED, LeadSource
from ..schema import Beam, Chunk
from .compare import PEOPLE, Decision, decide, decide_yes_no, read_from
from .context import Run
from .evidence import asks_yes_no, terms
from .replies import LeadReply

UNSETTLED = "The documents don't settle it."
MAX_LEAD_WORDS = 12
_AMOUNT = r"how (?:many|much|long|old|far|often|big|tall|large)"  # "how many ...?" asks for a number, not a way
_FACTOID = re.compile(
    rf"^\s*(?:who|whom|whose|when|where|which|{_AMOUNT})\b"
    r"|^\s*what (?:year|date|day|time|city|country|town|name|number|percentage|amount|age|is the name)\b"
    # "What show does ...?", "... released by what label?": what/which asking for a thing, not "what is X?"
    r"|\b(?:what|which) (?!(?:is|are|was|were|do|does|did|has|have|had|can|could|will|would|should|may|might)\b)"
    r"[a-z]"
    r"|\b(?:who|whom|what|when|where)\s*\?\s*$"  # "... founded by who?", "Lilu is what?"
    r"|^\s*name\b",  # "Name the mother of ..."
    re.I,
)
# also a factoid: a value of something ("What was the 2010 population of X?", "What is the late fee for a bike?";
# "What is the refund policy?" and "What is the purpose of X?" ask for an explanation), "how many" further in,
# "In what 1942 film ...?", "To whom ...?"; unless the question asks two things ("What is the fee, and how many ...?")
_VALUE = re.compile(
    r"^\s*what(?:'s|\s+(?:is|was|are|were))\s+the\s+"
    r"(?!(?:purpose|reason|difference|meaning|role|significance|relationship|process|history|impact|effect|point"
    r"|idea|goal|benefit|advantage|importance)\b)(?:[\w'’-]+\s+){1,4}?(?:of|in|at|for|on|from|to|by)\s"
    rf"|\b{_AMOUNT}\b|\b(?:what|which)\s+\d|\bwhom\b",
    re.I,
)
_TWO_QUESTIONS = re.compile(r",\s+and\s+(?:who|what|when|where|which|how)\b", re.I)
_EXPLAIN = re.compile(rf"^\s*(?:why|(?!{_AMOUNT}\b)how|explain|describe)\b", re.I)
# "..., The Exies or Circus Diablo?", "Was Summit or Crosstrack created ...?", "Between A and B, which ...?"
_CHOICE = re.compile(
    r"(?:^|,)\s*([^,?]+?)\s+or\s+([^,?]+?)\s*(?:\?|,|$)|^\s*between\s+([^,?]+?)\s+and\s+([^,?]+?),", re.I
)
_NAMES = re.compile(r"[A-Z0-9][\w'’.&-]*(?:\s+(?:(?:of|the|and|de|la|von|van|du|del|da)\s+)*[A-Z0-9][\w'’.&-]*)*")
_OPENER = re.compile(
    r"^(?:(?:is|are|was|were|do|does|did|has|have|had|can|could|will|would|who|which|what|whose)\b\s*)+", re.I
)


@dataclass(frozen=True, slots=True)
class Lead:
    """A short answer as printed (None: nothing usable to print), where it came from, the model's own reply when
    one call asked it (kept in the trace, printed or not: why a lead is missing can be read off it), and the
    chunks it cites when it stands alone (`standing`)."""

    text: str | None
    source: LeadSource
    reply: str | None = None
    cites: tuple[Chunk, ...] = ()


def question_kind(question: str) -> str | None:
    """yes_no, choice, factoid, or None for a question whose answer is an explanation."""
    if asks_yes_no(question):
        return "yes_no"
    if options(question) is not None:
        return "choice"
    if _FACTOID.search(question) and not _EXPLAIN.match(question):
        return "factoid"
    if _VALUE.search(question) and not _TWO_QUESTIONS.search(question) and not _EXPLAIN.match(question):
        return "factoid"
    return None


def options(question: str) -> tuple[str, str] | None:
    """The two names a choice question offers ("Who is older, Sid Haig or Vic Darchinyan?"), or None: the run of
    capitalised words (or numbers) that ends right before the "or", and the first one after it (a few words
    such as "the birth of" may come first). A question whose "or" joins common words ("red or blue wine?")
    offers no names and is not a choice here."""
    for match in _CHOICE.finditer(question.strip()):
        left, right = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        before = _OPENER.sub("", next((m.group(0) for m in _NAMES.finditer(left) if m.end() == len(left)), ""))
        after = _NAMES.search(right)
        if before and after and len(right[: after.start()].split()) <= 3:  # "the Cotula", "the birth of Robert Young"
            return before, after.group(0)
    return None


def pair(question: str) -> tuple[str, str] | None:
    """The two names a yes/no question joins with "and" ("Are Ann Lee and Bob Day both directors?", "Were both
    The Exies and Circus Diablo formed in ...?"), or None. A people's adjective the second name runs into is
    the question's, not the name's ("Are both The New Pornographers and Kings of Leon American rock bands?")."""
    for match in _NAMES.finditer(question):
        first, joined, second = match.group(0).partition(" and ")
        first = _OPENER.sub("", first)
        words = second.split()
        while words and words[-1] in PEOPLE:
            words.pop()
        if joined and first and words:
            return first, " ".join(words)
    return None


def documents_decide(question: str, kind: str | None, texts: Sequence[str]) -> Decision | None:
    """What the documents decide with no call: a choice (`compare.decide`), or a yes/no question about two names
    (`compare.decide_yes_no`), with the texts it read (`compare.read_from`); None for other questions and where
    they cannot."""
    offered = options(question) if kind == "choice" else None
    named = pair(question) if kind == "yes_no" else None
    if offered is not None:
        decision = decide(question, offered, texts)
    elif named is not None:
        decision = decide_yes_no(question, named, texts)
    else:
        return None
    names = offered or named
    return None if decision is None or names is None else replace(decision, read=read_from(names, texts))


def standing(question: str, kind: str | None, chunks: Sequence[Chunk]) -> Lead | None:
    """The answer instead of an abstention, when no sentence was supported well enough: a choice or a yes/no
    question that the chunks read decide is answered by that alone, citing the chunks it was read from; None
    otherwise. Only a decision stands so: the documents decided it by their dates, peoples or words (right on
    70-99 % of HaluEval's training questions, by what decided them); the model's short answer is at chance on
    yes/no."""
    decision = documents_decide(question, kind, [chunk.text for chunk in chunks])
    if decision is None:
        return None
    return Lead(f"{decision.option}.", decision.by, cites=tuple(chunks[n] for n in decision.read))


def lead_chunks(best: Beam, limit: int) -> list[Chunk]:
    """The documents the lead reads: the chunks the answer cites (its sentences' own, then the second sources of
    two-source sentences), then the rest of its last retrieval, `limit` at most."""
    cited = [c for s in best.segments for c in (s.chunk, *s.also) if c is not None]
    unique = {chunk.key: chunk for chunk in [*cited, *best.evidence]}
    return list(unique.values())[: max(limit, 1)]


def lead_text(kind: str, answer: str, read: Sequence[str], question: str = "") -> str | None:
    """The lead to print, or None when the model's short answer cannot be used as one. `read`: the texts the
    lead may take its words from (the documents it read and the answer's sentences)."""
    said = " ".join(answer.split()).strip(" .!\"'")
    word = said.lower().split(maxsplit=1)[0].strip(",.;:!") if said else ""
    if kind == "yes_no":
        if word in ("yes", "no"):
            return f"{word.capitalize()}."
        return UNSETTLED
    if said.lower().startswith("not settled"):
        return UNSETTLED if kind == "choice" else None
    if kind == "choice":
        return _chosen(said, options(question))
    if not said or len(said.split()) > MAX_LEAD_WORDS:
        return None
    words = terms(said)
    if not words or not words <= terms(" ".join(read)):
        return None  # a name or number the documents and sentences do not hold is not stated as the answer
    if not words - terms(question):
        return None  # the question's own words ("... starred which actress?" -> "Moment by Moment") answer nothing
    return f"{said[0].upper()}{said[1:]}."


def contradicted(lead: str, sentences: Sequence[str]) -> bool:
    """A yes/no lead that a sentence of the answer opens against: "No." over "Yes, both airports are in ..."."""
    said = lead.strip().rstrip(".").lower()
    if said not in ("yes", "no"):
        return False
    against = "no" if said == "yes" else "yes"
    return any(
        sentence.split(maxsplit=1)[0].strip(",.;:!\"'").lower() == against for sentence in sentences if sentence.split()
    )


def echoes(lead: str, sentences: Sequence[str]) -> bool:
    """The lead says the same words as the answer's first sentence, and nothing else: printing it adds nothing."""
    said = terms(lead)
    return bool(sentences) and bool(said) and said == terms(sentences[0])


def counted_kind(
    kind: str | None, lead: str | None, sentences: Sequence[str], source: str | None = "model"
) -> str | None:
    """The kind whose training rate the confidence adds for this short answer, or None: only a stated answer
    ("The documents don't settle it." states none) that says more than the sentences after it. A yes/no always
    does; a name or number whose words all occur in the sentences restates their answer, right or wrong with them.
    A choice the documents decided counts as what decided it (`DECIDED`): how often that is right is not the
    model's rate."""
    if kind is None or not lead or lead == UNSETTLED:
        return None
    if kind == "yes_no" or not terms(lead) <= terms(" ".join(sentences)):
        return source if source in DECIDED else kind
    return None


def _chosen(said: str, offered: tuple[str, str] | None) -> str | None:
    """The option the short answer names, as the question writes it; None when it names neither or both."""
    if offered is None:
        return None
    first, second = (terms(option) for option in offered)
    named = terms(said)
    picks = [option for option, own in zip(offered, (first - second, second - first), strict=True) if own & named]
    return f"{picks[0]}." if len(picks) == 1 else None


async def write_lead(run: Run, best: Beam, kind: str) -> Lead | None:
    """The lead of a question of this kind (`question_kind`): from the documents where they decide it
    (`documents_decide`), else from one call. None when the call failed; a lead with no text when the reply is
    no usable short answer or only repeats the answer's first sentence."""
    if not best.segments:
        return None
    lead = await _written_lead(run, best, kind)
    if lead is not None and lead.text is not None and echoes(lead.text, [s.text for s in best.segments]):
        return replace(lead, text=None)
    return lead


async def _written_lead(run: Run, best: Beam, kind: str) -> Lead | None:
    chunks = lead_chunks(best, run.config.ndocs)
    decision = documents_decide(run.question, kind, [c.text for c in chunks] + [s.text for s in best.segments])
    if decision is not None:
        return Lead(f"{decision.option}.", decision.by)
    try:
        parsed = await run.ask(
            "answer_lead",
            logprobs=False,
            question=run.question,
            kind={"yes_no": "yes/no", "choice": "choice between two"}.get(kind, "factoid"),
            documents=run.documents(f"lead{best.id}", chunks) if chunks else "(no documents)",
        )
    except FatalLLMError:
        raise
    except (LLMError, PromptNotSupportedError):  # a model that cannot pose the lead prompt gets no lead
        return None
    assert isinstance(parsed.value, LeadReply)
    read = [*(s.text for s in best.segments), *(c.text for c in chunks)]
    text = lead_text(kind, parsed.value.answer, read, run.question)
    if kind == "yes_no" and text is not None and contradicted(text, [s.text for s in best.segments]):
        text = UNSETTLED  # the documents read together and a sentence written from one of them disagree
    return Lead(text, "model", parsed.value.answer)
