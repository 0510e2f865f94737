"""⑥ The `decide` policy: the short answer the documents decide, with no model call (a value asked for:
`engine.values`). A choice question is decided by the two options' dates for a choice about time ("Who was born
first, A or B?", "Which film was released earlier, A or B?", "Who is younger, A or B?"), by the counts each
option's own sentences state for a choice about how many ("Which genus has more species, A or B?"), by what each
option's own sentences say for a choice about a trait ("Which composer was Hungarian, A or B?", "Who was also an
airline pilot, A or B?"). A yes/no question about two names likewise: "Are A and B from the same country?" by
the peoples each one's own sentences name, "... released in the same year?" by their dates, "Are A and B both
film directors?" by whether each one's own sentences say so. A yes/no question about one thing ("Is a helmet
required?") by a clause holding every word it asks, denied or not.

    asked_order   "earlier" or "later": which end of time the question asks for, or None (no time word, or both)
    asked_count   "more" or "fewer", and the thing counted, for a choice about how many ("more species"), or None
    asked_trait   the words a choice about a trait asks for, or None (a comparison such as "more species", a
                  choice about time, or nothing left once the options and the question's own words are out)
    date_after    the first date the documents give after naming an option, within its sentence and the next
    decide        the option the documents pick, as the question writes it, and by what ("dates", "counts" or
                  "traits"); None when they cannot: a date or a count missing or tied, a trait found as often for
                  both options
    decide_yes_no "Yes" or "No" for a yes/no question about two names, and by what ("same": a people, a year, a
                  family of living things or a US state compared; "both": the words asked of both found for
                  both; "one": found for one and for the other not at all); None when they cannot (a negation, a
                  comparison, "the same band", a name with no sentence of its own, a people, a date, a family or
                  a state missing, the words found in part)
    decide_stated "Yes" or "No" for a yes/no question about one thing, by "stated": every clause of the texts
                  that holds all the words the question asks says it ("Free loan helmets are kept ...": yes), or
                  every one denies one of them ("... is not required by law": no; "paid to all staff apart from
                  managers" of managers: no); None when none holds them all, when clauses disagree, where a
                  clause's negation, exception or condition is unclear (`scope.reading`: "only if ...",
                  "unless ..."), or for a question that denies, excepts, compares or asks for a date
    clauses       each text's clauses: sentences cut at "but", "except", "unless", "whereas", "while", a
                  semicolon and a list item's end (what `decide_stated` and `values.decide_value` read)
    read_from     which texts a decision about two names read: where each name opens a sentence, else where a
                  sentence names it before its verb, else where it is named (what `decide` and `decide_yes_no`
                  look at first), to cite them

An option's own sentences are the first it opens ("Pablo Trapero (born 1971) is ..."), else the first naming it
before its verb, as a stage name is ("James Dixon Swan (born 1956), better known as Jimmy Barnes, is ...").

Every rule reads what a sentence says of the words it matched (`engine.scope`): a trait denied ("The Vela Lite
is not waterproof") is not said, and a negation, exception or condition whose reach is unclear decides nothing.
A choice by dates reads the date of the event asked ("opened in 1932", not "designed in 1890": `asked_event`).
What a rule decides is a proposal: `denials.refuted` checks it against the kept sentences before it is printed.

Comparing two dates, or finding "Hungarian" in one composer's sentences and not the other's, needs no model.
Where this cannot decide, the model's short answer stands. What each rule decides on training data, and why it
exists: docs/decisions.md (`decide`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..result import LeadSource
from .evidence import NUMBER_WORDS, sentences, spaced, terms
from .lexicon import COUNTRY, MONTH, PEOPLE, YEAR
from .scope import EXCEPTION, reading

Order = Literal["earlier", "later"]
Date = tuple[int, int, int]  # year, month (0: not given), day (0: not given)

# "first" as in "born first" or "which came first", not "the first to command" or "who first acted"
_EARLIER = re.compile(
    r"\b(?:earlier|earliest|older|oldest|sooner|(?<!the )first(?!\s+(?!(?:or|the|a|an)\b)[a-z]))\b", re.I
)
_LATER = re.compile(r"\b(?:later|latest|younger|youngest|newer|newest|more recent(?:ly)?|most recent(?:ly)?)\b", re.I)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH = rf"({MONTH})\.?"
_YEAR = f"({YEAR})"
_DATE = re.compile(
    rf"\b(?:(\d{{1,2}})\s+{_MONTH}\s*,?\s+{_YEAR}"  # 4 October 1971
    rf"|{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\s*,?\s+{_YEAR}"  # October 4, 1971
    rf"|{_MONTH}\s+{_YEAR}"  # October 1971
    rf"|(?<![$£€\d.,]){_YEAR}(?!\s*(?:%|percent|km|miles|metres|meters|feet|people|students|members|copies)\b))"
)
_DEATH = re.compile(r"\b(?:died|die|death|passed away)\b", re.I)
# the kinds of event a question about time asks the date of ("Which opened first?"), and the words naming them
_EVENTS = {
    family: re.compile(rf"\b(?:{words})\b", re.I)
    for family, words in {
        "birth": r"born|birth",
        "founding": r"found(?:ed|ing)?|establish(?:ed|ment)?|form(?:ed|ation)|creat(?:ed|ion)|incorporated",
        "release": r"releas(?:ed|e)|publish(?:ed)?|publication|premier(?:ed|e)|debut(?:ed)?|aired|issued"
        r"|launch(?:ed)?|introduc(?:ed|tion)",
        "opening": r"open(?:ed|ing)|inaugurat(?:ed|ion)",
        "building": r"built|construct(?:ed|ion)|completed|erected",
        "design": r"design(?:ed)?|plann(?:ed)|propos(?:ed|al)",
        "closing": r"clos(?:ed|ure)|shut|demolish(?:ed)?|abolish(?:ed)?|dissolv(?:ed)",
        "election": r"elect(?:ed|ion)|appoint(?:ed|ment)|sworn",
    }.items()
}
EVENT_REACH = 40  # characters before a date within which an event names it ("opened to traffic in 1932")
_ASKS_DATE = re.compile(r"\b(?:what|which) (?:year|date|decade|century)\b|\bwhen\b|\bhow (?:old|long)\b", re.I)
_YEAR_GLUED = re.compile(r"(\d{4})(?=\d{1,2}\s*[A-Z][a-z]{2}|[A-Z][a-z]{2})")  # "26 September 188926 May 1976"
# "singer-songwriter", "writer/director": each word is said ("English-language novelists" names no people)
_COMPOUND = re.compile(r"(?<=\w)[-/](?!(?:language|speaking)\b)(?=\w)")
# a choice about how many: "more species", "fewer Grand Slam titles" (the options taken out of the question first)
_ASKS_COUNT = re.compile(r"\b(more|fewer)\s+([A-Za-z][\w'-]*(?:\s+[A-Za-z][\w'-]*)*?)\s*(?:[,?;:]|$)", re.I)
COUNTED_WORDS = 3  # "Grand Slam titles": a longer phrase after "more" asks something else
# a count, and a range's end left out: "about 100", "48–56", "two" (`_count_of` adds the thing counted)
_COUNT = rf"\b(\d[\d,]*|{'|'.join(NUMBER_WORDS)})(?:\s*(?:[-–]|to)\s*\d[\d,]*)?"
_VERB = re.compile(r"\b(?:is|was|are|were)\b")  # a sentence's verb: what comes before it is its subject
_RANGE = re.compile(r"\s*(?:[-–—]|to)?\s*")
_WORDS = re.compile(r"\w+")
_ARTICLES = ("the", "a", "an")
OPENING = 4  # words at a sentence's start within which a named option is the sentence's subject
OPENS, SUBJECT = 2, 1  # how plainly a sentence is about an option (`_about`): it opens with it, it names it first
FOLLOWING = 1  # sentences after the option's own that may still hold its date ("... The magazine was started in 1989.")
OWN_SENTENCES = 3  # an option's own sentences: the first it opens and the next ones of its text, up to the other's
TRAIT_MARGIN = 2  # a trait decides when its words are found for one option only, or this many more of them

# a comparison ("more species", "the highest") or an order ("formed before 1990"): words found do not decide it
_COMPARISON = re.compile(
    r"\b(?:more|most|less|least|fewer|fewest|better|best|worse|worst|before|after|since|until|second|third|last|"
    r"(?:larg|bigg|small|long|short|high|low|tall|wid|deep|heav|farth|furth|great|clos|fast|slow|rich|strong|hott"
    r"|cold|dens|light)(?:er|est))\b",
    re.I,
)
_ASKING = terms("which who whom whose what one both these two following also")
_PEOPLES = frozenset().union(*(terms(people.split()[-1]) for people in PEOPLE))  # "South African": "african"
# "from the same country", "of different nationalities", "released in the same year", "in the same family",
# "located in the same state"
_SAME = re.compile(
    r"\b(same|different)\s+(?:(countr(?:y|ies)|nations?|nationalit(?:y|ies))|(years?)|(famil(?:y|ies))|(states?))\b",
    re.I,
)
Alike = Literal["people", "year", "family", "state"]  # what two names are compared by ("the same country")
_FAMILY = re.compile(r"\b[A-Z][a-z]+(?:aceae|idae)\b")  # a family's Latin name: "Araceae", "Felidae" (not "-oideae")
US_STATES = (
    "Alabama", "Alaska", "Arizona", "Arkansas", "California", "Colorado", "Connecticut", "Delaware", "Florida",
    "Georgia", "Hawaii", "Idaho", "Illinois", "Indiana", "Iowa", "Kansas", "Kentucky", "Louisiana", "Maine",
    "Maryland", "Massachusetts", "Michigan", "Minnesota", "Mississippi", "Missouri", "Montana", "Nebraska",
    "Nevada", "New Hampshire", "New Jersey", "New Mexico", "New York", "North Carolina", "North Dakota", "Ohio",
    "Oklahoma", "Oregon", "Pennsylvania", "Rhode Island", "South Carolina", "South Dakota", "Tennessee", "Texas",
    "Utah", "Vermont", "Virginia", "Washington", "West Virginia", "Wisconsin", "Wyoming",
)  # fmt: skip
_STATE = re.compile(r"(?<![\w-])(?:" + "|".join(sorted(US_STATES, key=len, reverse=True)) + r")(?![\w-])")
_ALIKE = re.compile(r"\b(?:same|different|similar|alike|common)\b", re.I)
_NEGATED = re.compile(r"\b(?:not|never|neither|nor|either|only)\b|n't\b", re.I)
_YES_NO_WORDS = terms("are were is was do does did have has had both and each")
# a yes/no question about one thing (decide_stated)
_CLAUSE_END = re.compile(
    r"\s*(?:;|,?\s+\b(?:but|except|unless|whereas|while)\b|\n(?=\s*(?:[-*+•]\s|\d+[.)]\s|#|\n)))\s*", re.I
)  # also a list item's or a paragraph's end: "- No riding on ..." is not the item before it
ASKED_WORDS = 2  # "Is it open?" asks too little for a sentence holding "open" to decide it


def asked_order(question: str, offered: tuple[str, str]) -> Order | None:
    """The end of time a choice question asks for; the options' own words ("The Last Shadow Puppets", "First for
    Women") are not read as the question's. A question asking for a date or an age ("what year was the older one
    born?") wants no option and gets None."""
    rest = _without(question, offered)
    earlier, later = bool(_EARLIER.search(rest)), bool(_LATER.search(rest))
    if earlier == later or _ASKS_DATE.search(rest) or _DATE.search(rest):  # "... "Box" in 2011, ... earlier"
        return None
    return "earlier" if earlier else "later"


