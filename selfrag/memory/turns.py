"""Managed conversation memory: what a conversation keeps, and what of it reaches the next question's prompts.

A memory holds turns (question, answer, the chunks the answer cited, when). Pure functions, no I/O
(sessions.py stores a memory on disk):

- `remember`: a new turn joins a topic: the topic of the most similar earlier turn (the share of the smaller
  word set, question, answer and cited documents, found in the other >= `TOPIC_SIMILARITY`), else a new one.
  A turn whose question is a near-duplicate of an earlier one (content-word Jaccard >= `DUPLICATE_QUESTION`)
  replaces it: the newer answer stands, so a fact revised later is not recalled in its old form. Then, while
  the memory is over its budget (characters or turns), the turn worth least is evicted: worth = recency
  (half-life `HALF_LIFE` turns) + how often it was recalled + whether it belongs to the topic being discussed
  now. The two newest turns are never evicted.
- `recall`: routes the question to topics: the topics of the turns that share its words (IDF-weighted), or,
  when it shares none (a follow-up such as "and for members?"), the topic of the last turn. The turns of
  those topics are reranked lexically against the question (ties: newer first) and taken best first
  while they fit `max_chars`; the last turn always comes, last, next to the question.
- `render`: the recalled turns as "User: ..." / "Assistant: ..." lines, the form the prompts expect.

Limits: word overlap is all it knows (no embeddings): a question that shares no word with an earlier topic
reaches that topic only through the last turn.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..conversation import MAX_HISTORY_CHARS, turn_text

TOPIC_SIMILARITY = 0.2
DUPLICATE_QUESTION = 0.8
HALF_LIFE = 20.0  # turns
MAX_MEMORY_CHARS = 200_000
MAX_MEMORY_TURNS = 500
MAX_ANSWER_CHARS = 20_000  # an answer longer than this is kept cut (with a mark)
_WORD = re.compile(r"\w\w+")
_STOP = frozenset(
    "a an and are as at be but by can do does for from has have how i if in is it its me my of on or our so that "
    "the their them then there these they this to was we what when where which who why will with you your "
    "about after again also any did not no yes".split()
)


@dataclass(frozen=True, slots=True)
class MemoryTurn:
    question: str
    answer: str
    cited: tuple[str, ...] = ()  # chunk keys (doc_id#chunk_id) the answer cited
    time: str = ""  # ISO 8601 UTC, when the answer was given
    number: int = 0  # position in the conversation, from 1 (kept when older turns are evicted)
    topic: int = 0
    recalls: int = 0  # how often it reached a later question's prompt

    @property
    def size(self) -> int:
        return len(self.question) + len(self.answer)


@dataclass(frozen=True, slots=True)
class Budget:
    max_chars: int = MAX_MEMORY_CHARS  # stored question + answer characters
    max_turns: int = MAX_MEMORY_TURNS
    recall_chars: int = MAX_HISTORY_CHARS  # what reaches one prompt


DEFAULT_BUDGET = Budget()


@dataclass(frozen=True, slots=True)
class Memory:
    turns: tuple[MemoryTurn, ...] = ()
    topics: int = 0  # topics made so far (the next one gets this number)
    evicted: int = 0  # turns evicted so far (collapsed duplicates are not counted)
    collapsed: int = 0  # turns replaced by a near-duplicate question

    @property
    def size(self) -> int:
        return sum(t.size for t in self.turns)

    @property
    def last_number(self) -> int:
        return max((t.number for t in self.turns), default=0)


def words(text: str) -> list[str]:
    """Lower-cased content words, plural-blind ("returns" and "return" match)."""
    out = []
    for w in _WORD.findall(text.lower()):
        if w in _STOP:
            continue
        out.append(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    return out


def _bag(turn: MemoryTurn) -> set[str]:
    return set(words(f"{turn.question} {turn.answer}")) | {"doc:" + key.split("#")[0] for key in turn.cited}


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _overlap(a: set[str], b: set[str]) -> float:
    """Shared share of the smaller set: short turns on one subject share few words."""
    return len(a & b) / min(len(a), len(b)) if a and b else 0.0


def remember(memory: Memory, turn: MemoryTurn, budget: Budget = DEFAULT_BUDGET) -> Memory:
    """`memory` with `turn` added, near-duplicates collapsed and the budget enforced (module docstring)."""
    if len(turn.answer) > MAX_ANSWER_CHARS:
        turn = replace(turn, answer=turn.answer[:MAX_ANSWER_CHARS] + " [...]")
    asked = set(words(turn.question))
    kept = [t for t in memory.turns if _jaccard(asked, set(words(t.question))) < DUPLICATE_QUESTION]
    collapsed = len(memory.turns) - len(kept)
    bag = _bag(turn)
    similar = max(kept, key=lambda t: (_overlap(bag, _bag(t)), t.number), default=None)
    topics = memory.topics
    if similar is not None and _overlap(bag, _bag(similar)) >= TOPIC_SIMILARITY:
        topic = similar.topic
    else:
        topic, topics = topics, topics + 1
    number = memory.last_number + 1
    turns = [*kept, replace(turn, number=number, topic=topic)]
    evicted = 0
    while len(turns) > 2 and (sum(t.size for t in turns) > budget.max_chars or len(turns) > budget.max_turns):
        turns.remove(min(turns[:-2], key=lambda t: (worth(t, number, topic), t.number)))
        evicted += 1
    return Memory(tuple(turns), topics, memory.evicted + evicted, memory.collapsed + collapsed)


def worth(turn: MemoryTurn, now: int, topic: int) -> float:
    """What keeping a turn is worth: recency, usefulness so far, and relevance to the topic of the moment."""
    recency = 0.5 ** ((now - turn.number) / HALF_LIFE)
    return recency + 0.5 * min(turn.recalls, 4) / 4 + (0.5 if turn.topic == topic else 0.0)


def recall(memory: Memory, question: str, budget: Budget = DEFAULT_BUDGET) -> tuple[MemoryTurn, ...]:
    """The turns the next answer should see, best first, the last turn last (module docstring)."""
    if not memory.turns:
        return ()
    last = memory.turns[-1]
    scores = dict(zip((t.number for t in memory.turns), relevance(question, memory.turns), strict=True))
    topics = {t.topic for t in memory.turns if scores[t.number] > 0}
    if not topics:  # a follow-up that names nothing ("and for members?") continues the last turn's topic
        topics = {last.topic}
    candidates = [t for t in memory.turns[:-1] if t.topic in topics]
    room = budget.recall_chars - _rendered_size(last)
    chosen = []
    for turn in sorted(candidates, key=lambda t: (-scores[t.number], -t.number)):
        if _rendered_size(turn) + 1 <= room:
            chosen.append(turn)
            room -= _rendered_size(turn) + 1
    return (*chosen, last)


def relevance(question: str, turns: Sequence[MemoryTurn]) -> list[float]:
    """IDF-weighted share of the question's words found in each turn (0 to 1)."""
    asked = set(words(question))
    if not asked:
        return [0.0] * len(turns)
    bags = [set(words(f"{t.question} {t.answer}")) for t in turns]
    frequency = Counter(w for bag in bags for w in bag & asked)
    idf = {w: math.log(1 + (len(turns) + 1) / (frequency[w] + 0.5)) for w in asked}
    total = sum(idf.values())
    return [sum(idf[w] for w in asked & bag) / total for bag in bags]


def noted(memory: Memory, recalled: Sequence[MemoryTurn]) -> Memory:
    """`memory` with the recall count of each recalled turn raised by one."""
    numbers = {t.number for t in recalled}
    turns = tuple(replace(t, recalls=t.recalls + 1) if t.number in numbers else t for t in memory.turns)
    return replace(memory, turns=turns)


def _block(turn: MemoryTurn) -> str:
    return turn_text(turn.question, turn.answer)


def _rendered_size(turn: MemoryTurn) -> int:
    return len(_block(turn))


def render(turns: Sequence[MemoryTurn], max_chars: int = MAX_HISTORY_CHARS) -> str:
    """'User: ...' / 'Assistant: ...' lines of the recalled turns; a last turn too long on its own keeps its
    most recent `max_chars` characters."""
    text = "\n".join(_block(t) for t in turns)
    return text if len(text) <= max_chars else text[-max_chars:]
