"""The paper's scoring formula, row by row, and the beam's pruning rules (pure functions)."""

from __future__ import annotations

import pytest

from selfrag.engine.beam import Weights, aggregate, best, is_finished, prune, s_rel, s_sup, s_use, score
from selfrag.labels import Relevance as R
from selfrag.labels import Support as S
from selfrag.labels import Utility as U
from selfrag.schema import Beam, Chunk, Critique, Segment

W = Weights()  # 1.0 / 1.0 / 0.5


def one_hot(kind, label):
    return {member: 1.0 if member is label else 0.0 for member in kind}


def critique(rel=None, sup=None, use=U.U5, **kw):
    return Critique(
        utility=use if isinstance(use, dict) else one_hot(U, use),
        is_final=kw.get("is_final", False),
        relevance=None if rel is None else (rel if isinstance(rel, dict) else one_hot(R, rel)),
        support=None if sup is None else (sup if isinstance(sup, dict) else one_hot(S, sup)),
        seq_prob=kw.get("seq_prob"),
    )


@pytest.mark.parametrize(
    ("rel", "sup", "use", "expected"),
    [
        # one-hot rows: w_rel*s_rel + w_sup*s_sup + w_use*s_use, u = (-1, -0.5, 0, 0.5, 1)
        (R.RELEVANT, S.FULLY, U.U5, 1.0 + 1.0 + 0.5 * 1.0),  # 2.5, the maximum
        (R.RELEVANT, S.PARTIALLY, U.U4, 1.0 + 0.5 + 0.5 * 0.5),  # 1.75
        (R.RELEVANT, S.NO, U.U3, 1.0 + 0.0 + 0.0),  # 1.0
        (R.IRRELEVANT, S.FULLY, U.U2, 0.0 + 1.0 + 0.5 * -0.5),  # 0.75
        (R.IRRELEVANT, S.NO, U.U1, 0.0 + 0.0 + 0.5 * -1.0),  # -0.5, the minimum: scores can be negative
    ],
)
def test_one_hot_rows(rel, sup, use, expected):
    assert score(critique(rel, sup, use), W) == pytest.approx(expected)


def test_probabilistic_row_worked_by_hand():
    rel = {R.RELEVANT: 0.8, R.IRRELEVANT: 0.2}
    sup = {S.FULLY: 0.5, S.PARTIALLY: 0.3, S.NO: 0.2}
    use = {U.U1: 0.0, U.U2: 0.1, U.U3: 0.2, U.U4: 0.3, U.U5: 0.4}
    # s_rel = 0.8; s_sup = 0.5 + 0.5*0.3 = 0.65; s_use = -0.05 + 0 + 0.15 + 0.4 = 0.5
    assert s_rel(rel) == pytest.approx(0.8)
    assert s_sup(sup) == pytest.approx(0.65)
    assert s_use(use) == pytest.approx(0.5)
    assert score(critique(rel, sup, use), W) == pytest.approx(0.8 + 0.65 + 0.25)
    assert score(critique(rel, sup, use), Weights(2.0, 0.5, 1.0)) == pytest.approx(1.6 + 0.325 + 0.5)


def test_each_label_set_is_normalised_on_its_own():
    # unnormalised mass (e.g. truncated logprobs) is divided by the set's total
    assert s_rel({R.RELEVANT: 0.3, R.IRRELEVANT: 0.1}) == pytest.approx(0.75)
    assert s_sup({S.FULLY: 0.2, S.PARTIALLY: 0.2, S.NO: 0.0}) == pytest.approx(0.75)


def test_seqscore_term_only_when_asked_and_available():
    c = critique(R.RELEVANT, S.FULLY, U.U5, seq_prob=0.9)
    assert score(c, W) == pytest.approx(2.5)
    assert score(c, Weights(use_seqscore=True)) == pytest.approx(3.4)
    assert score(critique(R.RELEVANT, S.FULLY, U.U5), Weights(use_seqscore=True)) == pytest.approx(2.5)


def test_segment_without_evidence_has_no_score():
    assert score(critique(use=U.U5), W) is None


def seg(text, f, use=U.U3, chunk=True):
    c = critique(R.RELEVANT if chunk else None, S.FULLY if chunk else None, use)
    return Segment(text, c, Chunk("d", 0, text) if chunk else None, f)


def test_aggregate_is_the_mean_so_longer_drafts_are_not_favoured():
    short = (seg("a", 2.0),)
    long = (seg("a", 2.0), seg("b", 1.0), seg("c", 1.0))
    assert aggregate(short, W) == pytest.approx(2.0)
    assert aggregate(long, W) == pytest.approx(4.0 / 3)
    assert aggregate(short, W) > aggregate(long, W)  # a plain sum would say 4.0 > 2.0


def test_no_retrieval_segment_leaves_the_aggregate_unchanged():
    backed = (seg("a", 1.5),)
    assert aggregate((*backed, seg("b", None, use=U.U1, chunk=False)), W) == pytest.approx(1.5)


def test_beam_without_evidence_ranks_by_utility_only():
    segments = (seg("a", None, use=U.U5, chunk=False), seg("b", None, use=U.U3, chunk=False))
    assert aggregate(segments, W) == pytest.approx(0.5 * (1.0 + 0.0) / 2)


def beam(id_, text, agg, final=False, n=1):
    segments = tuple(seg(f"{text} {i}", agg) for i in range(n))
    return Beam(id_, segments, final=final, aggregate=agg)


def test_prune_keeps_top_b_by_aggregate():
    kept = prune([beam("0.0", "x", 1.0), beam("0.1", "y", 2.0), beam("0.2", "z", 1.5)], 2)
    assert [b.id for b in kept] == ["0.1", "0.2"]


def test_prune_collapses_identical_drafts_keeping_the_better():
    a = Beam("0.0", (seg("Same text.", 1.0),), aggregate=1.0)
    b = Beam("0.1", (seg("same  TEXT.", 2.0),), aggregate=2.0)
    c = Beam("0.2", (seg("Other.", 0.5),), aggregate=0.5)
    kept = prune([a, b, c], 2)
    assert [k.id for k in kept] == ["0.1", "0.2"]


def test_finished_beams_compete_with_unfinished_ones():
    done = beam("0.0", "done", 2.0, final=True)
    kept = prune([done, beam("0.0.1", "longer", 1.0, n=2), beam("0.0.2", "other", 1.9, n=2)], 1)
    assert kept == (done,)


def test_ties_break_deterministically_on_length_then_id():
    a, b, c = beam("0.2", "a", 1.0, n=2), beam("0.1", "b", 1.0, n=2), beam("0.3", "c", 1.0, n=1)
    assert [k.id for k in prune([a, b, c], 3)] == ["0.3", "0.1", "0.2"]
    assert [k.id for k in prune([c, b, a], 3)] == ["0.3", "0.1", "0.2"]
    # the eleventh candidate of a step comes after the third, as its number says
    tied = [beam("0.10", "j", 1.0), beam("0.2", "k", 1.0), beam("0.11", "l", 1.0), beam("0.3", "m", 1.0)]
    assert [k.id for k in prune(tied, 4)] == ["0.2", "0.3", "0.10", "0.11"]


def test_stop_when_every_kept_beam_is_final_or_at_max_depth():
    assert is_finished([beam("a", "a", 1, final=True), beam("b", "b", 1, n=3)], max_depth=3)
    assert not is_finished([beam("a", "a", 1, final=True), beam("b", "b", 1, n=2)], max_depth=3)
    assert best([beam("a", "a", 1.0), beam("b", "b", 3.0)]).id == "b"
