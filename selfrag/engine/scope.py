"""What a sentence says of the words a rule matched in it: said, denied, or unclear, read off the negation,
exception and condition around them (no model). The rules that decide a short answer (`engine.decide`,
`engine.values`) read this before they propose one, and propose nothing where it is unclear.

    reading     "said", "denied" or "unclear" for the asked words a sentence holds: denied by a negation within
                `DENIAL_REACH` words before one of them ("is not waterproof", "is no longer paid") or by an
                exception that names one ("all staff apart from managers"); unclear where a negation stands
                further before them in their clause, or an exception or a condition ("unless", "only if", "only
                after", "does not apply") limits the sentence to something the question does not ask
    negated     the text holds a negation word at all (a value stated in such a clause is not read as stated)
    limited     the text holds an exception or a condition at all

A condition or an exception the question itself states ("If I report a fault, am I charged?" over "If you report
a fault, you are not charged") limits nothing: the sentence speaks of the case asked.
"""

from __future__ import annotations

import re
from collections.abc import Set
from typing import Literal

from .evidence import denies, terms, words

Reading = Literal["said", "denied", "unclear"]

DENIAL_REACH = 3  # a denial this many words or fewer before an asked word denies it ("is not required")
SCOPE_WORDS = 6  # an exception or a condition reaches this many words, up to its clause's end
MARKER_REACH = 8  # an exception or a condition this many words or fewer from an asked word limits it
# "e-bikes": "e", "bikes"; not "no-calorie" (no denial) or "English-language" (no people)
_COMPOUND = re.compile(r"(?<=\w)(?<!\bno)(?<!\bnon)[-/](?!(?:language|speaking)\b)(?=\w)", re.I)
_NUMBERED = re.compile(r"\bno\.\s*(?=\d)", re.I)  # "FCI No. 100" denies nothing
EXCEPTION = re.compile(
    r"\b(?:except(?:ing)?(?:\s+for)?|apart\s+from|aside\s+from|other\s+than|excluding|save\s+for|but\s+not"
    r"|with\s+the\s+exception\s+of|not\s+including)\b",
    re.I,
)
_CONDITION = re.compile(
    r"\b(?:unless|only\s+(?:after|if|when|with|once|before|until|during|on|for|in|by)|provid(?:ed|ing)\s+that"
    r"|as\s+long\s+as|on\s+condition|subject\s+to|if|(?:does|do|did)\s+not\s+apply|(?:doesn|don|didn)['’]t\s+apply)\b",
    re.I,
)
_SCOPE_END = re.compile(r"[,;:.!?()\n]|\s[-–—]\s")


def reading(asked: Set[str], clause: str, question: str = "", sentence: str = "") -> Reading:
    """What the clause says of the asked words (stemmed, as `evidence.terms` reads them) it holds: "denied",
    "unclear" or "said" (module docstring). Exceptions and conditions within `MARKER_REACH` words of an asked word
    are read in its whole `sentence` (default: the clause), negations in the clause; the `question`'s own
    conditions limit nothing."""
    whole = _plain(sentence or clause)
    near = _hits(words(whole), asked)
    limits = [(m, rule is EXCEPTION) for rule in (EXCEPTION, _CONDITION) for m in rule.finditer(whole)]
    limits = [(m, excepting) for m, excepting in limits if _within(len(words(whole[: m.start()])), near)]
    own = terms(_plain(question)) | _FILLER
    for found, excepting in sorted(limits, key=lambda limit: limit[0].start()):
        scoped = _scope(whole, found.end())
        if excepting:
            return "denied" if scoped & asked else "unclear"  # "all staff apart from managers"
        if not scoped <= own:
            return "unclear"  # "only if you hold a receipt": a case the question does not ask of
    said = words(_plain(clause))
    hits = _hits(said, asked)
    if not hits:
        return "said"
    denied = _denied(said, hits) - _denied(words(_plain(question)), None)  # "not returned" asked
    if denied:
        return "denied"
    if any(_denial(said, at) for at in range(hits[-1])) and not _denied(said, hits):
        return "unclear"  # "Neither the Pro nor the Lite is waterproof": a denial too far before to read
    return "said"


def _plain(text: str) -> str:
    """The text as `reading` reads it: a compound's words apart, "No. 100" as a number."""
    return _COMPOUND.sub(" ", _NUMBERED.sub("number ", text))


def _hits(said: list[str], asked: Set[str]) -> list[int]:
    return [at for at, word in enumerate(said) if terms(word) & asked]


def _within(at: int, hits: list[int]) -> bool:
    return any(abs(at - hit) <= MARKER_REACH for hit in hits)


def _denial(said: list[str], at: int) -> bool:
    """The word at `at` denies: a denial word, not an amount's qualifier ("no more than") nor a compound's part
    ("no-calorie")."""
    word = said[at]
    return denies(word) and not _qualifier(said, at) and not word.startswith(("no-", "non-"))


def _denied(said: list[str], hits: list[int] | None) -> frozenset[str]:
    """The words at `hits` (None: every word) that a denial within `DENIAL_REACH` words before denies, stemmed."""
    at_words = range(len(said)) if hits is None else hits
    return frozenset(
        stem
        for at in at_words
        if any(_denial(said, b) for b in range(max(at - DENIAL_REACH, 0), at))
        for stem in terms(said[at])
    )


def limited(text: str) -> bool:
    """The text holds an exception or a condition ("except", "apart from", "unless", "if", "only after", ...)."""
    return EXCEPTION.search(text) is not None or _CONDITION.search(text) is not None


def negated(text: str) -> bool:
    """The text holds a negation word ("not", "no longer", "never", "-n't", ...)."""
    return any(denies(word) for word in words(text))


_FILLER = terms("you your yours i me my we our they their it its a an the")


def _qualifier(said: list[str], at: int) -> bool:
    """The "no" at `at` is part of an amount's qualifier ("no more than", "no later than"): it denies nothing."""
    return said[at] == "no" and said[at + 1 : at + 2] in (["more"], ["later"], ["less"], ["fewer"], ["earlier"])


def _scope(sentence: str, start: int) -> frozenset[str]:
    """The content words an exception or a condition opening at `start` reaches: up to `SCOPE_WORDS` words, ending
    at its clause's end."""
    rest = sentence[start:]
    end = _SCOPE_END.search(rest)
    return terms(" ".join(words(_COMPOUND.sub(" ", rest[: end.start()] if end else rest))[:SCOPE_WORDS]))
