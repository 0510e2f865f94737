"""A conversation for follow-up questions: the turns so far, rendered for the prompts within a budget.

The engine sees the rendered history in its decision prompt, so the retrieval query of a follow-up
("and for members?") is rewritten from the conversation; the oldest turns are dropped first when the
history outgrows its budget.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_HISTORY_CHARS = 4_000


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
        """'User: ...' / 'Assistant: ...' lines, newest kept, within `max_chars`."""
        lines: list[str] = []
        used = 0
        for turn in reversed(self.turns):
            block = f"User: {turn.question}\nAssistant: {turn.answer}"
            if used + len(block) > max_chars:
                break
            lines.insert(0, block)
            used += len(block) + 1
        return "\n".join(lines)
