"""Reflection tokens of the fine-tuned Self-RAG models, read from a completion's text and logprobs. Pure.

The paper's checkpoints (selfrag/selfrag_llama2_7b, _13b) write their critique as vocabulary tokens inside the
text: `[Relevant]` after the passage, the segment, `[Fully supported]`, `[Utility:5]` at the end, and before
every next segment `[Retrieval]`, `[No Retrieval]` or `[Continue to Use Evidence]`. This module finds those
tokens, reads each one's group distribution from the top-k logprobs at its position (renormalised over the
group, in probability space, as the paper does), and cuts the segment where the next retrieval starts.

What it does not do: HTTP (see `reflection_chat.py`), the retrieval rule (the caller passes it in), scoring.

Fallbacks, each noted in the reading so the caller can report it:
- no logprobs, a token split across several logprobs entries (`[`, `Rel`, `evant`, `]`), or a position whose
  top-k holds no token of the group: the label is read from the text, one-hot (`source="text"`);
- a top-k that lacks some of the group's tokens: those get a floor (log-prob -100, as the reference code) and
  the reading is marked truncated;
- a group with no token at all in the segment: no reading (the caller applies its conservative default);
- bracket tokens outside the vocabulary (`[Utility:7]`) or cut in half by the length cap (`[Fully sup`) are
  removed from the text, never shown.

The prompt is the checkpoints' training format, a wire format like a JSON schema rather than wording we tune,
so it lives here and not in `prompts/`: `### Instruction:\\n{question}\\n\\n### Response:\\n{draft}`, then a
passage as `[Retrieval]<paragraph>{title}\\n{text}</paragraph>`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..labels import Decision, Relevance, Support, Utility
from .base import TokenLogprob

FLOOR_LOGPROB = -100.0
PARAGRAPH_OPEN, PARAGRAPH_CLOSE = "<paragraph>", "</paragraph>"

# The paper's vocabulary (AkariAsai/self-rag retrieval_lm/utils.py), by group, each token with our label value.
GROUPS: dict[str, dict[str, str]] = {
    "retrieve": {
        "[Retrieval]": Decision.YES.value,
        "[No Retrieval]": Decision.NO.value,
        "[Continue to Use Evidence]": Decision.CONTINUE.value,
    },
    "relevance": {"[Relevant]": Relevance.RELEVANT.value, "[Irrelevant]": Relevance.IRRELEVANT.value},
    "support": {
        "[Fully supported]": Support.FULLY.value,
        "[Partially supported]": Support.PARTIALLY.value,
        "[No support / Contradictory]": Support.NO.value,
    },
    "utility": {f"[Utility:{u.value}]": str(u.value) for u in Utility},
}
TOKEN_GROUP = {token: group for group, tokens in GROUPS.items() for token in tokens}
_KNOWN = re.compile("|".join(re.escape(t) for t in sorted(TOKEN_GROUP, key=len, reverse=True)))
_TAGS = re.compile(r"</?paragraph>|</?s>", re.IGNORECASE)
# what is left after the known tokens are gone: a bracket token of the vocabulary's shape ([Capitalised ...]),
# the opening of one that was never closed, or a lone closing half
_UNKNOWN = re.compile(r"\[[A-Z][A-Za-z /:0-9]{0,40}\]|\[(?:[A-Z][A-Za-z /:0-9]{0,40})?$|^[a-z /:0-9]{0,30}\]")
_TEMPLATE = "### Instruction:\n{question}\n\n### Response:\n{draft}"


@dataclass(frozen=True, slots=True)
class GroupReading:
    """One reflection label: the emitted (or most probable) value and the distribution over its group."""

    label: str
    probs: Mapping[str, float]  # label value -> probability, sums to 1 (one-hot when read from text)
    source: str  # logprobs | text
    truncated: bool = False  # some of the group's tokens were outside the top-k and got a floor


@dataclass(frozen=True, slots=True)
class SegmentReading:
    """What one completion wrote: the segment's text and the labels around it."""

    text: str  # reflection tokens and unknown bracket tokens removed, spaces collapsed
    relevance: GroupReading | None
    support: GroupReading | None
    utility: GroupReading | None
    decision: GroupReading | None  # at the cut; else the last retrieval-group token written; else None
    ended: str  # retrieval (cut at the next retrieval) | eos | length
    seq_prob: float | None  # geometric-mean probability of the segment's own tokens
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Mark:
    token: str
    start: int
    end: int

    @property
    def group(self) -> str:
        return TOKEN_GROUP[self.token]

    @property
    def label(self) -> str:
        return GROUPS[self.group][self.token]


