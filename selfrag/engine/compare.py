"""⑥ A choice question about time decided by the documents' own dates: "Who was born first, A or B?", "Which
film was released earlier, A or B?", "Who is younger, A or B?".

    asked_order   "earlier" or "later": which end of time the question asks for, or None (no time word, or both)
    date_after    the first date the documents give after naming an option, within its sentence and the next
    decide        the option the two dates pick, as the question writes it; None when either date is missing,
                  the dates tie, or the question asks no order

A small model answers these questions by a coin flip between the two names even when both documents state the
dates; comparing two dates needs no model. Where this cannot decide, the model's short answer stands.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from .evidence import sentences, terms

Order = Literal["earlier", "later"]
Date = tuple[int, int, int]  # year, month (0: not given), day (0: not given)

# "first" as in "born first" or "which came first", not "the first to command" or "who first acted"
_EARLIER = re.compile(
    r"\b(?:earlier|earliest|older|oldest|sooner|(?<!the )first(?!\s+(?!(?:or|the|a|an)\b)[a-z]))\b", re.I
)
_LATER = re.compile(r"\b(?:later|latest|younger|youngest|newer|newest|more recent(?:ly)?|most recent(?:ly)?)\b", re.I)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH = (
    r"(Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?"
    r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_YEAR = r"(1[0-9]{3}|20[0-9]{2})(?![\d,.]\d)"
_DATE = re.compile(
    rf"\b(?:(\d{{1,2}})\s+{_MONTH}\s*,?\s+{_YEAR}"  # 4 October 1971
    rf"|{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\s*,?\s+{_YEAR}"  # October 4, 1971
    rf"|{_MONTH}\s+{_YEAR}"  # October 1971
    rf"|(?<![$£€\d.,]){_YEAR}(?!\s*(?:%|percent|km|miles|metres|meters|feet|people|students|members|copies)\b))"
)
_DEATH = re.compile(r"\b(?:died|die|death|passed away)\b", re.I)
_ASKS_DATE = re.compile(r"\b(?:what|which) (?:year|date|decade|century)\b|\bwhen\b|\bhow (?:old|long)\b", re.I)
_GLUED = re.compile(r"(\d{4})(?=\d{1,2}\s*[A-Z][a-z]{2}|[A-Z][a-z]{2})")  # "26 September 188926 May 1976"
_UNGLUED = re.compile(r"(?<=[a-z0-9)\"”])\.(?=[A-Z][a-z])")  # "... record producer.Anette Olsson (born ..."
_RANGE = re.compile(r"\s*(?:[-–—]|to)?\s*")
_WORDS = re.compile(r"\w+")
_ARTICLES = ("the", "a", "an")
OPENING = 4  # words at a sentence's start within which a named option is the sentence's subject
FOLLOWING = 1  # sentences after the option's own that may still hold its date ("... The magazine was started in 1989.")


def asked_order(question: str, offered: tuple[str, str]) -> Order | None:
    """The end of time a choice question asks for; the options' own words ("The Last Shadow Puppets", "First for
    Women") are not read as the question's. A question asking for a date or an age ("what year was the older one
    born?") wants no option and gets None."""
    rest = question
    for option in offered:
        rest = rest.replace(option, " ")
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


def decide(question: str, offered: tuple[str, str], texts: Sequence[str]) -> str | None:
    """The option the documents' dates pick, or None when they cannot."""
    order = asked_order(question, offered)
    if order is None:
        return None
    death, split = bool(_DEATH.search(question)), _split(texts)
    first = _date_of(offered[0], split, offered[1], death)
    second = _date_of(offered[1], split, offered[0], death)
    if first is None or second is None:
        return None
    if first[1] == 0 or second[1] == 0:  # a year against a full date compares years only
        first, second = (first[0], 0, 0), (second[0], 0, 0)
    if first == second:
        return None
    earlier, later = (offered[0], offered[1]) if first < second else (offered[1], offered[0])
    return earlier if order == "earlier" else later


def _split(texts: Sequence[str]) -> list[list[str]]:
    """Each text's sentences, with the dashes and spaces HaluEval's texts lose put back."""
    return [sentences(_UNGLUED.sub(". ", _GLUED.sub(r"\1 – ", text))) for text in texts]


def _date_of(option: str, split: Sequence[Sequence[str]], other: str, death: bool) -> Date | None:
    theirs = terms(other) - terms(option)
    if not terms(option):
        return None
    for opening in (True, False):
        for parts in split:
            for n, sentence in enumerate(parts):
                if _opens(option, sentence) != opening or not (opening or _phrase(option) in _phrase(sentence)):
                    continue
                start = 0 if opening else _mention_end(option, sentence)
                for k, part in enumerate(parts[n : n + 1 + FOLLOWING]):
                    if k and theirs and theirs <= terms(part):
                        break
                    found = _first_date(part[start:] if k == 0 else part, death=death)
                    if found is not None:
                        return found if found != _NO_END else None
    return None


_NO_END: Date = (0, 0, 0)  # a date with no range after it, asked for a death


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
