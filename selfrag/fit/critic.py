"""Fitting the critic's weights from judged rows: the heads, the support threshold, the answers head, the
confidence map, the answered head and the abstention cut, each refitted alone or all at once.

Used by `selfrag critic fit|cut|map`, `selfrag bench fit-*` and the benchmarks; the engine never imports it
(it reads and checks the weights file, `engine.calibration`). Fitting is L2-regularised logistic regression by
Newton's method in numpy: small, deterministic, no dependency beyond numpy.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..engine.calibration import (
    ANSWERED_FEATURES,
    CHECKED_FEATURES,
    LEAD_POOL,
    LEAD_RUNS,
    CandidateView,
    CriticModel,
    Head,
    Platt,
    answer_inputs,
    finite,
    logit,
)
from ..engine.evidence import vector
from ..errors import InputError

MIN_ROWS = 20  # fewer judged rows than this cannot fit twelve weights
MIN_MAP_ANSWERS = 20  # fewer answered questions than this cannot fit the confidence map alone
# the answered head's regularisation is chosen among these by held-out log loss over FOLDS folds: where its inputs
# do not rank answers it was not fitted on, the strongest flattens it to the answers' right rate
L2_GRID, FOLDS = (0.1, 1.0, 10.0, 100.0, 1000.0), 5
CHECK_GAIN = 0.01  # the model's check is read where it lowers the answers' held-out log loss by this much each
MIN_UNANSWERABLE = 20  # the answers head is fitted from this many questions made unanswerable on
# the abstention cut keeps 92 % of the judged right answers, promised at 95 % confidence. The margin over the 90 %
# aimed at is the engine's own: a declined sentence can change the answer, so the engine loses more right answers
# than the judged candidates show (docs/decisions.md, the abstention cut)
KEEP, KEEP_CONFIDENCE = 0.92, 0.95
# `selfrag calibrate` fits its cut on answers rated out of fold (`cross_fitted_cut`): with fewer right answers
# than this, one lost is over 5 % and the cut would rest on one or two answers
MIN_CUT_RIGHT = 20


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, iterations: int = 50) -> Head:
    """L2-regularised logistic regression (the bias is not penalised) by Newton's method."""
    rows, width = x.shape
    design = np.hstack([x, np.ones((rows, 1))])
    beta = np.zeros(width + 1)
    penalty = np.eye(width + 1) * l2
    penalty[-1, -1] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(design @ beta, -30, 30)))
        gradient = design.T @ (p - y) + penalty @ beta
        hessian = design.T @ (design * (p * (1 - p))[:, None]) + penalty + np.eye(width + 1) * 1e-9
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return Head(tuple(float(v) for v in beta[:-1]), float(beta[-1]))


def chosen_l2(x: np.ndarray, y: np.ndarray, grid: Sequence[float] = L2_GRID, folds: int = FOLDS) -> float:
    """The regularisation of `grid` whose fits predict held-out rows best (summed log loss over `folds` folds,
    each class dealt round the folds so every fold's training rows hold both); the middle of the grid where a
    class has fewer rows than folds. Ties go to the stronger regularisation."""
    losses = held_out_losses(x, y, grid, folds)
    if losses is None:
        return 1.0
    best = min(losses)
    return max(l2 for l2, loss in zip(grid, losses, strict=True) if loss <= best + 1e-9)


def held_out_losses(
    x: np.ndarray, y: np.ndarray, grid: Sequence[float] = L2_GRID, folds: int = FOLDS
) -> list[float] | None:
    """For each regularisation of `grid`, the summed log loss of fits on the other folds over each fold's rows
    (`chosen_l2`'s folds); None where a class has fewer rows than folds."""
    labels = y.astype(bool)
    if min(int(labels.sum()), int((~labels).sum())) < folds:
        return None
    fold = np.empty(len(y), dtype=int)
    for members in (np.flatnonzero(labels), np.flatnonzero(~labels)):
        fold[members] = np.arange(len(members)) % folds
    losses = []
    for l2 in grid:
        loss = 0.0
        for k in range(folds):
            head = fit_logistic(x[fold != k], y[fold != k], l2=l2)
            p = np.clip([head.probability(row) for row in x[fold == k]], 1e-6, 1 - 1e-6)
            loss -= float(np.sum(y[fold == k] * np.log(p) + (1 - y[fold == k]) * np.log(1 - p)))
        losses.append(loss)
    return losses