def scrub(text: str) -> str:
    """Text going into a prompt (question, draft, passage) with no reflection token or paragraph tag in it: a
    document must not be able to write the model's critique or close its own passage."""
    return _TAGS.sub(" ", _KNOWN.sub(" ", text)).replace("[", "(").replace("]", ")") if text else text


def format_prompt(question: str, draft: str = "", *, paragraph: str | None = None, no_retrieval: bool = False) -> str:
    """The checkpoints' prompt: instruction, the draft so far, then a passage or the no-retrieval token."""
    prompt = _TEMPLATE.format(question=scrub(question).strip(), draft=scrub(draft).strip())
    if paragraph is not None:
        separator = " " if draft.strip() else ""
        prompt += f"{separator}[Retrieval]{PARAGRAPH_OPEN}{scrub(paragraph).strip()}{PARAGRAPH_CLOSE}"
    elif no_retrieval:
        prompt += (" " if draft.strip() else "") + "[No Retrieval]"
    return prompt


def clean(text: str) -> tuple[str, bool]:
    """The text a user may see, and whether an unknown or unbalanced bracket token had to be removed."""
    text, count = _UNKNOWN.subn(" ", _TAGS.sub(" ", _KNOWN.sub(" ", text)).strip())
    return " ".join(text.split()), count > 0


def align(text: str, tokens: Sequence[TokenLogprob], offsets: Sequence[int] | None = None) -> list[int] | None:
    """Where each token starts in `text`: from the tokens themselves when they spell the text, else from the
    endpoint's `text_offset` (made relative to the completion); None when neither fits."""
    if not tokens:
        return None
    if "".join(t.token for t in tokens) == text:
        starts, position = [], 0
        for token in tokens:
            starts.append(position)
            position += len(token.token)
        return starts
    if offsets is None or len(offsets) != len(tokens):
        return None
    base = offsets[0]
    starts = [o - base for o in offsets]
    if any(b < a for a, b in zip(starts, starts[1:], strict=False)) or starts[-1] > len(text):
        return None
    return starts


def group_probs(token: TokenLogprob, group: str) -> tuple[dict[str, float], bool] | None:
    """The group's distribution at one position: the top-k alternatives (and the chosen token) that are tokens
    of the group, summed per label, floored when missing, normalised. None when none of them is."""
    alternatives = dict(token.top)
    alternatives.setdefault(token.token, token.logprob)  # the chosen token counts even if the top-k omits it
    mass: dict[str, float] = {}
    for alt, logprob in alternatives.items():
        label = GROUPS[group].get(alt.strip())
        if label is not None and logprob is not None:
            mass[label] = mass.get(label, 0.0) + math.exp(logprob)
    if not mass:
        return None
    labels = list(GROUPS[group].values())
    truncated = len(mass) < len(labels)
    for label in labels:
        mass.setdefault(label, math.exp(FLOOR_LOGPROB))
    total = sum(mass.values())
    return {label: mass[label] / total for label in labels}, truncated


def one_hot(group: str, label: str) -> GroupReading:
    return GroupReading(label, {value: float(value == label) for value in GROUPS[group].values()}, "text")


def _at(starts: Sequence[int], position: int) -> int | None:
    index = None
    for i, start in enumerate(starts):
        if start > position:
            break
        index = i
    return index


def _token_of(text: str, marks: Sequence[_Mark], tokens: Sequence[TokenLogprob], offsets: Sequence[int] | None):
    """Mark start -> index of the token holding it: by character offsets when the tokens spell the text (or the
    endpoint's text_offset fits), else by order (the n-th reflection token of the text is the n-th token that is
    a whole reflection token). None when neither lines up."""
    starts = align(text, tokens, offsets)
    if starts is not None:
        return {m.start: i for m in marks if (i := _at(starts, m.start)) is not None}
    whole = [i for i, t in enumerate(tokens) if t.token.strip() in TOKEN_GROUP]
    if len(whole) == len(marks) and all(tokens[i].token.strip() == m.token for i, m in zip(whole, marks, strict=True)):
        return {m.start: i for m, i in zip(marks, whole, strict=True)}
    return None


def _read(
    mark: _Mark, tokens: Sequence[TokenLogprob] | None, where: Mapping[int, int] | None
) -> tuple[GroupReading, str]:
    """A mark's reading and, when it fell back to the text, why."""
    if not tokens:
        return one_hot(mark.group, mark.label), "no logprobs"
    if where is None or mark.start not in where:
        return one_hot(mark.group, mark.label), "the logprobs tokens do not line up with the text"
    token = tokens[where[mark.start]]
    if token.token.strip() != mark.token:
        return one_hot(mark.group, mark.label), f"{mark.token} split across logprobs entries"
    found = group_probs(token, mark.group)
    if found is None:
        return one_hot(mark.group, mark.label), f"no {mark.group} token in the top-k at {mark.token}"
    probs, truncated = found
    return GroupReading(mark.label, probs, "logprobs", truncated), ""


