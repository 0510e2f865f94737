"""⑥ A value asked for, read off the clauses of the documents that state it, with no model call: "How often is
each bike serviced?" -> "Every six weeks", "Minimum age to ride alone?" -> "At least 16 years old".

    asked_value   what sort of value a factoid question asks ("money", "duration", "age", "time", "date", "year",
                  "distance", "speed", "weight", "percent", "frequency", or "count:<things>"), or None
    decide_value  the value every clause holding the question's words states, as the document writes it, and the
                  texts it was read from; None when no clause holds them all, when such clauses state different
                  values, when one states two the question cannot tell apart, and for a question that asks a
                  name or a place, no sort of value read here, or fewer than `ASKED_WORDS` words

A clause holds the question's words when each content word the question asks (not the value's own name,
"price" or "fee", nor the asking, "how much", nor "now") is in the clause or in its document's heading: a
document headed "# Cargo bikes" says "The price is $4 per hour", not "the cargo bike price". A value the question
itself gives ("Student membership was $8 a month in 2025; what does it cost now?") is not its answer, and a
superseded document is not read (`lead.current_texts`). The rule would rather decide nothing than pick between
clauses: "The price is $4 per hour" and "A cargo bike not returned ... is charged $10 per extra hour" both hold
what "How much per hour is a cargo bike?" asks, so where both are read it is left to the model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .decide import Proposal, clauses
from .evidence import NUMBER_WORDS, denies, terms, words
from .lexicon import MONTH, YEAR
from .questions import VALUE_NAMES
from .scope import DENIAL_REACH, reading

_QUALIFIER = (
    r"(?:at least|at most|up to|about|around|roughly|approximately|over|under|within|more than|less than"
    r"|no more than|no later than|a maximum of|a minimum of|only|every)\s+"
)
_NUMBER = rf"(?:\d[\d,]*(?:\.\d+)?|(?:{'|'.join(NUMBER_WORDS[1:])})\b)"
# so many, qualified or not, or "a" / "an" / "half an" after a qualifier: "within an hour", not the "a day" of
# "a day pass"
_SO_MANY = rf"(?:{_QUALIFIER}(?:half\s+)?an?\b|(?:{_QUALIFIER})?{_NUMBER})"
_UNIT_OF_TIME = r"(?:second|minute|hour|day|week|fortnight|month|year)s?"
_PER = rf"(?:\s+(?:per|a|an|each|every)\s+(?:extra\s+|additional\s+)?(?:{_UNIT_OF_TIME}|[a-z]+))"
_MONEY = (
    rf"(?:[$€£]\s?\d[\d,]*(?:\.\d+)?(?:\s+(?:million|billion|thousand))?|\d[\d,]*(?:\.\d+)?\s+(?:cents|dollars|euros))"
    rf"{_PER}?"
)
_DURATION = rf"{_SO_MANY}\s+(?:extra\s+|more\s+|working\s+|business\s+)?{_UNIT_OF_TIME}\b"
_PATTERNS = {
    "money": _MONEY,
    "duration": _DURATION,
    "age": rf"{_SO_MANY}\s+(?:years?\s+(?:old|of\s+age)|{_UNIT_OF_TIME}\b)|\baged?\s+\d+",
    "time": r"\b\d{1,2}[:.]\d{2}(?:\s*[ap]\.?m\.?)?|\b\d{1,2}\s*[ap]\.?m\.?|\bnoon\b|\bmidnight\b",
    "date": rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+{MONTH}\b(?:\s+\d{{3,4}})?"
    rf"|\b{MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+\d{{3,4}})?",
    "year": rf"\b{YEAR}\b",
    "distance": rf"{_SO_MANY}\s*(?:km|kilomet(?:re|er)s?|miles?|metres?|meters?)\b(?!/)",
    "speed": rf"{_SO_MANY}\s*(?:km/h|kph|mph|(?:kilomet(?:re|er)s|miles)\s+(?:per|an)\s+hour)",
    "weight": rf"{_SO_MANY}\s*(?:kg|kilograms?|kilos?|lbs?)\b",
    "percent": rf"(?:{_QUALIFIER})?\d[\d.]*\s*(?:%|percent\b|per\s+cent\b)",
    "frequency": rf"\bevery\s+(?:{_NUMBER}\s+|other\s+)?{_UNIT_OF_TIME}\b"
    rf"|\b(?:once|twice|{_NUMBER}\s+times)\s+(?:a|an|per)\s+\w+|\b(?:daily|weekly|monthly|yearly|annually)\b",
}
# what sort of value a question asks, tried in this order: "how much time" asks a duration, "how much" money
_ASKS = (
    ("speed", r"\bspeed\b|\bhow fast\b"),
    ("weight", r"\bweigh(?:t|s)?\b|\bhow heavy\b"),
    ("percent", r"\bper\s*cent(?:age)?\b|\bwhat share\b"),
    ("frequency", r"\bhow often\b|\bhow frequently\b"),
    ("time", r"\bwhat time\b|\bat what hour\b|\bopening (?:time|hours?)\b|\bclosing time\b"),
    ("date", r"\b(?:what|which) date\b|\bby when\b"),
    ("year", r"\b(?:what|which) year\b"),
    ("age", r"\bhow old\b|\bage\b"),
    (
        "duration",
        rf"\bhow long\b|\bhow (?:far|much time) (?:ahead|in advance|before)\b|\bhow soon\b|\bhow much time\b"
        rf"|\bhow many {_UNIT_OF_TIME}\b|\bdeadline\b",
    ),
    ("distance", r"\bhow far\b|\bdistance\b|\brange\b"),
    ("money", r"\bhow much\b|\b(?:price|fee|cost|charge|surcharge|deposit|fine|credit|refund|cap|pay|paid)s?\b"),
)
_ASKED = tuple((sort, re.compile(rule, re.I)) for sort, rule in _ASKS)
_COUNTED = re.compile(r"\bhow many\s+([a-z][\w-]*)", re.I)
_VALUES = {sort: re.compile(rule, re.I) for sort, rule in _PATTERNS.items()}
# the question's words that are not what it asks about: the value's name (`questions.VALUE_NAMES`), the asking,
# "now" and "exactly"
_NOT_ASKED = terms(" ".join(VALUE_NAMES)) | terms(
    "how much many long often old far fast soon heavy what which when where who whose is are was were do does did "
    "can could will would should charged refund pay paid percentage percent value get now currently today still "
    "exactly please tell know need needs ahead advance before take takes used use one another per"
)
_HEADING = re.compile(r"^\s*#+\s*(.+)$", re.M)
_CONTRACTED = re.compile(r"['’]s\b")  # "What's", "the co-op's"
# a thing named, not a value: "Who answers a charge dispute?", "Which stations can charge e-bikes?"
_NAMED = re.compile(r"^\W*(?:who|whom|whose|where|which(?!\s+(?:date|day|time|year|month)\b))\b", re.I)
_ENDS = re.compile(r"\b(?:open|start|begin|leave)s?\b|\b(close|end|finish)(?:s|es)?\b", re.I)  # which of two times
# a second main clause, with its own subject: "The price is $4 per hour ..., and the first trip requires a 20-minute
# introduction session": the session's price is not stated
_COORDINATED = re.compile(r",\s+(?:and|but|so)\s+(?=(?:the|a|an|every|each|all|its|their|this|these|you|it)\b)", re.I)
ASKED_WORDS = 2  # "Damage charge cap?" asks only "damage": too little to pick the clause that states it


def asked_value(question: str) -> str | None:
    """The sort of value a factoid question asks ("money", "duration", ...; `_PATTERNS`), "count:<thing>" for
    "how many <things>" ("count:docks"), or None."""
    for sort, rule in _ASKED:
        if rule.search(question):
            return sort
    counted = _COUNTED.search(question)
    return f"count:{counted.group(1).lower()}" if counted else None


def _pattern(sort: str) -> re.Pattern[str]:
    if not sort.startswith("count:"):
        return _VALUES[sort]
    thing = sort.removeprefix("count:").rstrip("s")  # "docks" is counted as "28 docks" and "one dock"
    return re.compile(rf"{_SO_MANY}\s+(?:[\w-]+\s+)?{re.escape(thing)}(?:s|es)?\b", re.I)


def decide_value(question: str, texts: Sequence[str]) -> Proposal | None:
    """The value the clauses of `texts` holding the question's words all state, by "value", citing the texts
    they are in; None where they cannot (module docstring)."""
    sort = asked_value(question)
    if sort is None or _NAMED.match(question):
        return None
    given = _numbers(question)
    asked = frozenset(w for w in terms(_CONTRACTED.sub("", question)) - _NOT_ASKED - given if w.isalnum())
    if len(asked) < ASKED_WORDS:
        return None
    rule = _pattern(sort)
    said: dict[str, tuple[str, set[int]]] = {}  # the value, lower-cased -> as first written, the texts stating it
    for n, (text, parts) in enumerate(zip(texts, clauses(texts), strict=True)):
        heading = terms(" ".join(_HEADING.findall(text)))
        for clause in (own for part in parts for own in _COORDINATED.split(part)):
            if not asked <= terms(clause) | heading:
                continue
            if reading(asked, clause, question) != "said":
                return None  # "is no longer $5", "only if ...": a value the clause states is not plainly the answer
            found = {_said(m.group(0)) for m in rule.finditer(clause) if not _denied(clause, m.start())} - {""}
            found = {value for value in found if not _given(value, given)}
            found = _the_one_asked(found, asked, question, sort, clause)
            if found is None:
                return None  # "$250 with a police report, $900 without": the clause itself does not say which
            for value in found:
                said.setdefault(value.lower(), (value, set()))[1].add(n)
    if len(said) != 1:
        return None
    value, read = next(iter(said.values()))
    return Proposal(value[0].upper() + value[1:], "value", tuple(sorted(read)))  # "Every six weeks"


def _the_one_asked(found: set[str], asked: frozenset[str], question: str, sort: str, clause: str) -> set[str] | None:
    """The values a clause states for the question: all of them when one or none, else the one whose own words
    the question asks ("$3 per month" of "$3 per month, with the $25 share"), or for an opening or a closing time
    the first or the last of two ("open from 18:00 to 21:00"); None when the clause states several and none of these
    picks one."""
    if len(found) <= 1:
        return found
    named = {value for value in found if terms(value) & asked}
    if len(named) == 1:
        return named
    if sort == "time" and len(found) == 2 and (end := _ENDS.search(question)) is not None:
        ordered = sorted(found, key=clause.find)
        return {ordered[-1] if end.group(1) else ordered[0]}
    return None


def _denied(clause: str, at: int) -> bool:
    """A denial stands within `DENIAL_REACH` words before the value at `at` ("no longer $5", "not 30 days")."""
    return any(denies(word) for word in words(clause[:at])[-DENIAL_REACH:])


def _given(value: str, given: frozenset[str]) -> bool:
    """The question itself gives this value: every number in it is one of the question's ("$8" in "was $8")."""
    numbers = _numbers(value)
    return bool(numbers) and numbers <= given


def _numbers(text: str) -> frozenset[str]:
    return frozenset(word for word in terms(text) if any(ch.isdigit() for ch in word))


def _said(value: str) -> str:
    """A value as the document writes it, one space between words, no trailing comma or full stop."""
    return " ".join(value.split()).rstrip(".,;:")