def fit_platt(p: Sequence[float], y: Sequence[bool]) -> Platt:
    """Platt scaling of `p` against `y`, never falling: a fit whose confidence drops as the support grows says
    more of the few right answers it saw than of support, so it is flattened to their share, the same confidence
    for every answer."""
    x = np.array([[logit(v)] for v in p])
    target = np.array(y, dtype=float)
    head = fit_logistic(x, target, l2=0.01)
    if head.weights[0] >= 0 or not 0 < target.mean() < 1:
        return Platt(head.weights[0], head.bias)
    return Platt(0.0, logit(float(target.mean())))


def abstain_cut(right: Sequence[float], keep: float = KEEP, confidence: float = KEEP_CONFIDENCE) -> float:
    """The abstention cut on answer support from the right answers of training questions: the highest cut for
    which, with `confidence`, at most 1 - `keep` of right answers fall under it beyond these rows (a one-sided
    Clopper-Pearson bound on the share lost, so a cut fitted on few answers keeps a margin instead of promising
    on them alone); 0 (never abstain) when too few right answers promise it even for a cut under all of them."""
    ordered, limit = sorted(right), 1 - keep
    n = len(ordered)
    if not n or lost_bound(0, n, confidence) > limit:
        return 0.0
    low, high = 0, n - 1  # the most right answers allowed under the cut: the bound grows with them
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if lost_bound(mid, n, confidence) <= limit else (low, mid - 1)
    return round(max(0.0, ordered[low] - 1e-3), 4)


def lost_bound(lost: int, n: int, confidence: float) -> float:
    """The one-sided Clopper-Pearson upper bound on a share, with `lost` of `n` seen: the share p for which
    seeing `lost` or fewer has probability 1 - confidence (bisection on the binomial distribution)."""
    if lost >= n:
        return 1.0
    low, high = lost / n, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if _binomial_cdf(lost, n, mid) > 1 - confidence else (low, mid)
    return high


def _binomial_cdf(k: int, n: int, p: float) -> float:
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0 if k < n else 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = (math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q
             for i in range(k + 1))  # fmt: skip
    return min(1.0, sum(math.exp(t) for t in terms))


def balanced_threshold(p: Sequence[float], y: Sequence[bool], cuts: Sequence[float] | None = None) -> float:
    """The cut on P(supported) with the best balanced accuracy on these (training) rows: the first best of
    `cuts` (default: 0.05 to 0.95 by 0.01, the result rounded to 4 places); at or over the cut is positive."""
    best, best_score = 0.5, -1.0
    pos = sum(y)
    neg = len(y) - pos
    for cut in np.linspace(0.05, 0.95, 91) if cuts is None else cuts:
        tp = sum(1 for v, t in zip(p, y, strict=True) if t and v >= cut)
        tn = sum(1 for v, t in zip(p, y, strict=True) if not t and v < cut)
        score = (tp / pos + tn / neg) / 2
        if score > best_score + 1e-12:
            best, best_score = float(cut), score
    return round(best, 4) if cuts is None else best


@dataclass(frozen=True, slots=True)
class JudgedRow:
    """One judged candidate: a sentence written from a chunk for a question, and the judgement of it.
    `correct` (optional) says whether the sentence answers the question rightly; it fits the confidence map.
    `answerable` False marks a candidate written while the question's gold evidence was out of the corpus: it
    teaches the heads what a well-supported sentence that does not answer *this* question looks like, and is
    left out of the confidence map and the abstention cut (which are about answers to answerable questions).
    `declined` marks a candidate the engine declined whatever its ratings (the question restated, the draft
    repeated, a sentence about the document, a superseded source): the heads learn from it, but it is never an
    answer, so the confidence map and the abstention cut leave it out. `extracted` marks a sentence extracted from
    the chunk beside the model's (`engine.extract`): it is rated and may answer like any other; the flag
    lets it be counted apart."""

    question: str
    sentence: str
    chunk: str
    relevant: bool
    supported: bool
    rank: int = 0
    score_rel: float | None = None
    quote_ok: bool | None = None
    model_rel: float = 0.5
    model_sup: float = 0.5
    others: tuple[str, ...] = ()
    correct: bool | None = None
    answerable: bool = True
    declined: bool = False
    extracted: bool = False

    def features(self) -> dict[str, float]:
        view = CandidateView(self.sentence, self.chunk, "", self.rank, self.score_rel, self.quote_ok, self.model_rel,
                             self.model_sup, self.others, self.extracted)  # fmt: skip
        return view.features(self.question)