def _seq_prob(tokens: Sequence[TokenLogprob] | None, end: int) -> float | None:
    """exp(mean log-prob) of the segment's own tokens: those before token `end` that are not reflection tokens."""
    if not tokens:
        return None
    own = [
        t.logprob
        for t in tokens[:end]
        if t.token.strip() and t.token.strip() not in TOKEN_GROUP and math.isfinite(t.logprob)
    ]
    return math.exp(sum(own) / len(own)) if own else None


def read_segment(
    text: str,
    tokens: Sequence[TokenLogprob] | None,
    finish_reason: str,
    retrieves: Callable[[GroupReading], bool],
    offsets: Sequence[int] | None = None,
) -> SegmentReading:
    """One completion as a segment. It ends at the first retrieval-group token where `retrieves` says yes
    (the caller's threshold rule, so a `[No Retrieval]` the rule overrides ends it too) or where the model
    wrote `[Retrieval]` or `<paragraph>`; otherwise at the end of the text (EOS or the length cap).
    Each group's reading is its first token before the cut; the ISREL reading falls back to the first
    position's top-k when no relevance token was written (the reference code reads it there)."""
    paragraph = text.find(PARAGRAPH_OPEN)
    marks = [_Mark(m.group(0), m.start(), m.end()) for m in _KNOWN.finditer(text)]
    where = _token_of(text, marks, tokens, offsets) if tokens else None
    notes: list[str] = []
    cut, decision = None, None
    first: dict[str, GroupReading] = {}
    for mark in marks:
        if paragraph != -1 and mark.start > paragraph:
            break
        reading, why = _read(mark, tokens, where)
        if why and why not in notes:
            notes.append(why)
        if mark.group == "retrieve":
            decision = reading
            if mark.label == Decision.YES.value or retrieves(reading):
                cut = mark.start
                break
        first.setdefault(mark.group, reading)
    if paragraph != -1 and cut is None:
        cut, decision = paragraph, one_hot("retrieve", Decision.YES.value)
    body, removed = clean(text[: len(text) if cut is None else cut])
    if removed:
        notes.append("unknown or unbalanced bracket token removed")
    if "relevance" not in first and tokens:
        found = group_probs(tokens[0], "relevance")
        if found is not None:
            probs, truncated = found
            first["relevance"] = GroupReading(max(probs, key=probs.__getitem__), probs, "logprobs", truncated)
    ended = "retrieval" if cut is not None else ("length" if finish_reason == "length" else "eos")
    end_token = len(tokens or ())
    if cut is not None and tokens:
        end_token = (where or {}).get(cut, next((i for i, t in enumerate(tokens) if _opens(t, cut, text)), end_token))
    return SegmentReading(
        text=body,
        relevance=first.get("relevance"),
        support=first.get("support"),
        utility=first.get("utility"),
        decision=decision,
        ended=ended,
        seq_prob=_seq_prob(tokens, end_token),
        notes=tuple(notes),
    )


def _opens(token: TokenLogprob, cut: int, text: str) -> bool:
    """Is this the token where the cut text starts (a paragraph tag or the retrieval token)?"""
    piece = token.token.strip()
    return bool(piece) and text[cut:].startswith(piece) and (piece in TOKEN_GROUP or piece == PARAGRAPH_OPEN)


def read_decision(text: str, tokens: Sequence[TokenLogprob] | None) -> GroupReading | None:
    """The retrieval decision at the first generated position (the paper's short-form read): the group's top-k
    share there, whatever token was chosen; else a retrieval token written first, one-hot; else None."""
    if tokens:
        found = group_probs(tokens[0], "retrieve")
        if found is not None:
            probs, truncated = found
            return GroupReading(max(probs, key=probs.__getitem__), probs, "logprobs", truncated)
    match = _KNOWN.match(text.lstrip())
    if match and TOKEN_GROUP[match.group(0)] == "retrieve":
        return one_hot("retrieve", GROUPS["retrieve"][match.group(0)])
    return None


def vocabulary_seen(tokens: Sequence[TokenLogprob]) -> bool:
    """Does any position's chosen token or top-k hold a whole reflection token? (a Self-RAG checkpoint's
    first position always offers `[Retrieval]` / `[No Retrieval]`)."""
    return any(alt.strip() in TOKEN_GROUP for token in tokens for alt in (token.token, *(a for a, _ in token.top)))