def date_after(option: str, texts: Sequence[str], other: str = "", *, death: bool = False) -> Date | None:
    """The option's date: the first date of the first sentence the option opens ("Anette Olsson (born 21 June
    1971), known as Anette Olzon, ..."), else the first date after the option in a sentence naming it (all of its
    words, as written) or in the next `FOLLOWING` sentences, stopping at one that names the other option. With
    `death`, the end of a range ("(2 August 1884 – 5 April 1969)") instead, and None without one."""
    return _date_of(option, _split(texts), other, death)


@dataclass(frozen=True, slots=True)
class Proposal:
    """The option the documents pick, as the question writes it, and what picked it; `read` the texts holding
    the sentences that decided it, where the rule knows them (`decide_stated`; else `read_from` finds them);
    `clause` the words it rests on, for the trace and the check before it is printed (`denials.refuted`)."""

    option: str
    by: LeadSource
    read: tuple[int, ...] = ()
    clause: str = field(default="", compare=False)  # not what was decided: equal decisions may rest elsewhere


def decide(question: str, offered: tuple[str, str], texts: Sequence[str]) -> Proposal | None:
    """The option the documents pick, by dates for a choice about time, by a trait otherwise; None when they
    cannot."""
    order = asked_order(question, offered)
    if order is not None:
        picked = _by_dates(question, offered, _split(texts), order)
        return Proposal(picked[0], "dates", clause=picked[1]) if picked else None
    counted = asked_count(question, offered)
    if counted is not None:
        picked = _by_counts(counted, offered, _split(texts))
        return Proposal(picked, "counts") if picked else None
    trait = asked_trait(question, offered)
    picked = _by_trait(trait, offered, _split(texts), question) if trait else None
    return Proposal(picked[0], "traits", clause=picked[1]) if picked else None