def judged_row(record: Any, where: str) -> JudgedRow:
    """A JudgedRow from one parsed JSON line; InputError naming the line and the field otherwise."""
    if not isinstance(record, dict):
        raise InputError(f"{where}: a judgment is a JSON object")
    text = {}
    for name in ("question", "sentence", "chunk"):
        value = record.get(name)
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"{where}: field {name!r} is missing or not text")
        text[name] = value
    flags = {}
    optional = {"correct": None, "quote_ok": None, "answerable": True, "declined": False, "extracted": False}
    for name in ("relevant", "supported", *optional):
        value = record.get(name)
        if value is None and name in optional:
            flags[name] = optional[name]
        elif isinstance(value, bool):
            flags[name] = value
        else:
            raise InputError(f"{where}: {name!r} must be true or false, got {value!r}")
    numbers = {}
    for name, low, high, default in (("model_rel", 0, 1, 0.5), ("model_sup", 0, 1, 0.5), ("score_rel", 0, 1, None)):
        value = record.get(name, default)
        if value is not None and (not finite(value) or not low <= value <= high):
            raise InputError(f"{where}: {name!r} must be a number from {low} to {high}, got {value!r}")
        numbers[name] = value
    rank, others = record.get("rank", 0), record.get("others", [])
    if not isinstance(rank, int) or isinstance(rank, bool) or rank < 0:
        raise InputError(f"{where}: 'rank' must be a whole number from 0, got {rank!r}")
    if not isinstance(others, list) or not all(isinstance(o, str) for o in others):
        raise InputError(f"{where}: 'others' must be a list of sentences")
    return JudgedRow(**text, **flags, **numbers, rank=rank, others=tuple(others))  # type: ignore[arg-type]


def fit_critic(rows: Sequence[JudgedRow], fitted_on: Mapping[str, Any] | None = None) -> CriticModel:
    """Both heads from judged rows; the support threshold (the verdict on a given statement) with the best
    balanced accuracy on the rows that judge given statements (no `correct`; all rows when there are none); the
    answers head where the rows hold MIN_UNANSWERABLE questions made unanswerable (`fit_answers_head`); the
    confidence map (Platt) and the abstention cut from the answerable rows with `correct`: per question, the one
    of those rows the engine would keep (the highest P(relevant) + P(supported)) against whether it was right.
    Refuses data that cannot fit a model."""
    if len(rows) < MIN_ROWS:
        raise InputError(f"{len(rows)} judged rows are too few to fit the critic; give at least {MIN_ROWS}")
    for name in ("relevant", "supported"):
        classes = {getattr(row, name) for row in rows}
        if len(classes) < 2:
            raise InputError(f"every judged row has {name}={classes.pop()}; the fit needs both classes")
    values = [row.features() for row in rows]
    x = np.array([vector(v) for v in values])
    relevant = fit_logistic(x, np.array([row.relevant for row in rows], dtype=float))
    supported = fit_logistic(x, np.array([row.supported for row in rows], dtype=float))
    p_rel = [relevant.probability(v) for v in x.tolist()]
    p_sup = [supported.probability(v) for v in x.tolist()]
    statements = [i for i, row in enumerate(rows) if row.correct is None]  # given statements judged, not candidates
    verdicts = statements if len({rows[i].supported for i in statements}) == 2 else range(len(rows))
    threshold = balanced_threshold([p_sup[i] for i in verdicts], [rows[i].supported for i in verdicts])
    model = CriticModel(relevant, supported, support_threshold=threshold)
    model = replace(model, answers=fit_answers_head(rows, p_rel, p_sup, values))
    support = _supports(model, rows, p_rel, p_sup, values)
    answers = [k for k in kept_answers(rows, p_rel, p_sup, support) if k.answerable]
    abstain = abstain_cut([k.support for k in answers if k.correct])
    unanswerable = sum(not row.answerable for row in rows)
    info = {"rows": len(rows), "unanswerable_rows": unanswerable, "questions": len(answers), "answers": len(answers)}
    info |= fitted_on or {}
    return replace(model, confidence=confidence_map(answers), abstain_threshold=abstain, fitted_on=info)


