"""Prompt prefixes kept in the batch context's cache from one batch to the next (the planning only, no model).

A step's candidates share their prompt up to the document, and the next step (or the next question) starts with
the same system prompt again: about 400 of a 1,100-token round. Instead of clearing the cache after a batch,
the decoder keeps the prefix common to all of the batch's prompts (its trunk) under a keeper sequence of its
own, and the next batch that starts with the same tokens copies those cells into its sequences instead of
evaluating them again. `KeptPrefixes` decides which keeper to read and which to overwrite; `BatchDecoder`
applies its plans to llama.cpp's cache.

- Only the trunk of a batch of several prompts is kept (a step's candidates): a lone request's trunk is its whole
  prompt, document and all. Kept cells are not free: every sequence of every later batch attends over all the
  cells of the unified cache, masked or not, so a keeper that a batch does not read makes its every decoding
  step slower (measured: keeping the retrieval decision's prompt as well cost the candidates' round more than
  its reuse saved). Hence one keeper by default (`slots`; with more, the least recently used is overwritten).
- Every prompt still evaluates at least its last token (its first reply token is sampled from those logits), so
  at most `len(prompt) - 1` tokens are read from a keeper.
- A keeper read for fewer than `min_reuse` tokens (a shared chat-template header) is not overwritten with the
  batch's trunk: the least recently used one is.
- A trunk is kept up to `max_tokens`; a trunk shorter than `min_reuse` is not kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens `a` and `b` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


@dataclass(frozen=True, slots=True)
class Reuse:
    """What a batch reads from the cache: `tokens` leading tokens of every prompt, from keeper `slot`."""

    slot: int | None
    tokens: int


@dataclass(frozen=True, slots=True)
class Keep:
    """What a batch leaves in the cache: keeper `slot` drops its cells from position `start` on and takes the
    batch's cells of positions [start, end) (from a sequence that holds the whole trunk)."""

    slot: int
    start: int
    end: int


def trunk(prompts: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """The tokens every prompt starts with."""
    if not prompts:
        return ()
    first = prompts[0]
    return tuple(first[: min(common_prefix(first, p) for p in prompts)])


class KeptPrefixes:
    """The bookkeeping of the keepers: which prefix each holds, and in which order they were used."""

    def __init__(self, slots: int = 1, *, max_tokens: int = 1024, min_reuse: int = 32) -> None:
        if slots < 1 or max_tokens < 1 or min_reuse < 1:
            raise ValueError("kept prefixes need at least one slot, max_tokens >= 1 and min_reuse >= 1")
        self.slots, self.max_tokens, self.min_reuse = slots, max_tokens, min_reuse
        self.prefixes: list[tuple[int, ...]] = [() for _ in range(slots)]
        self._order = list(range(slots))  # least recently used first

    @property
    def cells(self) -> int:
        """Cache cells the keepers hold."""
        return sum(len(p) for p in self.prefixes)

    def forget(self) -> None:
        """Nothing is kept any more (the caller clears the cache)."""
        self.prefixes = [() for _ in range(self.slots)]

    def reuse(self, prompts: Sequence[Sequence[int]]) -> Reuse:
        """The keeper the prompts share the longest prefix with, and how many tokens each reads from it."""
        if not prompts:
            return Reuse(None, 0)
        best = Reuse(None, 0)
        for slot, kept in enumerate(self.prefixes):
            tokens = min(min(common_prefix(kept, p), len(p) - 1) for p in prompts)
            if tokens > best.tokens:
                best = Reuse(slot, tokens)
        if best.slot is not None:
            self._touch(best.slot)
        return best

    def keep(self, prompts: Sequence[Sequence[int]], read: Reuse) -> Keep | None:
        """After the batch: where its trunk goes (None for a lone prompt, or a trunk too short to be worth keeping)."""
        kept_trunk = trunk(prompts)[: self.max_tokens]
        if len(prompts) < 2 or len(kept_trunk) < self.min_reuse:
            return None
        slot = read.slot if read.slot is not None and read.tokens >= self.min_reuse else self._order[0]
        start = common_prefix(self.prefixes[slot], kept_trunk)
        self.prefixes[slot] = kept_trunk
        self._touch(slot)
        return Keep(slot, start, len(kept_trunk))

    def _touch(self, slot: int) -> None:
        self._order.remove(slot)
        self._order.append(slot)
