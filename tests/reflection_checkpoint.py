"""A scripted Self-RAG checkpoint behind the loopback server's `/v1/completions` (for the reflection tests).

Replies are token lists `(token, probability, {alternative: probability})`, sent in vLLM's legacy completions
shape by `fake_server.legacy_choice`. The reply is picked from the prompt: the passage inside `<paragraph>`
(a key of `by_passage` found in it), a prompt ending in `[No Retrieval]` (`plain`), or a bare instruction
(`decide`). `logprobs=False` plays an endpoint that ignores the `logprobs` request field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from selfrag.testing.fake_server import legacy_choice

Piece = tuple[str, float, Mapping[str, float]]

RET = {"[Retrieval]": 0.7, "[No Retrieval]": 0.25, "[Continue to Use Evidence]": 0.05}
REL = {"[Relevant]": 0.9, "[Irrelevant]": 0.1}
SUP = {"[Fully supported]": 0.8, "[Partially supported]": 0.15, "[No support / Contradictory]": 0.05}
USE = {"[Utility:5]": 0.6, "[Utility:4]": 0.3, "[Utility:3]": 0.06, "[Utility:2]": 0.02, "[Utility:1]": 0.02}


def p(token: str, prob: float = 1.0, top: Mapping[str, float] | None = None) -> Piece:
    return token, prob, dict(top or {})


def word_pieces(sentence: str, prob: float = 0.9) -> list[Piece]:
    """A sentence as word tokens (each with a leading space but the first), all with probability `prob`."""
    parts = sentence.split(" ")
    return [p(("" if i == 0 else " ") + w, prob) for i, w in enumerate(parts)]


def segment(sentence: str, rel=REL, sup=SUP, use=USE, *, first: str = "[Relevant]", end: Sequence[Piece] = ()):
    """`[Relevant]sentence[Fully supported][Utility:5]` with the given top-k at each reflection position."""
    pieces = [p(first, rel.get(first, 0.9), rel), *word_pieces(sentence)]
    if sup is not None:
        pieces.append(p(max(sup, key=sup.__getitem__), max(sup.values()), sup))
    if use is not None:
        pieces.append(p(max(use, key=use.__getitem__), max(use.values()), use))
    return [*pieces, *end]


@dataclass
class Checkpoint:
    by_passage: Mapping[str, list[Piece]]
    decide: list[Piece] = field(default_factory=lambda: [p("[Retrieval]", 0.7, RET)])
    plain: list[Piece] = field(default_factory=lambda: [*word_pieces("I do not know."), p("[Utility:2]", 0.9)])
    logprobs: bool = True
    top: int | None = None  # at most this many alternatives per position, whatever was asked
    prompts: list[str] = field(default_factory=list)

    def __call__(self, payload: dict[str, Any]) -> dict[str, Any]:
        prompt = str(payload["prompt"])
        self.prompts.append(prompt)
        if "<paragraph>" in prompt:
            passage = prompt.rsplit("<paragraph>", 1)[1]
            pieces = next((v for k, v in self.by_passage.items() if k in passage), self.plain)
        elif prompt.endswith("[No Retrieval]"):
            pieces = self.plain
        else:
            pieces = self.decide
        pieces = pieces[: payload.get("max_tokens") or len(pieces)]
        asked = dict(payload)
        if not self.logprobs:
            asked.pop("logprobs", None)
        elif self.top is not None:
            asked["logprobs"] = min(self.top, int(asked.get("logprobs") or 0))
        logged = [(t, math.log(q), _padded(top, int(asked.get("logprobs") or 0))) for t, q, top in pieces]
        return legacy_choice(logged, asked, "stop" if len(pieces) < (payload.get("max_tokens") or 10**9) else "length")


def _padded(top: Mapping[str, float], k: int) -> dict[str, float]:
    """The alternatives as log-probs, filled up to k with unlikely ordinary tokens, as a real vocabulary would."""
    logged = {token: math.log(q) for token, q in top.items()}
    filler = (f" w{i}" for i in range(k))
    while len(logged) < k:
        logged[next(filler)] = math.log(1e-6)
    return logged
