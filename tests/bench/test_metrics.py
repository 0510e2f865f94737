"""Metrics worked by hand."""

from __future__ import annotations

import math

import pytest

from selfrag.bench import metrics as m


def test_squad_normalisation_drops_case_punctuation_articles_and_spaces():
    assert m.normalize_answer("  The  Eiffel-Tower, in   PARIS! ") == "eiffeltower in paris"
    assert m.normalize_answer("an apple a day") == "apple day"


def test_lenient_match_is_the_papers_case_sensitive_substring():
    assert m.lenient_match("It was Paris, I think", ["Paris"]) == 1.0
    assert m.lenient_match("it was paris", ["Paris"]) == 0.0  # case-sensitive, as the reference code
    assert m.lenient_match("anything", ["no", "thing"]) == 1.0  # any gold
    assert m.lenient_match("", ["x"]) == 0.0


def test_exact_match_after_normalisation():
    assert m.exact_match("the Eiffel Tower.", ["Eiffel Tower"]) == 1.0
    assert m.exact_match("Eiffel Tower in Paris", ["Eiffel Tower"]) == 0.0


def test_token_f1_by_hand():
    # prediction tokens: eiffel tower paris (3); gold: eiffel tower (2); common 2 -> P 2/3, R 1 -> F1 0.8
    assert m.token_f1("The Eiffel Tower, Paris", ["Eiffel Tower"]) == pytest.approx(0.8)
    # best over golds
    assert m.token_f1("red car", ["blue car", "red car"]) == 1.0
    # yes/no must match exactly
    assert m.token_f1("yes it is", ["yes"]) == 0.0
    assert m.token_f1("no", ["yes"]) == 0.0
    assert m.token_f1("anything", []) == 0.0


def test_answer_in_needs_whole_words():
    assert m.answer_in("It is in Oregon, USA.", ["Oregon"]) == 1.0
    assert m.answer_in("Oregonian food", ["Oregon"]) == 0.0
    assert m.answer_in("Pizza Hut", ["pizza hut"]) == 1.0


def test_label_accuracy_and_macro_f1_by_hand():
    golds = ["S", "S", "C", "N"]
    preds = ["S", "C", "C", None]
    assert m.label_accuracy(golds, preds) == 0.5
    # S: tp1 fp0 fn1 -> 2/3; C: tp1 fp1 fn0 -> 2/3; N: tp0 -> 0; mean 4/9
    assert m.macro_f1(golds, preds, ["S", "C", "N"]) == pytest.approx(4 / 9)


def test_balanced_accuracy_and_auroc():
    golds = [True, True, False, False]
    assert m.balanced_accuracy(golds, [True, False, False, False]) == pytest.approx((0.5 + 1.0) / 2)
    assert m.balanced_accuracy([True, True], [True, False]) is None
    assert m.auroc([0.9, 0.4, 0.4, 0.1], golds) == pytest.approx((1 + 1 + 0.5 + 1) / 4)


def test_coverage_evidence_mass_and_citation_support():
    assert m.coverage(["a#0", "b#0"], ["b#0"]) == 1.0
    assert m.coverage(["a#0"], ["b#0"]) == 0.0
    assert m.coverage(["a#0"], []) is None
    assert m.evidence_mass(["a#0", "b#0", "b#0"], ["b#0"]) == pytest.approx(2 / 3)
    assert m.evidence_mass([], ["b#0"]) is None
    precision, recall = m.citation_support(["b#0/1", "b#0/2", "a#0/0"], ["b#0/1", "b#0/3"])
    assert precision == pytest.approx(1 / 3) and recall == pytest.approx(1 / 2)
    assert m.citation_support([], ["x"]) == (None, 0.0)
    assert m.citation_support(["x"], []) == (None, None)


def test_align_sentence_picks_the_most_overlapping_sentence():
    sentences = ["Paris is in France.", "The tower is 330 metres tall.", ""]
    assert m.align_sentence("The Eiffel tower is 330 metres tall", sentences) == 1
    assert m.align_sentence("nothing shared", sentences) is None


def test_ece_and_bins_by_hand():
    confidences = [0.95, 0.95, 0.15, 0.15, 1.0]
    correct = [1, 0, 0, 0, 1]
    bins = m.reliability_bins(confidences, correct)
    last = bins[-1]
    assert last.count == 3 and last.accuracy == pytest.approx(2 / 3)  # 1.0 falls in the last bin
    assert last.confidence == pytest.approx((0.95 + 0.95 + 1.0) / 3)
    assert bins[1].count == 2 and bins[1].accuracy == 0.0
    expected = 3 / 5 * abs(2 / 3 - 2.9 / 3) + 2 / 5 * abs(0 - 0.15)
    assert m.ece(confidences, correct) == pytest.approx(expected)
    assert m.ece([], []) is None


def test_the_ece_of_a_calibrated_engine_matches_drawing_its_answers_from_its_confidences():
    import random
    from dataclasses import asdict

    rng = random.Random(0)
    confidences = [rng.choice((0.05, 0.3, 0.45, 0.8)) for _ in range(100)]
    bins = [asdict(b) for b in m.reliability_bins(confidences, [0] * len(confidences))]
    drawn = [m.ece(confidences, [rng.random() < c for c in confidences]) for _ in range(2000)]
    assert m.calibrated_ece(bins) == pytest.approx(sum(drawn) / len(drawn), rel=0.1)  # noise, not miscalibration
    assert m.calibrated_ece([asdict(b) for b in m.reliability_bins([0.5] * 400, [0] * 400)]) == pytest.approx(
        (2 * 0.25 / (math.pi * 400)) ** 0.5
    )  # it shrinks with the square root of the answers
    assert m.calibrated_ece([{"count": 0, "confidence": None}]) is None


