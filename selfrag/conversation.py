"""A conversation for follow-up questions: the turns so far, rendered for the prompts within a budget.

The engine sees the rendered history in its decision prompt, so the retrieval query of a follow-up
("and for members?") is rewritten from the conversation. The history is capped at `MAX_HISTORY_CHARS`
characters, keeping the most recent part: `Conversation.render` drops the oldest turns first, and
`clip_history` does the same to a history given as text (the API's `conversation=`), cutting at the start of a
turn ("User: " at a line start) when there is one, else at a line start, else mid-line.

`small_talk` answers a message that is only a greeting, thanks, a goodbye or an acknowledgement ("Hi there!",
"thanks, bye") with a line of its own: there is nothing in it to look up, and searching the documents for it
can only end in "The documents do not say." or a sentence about something else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_HISTORY_CHARS = 4_000
TURN_START = "User: "
ANSWER_START = "Assistant: "

# the kinds of small talk: a message is small talk when each of its clauses (split at , . ! ? ; and "and",
# lower-cased) is a run of these phrases ("ok thanks", "bye for now")
_SMALL_TALK = {
    "hello": r"(?:hi|hello|hey|hiya|greetings|good (?:morning|afternoon|evening|day))"
    r"(?: (?:there|all|again|everyone))?",
    "thanks": r"(?:many )?(?:thanks|thank you|thank u|thx|cheers)(?: (?:a lot|so much|very much))?"
    r"(?: again| for(?: \S+){1,4})?",  # "thanks for the help earlier", not "thanks for telling me what X is"
    "bye": r"(?:bye|goodbye|good bye|bye bye|see you|see ya|ciao|farewell)(?: (?:now|for now|then|later|soon))?",
    "ok": r"ok|okay|got it|great|cool|nice|perfect|alright|all right|i see|understood",
}
_PHRASE = re.compile("|".join(rf"(?P<{kind}>{body})(?=\s|$)" for kind, body in _SMALL_TALK.items()))
_CLAUSES = re.compile(r"[,.!?;:]+|\s+and\s+")


@dataclass(frozen=True, slots=True)
class Turn:
    question: str
    answer: str


@dataclass(frozen=True, slots=True)
class Conversation:
    turns: tuple[Turn, ...] = ()

    def add(self, question: str, answer: str) -> Conversation:
        return Conversation((*self.turns, Turn(question, answer)))

    def render(self, max_chars: int = MAX_HISTORY_CHARS) -> str:
        """'User: ...' / 'Assistant: ...' lines within `max_chars`: whole turns, newest kept, oldest dropped
        first; when even the newest turn is too long, its most recent `max_chars` characters."""
        lines: list[str] = []
        used = 0
        for turn in reversed(self.turns):
            block = turn_text(turn.question, turn.answer)
            if used + len(block) > max_chars:
                if not lines:
                    return clip_history(block, max_chars)
                break
            lines.insert(0, block)
            used += len(block) + 1
        return "\n".join(lines)


def turn_text(question: str, answer: str) -> str:
    """One turn as the prompts read it: a "User: " line, then an "Assistant: " line."""
    return f"{TURN_START}{question}\n{ANSWER_START}{answer}"


def questions_asked(history: str) -> list[str]:
    """The user's questions in a history of `turn_text` turns, oldest first, each on one line."""
    turns = f"\n{history}".split(f"\n{TURN_START}")[1:]
    return [" ".join(turn.split(f"\n{ANSWER_START}", 1)[0].split()) for turn in turns]


def clip_history(text: str, max_chars: int = MAX_HISTORY_CHARS) -> str:
    """The most recent part of a conversation given as text, at most `max_chars` characters long."""
    if len(text) <= max_chars:
        return text
    start = len(text) - max_chars  # the first character that fits
    for marker in (f"\n{TURN_START}", "\n"):
        cut = text.find(marker, start - 1)  # from one back: a boundary right at `start` counts
        if 0 <= cut < len(text) - 1:
            return text[cut + 1 :]
    return text[start:]


def small_talk(message: str) -> str | None:
    """The reply to a message that is only small talk, every clause a greeting, thanks, a goodbye or an
    acknowledgement ("Hi there!" -> "Hello. Ask me ..."; "ok, thanks, bye" -> "You're welcome. Goodbye."); None
    for anything with a question or one word more in it ("Hi, how many days for refunds?", "thanks for telling
    me what the late fee is")."""
    if "?" in message:
        return None
    kinds: set[str] = set()
    for clause in _CLAUSES.split(message.lower().replace("’", "'")):
        rest = " ".join(clause.split())
        while rest:
            found = _PHRASE.match(rest)
            if found is None or found.lastgroup is None:
                return None
            kinds.add(found.lastgroup)
            rest = rest[found.end() :].lstrip()
    welcome = "You're welcome." if "thanks" in kinds else ""
    if "bye" in kinds:
        return f"{welcome} Goodbye.".strip()
    if welcome:
        return welcome
    if "hello" in kinds:
        return "Hello. Ask me a question about the documents."
    return "Ask me another question whenever you like." if kinds else None
