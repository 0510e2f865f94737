"""Retrieval strategies: fusion, reranking, freshness, windows, context order, and the Retriever."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from selfrag.errors import ConfigError
from selfrag.retrieval import Searcher, as_searcher
from selfrag.retrieval.chunking import ChunkingSettings, chunk_documents
from selfrag.retrieval.formats import Document
from selfrag.retrieval.fusion import rrf, weighted_fusion
from selfrag.retrieval.index import Index, IndexSettings
from selfrag.retrieval.strategies import (
    RetrievalSettings,
    Retriever,
    freshness_bonus,
    order_for_context,
    rerank_overlap,
    widen,
)
from selfrag.schema import Chunk, Hit, Meter

from .helpers import chunk


def hits(*pairs: tuple[str, float]) -> list[Hit]:
    return [Hit(chunk(name, 0, f"text of {name}"), score) for name, score in pairs]


def names(found: Sequence[Hit]) -> list[str]:
    return [h.chunk.doc_id for h in found]


def test_rrf_on_a_hand_worked_example() -> None:
    a = hits(("x", 9.0), ("y", 5.0), ("z", 1.0))
    b = hits(("y", 0.9), ("w", 0.8), ("x", 0.1))
    fused = rrf([a, b], k=60)
    # y: 1/61 + 1/62 = 0.032522;  x: 1/61 + 1/63 = 0.032266;  w: 1/62 = 0.016129;  z: 1/63 = 0.015873
    assert names(fused) == ["y", "x", "w", "z"]
    assert [h.score for h in fused] == pytest.approx([1 / 61 + 1 / 62, 1 / 61 + 1 / 63, 1 / 62, 1 / 63])
    weighted = rrf([a, b], k=60, weights=[3.0, 1.0])
    assert names(weighted) == ["x", "y", "z", "w"]  # x: 3/61 + 1/63 beats y: 3/62 + 1/61


def test_weighted_fusion_normalises_each_list() -> None:
    a = hits(("x", 10.0), ("y", 6.0), ("z", 2.0))  # normalised 1, 0.5, 0
    b = hits(("y", 3.0), ("w", 2.0), ("x", 1.0))  # normalised 1, 0.5, 0
    assert [(h.chunk.doc_id, h.score) for h in weighted_fusion([a, b])] == [
        ("y", 1.5), ("x", 1.0), ("w", 0.5), ("z", 0.0)
    ]  # fmt: skip
    # x and y tie at 2.0: the tie goes to the earlier appearance (x, rank 1 of the first list)
    assert names(weighted_fusion([a, b], [2.0, 1.0]))[:2] == ["x", "y"]
    assert weighted_fusion([hits(("only", 4.0))])[0].score == 1.0


def test_freshness_bonus_prefers_the_newer_policy_on_a_near_tie() -> None:
    policies = [
        chunk("policy-2024", 0, "Customers may return items within 14 days of delivery.", date="2024-03-01"),
        chunk("policy-2026", 0, "Customers may return items within 30 days of delivery.", date="2026-04-15"),
        chunk("shipping", 0, "Delivery takes five business days.", date="2026-05-01"),
    ]
    index = Index.build(policies)
    question = "How many days do customers have to return items?"
    plain = Retriever(index).find_relevant_chunks(question, 2)
    fresh = Retriever(index, RetrievalSettings(freshness=0.05)).find_relevant_chunks(question, 2)
    assert names(plain) == ["policy-2024", "policy-2026"]
    assert names(fresh) == ["policy-2026", "policy-2024"]
    assert "30 days" in fresh[0].chunk.text


def test_freshness_does_not_overturn_clearly_better_evidence() -> None:
    found = hits(("strong-old", 10.0), ("weak-new", 6.0), ("undated", 5.0))
    dated = [Hit(Chunk(h.chunk.doc_id, 0, h.chunk.text, date=d), h.score)
             for h, d in zip(found, ["2019-01-01", "2026-01-01", None], strict=True)]  # fmt: skip
    assert names(freshness_bonus(dated, weight=0.05)) == ["strong-old", "weak-new", "undated"]
    assert freshness_bonus(found) == found  # nothing dated: unchanged


def test_lexical_rerank_favours_chunks_with_all_query_terms() -> None:
    chunks = [
        chunk("repeat", 0, "Solar solar solar power. Solar farms and solar roofs."),
        chunk("complete", 0, "Panel efficiency of solar cells improves every year."),
        chunk("other", 0, "Wind turbines need maintenance."),
    ]
    index = Index.build(chunks)
    found = index.find_relevant_chunks("solar panel efficiency", 3)
    assert names(rerank_overlap("solar panel efficiency", found, index, weight=0.0)) == names(found)
    reranked = rerank_overlap("solar panel efficiency", found, index, weight=0.5)
    assert names(reranked)[0] == "complete"
    assert rerank_overlap("the of", found, index) == found


def test_context_order_puts_the_best_at_both_ends() -> None:
    ranked = hits(*[(str(i), 10.0 - i) for i in range(1, 6)])
    assert names(order_for_context(ranked)) == ["1", "3", "5", "4", "2"]
    assert order_for_context([]) == []


@pytest.fixture
def manual() -> Index:
    pages = [chunk("manual", i, f"Page {i} of the manual.") for i in range(8)]
    return Index.build([*pages, chunk("other", 0, "Another document entirely.")])


def test_window_widens_and_merges_overlapping_neighbours(manual: Index) -> None:
    found = [
        Hit(manual.get_chunk("manual", 1), 5.0),
        Hit(manual.get_chunk("other", 0), 4.0),
        Hit(manual.get_chunk("manual", 2), 3.0),
        Hit(manual.get_chunk("manual", 6), 1.0),
    ]
    widened = widen(manual, found, radius=1)
    assert [(h.chunk.key, h.score) for h in widened] == [("manual#0", 5.0), ("other#0", 4.0), ("manual#5", 1.0)]
    assert widened[0].chunk.text == " ".join(f"Page {i} of the manual." for i in range(4))
    assert widened[2].chunk.text == "Page 5 of the manual. Page 6 of the manual. Page 7 of the manual."
    touching = widen(manual, found, radius=0)  # adjacent hits still merge into one contiguous passage
    assert [h.chunk.key for h in touching] == ["manual#1", "other#0", "manual#6"]
    assert touching[0].chunk.text == "Page 1 of the manual. Page 2 of the manual."


def test_window_joins_overlapping_token_chunks_without_repeating_text() -> None:
    text = " ".join(f"w{i}" for i in range(60))
    settings = ChunkingSettings(mode="tokens", max_tokens=10, overlap=3, tokenizer="whitespace")
    chunks = chunk_documents([Document("doc", text)], settings).chunks
    index = Index.build(chunks, chunking=settings)
    (merged,) = widen(index, [Hit(index.get_chunk("doc", 2), 1.0)], radius=1)
    start = text.index(chunks[1].text)
    assert merged.chunk.text == text[start : text.index(chunks[3].text) + len(chunks[3].text)]


def test_window_strategy_through_the_retriever(manual: Index) -> None:
    manual = Index.build([*manual.loop_over_chunks(), chunk("manual", 8, "The warranty card is on this page.")])
    retriever = Retriever(manual, RetrievalSettings(strategy="window", window=1))
    (top,) = retriever.find_relevant_chunks("warranty card", 1)
    assert top.chunk.key == "manual#7"
    assert top.chunk.text == "Page 7 of the manual. The warranty card is on this page."


def test_stemmed_plus_unstemmed_fusion(pet_index: Index) -> None:
    fused = Retriever(pet_index, RetrievalSettings(fusion="rrf"))
    weighted = Retriever(pet_index, RetrievalSettings(fusion="weighted"))
    assert names(fused.find_relevant_chunks("cats purring", 2))[0] == "cats"
    assert names(weighted.find_relevant_chunks("barking dogs", 1)) == ["dogs"]
    with pytest.raises(ConfigError, match="unstemmed_view"):
        Retriever(Index.build([chunk("a", 0, "words")]), RetrievalSettings(fusion="rrf"))


class FixedSource:
    """A stand-in for a future ranked source (dense retrieval, query variants)."""

    def __init__(self, found: list[Hit]) -> None:
        self.found = found

    def find_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return [self.found[:k] for _ in queries]


def test_extra_ranked_sources_plug_into_fusion(pet_index: Index) -> None:
    from selfrag.retrieval.strategies import IndexView

    dense = FixedSource([Hit(pet_index.get_chunk("fish", 0), 0.9)])
    retriever = Retriever(
        pet_index, RetrievalSettings(fusion="rrf"), sources=[(IndexView(pet_index), 1.0), (dense, 2.0)]
    )
    assert names(retriever.find_relevant_chunks("cats at dusk", 3))[0] == "fish"


def test_rerank_and_batch_through_the_retriever(pet_index: Index) -> None:
    retriever = Retriever(pet_index, RetrievalSettings(rerank=True))
    batch = retriever.find_many(["dogs walks", "", "kittens"], 2)
    assert [len(b) for b in batch] == [2, 0, 1]
    assert batch == [retriever.find_relevant_chunks(q, 2) for q in ["dogs walks", "", "kittens"]]


@pytest.mark.parametrize(
    "kwargs", [{"strategy": "mmr"}, {"fusion": "max"}, {"window": -1}, {"freshness": 2.0}, {"rrf_k": 0}]
)
def test_bad_retrieval_settings(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        RetrievalSettings(**kwargs)  # type: ignore[arg-type]


def test_index_settings_validation() -> None:
    with pytest.raises(ConfigError):
        IndexSettings(method="bm25+")
    with pytest.raises(ConfigError):
        IndexSettings(stemmer="klingon")


def test_a_plain_retriever_is_asked_through_asearch_with_each_group_fused_by_rrf(pet_index: Index) -> None:
    searcher = as_searcher(pet_index)  # an Index offers only find_relevant_chunks
    assert isinstance(searcher, Searcher) and as_searcher(Retriever(pet_index)) is not searcher
    (fused, alone) = asyncio.run(searcher.asearch([["cats at dusk", "goldfish memory"], ["dogs"]], 3, Meter()))
    lists = [pet_index.find_relevant_chunks(q, 3) for q in ("cats at dusk", "goldfish memory")]
    assert fused == rrf(lists, k=60)[:3] and alone == pet_index.find_relevant_chunks("dogs", 3)
