"""The retrieval decision rule: the paper's soft threshold with logprobs, the retrieve-leaning label rule without."""

from __future__ import annotations

import pytest

from selfrag.labels import Decision as D
from selfrag.llm.replies import decide


@pytest.mark.parametrize(
    ("dist", "threshold", "expected"),
    [
        ({"yes": 0.3, "no": 0.7, "continue": 0.0}, 0.2, D.YES),  # p_ret 0.3 > 0.2
        ({"yes": 0.15, "no": 0.85, "continue": 0.0}, 0.2, D.NO),  # 0.15 <= 0.2
        ({"yes": 0.1, "no": 0.8, "continue": 0.1}, 0.2, D.NO),  # p_ret exactly 0.2: not above
        ({"yes": 0.1, "no": 0.75, "continue": 0.15}, 0.2, D.CONTINUE),  # continue counted with yes; P(c) > P(y)
        ({"yes": 0.3, "no": 0.7, "continue": 0.0}, 0.5, D.NO),  # a larger threshold retrieves less
        ({"yes": 0.01, "no": 0.99, "continue": 0.0}, 0.0, D.YES),  # threshold 0: always retrieve
    ],
)
def test_soft_rule(dist, threshold, expected):
    decision, p_ret = decide("no", dist, threshold, has_cache=True)
    assert decision is expected
    assert p_ret == pytest.approx((dist["yes"] + dist["continue"]) / sum(dist.values()))


def test_soft_rule_overrides_the_emitted_label():
    # the model wrote "no", but P(yes) = 0.3 > 0.2: the paper retrieves
    assert decide("no", {"yes": 0.3, "no": 0.7, "continue": 0.0}, 0.2, has_cache=False)[0] is D.YES


def test_continue_without_cached_chunks_means_yes():
    assert decide("continue", {"yes": 0.1, "no": 0.1, "continue": 0.8}, 0.2, has_cache=False)[0] is D.YES
    assert decide("continue", None, 0.2, has_cache=False)[0] is D.YES
    assert decide("continue", None, 0.2, has_cache=True)[0] is D.CONTINUE


@pytest.mark.parametrize(
    ("label", "expected"),
    [("yes", D.YES), ("no", D.NO), (" NO ", D.NO), ("maybe", D.YES), ("", D.YES), ("retrieve", D.YES)],
)
def test_without_logprobs_only_a_valid_no_skips_retrieval(label, expected):
    decision, p_ret = decide(label, None, 0.2, has_cache=True)
    assert decision is expected
    assert p_ret is None
