"""Chunking: stable ids, metadata carried over, duplicate collapse, linear time, and properties."""

from __future__ import annotations

import time
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selfrag.errors import ConfigError
from selfrag.retrieval.chunking import ChunkingSettings, chunk_documents, collapse_duplicates, split_spans
from selfrag.retrieval.formats import Document
from selfrag.tokens import TiktokenCounter, WhitespaceCounter

from .helpers import chunk

WS = WhitespaceCounter()
SENTENCES = ChunkingSettings(mode="sentences", max_tokens=12, tokenizer="whitespace")
TOKENS = ChunkingSettings(mode="tokens", max_tokens=10, overlap=3, tokenizer="whitespace")
LONG_TEXT = " ".join(f"Sentence number {i} talks about topic {i % 7} in some detail." for i in range(40))


def keys(document: Document, chunking: ChunkingSettings) -> list[tuple[str, str]]:
    return [(c.key, c.text) for c in chunk_documents([document], chunking).chunks]


@pytest.mark.parametrize("chunking", [SENTENCES, TOKENS])
def test_chunk_ids_are_stable_and_unaffected_by_later_edits(chunking: ChunkingSettings) -> None:
    document = Document("guide.md", LONG_TEXT, title="Guide")
    first = keys(document, chunking)
    assert first == keys(document, chunking)
    assert [k for k, _ in first] == [f"guide.md#{i}" for i in range(len(first))]
    edited = Document("guide.md", LONG_TEXT + " A brand new closing sentence was appended here.", title="Guide")
    assert keys(edited, chunking)[: len(first) - 1] == first[:-1]  # only the tail may change


def test_chunks_keep_title_source_and_date() -> None:
    document = Document("a", LONG_TEXT, title="T", source="src/a.md", date="2026-04-01")
    chunks = chunk_documents([document], SENTENCES).chunks
    assert len(chunks) > 1
    assert {(c.doc_id, c.title, c.source, c.date) for c in chunks} == {("a", "T", "src/a.md", "2026-04-01")}


def test_document_mode_is_one_chunk_per_document() -> None:
    documents = [Document("a", "  First doc.  Two sentences. "), Document("b", "Second."), Document("c", "   ")]
    chunks = chunk_documents(documents, ChunkingSettings(mode="document", tokenizer="whitespace")).chunks
    assert [(c.key, c.text) for c in chunks] == [("a#0", "First doc.  Two sentences."), ("b#0", "Second.")]


def test_near_duplicates_collapse_to_the_newest_copy() -> None:
    chunks = [
        chunk("old", 0, "Returns are accepted within 30 days.", date="2023-01-01"),
        chunk("new", 0, "RETURNS are accepted   within 30 days!", date="2026-04-01"),
        chunk("undated", 0, "returns are accepted within 30 days"),
        chunk("other", 0, "Shipping is free over 50 euros.", date="2020-01-01"),
    ]
    assert [c.doc_id for c in collapse_duplicates(chunks)] == ["new", "other"]


def test_dedupe_counts_and_can_be_turned_off() -> None:
    documents = [Document(f"copy{i}", "The same passage, copied again.") for i in range(3)]
    on = chunk_documents(documents, ChunkingSettings(mode="document", tokenizer="whitespace"))
    off = chunk_documents(documents, ChunkingSettings(mode="document", tokenizer="whitespace", dedupe=False))
    assert (len(on.chunks), on.duplicates) == (1, 2)
    assert (len(off.chunks), off.duplicates) == (3, 0)


def test_50mb_single_line_without_spaces_is_chunked_in_bounded_time_and_memory() -> None:
    text = "ab" * (25 * 2**20)  # 50 MiB, one line, no whitespace
    for chunking in (
        ChunkingSettings(mode="tokens", max_tokens=512, overlap=64, tokenizer="whitespace"),
        ChunkingSettings(mode="sentences", max_tokens=512, tokenizer="whitespace"),
    ):
        started = time.monotonic()
        tracemalloc.start()
        try:
            spans = split_spans(text, chunking, WS)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert time.monotonic() - started < 20
        # Measured: 2.7 MiB (one 2 MiB piece at a time). Any copy, split or lower() of the text costs 50 MiB.
        assert peak < 16 * 2**20, f"peak {peak / 2**20:.1f} MiB"
        assert spans[0][0] == 0 and spans[-1][1] == len(text)
        assert max(end - start for start, end in spans) <= 512 * 4096