def fit_answers_head(
    rows: Sequence[JudgedRow], p_rel: Sequence[float], p_sup: Sequence[float], values: Sequence[Mapping[str, float]]
) -> Head | None:
    """The answers head: per question, the candidate the engine would keep (`kept_answers`), the right answers to
    answerable questions against the answers to questions made unanswerable (their gold evidence out of the
    corpus). A sentence copied well from a chunk about something else has a P(supported) as high as a right one;
    what tells them apart on the training answers is P(relevant) and how much the sentence says beyond the
    question, and whether it was extracted from the chunk. None where the rows hold fewer than MIN_UNANSWERABLE
    unanswerable questions or no right answer: the product P(relevant) · P(supported) stands then."""
    picks = _kept(rows, p_rel, p_sup)
    right = [i for (_, answerable), i in picks.items() if answerable and rows[i].correct]
    other = [i for (_, answerable), i in picks.items() if not answerable]
    if len(other) < MIN_UNANSWERABLE or not right:
        return None
    chosen = right + other
    x = np.array([answer_inputs(p_rel[i], p_sup[i], values[i], rows[i].extracted) for i in chosen])
    return fit_logistic(x, np.array([1.0] * len(right) + [0.0] * len(other)))


def confidence_map(answers: Sequence[KeptAnswer]) -> Platt:
    """Platt scaling of the answers' P(supported) against whether they were right (the answerable ones); the
    identity map when they are all right or all wrong (one class fits nothing)."""
    answered = [a for a in answers if a.answerable]
    if len({a.correct for a in answered}) < 2:
        return Platt()
    return fit_platt([a.p_supported for a in answered], [a.correct for a in answered])


def with_lead_counts(model: CriticModel, source: CriticModel) -> CriticModel:
    """`model` with the short answer's counts of `source` and what they were counted on (`selfrag bench fit-lead`):
    they count how often a lead was right, whatever heads rate the sentences."""
    said = {key: value for key, value in source.fitted_on.items() if key in (LEAD_RUNS, LEAD_POOL)}
    return replace(model, lead=dict(source.lead), fitted_on={**model.fitted_on, **said})


@dataclass(frozen=True, slots=True)
class KeptAnswer:
    """One question's answer in judged rows: the candidate the engine would keep (the highest P(relevant) +
    P(supported)), its P(supported) and answer support, whether it was right, and the best answer support of
    any of the question's candidates (the engine abstains when even that is under the cut)."""

    p_supported: float
    support: float
    correct: bool
    answerable: bool
    best_support: float


def kept_answers(
    rows: Sequence[JudgedRow], p_rel: Sequence[float], p_sup: Sequence[float], support: Sequence[float]
) -> list[KeptAnswer]:
    """Per question (answerable and unanswerable apart) the answer of its candidate rows, those with `correct`;
    given statements judged without `correct` are not candidates, and declined candidates are no answers: both
    are left out. A sentence extracted from its chunk (`extracted`) answers like a written one, on its own ratings.
    `support`: each row's answer support (`CriticModel.support`)."""
    best: dict[tuple[str, bool], float] = {}
    for row, value in zip(rows, support, strict=True):
        if row.correct is not None and not row.declined:
            key = (row.question, row.answerable)
            best[key] = max(value, best.get(key, 0.0))
    return [
        KeptAnswer(p_sup[i], support[i], bool(rows[i].correct), key[1], best[key])
        for key, i in _kept(rows, p_rel, p_sup).items()
    ]


