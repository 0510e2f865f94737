"""The closed-set protocol: each chunk's verdict scored f, f summed per label across chunks, best sum wins."""

from __future__ import annotations

import asyncio

import pytest
from helpers import by_document

from selfrag import Chunk, Config
from selfrag.bench import claims
from selfrag.bench import datasets as ds
from selfrag.bench.systems import BenchPrompts, Context, System
from selfrag.testing import ListRetriever, ScriptedChatModel

from .fixtures import write_scifact

CHUNKS = [
    Chunk("a", 0, "Paris is the capital of France and its largest city."),
    Chunk("b", 0, "Some say the capital of France moved to Lyon."),
    Chunk("c", 0, "Lyon claims to be the capital of France."),
]


def verdict(label, support="fully", utility=5, relevance="relevant", evidence=None, text=""):
    return {"relevance": relevance, "label": label, "evidence": text if evidence is None else evidence,
            "support": support, "utility": utility}  # fmt: skip


def context(tmp_path, chat):
    data = ds.load("scifact", write_scifact(tmp_path / "s"))
    return Context(data, ListRetriever(CHUNKS), {c.key: c for c in CHUNKS}, BenchPrompts(), chat)


SCRIPT = {
    "retrieve_decide": {"retrieve": "yes", "query": "capital of France"},
    "verify_claim": by_document(
        {
            "a": verdict("supports", "fully", 5, text="Paris is the capital of France"),  # f = 1 + 1 + 0.5 = 2.5
            "b": verdict("refutes", "partially", 3, text="capital of France moved to Lyon"),  # f = 1 + 0.5 + 0 = 1.5
            "c": verdict("refutes", "partially", 3, text="Lyon claims to be the capital"),  # f = 1.5
        }
    ),
}


def test_label_sums_and_ties_by_hand():
    candidates = [{"label": "SUPPORT", "f": 2.5}, {"label": "CONTRADICT", "f": 1.5}, {"label": "CONTRADICT", "f": 1.0}]
    sums = claims.label_sums(candidates)
    assert sums == {"SUPPORT": 2.5, "CONTRADICT": 2.5, "NEI": 0.0}
    assert claims.pick_label(sums, candidates) == "CONTRADICT"  # tie on the sum: more votes wins
    one_each = [{"label": "NEI", "f": 1.0}, {"label": "SUPPORT", "f": 1.0}]
    assert claims.pick_label(claims.label_sums(one_each), one_each) == "SUPPORT"  # then label order
    negative = [{"label": "NEI", "f": -0.5}]
    assert claims.pick_label(claims.label_sums(negative), negative) == "NEI"  # an unvoted 0 never wins


def test_summed_scores_beat_the_single_best_candidate(tmp_path):
    chat = ScriptedChatModel(SCRIPT)
    system = System("selfrag", Config(nonce_seed="t", ndocs=3))
    example = ds.load("scifact", write_scifact(tmp_path / "s")).examples[0]
    outcome = asyncio.run(claims.closed_set(system, example, context(tmp_path, chat)))
    assert outcome.label_scores == {"SUPPORT": 2.5, "CONTRADICT": 3.0, "NEI": 0.0}
    assert outcome.label == "CONTRADICT"
    assert outcome.citations == ["b#0", "c#0"]  # the chunks that voted for the winner
    assert outcome.confidence == pytest.approx(0.5)  # mean s_sup of the voters (partially = 0.5)
    assert outcome.usage["llm_calls"] == 4 and outcome.retrieved == ["a#0", "b#0", "c#0"]


def test_weights_enter_the_sum(tmp_path):
    chat = ScriptedChatModel(SCRIPT)
    system = System("selfrag", Config(nonce_seed="t", ndocs=3, w_rel=0.0, w_sup=3.0, w_use=0.0, mode="always"))
    example = ds.load("scifact", write_scifact(tmp_path / "s")).examples[0]
    outcome = asyncio.run(claims.closed_set(system, example, context(tmp_path, chat)))
    assert outcome.label_scores == {"SUPPORT": 3.0, "CONTRADICT": 3.0, "NEI": 0.0}
    assert outcome.label == "CONTRADICT"  # tie on the sum, two votes against one
    assert chat.calls_to("retrieve_decide") == []  # mode always skips the decision


def test_an_unbacked_quote_downgrades_support_before_scoring(tmp_path):
    script = dict(SCRIPT, verify_claim=by_document({
        "a": verdict("supports", "fully", 5, evidence="Paris has two moons"),  # quote not in the chunk
        "b": verdict("refutes", "no", 1), "c": verdict("nei", "no", 1, relevance="irrelevant")}))  # fmt: skip
    system = System("selfrag", Config(nonce_seed="t", ndocs=3, mode="always"))
    example = ds.load("scifact", write_scifact(tmp_path / "s")).examples[0]
    outcome = asyncio.run(claims.closed_set(system, example, context(tmp_path, ScriptedChatModel(script))))
    supports = next(s for s in outcome.segments if s["chunk"] == "a#0")
    assert supports["support"] == "partially" and supports["quote_ok"] is False
    assert supports["f"] == pytest.approx(1 + 0.5 + 0.5)
    assert outcome.label == "SUPPORT"


def test_adaptive_no_answers_without_documents(tmp_path):
    chat = ScriptedChatModel({"retrieve_decide": {"retrieve": "no", "query": ""},
                              "verify_claim_direct": {"label": "refutes"}})  # fmt: skip
    system = System("selfrag", Config(nonce_seed="t"))
    example = ds.load("scifact", write_scifact(tmp_path / "s")).examples[0]
    outcome = asyncio.run(claims.closed_set(system, example, context(tmp_path, chat)))
    assert outcome.label == "CONTRADICT" and outcome.usage["retrieval_frequency"] == 0.0
    assert outcome.retrieved is None and outcome.confidence is None


def test_separate_critic_judges_a_sentence_stating_the_verdict(tmp_path):
    critique = {"relevance": "relevant", "evidence": "", "support": "no", "utility": 2, "is_final": True,
                "retrieve_next": "no", "next_query": ""}  # fmt: skip
    chat = ScriptedChatModel(dict(SCRIPT, critique_candidate=critique))
    system = System("selfrag", Config(nonce_seed="t", ndocs=3, mode="always", critic="separate"))
    example = ds.load("scifact", write_scifact(tmp_path / "s")).examples[0]
    outcome = asyncio.run(claims.closed_set(system, example, context(tmp_path, chat)))
    sentences = sorted(
        call.messages[1].content.rsplit("Sentence to judge: ", 1)[1] for call in chat.calls_to("critique_candidate")
    )
    claim = example.question
    assert sentences == sorted([claim, f"It is not true that {claim}", f"It is not true that {claim}"])
    assert all(s["support"] == "no" for s in outcome.segments)