def decide_yes_no(question: str, named: tuple[str, str], texts: Sequence[str]) -> Proposal | None:
    """The documents' "Yes" or "No" to a yes/no question about two names (`engine.questions.pair`), or None. The
    same or different people ("from the same country?") or year ("in the same year?") is compared between the
    two names' own sentences; otherwise the words the question asks of both ("both film directors?") decide:
    yes when each one's own sentences hold them all, no when one's hold them all and the other's none."""
    rest = _without(question, named)
    if _NEGATED.search(rest) or _COMPARISON.search(rest):
        return None
    split = _split(texts)
    own = [_own_sentences(name, other, split) for name, other in (named, named[::-1])]
    if own[0] is None or own[1] is None:
        return None
    same = _SAME.search(rest)
    if same is not None:
        by: Alike = "people" if same.group(2) else "year" if same.group(3) else "family" if same.group(4) else "state"
        alike = _alike(named, own, split, by=by)
        if alike is None:
            return None
        return Proposal("Yes" if alike == (same.group(1).lower() == "same") else "No", "same")
    if _ALIKE.search(rest):  # "in the same band": both having one does not make it the same
        return None
    asked = _traits(rest) - _ASKING - _YES_NO_WORDS - _traits(" ".join(named))
    if not asked or _DATE.search(rest) or _ASKS_DATE.search(rest):
        return None
    said = [_said_of(asked, sentences, question) for sentences in own]
    if said[0] is None or said[1] is None:
        return None  # a negation, an exception or a condition whose reach is unclear
    held = sorted(len(words_said) for words_said, _ in said)
    clause = " / ".join(part for _, part in said if part)
    if held == [len(asked), len(asked)]:
        return Proposal("Yes", "both", clause=clause)
    return Proposal("No", "one", clause=clause) if held == [0, len(asked)] else None


