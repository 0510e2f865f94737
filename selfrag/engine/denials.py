"""The `denials` policy and the checks it shares: what in the answer or the documents speaks against a short answer
(no call).

    opening_answer  the yes or no a sentence opens with as its answer ("Yes, both airports ...")
    contradicted    a yes/no short answer that a sentence of the answer opens against ("No." over "Yes, ...")
    denial          the sentence that plainly denies what a "Yes" or a chosen option says ("The Vela Lite is not
                    waterproof" under "Yes." to "Is the Vela Lite waterproof?")
    refuted         why a decided short answer (`decide`) may not be printed: a kept sentence opens against it, or
                    a kept sentence or the clause it rests on denies it

`lead` checks every decision with `refuted` and every yes/no lead with `contradicted`; with `Config.denials` the
model's own "Yes." or pick that `denial` finds denied prints as "The documents don't settle it.". Why:
docs/decisions.md (`denials`, `decide`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..labels import QuestionKind
from .decide import Proposal
from .evidence import sentences as sentences_of
from .evidence import terms, words
from .questions import choice_options
from .scope import limited, negated, reading

# the words of asking, which a denial need not hold (what is asked is the rest)
_ASKING = terms("is are was were do does did has have had can could will would should may might which who whom whose "
                "what both each one also")  # fmt: skip
# a sentence that opens with its answer: "Yes, since April ...", "No. The desk ...", "Yes it is."; not "No one
# knows ...", "No bikes may ..." (a word of the sentence), "Yes-man" or "No-fault" (a compound), nor '"Yes," she
# said' (someone's words)
OPENING_ANSWER = re.compile(
    r"""^\s*(?P<word>yes(?=[\s,.;:!]|$)|no(?=\s*(?:[,.;:!]|[—–]|\s-\s|$)))[\s,.;:!—–-]*""", re.IGNORECASE
)


def opening_answer(sentence: str) -> str | None:
    """The yes or no a sentence opens with as its answer ("Yes, both airports ...", "No. The desk ..."), lower
    case; None where it opens otherwise, "No one knows ..." and "No bikes may ..." among them."""
    found = OPENING_ANSWER.match(sentence)
    return found["word"].lower() if found else None


def contradicted(lead: str, sentences: Sequence[str]) -> bool:
    """A yes/no lead that a sentence of the answer opens against: "No." over "Yes, both airports are in ..."."""
    said = lead.strip().rstrip(".").lower()
    if said not in ("yes", "no"):
        return False
    return any(opening_answer(sentence) == ("no" if said == "yes" else "yes") for sentence in sentences)


def refuted(question: str, kind: QuestionKind | None, decision: Proposal, sentences: Sequence[str]) -> str | None:
    """Why a decided short answer may not be printed, or None: a kept sentence opens with the other yes or no
    (`contradicted`), or a kept sentence or the clause the decision rests on denies what the answer says
    (`denial`). A decision is a proposal; the model's own short answer stands where it is refused."""
    said = f"{decision.option}."
    stating = [s for s in sentences if terms(s) - {"yes", "no"}]  # a bare "Yes." rests on no clause
    against = next((s for s in stating if contradicted(said, [s])), None)
    if against is not None:
        return f"a kept sentence opens against it: {against!r}"
    part = denial(question, kind, decision.option, [decision.clause, *sentences])
    return f"it is denied in {part!r}" if part is not None else None


def denial(
    question: str, kind: QuestionKind | None, option: str, texts: Sequence[str], *, plainly: bool = False
) -> str | None:
    """The sentence of `texts` that denies what a "Yes" or a chosen option says of the question's words (a "Yes."
    or "The Vela Lite." over "The Vela Lite is not waterproof": `scope.reading`), or None. A sentence counts only
    where it holds the chosen option's words and at least half the question's own; a "No" is never denied.
    `plainly`: only a plain negation denies (a sentence with an exception or a condition is not read, nor is a
    question that holds a negation of its own): how the model's own answer is checked."""
    if option == "No" or kind not in (QuestionKind.YES_NO, QuestionKind.CHOICE):
        return None
    if plainly and negated(question):
        return None
    asked = terms(question) - _ASKING
    chosen, other = frozenset(), frozenset()
    if kind == QuestionKind.CHOICE:
        chosen = _own_words(option)  # "after" of "before or after meals" is a function word, and still the pick
        offered = choice_options(question) or ("", "")
        other = frozenset().union(*(_own_words(o) for o in offered if not _own_words(o) <= chosen)) - chosen
    trait = asked - chosen - other  # what the question asks of the pick ("safe during pregnancy")
    for text in texts:
        for part in sentences_of(text):
            held = terms(part) | frozenset(words(part))
            if chosen - held or len(asked & held) * 2 < len(asked) or (plainly and limited(part)):
                continue  # about another option, too little of what the question asks, or not plainly read
            if reading(trait, part, question) == "denied":  # "every mode except Quiet" denies nothing of Standard
                return part
    return None


def _own_words(option: str) -> frozenset[str]:
    """An option's content words, or all its words where it has none ("before", "after")."""
    return terms(option) or frozenset(words(option))
