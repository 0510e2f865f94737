"""A conversation for follow-up questions: the turns so far, rendered for the prompts within a budget.

The engine sees the rendered history in its decision prompt, so the retrieval query of a follow-up
("and for members?") is rewritten from the conversation. The history is capped at `MAX_HISTORY_CHARS`
characters, keeping the most recent part: `Conversation.render` drops the oldest turns first, and
`clip_history` does the same to a history given as text (the API's `conversation=`), cutting at the start of a
turn ("User: " at a line start) when there is one, else at a line start, else mid-line.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_HISTORY_CHARS = 4_000
TURN_START = "User: "


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
            block = f"{TURN_START}{turn.question}\nAssistant: {turn.answer}"
            if used + len(block) > max_chars:
                if not lines:
                    return clip_history(block, max_chars)
                break
            lines.insert(0, block)
            used += len(block) + 1
        return "\n".join(lines)


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
