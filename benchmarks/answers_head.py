"""Which abstention rule holds beyond the answers it was fitted on: the cut on P(relevant)·P(supported) against the
cut on the answers head (`fit.critic.fit_answers_head`), both fitted by `selfrag critic cut`'s rule.

    python benchmarks/answers_head.py FIT.jsonl HELD.jsonl     fit on FIT, count on HELD (judged candidates)
    python benchmarks/answers_head.py FIT.jsonl --folds 5      cross-validation by question on FIT alone

FIT and HELD are judgments of training runs (`selfrag bench judgments`), each holding answerable questions and
questions made unanswerable (`--unanswerable`); a question of HELD that FIT holds too is left out. For each rule
it prints the right answers the cut loses and the unanswerable questions it abstains on (as `selfrag critic cut`
counts them: an unanswerable question is abstained on when none of its candidates reaches the cut), and how well
the answer support ranks right answers above unanswerable questions' (AUROC). No model is called.
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import replace
from pathlib import Path

from selfrag.bench.metrics import auroc
from selfrag.cli.critic import read_judgments
from selfrag.engine.calibration import CriticModel, load_critic_model
from selfrag.errors import SelfRagError
from selfrag.fit.critic import KEEP, KEEP_CONFIDENCE, MIN_UNANSWERABLE, JudgedRow, answers_under, fit_abstain_cut


def rules(model: CriticModel, rows: list[JudgedRow], confidence: float) -> dict[str, CriticModel]:
    """The two rules fitted on `rows` under `model`'s heads: the product's cut, and the answers head with its cut."""
    answerable = [row for row in rows if row.answerable]  # no unanswerable questions: no answers head is fitted
    product, _ = fit_abstain_cut(replace(model, answers=None), answerable, KEEP, confidence)
    head, fit = fit_abstain_cut(model, rows, KEEP, confidence)
    if not fit.answers_head:
        raise SelfRagError(f"{fit.unanswerable} unanswerable questions are too few for the head ({MIN_UNANSWERABLE})")
    return {"P(rel)·P(sup)": product, "answers head": head}


def counts(model: CriticModel, rows: list[JudgedRow]) -> tuple[list[float], list[float]]:
    """The right answers' support and the unanswerable questions' best support, under `model`."""
    answers = answers_under(model, rows)
    right = [a.support for a in answers if a.answerable and a.correct]
    return right, [a.best_support for a in answers if not a.answerable]


def main() -> int:
    try:
        return _main()
    except SelfRagError as error:
        print(f"answers_head: error: {error}", file=sys.stderr)
        return 2


def _main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("fit", help="judged candidates to fit on")
    parser.add_argument("held", nargs="?", help="judged candidates to count on")
    parser.add_argument("--folds", type=int, default=0, help="cross-validate by question on FIT instead")
    parser.add_argument("--repeats", type=int, default=10, help="cross-validation: shuffles of the questions")
    parser.add_argument("--confidence", type=float, default=KEEP_CONFIDENCE, help="the cut's confidence")
    args = parser.parse_args()
    if bool(args.held) == bool(args.folds):
        parser.error("give HELD or --folds, not both")
    model = load_critic_model()
    rows = read_judgments(Path(args.fit))
    tallies: dict[str, list[tuple[list[float], list[float], float]]] = {}
    if args.held:
        seen = {row.question for row in rows}  # seeds draw from one training pool: a question fitted on is not held
        held = [row for row in read_judgments(Path(args.held)) if row.question not in seen]
        print(f"{len({row.question for row in held})} questions held apart (those also in FIT left out)")
        for name, fitted in rules(model, rows, args.confidence).items():
            tallies[name] = [(*counts(fitted, held), fitted.abstain_threshold)]
    else:
        questions = sorted({(row.question, row.answerable) for row in rows})
        for repeat in range(args.repeats):
            order = questions[:]
            random.Random(repeat).shuffle(order)
            for fold in range(args.folds):
                out = set(order[fold :: args.folds])
                inside = [row for row in rows if (row.question, row.answerable) not in out]
                apart = [row for row in rows if (row.question, row.answerable) in out]
                for name, fitted in rules(model, inside, args.confidence).items():
                    tallies.setdefault(name, []).append((*counts(fitted, apart), fitted.abstain_threshold))
    for name, parts in tallies.items():
        lost = sum(sum(v < cut for v in right) for right, _, cut in parts)
        right = sum(len(r) for r, _, _ in parts)
        abstained = sum(sum(v < cut for v in unanswerable) for _, unanswerable, cut in parts)
        unanswerable = sum(len(u) for _, u, _ in parts)
        pooled_right = [v for r, _, _ in parts for v in r]
        pooled_other = [v for _, u, _ in parts for v in u]
        score = auroc(pooled_right + pooled_other, [True] * len(pooled_right) + [False] * len(pooled_other))
        cuts = sorted(cut for _, _, cut in parts)
        print(
            f"{name:14s} cut {cuts[len(cuts) // 2]:.4f}: right answers lost {_share(lost, right)}, "
            f"unanswerable abstained {_share(abstained, unanswerable)}, AUROC "
            + ("-" if score is None else f"{score:.3f}")
        )
    return 0


def _share(part: int, whole: int) -> str:
    return f"{part} of {whole}" + (f" ({part / whole:.1%})" if whole else "")


if __name__ == "__main__":
    raise SystemExit(main())
