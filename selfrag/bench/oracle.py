"""A diagnostic critic: gold-derived ISREL and ISSUP, each flipped with probability p (p = 0: an oracle; 0.5: a
coin). Everything else in the engine is unchanged, so sweeping p shows what the search does with a critic of
known accuracy, and which accuracy it needs to beat plain RAG (`selfrag+oracle<p>`, QA datasets only).

    relevant   the chunk is one of the question's gold chunks
    supported  a gold answer occurs (normalised, whole words) in the sentence and in its chunk

Each flip is decided by a hash of (seed, question id, chunk, sentence, label), so a rerun flips the same labels
and is served from the request cache. It never abstains: its only job is to rank.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from ..engine.calibration import CandidateView, SupportEstimate
from .datasets import Example
from .metrics import answer_in


@dataclass(frozen=True, slots=True)
class NoisyOracle:
    example: Example
    flip: float
    seed: int = 0
    threshold: float = 0.0
    verdict_cut: float = 0.5  # its probabilities are 0 or 1

    @property
    def from_documents(self) -> bool:
        return False  # the paper's adaptive retrieval, as the paper's critic

    @property
    def weighs_utility(self) -> bool:
        return True  # the paper's f: only ISREL and ISSUP are the oracle's

    def trusts(self, kind: str) -> bool:
        return True  # as the paper's critic: the diagnostic flips ISREL and ISSUP, nothing else

    def rate(self, question: str, views: Sequence[CandidateView]) -> list[SupportEstimate]:
        golds, gold_chunks = self.example.answers, set(self.example.gold_chunks)
        out = []
        for view in views:
            relevant = view.chunk_key in gold_chunks
            supported = bool(answer_in(view.sentence, golds)) and bool(answer_in(view.chunk_text, golds))
            out.append(
                SupportEstimate(
                    float(relevant != self._flipped(view, "relevance")),
                    float(supported != self._flipped(view, "support")),
                )
            )
        return out

    def confidence(self, supported: Sequence[float]) -> float:
        return sum(supported) / len(supported) if supported else 0.0

    def answer_confidence(
        self, supported: Sequence[float], supports: Sequence[float], words: int, check: float | None = None
    ) -> float:
        return self.confidence(supported)  # the gold-derived support of the answer's sentences

    @property
    def reads_check(self) -> bool:
        return False  # the diagnostic critic asks the model nothing of its own

    def with_lead(self, confidence: float, kind: str | None, alone: bool = False) -> float:
        return confidence  # the diagnostic critic speaks of the sentences only

    def refutes(self, claim: str, text: str) -> float | None:
        return None  # the diagnostic critic flips relevance and support labels, not verdicts

    def _flipped(self, view: CandidateView, label: str) -> bool:
        key = f"{self.seed}|{self.example.id}|{view.chunk_key}|{view.sentence}|{label}".encode()
        draw = int.from_bytes(hashlib.sha256(key).digest()[:8], "big") / 2**64
        return draw < self.flip
