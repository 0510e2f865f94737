"""Conversation memory: what a conversation keeps (turns.py, pure) and where a named one lives (sessions.py).

In order: turns (remember, recall, render: topics, collapsed repeats, eviction by worth, lexical recall) →
sessions (the files on disk, their lock and checks; `ChatSession`, what `SelfRAG.session` returns).
"""

from .sessions import ChatSession, SessionStore, check_name
from .turns import DEFAULT_BUDGET, Budget, Memory, MemoryTurn, noted, recall, remember, render

__all__ = [
    "DEFAULT_BUDGET",
    "Budget",
    "ChatSession",
    "Memory",
    "MemoryTurn",
    "SessionStore",
    "check_name",
    "noted",
    "recall",
    "remember",
    "render",
]