def _said_of(asked: frozenset[str], own: Sequence[str], question: str) -> tuple[frozenset[str], str] | None:
    """The asked words a name's own sentences say of it (not those they deny: "The Vela Lite is not waterproof"),
    and the sentences that hold any; None where a sentence holding one limits it in a way not read here
    (`scope.reading`: "unclear")."""
    said: set[str] = set()
    holding = []
    for sentence in own:
        held = asked & _traits(sentence)
        if not held:
            continue
        holding.append(sentence)
        found = reading(held, sentence, question)
        if found == "unclear":
            return None
        if found == "said":
            said |= held
    return frozenset(said), " ".join(holding)


def decide_stated(question: str, texts: Sequence[str]) -> Proposal | None:
    """The documents' "Yes" or "No" to a yes/no question about one thing ("Is a helmet required?"): "No" when
    every clause that holds all the words it asks denies one of them ("Wearing a helmet is not required by law
    in Millbrook, but ..."), "Yes" when every such clause holds them undenied; None when none holds them all,
    when clauses disagree, and for a question that itself denies, compares or asks for a date, or asks fewer
    than `ASKED_WORDS` words. A clause ends at "but", "except", "unless", "whereas", "while", a semicolon or a
    list item's end: "allowed on roads but banned from the trails" says nothing of e-bikes on the trails."""
    if any(rule.search(question) for rule in (_NEGATED, _COMPARISON, _ALIKE, _ASKS_DATE, EXCEPTION)):
        return None
    asked = frozenset(word for word in _traits(question) - _ASKING - _YES_NO_WORDS if word.isalnum())  # not "i'm"
    if len(asked) < ASKED_WORDS:
        return None
    said: dict[bool, set[int]] = {False: set(), True: set()}  # denied? -> texts holding such a clause
    read: dict[bool, list[str]] = {False: [], True: []}  # the clauses, for the trace
    for n, parts in enumerate(_split(texts)):
        for sentence in parts:
            holding = [c for c in _CLAUSE_END.split(sentence) if asked <= _traits(c)]
            if not holding and asked <= _traits(sentence) and EXCEPTION.search(sentence):
                holding = [sentence]  # "paid to all staff apart from managers": the exception says no
            for clause in holding:
                found = reading(asked, clause, question, sentence)
                if found == "unclear":
                    return None  # "accepted only if ...", "Neither ... nor ...": not read here
                said[found == "denied"].add(n)
                read[found == "denied"].append(clause)
    if bool(said[False]) == bool(said[True]):
        return None
    denied = bool(said[True])
    return Proposal("No" if denied else "Yes", "stated", tuple(sorted(said[denied])), " / ".join(read[denied]))