def _kept(rows: Sequence[JudgedRow], p_rel: Sequence[float], p_sup: Sequence[float]) -> dict[tuple[str, bool], int]:
    """Per question (answerable and unanswerable apart), the index of the candidate row the engine would keep:
    the highest P(relevant) + P(supported), the first of equals."""
    kept: dict[tuple[str, bool], int] = {}
    for i, row in enumerate(rows):
        if row.correct is None or row.declined:
            continue
        key = (row.question, row.answerable)
        if key not in kept or p_rel[i] + p_sup[i] > p_rel[kept[key]] + p_sup[kept[key]]:
            kept[key] = i
    return kept


@dataclass(frozen=True, slots=True)
class CutFit:
    """What an abstention cut was fitted on and what it does there: right answers kept of those fitted on, and
    (when the rows hold unanswerable questions) those questions' answers it would abstain on; `answers_head`:
    the answers head was fitted on these rows too."""

    cut: float
    right: int
    kept: int
    questions: int
    unanswerable: int
    abstained: int
    answers_head: bool = False


def fit_abstain_cut(
    model: CriticModel,
    rows: Sequence[JudgedRow],
    keep: float = KEEP,
    confidence: float = KEEP_CONFIDENCE,
    source: str = "judged rows",
    *,
    refit_map: bool = False,
) -> tuple[CriticModel, CutFit]:
    """`model` with its abstention cut refitted on judged candidate rows under its own heads (`abstain_cut`):
    first its answers head, where the rows hold MIN_UNANSWERABLE questions made unanswerable (`fit_answers_head`;
    else the model's own stands), and with `refit_map` its confidence map too (`confidence_map`, on the same
    answers: what the heads' P(supported) means once the engine's rules pick the answer); everything else kept
    (`fitted_on` says where they came from: `source`). Refuses rows with too few right answers to promise `keep`
    at `confidence`."""
    p_rel, p_sup, values = _row_probabilities(model, rows)
    head = fit_answers_head(rows, p_rel, p_sup, values)
    if head is not None:
        model = replace(model, answers=head)
    support = _supports(model, rows, p_rel, p_sup, values)
    answers = kept_answers(rows, p_rel, p_sup, support)
    right = [a.support for a in answers if a.answerable and a.correct]
    if lost_bound(0, len(right), confidence) > 1 - keep:
        need = math.ceil(math.log(1 - confidence) / math.log(keep))
        raise InputError(
            f"{len(right)} right answers are too few to promise keeping {keep:.0%} of them at {confidence:.0%} "
            f"confidence; give judged candidates (with 'correct') holding at least {need}"
        )
    cut = abstain_cut(right, keep, confidence)
    unanswerable = [a for a in answers if not a.answerable]
    fit = CutFit(
        cut,
        len(right),
        sum(v >= cut for v in right),
        sum(a.answerable for a in answers),
        len(unanswerable),
        sum(a.best_support < cut for a in unanswerable),
        head is not None,
    )
    said = f"{source}: {fit.right} right answers of {fit.questions} questions, keep {keep:g} at {confidence:g}"
    fitted_on = {**model.fitted_on, "abstain_cut": said}
    if head is not None:
        fitted_on["answers_head"] = f"{source}: {fit.right} right answers, {fit.unanswerable} unanswerable questions"
    fitted = replace(model, abstain_threshold=cut, fitted_on=fitted_on)
    if refit_map:
        fitted = _with_map(fitted, answers, f"{source}: {fit.questions} answers, {fit.right} right")
    return fitted, fit


@dataclass(frozen=True, slots=True)
class CrossCut:
    """An abstention cut fitted on answers rated out of fold (`cross_fitted_cut`), and what it does there:
    `kept` of the `right` answers at or over it, `abstained` of the `unanswerable` questions under it; `bound`
    is the most it loses of right answers with `confidence` (Clopper-Pearson, `lost_bound`)."""

    cut: float
    keep: float
    right: int
    kept: int
    unanswerable: int
    abstained: int
    bound: float
    confidence: float = KEEP_CONFIDENCE
    folds: int = FOLDS
    unfitted: str = ""  # why a fold could not be rated (no cut then)

    def describe(self) -> str:
        if self.unfitted:
            return f"none: without one fold's questions the rows cannot be fitted ({self.unfitted})"
        if not self.cut:
            return f"none: {self.right} right answers out of {self.folds} folds, fewer than {MIN_CUT_RIGHT}"
        return (
            f"{self.folds}-fold cross-fitted: keeps {self.kept} of {self.right} right answers (aim {self.keep:.0%}), "
            f"abstains on {self.abstained} of {self.unanswerable} unanswerable questions; with {self.confidence:.0%} "
            f"confidence it loses at most {self.bound:.0%} of right answers"
        )


