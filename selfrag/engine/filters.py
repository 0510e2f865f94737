"""The `filters` policy: a written sentence that must not be kept as written is declined or cut (no call).

    degeneracy     why a sentence must not be kept: it restates the question, repeats the draft, holds several
                   sentences at once, speaks of the document instead of the world ("This document contains
                   information ...") or copies the prompt's machinery, or states no amount where one is asked
    unframed       a report's frame taken off what it reports ("The document states that the fee is $15." -> "The
                   fee is $15.") and a topic's off the topic ("The document is about X" -> "X": a topic states
                   nothing, so it never answers a yes/no question by restating it)
    best_sentence  the one sentence of several worth keeping: the one sharing most with the question
    unframe, degeneracy_of, cut_to_one
                   the same on a candidate, read against its chunk, its documents' ids and its beam's draft
                   (`draft_of`)

`critic.tidy` runs them on every written sentence (`Config.filters`); `grounding` and `extract` read
`degeneracy` too. Why: docs/decisions.md (`filters`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from ..schema import Candidate, Flag
from .evidence import AUXILIARY, NUMBER_WORDS, asks_yes_no, denies, facts, sentences, share, terms, words

# a sentence about the document rather than the world: "The document is about ...", "This document contains
# information ...", "The document's version attribute ..." (the prompts call every chunk a document; a name such as
# "The Document Foundation" goes on with a capital, and "The document must be signed" says something of the world)
_OTHER_NAMES = "sentence|passage|excerpt|snippet|paragraph|text|chunk"  # the prompts' other names for a text
_ABOUT_DOCUMENT = re.compile(
    r"^\W*(?:[Tt]he|[Tt]his|[Tt]hat)\s+documents?(?:['’]s?)?\s+(?:"
    r"(?:is|are|was|were)\s+(?:(?:not|also|mainly|mostly)\s+)?"
    r"(?:relevant|irrelevant|between|from|a|an|the|dated|incomplete|complete|unclear|truncated)"
    r"|(?:does|do|did)\s*(?:not|n['’]t)|contains?|has|have|provides?|discuss(?:es)?|describes?|talks?|mentions?"
    r"|gives?|refers?|version|says?|states?|supports?)\b"
    # the prompt's other names for a text, with only what is said of a text: "The sentence is also about ...", "The
    # passage is relevant ...", "The next sentence is not complete" ("The passage was a sea route" speaks of the world)
    r"|^\W*(?:[Tt]he|[Tt]his|[Tt]hat)\s+(?:next\s+|previous\s+|last\s+|first\s+)?"
    rf"(?:{_OTHER_NAMES})s?\s+(?:"
    r"(?:is|are|was|were)\s+(?:(?:not|also|mainly|mostly)\s+)?"
    r"(?:about|relevant|irrelevant|incomplete|complete|unclear|truncated)"
    r"|(?:does|do|did)\s*(?:not|n['’]t)|contains?|provides?|discuss(?:es)?|describes?|talks?|mentions?|refers?)\b"
)
# the prompt's or the reply's own machinery copied into the sentence: a reply field's name ("is_final: true"), the
# document delimiter, the utility scale ("1: useful, 2: ...")
_MACHINERY = re.compile(r"\b(?:is_final|retrieve_next|next_query)\b|<\s*/?\s*document\b|^\W*1\s*:\s*useful\b")
_NONCE = re.compile(r"(?<![0-9a-f])[0-9a-f]{16}(?![0-9a-f])")  # the shape of a document delimiter's nonce (`Run`)
# a report's frame, whose report is the sentence's content: "The document states that ...", "According to the text,
# ...", "The answer is: ..."; and a topic's ("The document is about ...": the small model names the topic so, and
# the topic is often the answer)
_TEXTS = "document|text|passage|article|paragraph|source|context"
_TEXT = rf"(?:[Tt]he|[Tt]his)\s+(?:{_TEXTS})"
_TOPIC = re.compile(rf"^\W*{_TEXT}\s+(?:is|was)\s+(?:mainly\s+|mostly\s+)?about\s+")
_TELLER = rf"(?:[Tt]he|[Tt]his)\s+(?:{_TEXTS}|{_OTHER_NAMES})"  # a text's other names report too
_REPORT = re.compile(  # "The sentence says that ..." reports too ("The sentence is about ..." is declined, no topic)
    rf"^\W*(?:{_TELLER}\s+"
    r"(?:states|says|shows|mentions|notes|explains|reports|indicates|confirms)"
    r"(?:\s+that)?"
    r"|[Tt]he\s+answer\s+is(?:\s+that)?"
    rf"|[Aa]ccording\s+to\s+(?:the|this)\s+(?:{_TEXTS}))\s*[:,]?\s*"
)
# a question asking an amount, and a sentence stating one (`asks_amount`, `states_amount`)
_ASKS_AMOUNT = re.compile(r"\bhow (?:many|much|old)\b|\bwhat (?:percentage|number|amount|proportion|share)\b", re.I)
_AMOUNT_SAID = re.compile(
    rf"\d|\b(?:{'|'.join(NUMBER_WORDS)}|thirty|forty|fifty|sixty|seventy|eighty|ninety"
    r"|hundreds?|thousands?|millions?|billions?|dozens?|once|twice|half|single|double"
    r"|no|none|nothing|free|many|several|few|couple|all|every|each|most)\b",
    re.I,
)
# where a question asked inside a longer one begins: after a semicolon, a colon, a dash, or "and", "but" or "so"
# before an auxiliary verb ("What is the fee, and is there a deposit?")
_CLAUSE = re.compile(rf"[;:]\s+|\s[-–—]\s+|,?\s+(?:and|but|so)\s+(?={AUXILIARY})", re.I)
RESTATED_NOVELTY = 0.2  # a sentence with fewer new words than this share restates the question
REPEATED_OVERLAP = 0.8  # a sentence sharing this much of its words with a draft sentence repeats it
SHORT_ANSWER_TERMS = 3  # a sentence with fewer content words is a short answer, unless it asks the question back
COPIED_SHARE = 0.8  # two sentences whose words are this much the chunk's were copied from it, not written


def unframe(candidate: Candidate) -> tuple[Candidate, bool]:
    """The candidate with a report's or a topic's frame taken off its sentence (`unframed`), and whether
    what is left is a topic ("The document is about ...": it states nothing)."""
    text, topic = unframed(candidate.text)
    return replace(candidate, text=text), topic


def degeneracy_of(candidate: Candidate, question: str, draft: Sequence[str], *, topic: bool = False) -> Flag | None:
    """Why the candidate's sentence must not be kept as written (`degeneracy`), read against its chunk
    and the ids of the documents it was given; a Self-RAG checkpoint's segment is one unit however many sentences
    it holds (the paper's)."""
    whole = candidate.critique is not None and candidate.critique.estimator.startswith("reflection")
    chunk_text = candidate.chunk.text if candidate.chunk else None
    return degeneracy(question, candidate.text, draft, chunk_text, topic=topic, segment=whole, ids=_doc_ids(candidate))


def cut_to_one(candidate: Candidate, question: str, draft: Sequence[str]) -> tuple[Candidate, Flag | None]:
    """Several sentences cut to the one worth keeping (`best_sentence`, its frame taken off), flagged
    `several_sentences`, and why that one must not be kept either, or None."""
    cut, topic = unframed(best_sentence(question, candidate.text, draft))
    flaw = degeneracy(question, cut, draft, topic=topic, ids=_doc_ids(candidate))
    return replace(candidate, text=cut, flag=Flag.SEVERAL_SENTENCES), flaw


def draft_of(candidate: Candidate) -> list[str]:
    """The sentences its beam has written so far."""
    return [segment.text for segment in candidate.parent.segments]


def _doc_ids(candidate: Candidate) -> tuple[str, ...]:
    """The ids of the documents it was given (its chunk's first), each once."""
    return tuple(dict.fromkeys(chunk.doc_id for chunk in (candidate.chunk, *candidate.evidence) if chunk))


def asks_amount(question: str) -> bool:
    """The question asks for an amount ("How many ...?", "How much ...?", "How old ...?", "What percentage ...?"):
    a sentence stating none does not answer it (`degeneracy`). How long, far or often is not asked here: "overnight",
    "next door" and "monthly" answer those with no number."""
    return bool(_ASKS_AMOUNT.search(question))


def states_amount(sentence: str) -> bool:
    """The sentence states an amount, however vaguely: digits, a number word ("six", "a dozen", "twice", "half"),
    or none at all ("no", "none", "nothing", "free"), or a vague one ("many", "several", "few")."""
    return bool(_AMOUNT_SAID.search(sentence))


def degeneracy(
    question: str,
    sentence: str,
    draft: Sequence[str],
    chunk_text: str | None = None,
    *,
    topic: bool = False,
    segment: bool = False,
    ids: Sequence[str] = (),
) -> Flag | None:
    """Why a sentence must not be kept as written, or None: `restates_question` (few new words and no number,
    date or name the question lacks; but a yes/no question stated as a statement, "Paris is the capital of
    France.", answers it, yes or, with a "not", no, and so does a statement taking a side on a yes/no question
    asked inside a longer one (`_takes_a_side`); not a `topic`, what a document was said to be about, which
    states nothing), `repeats_draft`, `no_amount` (the question asks how many or how much, and neither the
    sentence nor the draft states an amount), `several_sentences` (three or more, or two copied from the chunk,
    or two of which the second speaks of the text; the caller may cut it with `best_sentence`, which skips the
    parts that are degenerate themselves), `about_the_document` (it speaks of the document, not of the world, or
    copies the prompt's machinery: "is_final: true", a delimiter's nonce, a document's id from `ids` with its
    chunk number, "The Prestige (film) #0"). A `segment` is one unit however many
    sentences it holds (a Self-RAG checkpoint's ends at its own [Retrieval] token). A short answer (fewer than
    `SHORT_ANSWER_TERMS` content words: "Yes.", "Paris", an option letter the question lists) is an answer, not
    a restatement, unless it asks the question back ("Where is the workshop?")."""
    said = terms(sentence)
    asked_back = sentence.rstrip().endswith("?")  # a question is no answer, however short: "Where is the depot?"
    long_enough = len(said) >= SHORT_ANSWER_TERMS or (asked_back and said)
    restated = long_enough and len(said - terms(question)) / len(said) < RESTATED_NOVELTY
    answers = bool(facts(sentence) - facts(question))  # "... after 24 hours is $15." answers with its number
    stated = not topic and not asked_back
    asserts = stated and (asks_yes_no(question) or _takes_a_side(question, sentence))  # "Paris is ..." says yes
    if restated and not answers and not asserts:
        return Flag.RESTATES_QUESTION
    for earlier in draft:
        before = terms(earlier)
        if said and before and len(said & before) / len(said | before) >= REPEATED_OVERLAP:
            return Flag.REPEATS_DRAFT
    parts = [sentence] if segment else sentences(sentence)
    copied = chunk_text is not None and share(said, terms(chunk_text)) >= COPIED_SHARE
    if len(parts) >= 3 or (len(parts) == 2 and copied):
        return Flag.SEVERAL_SENTENCES
    if _ABOUT_DOCUMENT.match(sentence) or _MACHINERY.search(sentence) or _nonce(sentence, chunk_text):
        return Flag.ABOUT_THE_DOCUMENT
    if any(re.search(rf"{re.escape(doc)}\s*#\s*\d", sentence, re.IGNORECASE) for doc in ids if doc):
        return Flag.ABOUT_THE_DOCUMENT  # "The Prestige (film) #0": a document's id as the prompt shows it
    if len(parts) == 2 and _ABOUT_DOCUMENT.match(parts[1]):
        return Flag.SEVERAL_SENTENCES  # "Helmets are advised. The sentence is also about e-bikes.": cut to the first
    if asks_amount(question) and not any(map(states_amount, [*draft, sentence])):
        return Flag.NO_AMOUNT  # "How many cargo bikes ...?" is not answered by "The co-op holds liability insurance."
    return None


def _takes_a_side(question: str, sentence: str) -> bool:
    """The sentence answers a yes/no question asked inside the question (after a semicolon, a colon, a dash or an
    "and": "I built a demand model; are we missing factors?") by taking a side in its words: it opens with "yes"
    or "no", or denies what the question does not ("The model is not missing any factors."). Without a side it
    may only restate what is asked."""
    if not any(asks_yes_no(part) for part in _CLAUSE.split(question)[1:]):
        return False
    opening = words(sentence)[:1]
    denied = any(map(denies, words(sentence))) and not any(map(denies, words(question)))
    return opening in (["yes"], ["no"]) or denied


def _nonce(sentence: str, chunk_text: str | None) -> bool:
    """The sentence copies a document delimiter's nonce ("109783c817deb906."): sixteen hex digits its chunk does
    not hold (a commit hash the document gives is the document's)."""
    return any(token not in (chunk_text or "") for token in _NONCE.findall(sentence))


def unframed(sentence: str) -> tuple[str, bool]:
    """The sentence without a report's frame ("The document states that", "According to the text,", "The answer
    is:") or a topic's ("The document is about"): what it reports, capitalised, and whether that is a topic; the
    sentence itself when it has no frame or nothing after it."""
    for pattern, topic in ((_TOPIC, True), (_REPORT, False)):
        frame = pattern.match(sentence)
        rest = sentence[frame.end() :].strip(" {}[]\"'") if frame else ""
        if rest.strip(" .!?"):
            return f"{rest[0].upper()}{rest[1:]}", topic
    return sentence, False


def best_sentence(question: str, text: str, draft: Sequence[str] = ()) -> str:
    """The one sentence of a multi-sentence text worth keeping: the one that shares most with the question,
    then says the most besides (ties: the earlier one); the text itself when nothing qualifies."""
    asked = terms(question)
    best, best_key = text, (-1.0, 0, 0)
    for position, part in enumerate(sentences(text)):
        if degeneracy(question, part, draft) is not None:
            continue
        said = terms(part)
        key = (share(asked, said), len(said - asked), -position)
        if key > best_key:
            best, best_key = part, key
    return best