def read_from(names: tuple[str, str], texts: Sequence[str]) -> tuple[int, ...]:
    """The texts a decision about the two names read, in order: for each name the first text where it opens a
    sentence, else names it before a sentence's verb (its own sentences, its date: `_about`), else names it."""
    split = _split(texts)
    found = []
    for name in names:
        about = [max((_about(name, sentence) for sentence in parts), default=0) for parts in split]
        named = (n for n, parts in enumerate(split) if any(_phrase(name) in _phrase(part) for part in parts))
        at = next((n for plainly in (OPENS, SUBJECT) for n, level in enumerate(about) if level == plainly), None)
        at = next(named, None) if at is None else at
        if at is not None and at not in found:
            found.append(at)
    return tuple(sorted(found))


def _alike(
    named: tuple[str, str], own: Sequence[Sequence[str]], split: Sequence[Sequence[str]], *, by: Alike
) -> bool | None:
    """Whether the two names share a year (their first dates) or, `by` "people", "family" or "state", any one
    people, family of living things ("in the family Araceae") or US state ("Houston, Texas") their own sentences
    name (a state in a name's own words, "Colorado River Aqueduct", is not where it is); None when either has
    none."""
    if by == "year":
        dates = [_date_of(name, split, other, False) for name, other in (named, named[::-1])]
        return None if dates[0] is None or dates[1] is None else dates[0][0] == dates[1][0]
    if by == "people":
        found = [_PEOPLES & _traits(" ".join(sentences)) for sentences in own]
    else:
        pattern = _FAMILY if by == "family" else _STATE
        in_names = set(pattern.findall(" ".join(named)))  # "Colorado River Aqueduct" is not in Colorado
        found = [set(pattern.findall(" ".join(sentences))) - in_names for sentences in own]
    return bool(found[0] & found[1]) if found[0] and found[1] else None


