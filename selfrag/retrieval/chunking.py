"""Splitting documents into chunks, and collapsing duplicate chunks at ingestion.

Splitters (`ChunkingSettings.mode`):
- `sentences`: whole sentences (and lines) packed greedily up to `max_tokens`; a sentence longer than that
  is split by tokens. Sizes are sums of per-sentence counts (whitespace between sentences included).
- `tokens`: windows of `max_tokens` tokens that overlap by `overlap` tokens.
- `document`: one chunk per document, whatever its size.

Every chunk is a whitespace-trimmed slice of its document's text, so chunks appear in text order and together
cover every non-space character; chunk ids are positions (0, 1, ...) inside the document, stable across
rebuilds for the same text and settings. Chunks keep their document's title, source and date.

Linear time: text is first cut into segments of at most `SEGMENT_CHARS` characters (at a space when one is
near), and each segment is tokenised on its own, so one 50 MB line without spaces costs the same per byte as
prose. A token window's size is exact for the segment encoding; re-encoding a chunk on its own can differ
by a token or two at its edges with BPE tokenizers.

Duplicates: chunks whose text is equal after normalisation (NFKC, case-folded, punctuation and whitespace
dropped) are collapsed to one, keeping the copy with the newest date (undated counts as oldest; ties keep
the first in input order), so repeated copies of a passage never gain weight. Edited copies (a word
changed) are not detected: this is exact matching on normalised text, not MinHash.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from itertools import pairwise

import numpy as np

from ..errors import ConfigError
from ..schema import Chunk
from ..tokens import TokenOffsets, make_counter
from .formats import Document

MODES = ("sentences", "tokens", "document")
SEGMENT_CHARS = 4096
_SENTENCE_END = re.compile(r"[.!?\u3002\uff01\uff1f]+[\"'\u201d\u2019)\]]*(?=\s)|\n")
_WORDS = re.compile(r"\w+")

Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class ChunkingSettings:
    """How documents become chunks; recorded in the index manifest."""

    mode: str = "sentences"  # the splitter: sentences | tokens | document
    max_tokens: int = 256  # most tokens per chunk (sentences, tokens)
    overlap: int = 32  # tokens shared by consecutive windows (tokens mode only; ignored otherwise)
    tokenizer: str = "cl100k_base"  # cl100k_base | whitespace
    dedupe: bool = True  # collapse chunks equal after normalisation, keeping the newest

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"splitter {self.mode!r} is unknown; use one of {', '.join(MODES)}")
        if not 8 <= self.max_tokens <= 1_000_000:
            raise ConfigError(f"chunk size {self.max_tokens} is out of range; use 8 to 1000000 tokens")
        if self.overlap < 0 or (self.mode == "tokens" and self.overlap >= self.max_tokens):
            raise ConfigError(
                f"chunk overlap {self.overlap} must be at least 0 and below the chunk size {self.max_tokens}"
            )
        if self.tokenizer not in ("cl100k_base", "whitespace"):
            raise ConfigError(f"chunking tokenizer {self.tokenizer!r} is unknown; use cl100k_base or whitespace")

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> ChunkingSettings:
        return cls(**data)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Chunked:
    chunks: tuple[Chunk, ...]
    duplicates: int  # chunks dropped as copies of another


def chunk_documents(
    documents: Iterable[Document], settings: ChunkingSettings, counter: TokenOffsets | None = None
) -> Chunked:
    """Chunks of every document in order, duplicates collapsed when `settings.dedupe`."""
    counter = counter or make_counter(settings.tokenizer)
    chunks = [chunk for document in documents for chunk in chunk_document(document, settings, counter)]
    if not settings.dedupe:
        return Chunked(tuple(chunks), 0)
    kept = collapse_duplicates(chunks)
    return Chunked(tuple(kept), len(chunks) - len(kept))


def chunk_document(document: Document, settings: ChunkingSettings, counter: TokenOffsets) -> list[Chunk]:
    d = document
    return [
        Chunk(d.doc_id, number, text, d.title, d.source, d.date)
        for number, text in enumerate(split_text(d.text, settings, counter))
    ]


def split_text(text: str, settings: ChunkingSettings, counter: TokenOffsets) -> list[str]:
    """The chunk texts of one document."""
    return [text[start:end] for start, end in split_spans(text, settings, counter)]


def split_spans(text: str, settings: ChunkingSettings, counter: TokenOffsets) -> list[Span]:
    """(start, end) character offsets of each chunk; trimmed, non-empty, in order."""
    if settings.mode == "document":
        return [span for span in [_trim(text, 0, len(text))] if span]
    if settings.mode == "tokens":
        return token_spans(text, settings.max_tokens, settings.overlap, counter)
    return sentence_spans(text, settings.max_tokens, counter)


def token_spans(text: str, max_tokens: int, overlap: int, counter: TokenOffsets) -> list[Span]:
    """Windows of `max_tokens` tokens, each starting `max_tokens - overlap` tokens after the previous one."""
    starts = _token_starts(text, counter)
    spans: list[Span] = []
    first, stride = 0, max_tokens - overlap
    while first < len(starts):
        last = first + max_tokens
        end = int(starts[last]) if last < len(starts) else len(text)
        span = _trim(text, int(starts[first]), end)
        if span:
            spans.append(span)
        if last >= len(starts):
            break
        first += stride
    return spans


def sentence_spans(text: str, max_tokens: int, counter: TokenOffsets) -> list[Span]:
    """Whole sentences packed greedily up to `max_tokens`; oversized sentences are split by tokens."""
    spans: list[Span] = []
    start, end, used = -1, -1, 0  # the pack being built (start < 0: empty)
    for unit_start, unit_end in _sentence_units(text):
        unit = text[unit_start:unit_end]
        size = counter.count(unit) if len(unit) <= SEGMENT_CHARS else max_tokens + 1
        if size > max_tokens:
            if start >= 0:
                spans.append((start, end))
            start, used = -1, 0
            spans.extend((unit_start + a, unit_start + b) for a, b in token_spans(unit, max_tokens, 0, counter))
            continue
        if start >= 0 and used + size > max_tokens:
            spans.append((start, end))
            start, used = -1, 0
        start, end, used = (unit_start if start < 0 else start), unit_end, used + size
    if start >= 0:
        spans.append((start, end))
    return [trimmed for s, e in spans if (trimmed := _trim(text, s, e))]


def _sentence_units(text: str) -> list[Span]:
    """Consecutive slices that partition the text, each ending at a sentence end or a line break."""
    bounds = [match.end() for match in _SENTENCE_END.finditer(text)]
    edges = [0, *bounds, len(text)]
    return [(a, b) for a, b in pairwise(edges) if b > a]


def _token_starts(text: str, counter: TokenOffsets) -> np.ndarray:
    parts = [np.asarray(counter.token_starts(text[a:b]), dtype=np.int64) + a for a, b in _segments(text)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _segments(text: str, limit: int = SEGMENT_CHARS) -> list[Span]:
    """Cuts of at most `limit` characters, at the last space or line break of the second half when there is one."""
    spans, start = [], 0
    while start < len(text):
        end = min(start + limit, len(text))
        if end < len(text):
            cut = max(text.rfind(" ", start + limit // 2, end), text.rfind("\n", start + limit // 2, end))
            end = cut if cut > start else end
        spans.append((start, end))
        start = end
    return spans


def _trim(text: str, start: int, end: int) -> Span | None:
    piece = text[start:end]
    stripped = piece.lstrip()
    if not stripped:
        return None
    start += len(piece) - len(stripped)
    return start, start + len(stripped.rstrip())


def dedupe_key(text: str) -> str:
    """What two chunks must share to count as copies: their words, NFKC-normalised and case-folded."""
    words = " ".join(_WORDS.findall(unicodedata.normalize("NFKC", text).casefold()))
    return hashlib.blake2b(words.encode("utf-8"), digest_size=16).hexdigest()


def collapse_duplicates(chunks: Sequence[Chunk]) -> list[Chunk]:
    """One chunk per normalised text, the newest by date (first on ties), in input order."""
    best: dict[str, int] = {}
    for position, chunk in enumerate(chunks):
        key = dedupe_key(chunk.text)
        if key not in best or (chunk.date or "") > (chunks[best[key]].date or ""):
            best[key] = position
    keep = set(best.values())
    return [chunk for position, chunk in enumerate(chunks) if position in keep]
