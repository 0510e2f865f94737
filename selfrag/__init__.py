"""selfrag: Self-RAG segment-level beam search over any OpenAI-compatible chat endpoint, with BM25 retrieval.

from selfrag import SelfRAG, Config
rag = SelfRAG.from_index("my-index", Config(beam_width=2))
result = rag.answer("Which policy applies to refunds?")
print(result.answer)
"""

import logging

from .api import SelfRAG
from .config import Config, EndpointConfig
from .errors import (
    BudgetError,
    ConfigError,
    CritiqueError,
    FatalLLMError,
    InputError,
    LLMError,
    RetrievalError,
    SelfRagError,
)
from .labels import CriticMode, Decision, Mode, Relevance, Support, Utility
from .result import DoneEvent, Event, LeadEvent, Result, SegmentEvent, StepEvent
from .schema import Chunk, Hit

__version__ = "0.1.0"
logging.getLogger("selfrag").addHandler(logging.NullHandler())  # the library logs; only applications show it

__all__ = [
    "BudgetError",
    "Chunk",
    "Config",
    "ConfigError",
    "CriticMode",
    "CritiqueError",
    "Decision",
    "DoneEvent",
    "EndpointConfig",
    "Event",
    "FatalLLMError",
    "Hit",
    "InputError",
    "LLMError",
    "LeadEvent",
    "Mode",
    "Relevance",
    "Result",
    "RetrievalError",
    "SegmentEvent",
    "SelfRAG",
    "SelfRagError",
    "StepEvent",
    "Support",
    "Utility",
    "__version__",
]