def asked_trait(question: str, offered: tuple[str, str]) -> frozenset[str] | None:
    """The words a choice asks for once its options are out: "Which film director is from Germany, A or B?" ->
    {film, director, german}. None for a comparison, a question about time, or options written where their
    own words cannot be told from the question's (no comma, colon or bracket before the first)."""
    first = question.find(offered[0])
    second = question.find(offered[1], first + len(offered[0])) if first >= 0 else -1
    start = max(question.rfind(mark, 0, first) for mark in ",:;(") if first >= 0 else -1
    if second < 0 or start < 0:
        return None
    after = second + len(offered[1])
    end = min((at for at in (question.find(mark, after) for mark in ",;)?") if at >= 0), default=len(question))
    rest = question[:start] + " " + question[end:]  # "Which man was a comedian?": the options' span, all of it, out
    timely = _EARLIER.search(rest) or _LATER.search(rest) or _DATE.search(rest) or _ASKS_DATE.search(rest)
    if timely or _COMPARISON.search(rest):
        return None
    return _traits(rest) - _ASKING - _traits(" ".join(offered)) or None


def asked_count(question: str, offered: tuple[str, str]) -> tuple[str, str] | None:
    """("more" or "fewer", the thing counted) for a choice about how many: "Which genus has more species, A or
    B?" -> ("more", "species"), "Who won more Grand Slam titles, A or B?" -> ("more", "titles"); None for any
    other question, or a longer phrase ("more number of students in a year")."""
    asked = _ASKS_COUNT.search(_without(question, offered, ","))  # the phrase after "more" ends at an option
    if asked is None or not 1 <= len(asked.group(2).split()) <= COUNTED_WORDS:
        return None
    return ("more" if asked.group(1).lower() == "more" else "fewer"), asked.group(2).split()[-1]


def _by_counts(counted: tuple[str, str], offered: tuple[str, str], split: Sequence[Sequence[str]]) -> str | None:
    """The option whose own sentences state more (or fewer) of the thing counted; None when one states no count
    or both the same."""
    found = []
    for option, other in (offered, offered[::-1]):
        own = _own_sentences(option, other, split)
        found.append(_count_of(counted[1], " ".join(own)) if own else None)
    if found[0] is None or found[1] is None or found[0] == found[1]:
        return None
    larger = found[0] > found[1]
    return offered[0] if larger == (counted[0] == "more") else offered[1]


def _count_of(noun: str, text: str) -> int | None:
    """The first count the text states of the noun: "about 100 accepted species", "48-56 species" (the first
    number), "two child seats"; a year-like number counts only right before the noun ("the 1985 Space Shuttle
    mission" counts no missions)."""
    stem = min(terms(noun), key=len, default="")
    if not stem:
        return None
    stated = re.compile(_COUNT + rf"((?:\s+[a-z][\w-]*){{0,2}}?)\s+{re.escape(stem)}\w*\b", re.I)
    for match in stated.finditer(text):
        raw = match.group(1).lower().replace(",", "")
        value = int(raw) if raw.isdigit() else NUMBER_WORDS.index(raw)
        if not (match.group(2).strip() and raw.isdigit() and 1000 <= value <= 2099 and "," not in match.group(1)):
            return value
    return None


def _without(question: str, names: tuple[str, str], filler: str = " ") -> str:
    """The question with the two names it offers or joins taken out: their own words ("The Last Shadow Puppets",
    "First for Women") are not the question's."""
    for name in names:
        question = question.replace(name, filler)
    return question


def _traits(text: str) -> frozenset[str]:
    """A text's content words, a country named as its people's adjective ("Germany" -> "german")."""
    return terms(COUNTRY.sub(lambda m: PEOPLE[int(str(m.lastgroup)[1:])], _COMPOUND.sub(" ", text)))


def _by_trait(
    trait: frozenset[str], offered: tuple[str, str], split: Sequence[Sequence[str]], question: str
) -> tuple[str, str] | None:
    """The option whose own sentences say more of the trait's words (not those they deny: "Calmex is not safe
    during pregnancy"), and those sentences; None where a word is limited in a way not read here."""
    said = []
    for option, other in (offered, offered[::-1]):
        own = _own_sentences(option, other, split)
        found = _said_of(trait, own, question) if own is not None else None
        if found is None:
            return None
        said.append(found)
    words_said = [said[0][0], said[1][0]]
    found_only = [len(words_said[0] - words_said[1]), len(words_said[1] - words_said[0])]  # "band" tells nothing
    high, low = max(found_only), min(found_only)
    if high == 0 or (low > 0 and high - low < TRAIT_MARGIN):
        return None
    at = found_only.index(high)
    return offered[at], said[at][1]