def test_bootstrap_mean_interval_contains_the_mean_and_skips_undefined_values():
    values = [1.0, 0.0, None, 1.0, 1.0]
    mean, low, high, n = m.bootstrap_mean(values, seed=1)
    assert n == 4 and mean == pytest.approx(0.75)
    assert 0.0 <= low <= mean <= high <= 1.0
    assert m.bootstrap_mean([None, None]) == (None, None, None, 0)
    constant = m.bootstrap_mean([0.5] * 10)
    assert constant[1] == constant[2] == 0.5


def test_bootstrap_is_seeded():
    values = [float(i % 3 == 0) for i in range(40)]
    assert m.bootstrap_mean(values, seed=3) == m.bootstrap_mean(values, seed=3)
    value, low, high = m.bootstrap_statistic(40, lambda idx: sum(values[i] for i in idx) / len(idx), seed=3)
    assert low <= value <= high and not math.isnan(value)


def test_risk_coverage_and_its_area():
    from selfrag.bench.metrics import aurc, risk_coverage

    points = risk_coverage([0.9, 0.1, 0.5], [1.0, 0.0, 1.0])
    assert [c for c, _ in points] == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert [r for _, r in points] == pytest.approx([0.0, 0.0, 1 / 3])
    perfect = aurc([0.9, 0.8, 0.1, 0.2], [1.0, 1.0, 0.0, 0.0])
    inverted = aurc([0.1, 0.2, 0.9, 0.8], [1.0, 1.0, 0.0, 0.0])
    assert perfect < inverted and aurc([], []) is None


def test_break_even_interpolates_where_the_sweep_meets_plain_rag():
    from selfrag.bench.plots import break_even

    def row(label, correct):
        return {"label": label, "summary": {"metrics": {"correct": {"value": correct}}}}

    rows = [
        row("rag", 0.22),
        row("selfrag+oracle0", 0.40),
        row("selfrag+oracle0.25", 0.25),
        row("selfrag+oracle0.5", 0.10),
    ]
    assert break_even(rows)["break_even"] == pytest.approx(0.70)
    assert break_even([row("rag", 0.5), row("selfrag+oracle0", 0.4)])["break_even"] is None
    assert break_even([row("selfrag+oracle0", 0.4)]) is None


def _record(*flags: str | None) -> dict:
    candidates = [{"flag": flag} for flag in flags]
    return {"status": "ok", "prediction": "x", "answers": ["x"], "candidates": candidates, "usage": {}}


def test_sentences_about_the_document_are_counted_only_in_runs_that_have_them():
    from selfrag.bench.score import _declined, summarize

    older = summarize([_record("restates_question", None), _record("unsupported")], task="qa")
    assert "flag_about_the_document" not in older["metrics"]  # a run scored before the rule still checks equal
    assert _declined(older) == "1/0/0/1"
    newer = summarize([_record("about_the_document", "unsupported"), _record(None)], task="qa")
    assert newer["metrics"]["flag_about_the_document"]["value"] == 0.5
    assert _declined(newer) == "0/0/0/1/1"


def test_later_reasons_keep_their_places_in_the_declined_column():
    from selfrag.bench.score import _declined, summarize

    amounts = summarize([_record("no_amount", "unsupported"), _record(None)], task="qa")
    assert "flag_about_the_document" not in amounts["metrics"]
    assert _declined(amounts) == "0/0/0/1/0/1"  # none about the document, one stating no amount
    both = summarize([_record("no_amount", "about_the_document"), _record("no_amount")], task="qa")
    assert _declined(both) == "0/0/0/0/1/2"


def test_grounding_flags_take_the_places_after_the_earlier_ones():
    from selfrag.bench.score import _declined, summarize

    grounded = summarize([_record("quoted", "unstated", "unsupported"), _record("quoted")], task="qa")
    assert _declined(grounded) == "0/0/0/1/0/0/1/2"  # about the document, no amount, unstated, quoted


def test_unstated_counts_answered_questions_that_state_what_their_documents_do_not():
    from selfrag.bench.score import summarize

    records = [
        {**_record(), "unstated": ["1985"]},
        {**_record(), "unstated": []},
        {**_record(), "unstated": [], "abstained": True},  # an abstention states nothing to count
        {**_record(), "unstated": ["x"], "status": "failed"},
        _record(),  # made before it was counted
    ]
    metric = summarize(records, task="qa")["metrics"]["unstated"]
    assert (metric["value"], metric["n"]) == (0.5, 2)
    assert "unstated" not in summarize([_record(), _record()], task="qa")["metrics"]  # older runs check equal


def test_calls_and_tokens_per_prompt_are_means_over_every_question():
    """A question that never asked a prompt counts 0 for it; runs recorded before the counts have none."""
    from selfrag.bench.score import by_prompt, summarize

    usage = [
        {"by_prompt": {"generate_fused": [5, 1000], "answer_lead": [1, 300]}},
        {"by_prompt": {"generate_fused": [3, 600]}},
        {},  # a question that failed before any reply
    ]
    assert by_prompt(usage) == {
        "answer_lead": {"calls": round(1 / 3, 3), "tokens": 100.0},
        "generate_fused": {"calls": round(8 / 3, 3), "tokens": round(1600 / 3, 1)},
    }
    records = [{"status": "ok", "prediction": "x", "answers": ["x"], "usage": u} for u in usage]
    assert "by_prompt" in summarize(records, task="qa")
    assert "by_prompt" not in summarize([{**r, "usage": {}} for r in records], task="qa")
