"""Label probabilities and sentence probability from token logprobs. Pure functions.

The reply is JSON; a label's probability is read at the token where that field's value starts: the
alternatives the endpoint listed there are matched to the label set (case and leading-space variants summed)
and normalised over the set, in probability space. A label absent from the listed alternatives gets a floor
(log-prob -100, as the reference code) and the estimate is marked truncated. If no label of the set appears,
the caller falls back to discrete labels.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .base import TokenLogprob

FLOOR_LOGPROB = -100.0


@dataclass(frozen=True, slots=True)
class Distribution:
    probs: dict[str, float]  # label -> probability, sums to 1
    truncated: bool


def _offsets(tokens: Sequence[TokenLogprob]) -> list[int]:
    starts, position = [], 0
    for token in tokens:
        starts.append(position)
        position += len(token.token)
    return starts


def value_start(text: str, field: str) -> int | None:
    """Character offset where the value of `"field":` begins (after an opening quote, if any)."""
    match = re.search(rf'"{re.escape(field)}"\s*:\s*"?', text)
    return match.end() if match else None


def _match_label(fragment: str, labels: Sequence[str]) -> str | None:
    cleaned = fragment.strip().strip('"').strip().lower()
    if not cleaned:
        return None
    found = [label for label in labels if label.startswith(cleaned) or cleaned.startswith(label)]
    if len(found) > 1:  # "no" against "no support"-like overlaps: take the exact or the longest match
        exact = [label for label in found if cleaned.startswith(label)]
        found = sorted(exact, key=len)[-1:] if exact else []
    return found[0] if len(found) == 1 else None


def label_distribution(
    text: str, tokens: Sequence[TokenLogprob], field: str, labels: Sequence[str]
) -> Distribution | None:
    """P(label) for each label of `field`'s set, read at the first token of its value."""
    start = value_start(text, field)
    if start is None or not tokens or "".join(t.token for t in tokens) != text:
        return None
    offsets = _offsets(tokens)
    index = next((i for i, o in enumerate(offsets) if o <= start < o + len(tokens[i].token)), None)
    if index is None:
        return None
    prefix = text[offsets[index] : start]  # part of the token before the value, e.g. a quote or a space
    token = tokens[index]
    alternatives = token.top or ((token.token, token.logprob),)
    mass: dict[str, float] = {}
    for alt_text, alt_logprob in alternatives:
        if not alt_text.startswith(prefix):
            continue
        label = _match_label(alt_text[len(prefix) :], labels)
        if label is not None:
            mass[label] = mass.get(label, 0.0) + math.exp(alt_logprob)
    if not mass:
        return None
    truncated = len(mass) < len(labels)
    for label in labels:
        mass.setdefault(label, math.exp(FLOOR_LOGPROB))
    total = sum(mass.values())
    return Distribution({label: mass[label] / total for label in labels}, truncated)


def string_value_span(text: str, field: str) -> tuple[int, int] | None:
    """[start, end) of a JSON string value, without its quotes."""
    match = re.search(rf'"{re.escape(field)}"\s*:\s*"((?:[^"\\]|\\.)*)"', text)
    return (match.start(1), match.end(1)) if match else None


def mean_token_prob(text: str, tokens: Sequence[TokenLogprob], field: str) -> float | None:
    """S_LM: exp of the mean logprob of the tokens lying inside the string value of `field`."""
    span = string_value_span(text, field)
    if span is None or not tokens or "".join(t.token for t in tokens) != text:
        return None
    start, end = span
    inside = [
        token.logprob
        for token, offset in zip(tokens, _offsets(tokens), strict=True)
        if offset >= start and offset + len(token.token) <= end
    ]
    return math.exp(sum(inside) / len(inside)) if inside else None
