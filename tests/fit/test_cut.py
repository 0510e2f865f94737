"""The abstention cut `selfrag calibrate` fits: on answers rated by heads fitted without their question, keeping
the share of right answers asked, and saying what it does and what it cannot promise."""

from __future__ import annotations

import math
import random
from dataclasses import replace

from selfrag.fit.critic import MIN_CUT_RIGHT, JudgedRow, cross_fitted_cut, fit_critic, lost_bound

OTHER = "Jaws is a 1975 American thriller film directed by Steven Spielberg, based on the novel by Peter Benchley."


def questions(n: int, seed: int = 0) -> list[JudgedRow]:
    """n questions, each with a right sentence from its chunk, a wrong one from another chunk, and its twin asked
    with its chunk held out (a sentence copied from a chunk about another film); the model's own labels are noisy,
    so the answers' support spreads and the two kinds overlap."""
    draw = random.Random(seed)
    rows = []
    for i in range(n):
        question = f"Who directed film number {i} of the studio?"
        chunk = f"Film number {i} of the studio was directed by Ann Lee {i} in 19{50 + i % 50}."
        right = JudgedRow(question, f"Ann Lee {i} directed film number {i}.", chunk, True, True, 0, 1.0, True,
                          draw.uniform(0.3, 1.0), draw.uniform(0.3, 1.0), correct=True)  # fmt: skip
        wrong = replace(right, sentence="Orson Welles directed it.", chunk=OTHER, relevant=False, supported=False,
                        rank=1, score_rel=0.5, quote_ok=False, model_rel=draw.uniform(0.0, 0.6),
                        model_sup=draw.uniform(0.0, 0.6), correct=False)  # fmt: skip
        elsewhere = f"Film number {i} of the other studio was directed by Bo Kim in 1990."
        held = replace(right, sentence=f"Bo Kim directed film number {i}.", chunk=elsewhere, relevant=False,
                       supported=False, score_rel=draw.uniform(0.3, 1.0), model_rel=draw.uniform(0.0, 0.9),
                       model_sup=draw.uniform(0.0, 0.9), correct=False, answerable=False)  # fmt: skip
        rows += [right, wrong, held]
    return rows


def test_the_cut_keeps_the_share_asked_of_right_answers_rated_out_of_fold_and_says_what_it_does():
    rows = questions(60)
    cut = cross_fitted_cut(rows, keep=0.9)
    assert cut.right >= MIN_CUT_RIGHT and cut.unanswerable == 60
    assert cut.cut > 0 and cut.right - cut.kept == math.floor(0.1 * cut.right)  # the most it may lose, and no fewer
    assert 0 < cut.abstained < 60  # the held-out questions' answers it would abstain on, counted
    assert cut.bound == lost_bound(cut.right - cut.kept, cut.right, 0.95) > 0.1  # 60 answers promise little more
    said = cut.describe()
    assert f"keeps {cut.kept} of {cut.right} right answers" in said and f"{cut.abstained} of 60 unanswerable" in said
    stricter = cross_fitted_cut(rows, keep=0.97)
    assert stricter.cut < cut.cut and stricter.kept > cut.kept and stricter.abstained <= cut.abstained
    assert cross_fitted_cut(random.Random(3).sample(rows, len(rows)), keep=0.9) == cut  # order does not matter


def test_too_few_right_answers_fit_no_cut_and_say_why():
    cut = cross_fitted_cut(questions(MIN_CUT_RIGHT - 1), keep=0.9)
    assert cut.cut == 0.0 and cut.right == MIN_CUT_RIGHT - 1
    assert cut.describe() == f"none: {MIN_CUT_RIGHT - 1} right answers out of 5 folds, fewer than {MIN_CUT_RIGHT}"


def test_a_fold_whose_other_rows_cannot_be_fitted_fits_no_cut():
    rows = questions(30)
    alone = rows[0].question  # the only question with a relevant row: the fold holding it leaves one class
    rows = [row if row.question == alone else replace(row, relevant=False) for row in rows]
    assert fit_critic(rows).relevant is not None  # all the rows fit
    cut = cross_fitted_cut(rows, keep=0.9)
    assert cut.cut == 0.0 and cut.describe().startswith("none: without one fold's questions the rows cannot be fitted")
