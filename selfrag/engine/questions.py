"""What a question asks, read off its words with no model: its kind, and the two names it weighs.

    question_kind   yes_no ("Is ...?", "Does ...?", "If ..., can I ...?") | choice ("Which is older, A or B?",
                    "before or after meals?") |
                    factoid ("Who ...?", "How many ...?", "What label ...?", "What was the population of X?", a
                    value asked by its name: "What's the phone number?", "Day pass price?", "day pass price") |
                    None (an explanation or a list: why, how, explain, "What is the refund policy?", "What are
                    the side effects of X?", "What changed in ...?", "Under what circumstances ...?")
    options         the two names a choice question offers
    choice_options  the two options, names or two words in lower case ("before or after meals?")
    pair            the two names a yes/no question joins with "and" ("Are Ann Lee and Bob Day both directors?")
    read_here       the regexes can read the question: it holds an English question word, auxiliary or article
                    (else only a model that reads may say its kind: "Ist das Fahrrad wasserdicht?")
    follows_on      the user's earlier question that a follow-up goes on from ("Where can I borrow one?" after "Is a
                    helmet required?"), which the search adds to its query

The critic reads the kind (a question that asks for a fact is answered from the documents), the lead writes a
short answer by it, and the documents decide a choice or a yes/no question between the names found here
(`engine.decide`).
"""

from __future__ import annotations

import re

from ..conversation import questions_asked
from ..labels import QuestionKind
from .evidence import AUXILIARY, QUESTION_WORDS, asks_yes_no, terms, unwrapped
from .lexicon import PEOPLE

_AMOUNT = r"how (?:many|much|long|old|far|often|big|tall|large|soon)"  # "how many ...?" asks for a number, not a way
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
# what a value is called ("the day pass price", "the minimum age"): "What's the co-op's phone number?", "What does
# the Fair Ride plan cost?", and asked with no verb at all, "Day pass price?"
VALUE_NAMES = (
    "price fee cost charge surcharge deposit fine credit rate number age speed limit cap maximum minimum deadline time "
    "date address amount total distance weight capacity name"
).split()  # also words a value question does not ask the documents to hold (`engine.values`)
_WORTH = rf"(?:{'|'.join(VALUE_NAMES)})s?"
_LINKS = r"(?:of|in|for|on|at|from|to|by|about|with|behind)"  # "the purpose of the deposit" is no deposit
_WORTH_ASKED = re.compile(
    rf"^\s*what(?:'s|’s|\s+(?:is|are|was|were|will\s+be))\s+(?:(?!{_LINKS}\b)[\w'’-]+\s+){{0,5}}?{_WORTH}\b"
    r"|^\s*what\s+(?:does|do|did|will|would)\b[^?]*\b(?:cost|weigh)s?\b(?:\s+[\w'’-]+){0,3}\s*\?\s*$",
    re.I,
)
# a value named with no verb, with or without a question mark: "Day pass price?", and "day pass price" as typed
# into a search box
_TERSE = re.compile(rf"^\s*(?:[\w'’$-]+\s+){{0,4}}{_WORTH}\b(?:\s+[\w'’$-]+){{0,5}}\s*\??\s*$", re.I)
_SPOKEN_VERB = re.compile(rf"\b{AUXILIARY}|\b{QUESTION_WORDS}", re.I)
# a situation told before the question: "Student membership was $8 in 2025; what does it cost now?", "If I bring
# it back late, what's the charge?"
_TOLD = re.compile(rf"(?<=[.!;])\s+(?=\w)|,\s+(?={QUESTION_WORDS})", re.I)
_EXPLAIN = re.compile(rf"^\s*(?:why|(?!{_AMOUNT}\b)how|explain|describe)\b", re.I)
# "..., The Exies or Circus Diablo?", "Was Summit or Crosstrack created ...?", "Between A and B, which ...?"
_CHOICE = re.compile(
    r"(?:^|,)\s*([^,?]+?)\s+or\s+([^,?]+?)\s*(?:\?|,|$)|^\s*between\s+([^,?]+?)\s+and\s+([^,?]+?),", re.I
)
# a list or an explanation asked with a factoid's words: "What are the side effects of X?", "What changed in the
# fees?", "Under what circumstances can I ...?"
_NOT_FACTOID = re.compile(
    r"^\s*(?:under|in|on)\s+what\s+(?:circumstances|conditions|cases|situations|grounds|terms)\b"
    r"|^\s*what\s+(?:has\s+|have\s+)?(?:changed|changes|happened|happens|went\s+wrong|goes\s+wrong)\b"
    r"|^\s*what\s+(?:are|were)\s+(?:the\s+|some\s+|all\s+)?(?:main\s+|possible\s+|common\s+|known\s+|key\s+)?"
    r"(?:side\s+effects|effects|symptoms|steps|rules|requirements|benefits|risks|advantages|disadvantages|differences"
    r"|changes|conditions|reasons|ways|options|types|kinds|features|duties|responsibilities|causes|consequences"
    r"|exceptions)\b"
    r"|^\s*(?:list|enumerate)\b",
    re.I,
)
# two options in lower case that close the question: "before or after meals?", "refunded or kept?" (not "whether
# or not", "more or less", nor words joined inside what a list question asks: "Which flags or settings were removed
# in 2.0?")
_PLAIN_OPTIONS = re.compile(
    r"\b(?!(?:whether|either|more|sooner|and)\b)([a-z][\w'’-]*)\s+or\s+(?!(?:not|so|else|other|less|later|more)\b)"
    r"([a-z][\w'’-]*)(?:\s+[\w'’-]+){0,2}\s*[?.!]?\s*$"
)
_SMALL = r"of|the|and|de|la|le|von|van|den|der|du|del|da|di|dos|das|v\.|vs\.|for|to"  # inside names