def _own_sentences(option: str, other: str, split: Sequence[Sequence[str]]) -> list[str] | None:
    """The first sentence about the option (`_about`: one it opens, else one naming it before its verb) and the
    next of its text, up to one that names the other option."""
    for plainly in (OPENS, SUBJECT):
        for parts in split:
            for n, sentence in enumerate(parts):
                if _about(option, sentence) == plainly:
                    own = [sentence]
                    for part in parts[n + 1 : n + OWN_SENTENCES]:
                        if _phrase(other) in _phrase(part) or _opens(other, part):
                            break
                        own.append(part)
                    return own
    return None


def _by_dates(
    question: str, offered: tuple[str, str], split: Sequence[Sequence[str]], order: Order
) -> tuple[str, str] | None:
    """The option whose date of the event asked (`asked_event`) comes first or last, and the sentences holding
    the two dates; None where a date is missing or the two are the same."""
    death = bool(_DEATH.search(question))
    event = None if death else asked_event(question, offered)
    first = _dated(offered[0], split, offered[1], death, event)
    second = _dated(offered[1], split, offered[0], death, event)
    if first is None or second is None:
        return None
    (one, said), (two, also) = first, second
    if one[1] == 0 or two[1] == 0:  # a year against a full date compares years only
        one, two = (one[0], 0, 0), (two[0], 0, 0)
    if one == two:
        return None
    earlier, later = (offered[0], offered[1]) if one < two else (offered[1], offered[0])
    return (earlier if order == "earlier" else later), f"{said} / {also}"


def asked_event(question: str, offered: tuple[str, str] = ("", "")) -> str | None:
    """The kind of event whose date a question about time asks ("Which opened first, ...?" -> "open"), by
    `_EVENTS`; None when it names none or several ("Who is older, A or B?")."""
    rest = _without(question, offered) if all(offered) else question
    found = {family for family, rule in _EVENTS.items() if rule.search(rest)}
    return found.pop() if len(found) == 1 else None


def _event_before(text: str, at: int) -> str | None:
    """The kind of event named in the `EVENT_REACH` characters before a date at `at` ("opened in 1932"), the
    nearest one; None when none is."""
    window = text[max(at - EVENT_REACH, 0) : at]
    named = [(found.end(), family) for family, rule in _EVENTS.items() for found in rule.finditer(window)]
    return max(named)[1] if named else None


def _event_date(text: str, event: str | None, death: bool, names: tuple[str, str] = ("", "")) -> Date | None:
    """The text's date of the event asked: the first date named after that event ("designed in 1890 and opened in
    1932": 1932 for "open"); the text's first date when no event is asked or none is named before any date;
    None when dates stand after other events only. `names`: the option, whose own words name no event ("Born
    Rich"), and the other option, where the text stops being about this one."""
    if event is None:
        return _first_date(text, death=death)
    option, other = names
    at = _phrase_at(text, other, after=_phrase_at(text, option) + len(option)) if other else -1
    text = text[:at] if at > 0 else text  # "... founded in 1997" of the other option, in the same sentence
    if option:
        text = re.sub(re.escape(option), lambda m: " " * len(m.group(0)), text, flags=re.I)
    named = [(match, _event_before(text, match.start())) for match in _DATE.finditer(text)]
    for match, family in named:
        if family == event:
            return _date(match)
    return None if any(family for _, family in named) else _first_date(text, death=death)


def clauses(texts: Sequence[str]) -> list[list[str]]:
    """Each text's clauses: its sentences cut at "but", "except", "unless", "whereas", "while", a semicolon and a
    list item's or a paragraph's end (`_CLAUSE_END`)."""
    return [[c for sentence in parts for c in _CLAUSE_END.split(sentence)] for parts in _split(texts)]


def _split(texts: Sequence[str]) -> list[list[str]]:
    """Each text's sentences, with the dashes and spaces HaluEval's texts lose put back."""
    return [sentences(spaced(_YEAR_GLUED.sub(r"\1 – ", text))) for text in texts]