def test_one_megabyte_line_with_tiktoken_is_linear_enough() -> None:
    counter = TiktokenCounter()
    text = "x" * 2**20
    started = time.monotonic()
    spans = split_spans(text, ChunkingSettings(mode="tokens", max_tokens=256, overlap=0), counter)
    assert time.monotonic() - started < 10
    assert "".join(text[a:b] for a, b in spans) == text
    assert max(counter.count(text[a:b]) for a, b in spans) <= 256 + 2


def test_tiktoken_chunks_respect_the_token_budget() -> None:
    counter = TiktokenCounter()
    text = LONG_TEXT + " Überprüfung der Größe: 日本語のテキストも含まれます。" * 20
    chunking = ChunkingSettings(mode="tokens", max_tokens=64, overlap=8)
    spans = split_spans(text, chunking, counter)
    assert all(counter.count(text[a:b]) <= 64 + 2 for a, b in spans)
    packed = split_spans(text, ChunkingSettings(mode="sentences", max_tokens=64), counter)
    assert all(counter.count(text[a:b]) <= 64 + 4 for a, b in packed)


@pytest.mark.parametrize(
    "kwargs",
    [{"mode": "pages"}, {"max_tokens": 4}, {"mode": "tokens", "overlap": 256}, {"overlap": -1}, {"tokenizer": "gpt2"}],
)
def test_bad_settings_are_config_errors(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        ChunkingSettings(**kwargs)  # type: ignore[arg-type]


# properties -------------------------------------------------------------------------------------------------

alphabet = st.sampled_from(list("abcxyz .!?\n\t") + ["é", "日", "  ", "Mr. ", "3.5 "])
texts = st.lists(alphabet, max_size=400).map("".join) | st.text(max_size=300)
modes = st.sampled_from(["sentences", "tokens"])


def check_spans(text: str, spans: list[tuple[int, int]], overlapping: bool) -> None:
    covered = bytearray(len(text))
    previous_start, previous_end = -1, 0
    for start, end in spans:
        assert 0 <= start < end <= len(text)
        assert text[start:end] == text[start:end].strip()  # trimmed, non-empty
        assert start > previous_start  # in order
        if not overlapping:
            assert start >= previous_end  # disjoint
        else:
            assert start <= previous_end or text[previous_end:start].strip() == ""  # no gap with text in it
        covered[start:end] = b"\x01" * (end - start)
        previous_start, previous_end = start, end
    assert all(covered[i] or text[i].isspace() for i in range(len(text)))  # every non-space char covered


@settings(max_examples=200, deadline=None, database=None)
@given(text=texts, mode=modes, max_tokens=st.integers(8, 30), overlap=st.integers(0, 7))
def test_spans_cover_text_in_order_within_budget(text: str, mode: str, max_tokens: int, overlap: int) -> None:
    chunking = ChunkingSettings(mode=mode, max_tokens=max_tokens, overlap=overlap, tokenizer="whitespace")
    spans = split_spans(text, chunking, WS)
    check_spans(text, spans, overlapping=mode == "tokens" and overlap > 0)
    assert all(WS.count(text[a:b]) <= max_tokens for a, b in spans)
    assert spans == split_spans(text, chunking, WS)  # deterministic


pieces = st.sampled_from(["ab", " ", "é", "xyzw" * 300, "\n", ". ", "日本"])
long_texts = st.lists(pieces, min_size=50, max_size=400).map("".join)


@settings(max_examples=50, deadline=None, database=None)
@given(text=long_texts, max_tokens=st.integers(8, 64))
def test_long_texts_cross_segment_boundaries_safely(text: str, max_tokens: int) -> None:
    chunking = ChunkingSettings(mode="tokens", max_tokens=max_tokens, overlap=0, tokenizer="whitespace")
    spans = split_spans(text, chunking, WS)
    check_spans(text, spans, overlapping=False)
    assert all(WS.count(text[a:b]) <= max_tokens for a, b in spans)