def _names(small: str) -> re.Pattern[str]:
    """Capitalised words (or numbers), and the small words inside a name: "Sharon den Adel", "Marsh v. Chambers",
    "System of a Down"."""
    return re.compile(rf"[A-Z0-9][\w'’.&-]*(?:\s+(?:(?:{small})\s+(?:an?\s+)?)*[A-Z0-9][\w'’.&-]*)*")


_NAMES = _names(_SMALL)
# an option of a choice may hold a place's small words too ("Babes in Toyland", "Home on the Range"): it ends at
# its "or" or the question's end; in a yes/no question "... Airport in California?" asks where, names nothing
_TITLES = _names(_SMALL + "|in|on|at")
_TAIL = re.compile(r",((?:\s*[A-Z0-9][^,?]*,?)+?)\s*\?\s*")  # what follows the last option: ", I Shrunk the Kids?"
_OPENER = re.compile(
    r"^(?:(?:is|are|was|were|do|does|did|has|have|had|can|could|will|would|who|which|what|whose)\b\s*)+", re.I
)


def question_kind(question: str) -> QuestionKind | None:
    """yes_no, choice, factoid, or None for a question whose answer is an explanation; a polite request by what
    it asks ("Could you please give me the phone number?" asks a value)."""
    if asks_yes_no(question):
        return QuestionKind.YES_NO
    if (asked := unwrapped(question)) != question:
        return question_kind(asked)
    if choice_options(question) is not None:
        return QuestionKind.CHOICE
    if _NOT_FACTOID.match(question) or _NOT_FACTOID.match(_TOLD.split(question.strip())[-1]):
        return None  # a list or an explanation: no short answer
    if _FACTOID.search(question) and not _EXPLAIN.match(question):
        return QuestionKind.FACTOID
    if _VALUE.search(question) and not _TWO_QUESTIONS.search(question) and not _EXPLAIN.match(question):
        return QuestionKind.FACTOID
    asked = _TOLD.split(question.strip())[-1]
    if _TWO_QUESTIONS.search(question) or _EXPLAIN.match(asked):
        return None
    if _WORTH_ASKED.match(asked) or (_TERSE.match(asked) and not _SPOKEN_VERB.search(asked)):
        return QuestionKind.FACTOID  # a value named, asked with "what is" or with no verb at all ("Day pass price?")
    return None


_ENGLISH = re.compile(
    rf"\b(?:{AUXILIARY}|{QUESTION_WORDS}|(?:the|an|of|or|and|it|to|in|on|for|with|i|you|my|your|we|this|that|there)\b)",
    re.I,
)
_WORDS_TO_TELL = 3  # a shorter question ("Hi!", "Day pass price?") is left to the regexes


def read_here(question: str) -> bool:
    """The question is one the regexes can read: it holds an English question word, auxiliary, article or
    pronoun, or is too short to tell. One of three words or more that holds none ("Ist das Fahrrad
    wasserdicht?") has its kind read by the model, where it can."""
    return len(question.split()) < _WORDS_TO_TELL or bool(_ENGLISH.search(question))


