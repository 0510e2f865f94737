"""Reading label probabilities from token logprobs of a JSON reply."""

from __future__ import annotations

import math

import pytest

from selfrag.llm.base import TokenLogprob as T
from selfrag.llm.logprobs import label_distribution, mean_token_prob
from selfrag.testing import fake_logprobs


def test_value_token_after_a_quote_token():
    text = '{"relevance": "relevant"}'
    tokens = fake_logprobs(text, {"relevance": {"relevant": 0.6, "irrelevant": 0.3}})
    dist = label_distribution(text, tokens, "relevance", ["relevant", "irrelevant"])
    assert dist is not None
    assert dist.probs["relevant"] == pytest.approx(0.6 / 0.9)
    assert not dist.truncated


def test_quote_fused_into_the_value_token_and_case_variants_summed():
    text = '{"support":"fully"}'
    tokens = (
        T('{"', 0.0),
        T("support", 0.0),
        T('":"', 0.0),
        T(
            "fully",
            math.log(0.5),
            (("fully", math.log(0.5)), ("Fully", math.log(0.1)), ("part", math.log(0.2)), ("no", math.log(0.2))),
        ),
        T('"}', 0.0),
    )
    dist = label_distribution(text, tokens, "support", ["fully", "partially", "no"])
    assert dist.probs == pytest.approx({"fully": 0.6, "partially": 0.2, "no": 0.2})


def test_token_spanning_the_opening_quote():
    text = '{"retrieve": "yes"}'
    tokens = (
        T('{"retrieve":', 0.0),
        T(' "yes', math.log(0.7), ((' "yes', math.log(0.7)), (' "no', math.log(0.3)))),
        T('"}', 0.0),
    )
    dist = label_distribution(text, tokens, "retrieve", ["yes", "no", "continue"])
    assert dist.probs["yes"] == pytest.approx(0.7, abs=1e-9)
    assert dist.truncated  # "continue" was not listed: floored, and marked


def test_integer_labels():
    text = '{"utility": 4}'
    tokens = fake_logprobs(text, {"utility": {"4": 0.5, "5": 0.25, "3": 0.25}})
    dist = label_distribution(text, tokens, "utility", ["1", "2", "3", "4", "5"])
    assert dist.probs["4"] == pytest.approx(0.5)
    assert dist.probs["1"] < 1e-30


def test_no_label_listed_means_no_distribution():
    text = '{"relevance": "relevant"}'
    tokens = fake_logprobs(text, {"relevance": {"banana": 1.0}})
    assert label_distribution(text, tokens, "relevance", ["relevant", "irrelevant"]) is None
    assert label_distribution(text, (), "relevance", ["relevant"]) is None


def test_tokens_that_do_not_spell_the_text_are_ignored():
    tokens = (T("something else", 0.0),)
    assert label_distribution('{"relevance": "relevant"}', tokens, "relevance", ["relevant"]) is None


def test_sentence_probability_is_the_geometric_mean_over_the_sentence_tokens_only():
    text = '{"sentence": "Paris wins", "x": 1}'
    tokens = list(fake_logprobs(text, {}))
    tokens = [
        T(t.token, math.log(0.5) if t.token in ("Paris", "wins") else (math.log(0.01) if t.token == "x" else 0.0))
        for t in tokens
    ]
    # tokens inside the value: "Paris", " ", "wins" -> mean logprob = (2 log 0.5 + 0) / 3
    assert mean_token_prob(text, tokens, "sentence") == pytest.approx(math.exp(2 * math.log(0.5) / 3))