def cross_fitted_cut(
    rows: Sequence[JudgedRow], keep: float = KEEP, folds: int = FOLDS, confidence: float = KEEP_CONFIDENCE
) -> CrossCut:
    """The abstention cut from answers rated by heads that never saw their question: the questions (each with
    its unanswerable twin) are dealt into `folds` by a seeded shuffle, each fold's answers rated by the whole fit
    (`fit_critic`) on the other folds' rows, and the cut is the highest that keeps `keep` of those right answers.
    Heads rate the answers they were fitted on better than new ones, so a cut fitted in-sample abstains on fewer
    questions it cannot answer than it seems to; out of fold, the share kept is a plain estimate and needs no
    margin beyond `keep`'s. 0 (never abstain) with fewer than MIN_CUT_RIGHT right answers or a fold that cannot
    be fitted."""
    questions = sorted({row.question for row in rows if row.correct is not None})
    random.Random(0).shuffle(questions)
    fold_of = {question: i % folds for i, question in enumerate(questions)}
    right: list[float] = []
    unanswerable: list[float] = []
    for fold in range(folds):
        held = [row for row in rows if fold_of.get(row.question) == fold]
        if not held:
            continue
        try:
            model = fit_critic([row for row in rows if fold_of.get(row.question) != fold])
        except InputError as error:
            return CrossCut(0.0, keep, 0, 0, 0, 0, 1.0, confidence, folds, str(error))
        for answer in answers_under(model, held):
            if answer.answerable and answer.correct:
                right.append(answer.support)
            elif not answer.answerable:
                unanswerable.append(answer.best_support)
    right.sort()
    if len(right) < MIN_CUT_RIGHT:
        return CrossCut(0.0, keep, len(right), len(right), len(unanswerable), 0, 1.0, confidence, folds)
    lost = math.floor((1 - keep) * len(right) + 1e-9)
    cut = round(max(0.0, right[lost] - 1e-3), 4)
    kept = sum(value >= cut for value in right)
    abstained = sum(value < cut for value in unanswerable)
    bound = lost_bound(len(right) - kept, len(right), confidence)
    return CrossCut(cut, keep, len(right), kept, len(unanswerable), abstained, bound, confidence, folds)


def fit_map(model: CriticModel, rows: Sequence[JudgedRow], source: str = "judged rows") -> tuple[CriticModel, int, int]:
    """`model` with its confidence map alone refitted (`confidence_map`) on the answers of judged candidate rows
    under its own heads; the heads, cut and short-answer counts kept. With it the confidence can be fitted on
    answers from a corpus shaped like the user's own, so the map speaks for answers again: an answered head,
    fitted on other answers, is dropped. Returns the model, the answers and the right ones; refuses fewer than
    MIN_MAP_ANSWERS answers or answers all right or all wrong."""
    answers = [a for a in answers_under(model, rows) if a.answerable]
    right = sum(a.correct for a in answers)
    if len(answers) < MIN_MAP_ANSWERS:
        raise InputError(
            f"{len(answers)} answered questions are too few to fit the confidence map; give judged candidates "
            f"(with 'correct') of at least {MIN_MAP_ANSWERS} questions"
        )
    if right in (0, len(answers)):
        said = "right" if right else "wrong"
        raise InputError(f"every one of the {len(answers)} answers is {said}; the confidence map needs both")
    return _with_map(model, answers, f"{source}: {len(answers)} answers, {right} right"), len(answers), right


def _with_map(model: CriticModel, answers: Sequence[KeptAnswer], said: str) -> CriticModel:
    """`model` with its confidence map fitted on `answers` (`said`: on what) and no answered head: a map fitted on
    a user's own answers is what speaks for answers then, not a head fitted on other ones."""
    fitted_on = {key: value for key, value in model.fitted_on.items() if key != "answered"}
    return replace(
        model, confidence=confidence_map(answers), answered=None, fitted_on={**fitted_on, "confidence_map": said}
    )