def options(question: str) -> tuple[str, str] | None:
    """The two names a choice question offers ("Who is older, Sid Haig or Vic Darchinyan?"), or None: the run of
    capitalised words (or numbers) that ends right before the "or", and the first one after it (a few words
    such as "the birth of" may come first). A question whose "or" joins common words ("red or blue wine?")
    offers no names and is not a choice here."""
    for match in _CHOICE.finditer(question.strip()):
        left, right = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        before = _OPENER.sub("", next((m.group(0) for m in _TITLES.finditer(left) if m.end() == len(left)), ""))
        after = _TITLES.search(right)
        if before and after and len(right[: after.start()].split()) <= 3:  # "the Cotula", "the birth of Robert Young"
            return before, _title_goes_on(after.group(0), question[match.end(2) :])
    return None


def choice_options(question: str) -> tuple[str, str] | None:
    """The two options a choice question offers: two names (`options`), else two words in lower case joined by
    "or" ("Should I take it before or after meals?" -> ("before", "after")); None when it offers none."""
    named = options(question)
    if named is not None:
        return named
    plain = _PLAIN_OPTIONS.search(question)
    return (_phrases(question) or (plain.group(1), plain.group(2))) if plain else None


_LEADS_IN = frozenset("in on at by for with during the a an".split())  # "in quiet mode or in standard mode"


def _phrases(question: str) -> tuple[str, str] | None:
    """Two options of several words each: after a colon ("...: laptops or managed servers?"), or opened by the
    same small word ("in quiet mode or in standard mode", "the enhanced rate or the statutory rate"); None where
    the question shows neither (the words then share their tail: "before or after meals")."""
    head, joined, tail = question.rstrip(" ?.!").rpartition(" or ")
    second = tail.split()
    if not joined or not 1 <= len(second) <= 4:
        return None
    before, colon, after = head.rpartition(":")
    if colon and 1 <= len(after.split()) <= 4:
        return after.strip(), tail.strip()
    said = head.split()
    small = second[0].lower()
    if small in _LEADS_IN and len(second) > 1:
        at = max((n for n, word in enumerate(said) if word.lower() == small), default=-1)
        if at >= 0 and 1 <= len(said) - at - 1 <= 4:
            return " ".join(said[at + 1 :]), " ".join(second[1:])
    return None


def _title_goes_on(option: str, rest: str) -> str:
    """The last option with the rest of a title a comma cut off: "... or Honey, I Shrunk the Kids?" offers
    "Honey, I Shrunk the Kids" where all that follows up to the question mark is capitalised words."""
    tail = _TAIL.fullmatch(rest)
    if tail is None or not all(_TITLES.fullmatch(part.strip()) for part in tail.group(1).split(",")):
        return option
    return f"{option},{tail.group(1).rstrip()}"


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


# a follow-up that goes on from the question before it: it opens as a continuation ("And for students?", "What
# about e-bikes?"); or points back ("Where can I borrow one?", "How much does it cost?") and names little of its own;
# or is a phrase that leaves its subject out ("For how long?", "On weekends?")
_GOES_ON = re.compile(r"^\W*(?:and|but|so|also|then|what about|how about|what if)\b", re.I)
_POINTS_BACK = re.compile(r"\b(?:it|its|one|ones|they|them|their|that|this|those|these|he|him|his|she|her)\b", re.I)
_PHRASE = re.compile(r"^\W*(?:for|in|on|at|with|without|during|after|before|from|by|since|until)\b", re.I)
FOLLOW_UP_TERMS = 3  # a question pointing back that names more content words than this stands on its own


def follows_on(question: str, history: str) -> str:
    """The user's last question in `history` ("User: ..." / "Assistant: ..." turns) when `question` goes on from
    it, else "": a question that opens as a continuation, names no content word ("Why?"), points back with a
    pronoun and names at most `FOLLOW_UP_TERMS` content words, or opens with a preposition and names one. A
    follow-up of a follow-up goes back to the question they both go on from ("Is a helmet required?", "Where can I
    borrow one?", "For how long?")."""
    asked = questions_asked(history)
    earlier: list[str] = []
    current = question
    while asked and _goes_on(current):
        current = asked.pop()
        earlier.insert(0, current)
    return " ".join(earlier)


def _goes_on(question: str) -> bool:
    named = len(terms(question))
    if _GOES_ON.match(question) or named == 0:
        return True
    return (bool(_POINTS_BACK.search(question)) and named <= FOLLOW_UP_TERMS) or (
        bool(_PHRASE.match(question)) and named <= 1
    )