def _date_of(option: str, split: Sequence[Sequence[str]], other: str, death: bool) -> Date | None:
    dated = _dated(option, split, other, death, None)
    return dated[0] if dated else None


def _dated(
    option: str, split: Sequence[Sequence[str]], other: str, death: bool, event: str | None
) -> tuple[Date, str] | None:
    """The option's date (`date_after`) of the event asked, when one is (`_event_date`), and the sentence
    holding it."""
    theirs = terms(other) - terms(option)
    if not terms(option):
        return None
    for plainly in (OPENS, SUBJECT, 0):
        for parts in split:
            for n, sentence in enumerate(parts):
                if _about(option, sentence) != plainly or not (plainly or _phrase(option) in _phrase(sentence)):
                    continue
                start = 0 if plainly else _mention_end(option, sentence)  # "(born 1950), known as X" holds X's
                for k, part in enumerate(parts[n : n + 1 + FOLLOWING]):
                    if k and theirs and theirs <= terms(part):
                        break
                    found = _event_date(part[start:] if k == 0 else part, event, death, (option, other))
                    if found is not None:
                        return (found, part) if found != _NO_END else None
    return None


_NO_END: Date = (0, 0, 0)  # a date with no range after it, asked for a death


def _about(option: str, sentence: str) -> int:
    """How plainly the sentence is about the option: `OPENS` when it opens with it (`_opens`), `SUBJECT` when it
    names it before its verb ("Jeffrey Ross Hyman (May 19, 1951 - April 15, 2001), known professionally as Joey
    Ramone, was ..."; "As of 2012, Thums Up is the leader ..."), 0 otherwise."""
    if _opens(option, sentence):
        return OPENS
    verb = _VERB.search(sentence)
    return SUBJECT if verb is not None and _phrase(option) in _phrase(sentence[: verb.start()]) else 0


def _opens(option: str, sentence: str) -> bool:
    """The sentence is about the option: it names it (all of its words, in any form: "Rómulo Ángel del Monte
    Carmelo Gallegos Freire" for "Rómulo Gallegos") and opens with its first word (give or take a title)."""
    first = [word for word in _phrase(option).split() if word not in _ARTICLES][:1]  # "The Exies": "exies"
    return (
        bool(first)
        and first[0] in _phrase(" ".join(sentence.split()[:OPENING])).split()
        and terms(option) <= terms(sentence)
    )


def _phrase(text: str) -> str:
    """Lower-cased words with single spaces around them, to find one name written inside a text."""
    return f" {' '.join(_WORDS.findall(text.lower()))} "


def _phrase_at(text: str, name: str, after: int = 0) -> int:
    """Where the name is written in the text from `after` on, case aside (-1: it is not)."""
    return text.lower().find(name.lower(), max(after, 0)) if name else -1


def _mention_end(option: str, sentence: str) -> int:
    """Where the option's last word ends in the sentence (0 when it is written otherwise there)."""
    last = option.split()[-1].lower() if option.split() else ""
    at = sentence.lower().find(last)
    return at + len(last) if last and at >= 0 else 0


def _first_date(text: str, *, death: bool = False) -> Date | None:
    """The text's first date; with `death`, the second date of the range it opens (`_NO_END` without one)."""
    match = _DATE.search(text)
    if match is None:
        return None
    if not death:
        return _date(match)
    gap = _RANGE.match(text, match.end())  # always matches: every part of it is optional
    then = _DATE.match(text, gap.end()) if gap is not None and gap.end() > match.end() else None
    return _date(then) if then is not None else _NO_END


def _date(match: re.Match[str]) -> Date:
    g = match.groups()
    if g[2]:
        return int(g[2]), _month(g[1]), int(g[0])
    if g[5]:
        return int(g[5]), _month(g[3]), int(g[4])
    if g[7]:
        return int(g[7]), _month(g[6]), 0
    return int(g[8]), 0, 0


def _month(name: str) -> int:
    return _MONTHS.index(name[:3].lower()) + 1