def fit_answered(
    model: CriticModel, answers: Sequence[tuple[Sequence[float], bool]], source: str = "training answers"
) -> tuple[CriticModel, int, int]:
    """`model` with its answered head fitted on answers the engine gave (each one's `answered_inputs` and whether
    it was right; the regularisation by `chosen_l2`), everything else kept. Returns the model, the answers and the
    right ones; refuses fewer than MIN_MAP_ANSWERS answers, answers all right or all wrong, and inputs of the wrong
    shape."""
    right = sum(bool(y) for _, y in answers)
    if len(answers) < MIN_MAP_ANSWERS:
        raise InputError(
            f"{len(answers)} answers are too few to fit the answer confidence; give at least {MIN_MAP_ANSWERS}"
        )
    if right in (0, len(answers)):
        said = "right" if right else "wrong"
        raise InputError(f"every one of the {len(answers)} answers is {said}; the answer confidence needs both")
    x = np.array([list(v) for v, _ in answers], dtype=float)
    if x.shape[1:] not in ((len(ANSWERED_FEATURES),), (len(CHECKED_FEATURES),)) or not np.isfinite(x).all():
        raise InputError(
            f"each answer needs {len(ANSWERED_FEATURES)} finite inputs ({', '.join(ANSWERED_FEATURES)}), or "
            f"{len(CHECKED_FEATURES)} with the model's check"
        )
    target = np.array([float(bool(y)) for _, y in answers])
    l2 = chosen_l2(x, target)
    head = fit_logistic(x, target, l2=l2)
    fitted_on = {**model.fitted_on, "answered": f"{source}: {len(answers)} answers, {right} right, L2 {l2:g}"}
    return replace(model, answered=head, fitted_on=fitted_on), len(answers), right


def check_predicts(answers: Sequence[tuple[Sequence[float], bool]]) -> tuple[bool, str]:
    """Whether the model's check (the last of `CHECKED_FEATURES`) makes the answered head predict answers it was
    not fitted on better: the best held-out log loss (`held_out_losses`) with it under the one without it, by
    at least `CHECK_GAIN` per answer (the check costs a call per answer); and the two losses, said."""
    x = np.array([list(v) for v, _ in answers], dtype=float)
    target = np.array([float(bool(y)) for _, y in answers])
    if x.ndim != 2 or x.shape[1] != len(CHECKED_FEATURES):
        return False, "no check to weigh"
    with_check, without = held_out_losses(x, target), held_out_losses(x[:, : len(ANSWERED_FEATURES)], target)
    if with_check is None or without is None:
        return False, "too few right or wrong answers to weigh the check"
    gain = (min(without) - min(with_check)) / len(answers)
    said = f"held-out log loss {min(with_check) / len(answers):.3f} with it, {min(without) / len(answers):.3f} without"
    return gain >= CHECK_GAIN, said


def answers_under(model: CriticModel, rows: Sequence[JudgedRow]) -> list[KeptAnswer]:
    """The answers of judged candidate rows (`kept_answers`) as `model`'s heads rate them."""
    p_rel, p_sup, values = _row_probabilities(model, rows)
    support = _supports(model, rows, p_rel, p_sup, values)
    return kept_answers(rows, p_rel, p_sup, support)


def _row_probabilities(
    model: CriticModel, rows: Sequence[JudgedRow]
) -> tuple[list[float], list[float], list[dict[str, float]]]:
    """Each row's P(relevant) and P(supported) under `model`'s heads, and its evidence features."""
    values = [row.features() for row in rows]
    rated = [model.probabilities(v) for v in values]
    return [p_rel for p_rel, _ in rated], [p_sup for _, p_sup in rated], values


def _supports(
    model: CriticModel,
    rows: Sequence[JudgedRow],
    p_rel: Sequence[float],
    p_sup: Sequence[float],
    values: Sequence[Mapping[str, float]],
) -> list[float]:
    """Each row's answer support under `model` (`CriticModel.support`)."""
    return [model.support(r, s, v, row.extracted) for r, s, v, row in zip(p_rel, p_sup, values, rows, strict=True)]
