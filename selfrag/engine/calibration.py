"""④ The fitted critic: evidence features and the model's labels combined into calibrated probabilities.

    P(relevant)  = sigmoid(w_rel · x + b_rel)       x = evidence.vector(features), in evidence.FEATURES order
    P(supported) = sigmoid(w_sup · x + b_sup)
    confidence   = sigmoid(a · logit(mean P(supported) of the answer's sentences) + c)   (Platt scaling), or, where
                   the weights have an `answered` head, sigmoid(w · v + b), v = (mean P(supported), mean answer
                   support, log(1 + words)) of the answer's sentences, fitted on the answers training runs gave
                   (`selfrag bench fit-confidence`; the map's one input does not rank a 135M model's answers); an
                   abstention stays on the map of its best candidate's P(relevant)·P(supported);
                   with a short answer (`engine.lead`) stated first: c + (1 - c) · q_kind, q_kind = (right + 1) /
                   (of + 2) from training answers whose sentences were wrong (`lead`: how often the short answer
                   of that kind was right there; `selfrag bench fit-lead`), once `of` reaches MIN_LEAD_ANSWERS;
                   with "The documents don't settle it." first, q_unsettled alone: how often such training answers
                   were right
    answer support = P(relevant) · P(supported): the chunk is about *this* question and backs the sentence; a
                   candidate under the abstention cut on it is declined (a sentence copied well from a chunk
                   about something else is supported, not an answer). Where the weights have an `answers` head:
                   sigmoid(w_ans · z + b_ans), z = (P(relevant), P(supported), novelty, offered), fitted on the
                   answers the engine keeps, right answers to training questions against answers to the same kind
                   of questions with their evidence taken out of the corpus (`fit_answers_head`)
    P(refutes)   = sigmoid(w_ref · y + b_ref)       y = evidence.polarity(claim, text), optional (`refutes`): the
                   claim protocol's verdict, once a chunk settles a claim, in the claim weights only

Weights are a versioned JSON file (`CriticModel.to_json`); the one shipped in `selfrag/data/` was fitted on
training ids only (its `fitted_on` and `benchmarks/README.md` say which), and `selfrag critic fit` refits it
from a user's own judged data. A file is validated before use (format, version, feature names, shapes, finite
numbers) and a bad one is refused with a message naming it. Fitting is L2-regularised logistic regression by
Newton's method in numpy: small, deterministic, no dependency beyond numpy.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..errors import ConfigError, InputError
from ..files import read_regular
from ..result import DECIDED, UNSETTLED_KINDS
from .evidence import FEATURES, POLARITY, features, polarity, vector

FORMAT = "selfrag-critic"
VERSION = 1
SHIPPED = "critic-v1.json"
MIN_ROWS = 20  # fewer judged rows than this cannot fit twelve weights
MIN_MAP_ANSWERS = 20  # fewer answered questions than this cannot fit the confidence map alone
MIN_LEAD_ANSWERS = 20  # the short answer's rate of a kind is used from this many training answers on
MIN_UNANSWERABLE = 20  # the answers head is fitted from this many questions made unanswerable on
COIN_Z = 1.645  # one-sided 95 %: how sure the training counts must be that the model's short answer beats a coin
MAX_FILE_BYTES = 1 << 20
LEAD_RUNS, LEAD_POOL = "lead", "lead_decided"  # `fitted_on` keys: where the short answer's counts were counted
HELD_KINDS = ("yes_no", "factoid")  # kinds whose short answer the model states only on its training counts
# the abstention cut keeps 92 % of the judged right answers, promised at 95 % confidence. The margin over the 90 %
# aimed at is the engine's own: a declined sentence can change the answer, so the engine loses more right answers
# than the judged candidates show (the 90 % cut lost 8 of 78 of held training questions at the engine, 10.3 %)
KEEP, KEEP_CONFIDENCE = 0.92, 0.95
# what the answers head reads of a candidate: its two probabilities, the share of its words the question does not
# hold (evidence.features' `novelty`) and whether its chunk offered it (`critic.offered`)
ANSWER_FEATURES = ("p_relevant", "p_supported", "novelty", "offered")
# what the answered head reads of an answer: the mean P(supported) and answer support of its sentences, and how much
# they state (log(1 + words))
ANSWERED_FEATURES = ("p_supported", "answer_support", "log_words")


@dataclass(frozen=True, slots=True)
class Head:
    """One logistic model over the feature vector."""

    weights: tuple[float, ...]
    bias: float

    def probability(self, x: Sequence[float]) -> float:
        z = self.bias + sum(w * v for w, v in zip(self.weights, x, strict=True))
        return _sigmoid(z)


@dataclass(frozen=True, slots=True)
class Platt:
    """Platt scaling of a probability: sigmoid(a * logit(p) + c)."""

    a: float = 1.0
    c: float = 0.0

    def probability(self, p: float) -> float:
        return _sigmoid(self.a * _logit(p) + self.c)


@dataclass(frozen=True, slots=True)
class CriticModel:
    relevant: Head
    supported: Head
    confidence: Platt = Platt()
    support_threshold: float = 0.5  # P(supported) at or above which a given statement counts as supported (a verdict)
    abstain_threshold: float = 0.0  # default cut on answer_support: see abstain_cut
    fitted_on: Mapping[str, Any] = field(default_factory=dict)
    lead: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # kind -> (right, of): see lead_rate
    refutes: Head | None = None  # over evidence.POLARITY: P(a chunk that settles a claim refutes it); claims only
    answers: Head | None = None  # over ANSWER_FEATURES: the answer support (see the module docstring); else r · s
    answered: Head | None = None  # over ANSWERED_FEATURES: an answer's confidence; else the map of its P(supported)

    def lead_rate(self, kind: str | None, least: int = MIN_LEAD_ANSWERS) -> float | None:
        """How often a short answer of this kind was right where the sentences after it were not (for the
        `UNSETTLED_KINDS`, how often such an answer was right at all), by Laplace's rule on the training counts;
        None for a kind with fewer than `least` training answers: a rate from a handful of answers is noise,
        and the sentences' confidence stands where there are sentences."""
        right, of = self.lead.get(kind or "", (0, 0))
        return (right + 1) / (of + 2) if of >= least else None

    def support(self, p_relevant: float, p_supported: float, values: Mapping[str, float], offered: bool) -> float:
        """The answer support of a candidate, what the abstention cut is applied to: the answers head's probability
        where the weights have one, else P(relevant) · P(supported)."""
        if self.answers is None:
            return answer_support(p_relevant, p_supported)
        return self.answers.probability(answer_inputs(p_relevant, p_supported, values, offered))

    def answer_confidence(self, p_supported: Sequence[float], supports: Sequence[float], words: int) -> float:
        """The confidence of an answer whose sentences have these P(supported) and answer supports and state
        `words` words: the answered head where the weights have one, else the map of the mean P(supported); 0 for
        an answer of no rated sentence."""
        if not p_supported:
            return 0.0
        if self.answered is None or len(supports) != len(p_supported):
            return self.confidence.probability(sum(p_supported) / len(p_supported))
        return self.answered.probability(answered_inputs(p_supported, supports, words))

    def to_json(self) -> str:
        body = {
            "format": FORMAT,
            "version": VERSION,
            "features": list(FEATURES),
            "relevant": {"weights": list(self.relevant.weights), "bias": self.relevant.bias},
            "supported": {"weights": list(self.supported.weights), "bias": self.supported.bias},
            "confidence": {"a": self.confidence.a, "c": self.confidence.c},
            "support_threshold": self.support_threshold,
            "abstain_threshold": self.abstain_threshold,
            "fitted_on": dict(self.fitted_on),
        }
        for name, head, names in (
            ("refutes", self.refutes, POLARITY),
            ("answers", self.answers, ANSWER_FEATURES),
            ("answered", self.answered, ANSWERED_FEATURES),
        ):  # the optional heads carry the names of their own features (read back by `_named_head`)
            if head is not None:
                body[name] = {"features": list(names), "weights": list(head.weights), "bias": head.bias}
        if self.lead:
            body["lead"] = {kind: {"right": right, "of": of} for kind, (right, of) in self.lead.items()}
        return json.dumps(body, indent=1, allow_nan=False) + "\n"


def answer_support(p_relevant: float, p_supported: float) -> float:
    """What the abstention cut is applied to without an answers head: P(the chunk is about the question) · P(it
    backs the sentence)."""
    return p_relevant * p_supported


def answer_inputs(p_relevant: float, p_supported: float, values: Mapping[str, float], offered: bool) -> list[float]:
    """The answers head's inputs, in `ANSWER_FEATURES` order (`values`: the candidate's evidence features)."""
    return [p_relevant, p_supported, float(values["novelty"]), float(offered)]


def answered_inputs(p_supported: Sequence[float], supports: Sequence[float], words: int) -> list[float]:
    """The answered head's inputs, in `ANSWERED_FEATURES` order, from an answer's sentences."""
    return [sum(p_supported) / len(p_supported), sum(supports) / len(supports), math.log1p(max(words, 0))]


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


# -- reading and checking ---------------------------------------------------------------------------


def load_critic_model(path: str | Path | None = None, shipped: str = SHIPPED) -> CriticModel:
    """The critic weights at `path`, or the shipped ones named `shipped` (the claim protocol ships its own);
    a file that fails validation is refused."""
    if path is None:
        text = resources.files("selfrag").joinpath("data", shipped).read_text(encoding="utf-8")
        return parse_critic_model(text, f"the shipped critic weights ({shipped})")
    where = Path(path)
    try:
        data = read_regular(where, MAX_FILE_BYTES)  # a FIFO or device is refused, never waited on
        if len(data) > MAX_FILE_BYTES:
            raise ConfigError(f"critic weights {where} are over {MAX_FILE_BYTES} bytes; not a weights file")
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read critic weights {where}: {getattr(error, 'strerror', None) or error}") from None
    return parse_critic_model(text, f"critic weights {where}")


def parse_critic_model(text: str, where: str) -> CriticModel:
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        raise ConfigError(f"{where} is not JSON") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise ConfigError(f"{where} is not a selfrag critic weights file (format {FORMAT!r})")
    if body.get("version") != VERSION:
        raise ConfigError(f"{where} has version {body.get('version')!r}; this selfrag reads version {VERSION}")
    if body.get("features") != list(FEATURES):
        raise ConfigError(f"{where} was fitted on other features than this selfrag computes; refit it")
    heads = [_head(body.get(name), where, name) for name in ("relevant", "supported")]
    platt = body.get("confidence")
    a, c = _numbers(platt, ("a", "c"), where, "confidence") if isinstance(platt, dict) else (None, None)
    threshold, abstain = body.get("support_threshold"), body.get("abstain_threshold")
    if a is None or c is None or not _finite(threshold) or not 0 < threshold < 1:
        raise ConfigError(f"{where}: confidence and support_threshold must be finite numbers (threshold in (0, 1))")
    if not _finite(abstain) or not 0 <= abstain < 1:
        raise ConfigError(f"{where}: abstain_threshold must be a number from 0 to below 1")
    fitted = body.get("fitted_on") if isinstance(body.get("fitted_on"), dict) else {}
    lead = _lead_counts(body.get("lead", {}), where)
    refutes = _named_head(body, "refutes", POLARITY, where)
    answers = _named_head(body, "answers", ANSWER_FEATURES, where)
    answered = _named_head(body, "answered", ANSWERED_FEATURES, where)
    return CriticModel(
        heads[0], heads[1], Platt(a, c), float(threshold), float(abstain), fitted, lead, refutes, answers, answered
    )


# the kinds of engine.questions.question_kind that get a short answer, what decided a choice the documents decided
# (result.DECIDED: the options' dates, or a trait said of one option only; engine.compare), and the answers whose
# short answer says the documents don't settle it (result.UNSETTLED_KINDS)
LEAD_KINDS = ("yes_no", "choice", "factoid", *DECIDED, *UNSETTLED_KINDS.values())


def _lead_counts(value: Any, where: str) -> dict[str, tuple[int, int]]:
    """The optional `lead` section: {kind: {"right": r, "of": n}} with 0 <= r <= n, kinds of `LEAD_KINDS`."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: lead must map a question kind to its counts")
    counts = {}
    for kind, entry in value.items():
        right, of = (entry.get("right"), entry.get("of")) if isinstance(entry, dict) else (None, None)
        whole = all(isinstance(n, int) and not isinstance(n, bool) for n in (right, of))
        if kind not in LEAD_KINDS or not whole or not 0 <= right <= of:
            raise ConfigError(
                f"{where}: lead needs kinds among {', '.join(LEAD_KINDS)}, each with whole counts 0 <= right <= of"
            )
        counts[kind] = (right, of)
    return counts


def _named_head(body: Mapping[str, Any], name: str, names: Sequence[str], where: str) -> Head | None:
    """An optional head that carries the names of its own features (`refutes`, `answers`, `answered`); None where
    absent."""
    if name not in body:
        return None
    if not isinstance(body[name], dict):
        raise ConfigError(f"{where}: {name} needs its features, {len(names)} weights and a bias")
    if body[name].get("features") != list(names):
        raise ConfigError(f"{where}: {name} was fitted on other features than this selfrag computes; refit it")
    return _head(body[name], where, name, names)


def _head(value: Any, where: str, name: str, names: Sequence[str] = FEATURES) -> Head:
    if not isinstance(value, dict) or not isinstance(value.get("weights"), list):
        raise ConfigError(f"{where}: {name} needs weights and a bias")
    weights = value["weights"]
    if len(weights) != len(names) or not all(_finite(w) for w in weights) or not _finite(value.get("bias")):
        raise ConfigError(f"{where}: {name} needs {len(names)} finite weights and a finite bias")
    return Head(tuple(float(w) for w in weights), float(value["bias"]))


def _numbers(value: Mapping[str, Any], keys: Sequence[str], where: str, name: str) -> tuple[float | None, ...]:
    return tuple(float(value[k]) if _finite(value.get(k)) else None for k in keys)


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# -- fitting -----------------------------------------------------------------------------------------


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


def fit_platt(p: Sequence[float], y: Sequence[bool]) -> Platt:
    """Platt scaling of `p` against `y`, never falling: a fit whose confidence drops as the support grows says
    more of the few right answers it saw than of support (on half of HotpotQA's smoke set, 4 right of 50, it
    fell), so it is flattened to their share, the same confidence for every answer."""
    x = np.array([[_logit(v)] for v in p])
    target = np.array(y, dtype=float)
    head = fit_logistic(x, target, l2=0.01)
    if head.weights[0] >= 0 or not 0 < target.mean() < 1:
        return Platt(head.weights[0], head.bias)
    return Platt(0.0, _logit(float(target.mean())))


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
    answer, so the confidence map and the abstention cut leave it out. `extracted` marks a sentence the chunk
    offered beside the model's (`critic.offered`): it is rated and may answer like any other; the flag
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
        item = Rated(self.sentence, self.chunk, "", self.rank, self.score_rel, self.quote_ok, self.model_rel,
                     self.model_sup, self.others, self.extracted)  # fmt: skip
        return item.features(self.question)


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
        if value is not None and (not _finite(value) or not low <= value <= high):
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
    question, and whether the chunk offered it. None where the rows hold fewer than MIN_UNANSWERABLE
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
    are left out. A sentence its chunk offered (`extracted`) answers like a written one, on its own ratings.
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
    p_rel, p_sup, values = _rated(model, rows)
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
    it was right), everything else kept. Returns the model, the answers and the right ones; refuses fewer than
    MIN_MAP_ANSWERS answers, answers all right or all wrong, and inputs of the wrong shape."""
    right = sum(bool(y) for _, y in answers)
    if len(answers) < MIN_MAP_ANSWERS:
        raise InputError(
            f"{len(answers)} answers are too few to fit the answer confidence; give at least {MIN_MAP_ANSWERS}"
        )
    if right in (0, len(answers)):
        said = "right" if right else "wrong"
        raise InputError(f"every one of the {len(answers)} answers is {said}; the answer confidence needs both")
    x = np.array([list(v) for v, _ in answers], dtype=float)
    if x.shape[1:] != (len(ANSWERED_FEATURES),) or not np.isfinite(x).all():
        raise InputError(f"each answer needs {len(ANSWERED_FEATURES)} finite inputs ({', '.join(ANSWERED_FEATURES)})")
    head = fit_logistic(x, np.array([float(bool(y)) for _, y in answers]))
    fitted_on = {**model.fitted_on, "answered": f"{source}: {len(answers)} answers, {right} right"}
    return replace(model, answered=head, fitted_on=fitted_on), len(answers), right


def answers_under(model: CriticModel, rows: Sequence[JudgedRow]) -> list[KeptAnswer]:
    """The answers of judged candidate rows (`kept_answers`) as `model`'s heads rate them."""
    p_rel, p_sup, values = _rated(model, rows)
    support = _supports(model, rows, p_rel, p_sup, values)
    return kept_answers(rows, p_rel, p_sup, support)


def _rated(model: CriticModel, rows: Sequence[JudgedRow]) -> tuple[list[float], list[float], list[dict[str, float]]]:
    """Each row's P(relevant) and P(supported) under `model`'s heads, and its evidence features."""
    values = [row.features() for row in rows]
    x = [vector(v) for v in values]
    return [model.relevant.probability(v) for v in x], [model.supported.probability(v) for v in x], values


def _supports(
    model: CriticModel,
    rows: Sequence[JudgedRow],
    p_rel: Sequence[float],
    p_sup: Sequence[float],
    values: Sequence[Mapping[str, float]],
) -> list[float]:
    """Each row's answer support under `model` (`CriticModel.support`)."""
    return [model.support(r, s, v, row.extracted) for r, s, v, row in zip(p_rel, p_sup, values, rows, strict=True)]


# -- raters: how the engine turns a step's critiqued candidates into P(relevant), P(supported) ----------


@dataclass(frozen=True, slots=True)
class Rating:
    p_relevant: float
    p_supported: float
    features: Mapping[str, float] | None = None
    answer_support: float | None = None  # the rater's own (`CriticModel.support`); None: P(relevant)·P(supported)

    @property
    def support(self) -> float:
        """The answer support, what the abstention cut is applied to."""
        own = self.answer_support
        return answer_support(self.p_relevant, self.p_supported) if own is None else own


@dataclass(frozen=True, slots=True)
class Rated:
    """What a rater needs to know of one candidate (all candidates of one beam's step are rated together)."""

    sentence: str
    chunk_text: str
    chunk_key: str
    rank: int
    score_rel: float | None
    quote_ok: bool | None
    model_rel: float
    model_sup: float
    others: tuple[str, ...]  # sentences written from the beam's other chunks this step
    offered: bool = False  # the chunk's own sentence, offered beside the model's (`critic.offered`)

    def features(self, question: str) -> dict[str, float]:
        return features(
            question,
            self.sentence,
            self.chunk_text,
            rank=self.rank,
            score_rel=self.score_rel,
            quote_ok=self.quote_ok,
            model_rel=self.model_rel,
            model_sup=self.model_sup,
            others=self.others,
        )


class Rater(Protocol):
    """Rates candidates written from chunks; `threshold` is its default abstention cut on `answer_support`,
    `verdict_cut` the P(supported) at or above which a given statement is judged supported (critic agreement),
    `confidence` maps P(supported) values to the probability that the answer is right (an abstention's, a claim
    verdict's), `answer_confidence` is that probability for an answer from its sentences' P(supported), answer
    supports and words, and
    `with_lead` adds what a short answer of a kind stated before the sentences adds to it, and `refutes` is
    P(a text that settles a claim refutes it), or None where the rater has no such head (the writer's verdict
    stands). `from_documents`: a question that asks for a fact is answered from the documents, never from the
    model's memory (the rater rates only sentences written from chunks, so such an answer's confidence is nil).
    `weighs_utility`: the model's ISUSE label enters a candidate's score f (w_use), as in the paper.
    `trusts(kind)`: the model's own short answer to a question of that kind is printed (`engine.lead`); where it
    is not, a yes/no question reads "The documents don't settle it." and a factoid gets no short answer.
    """

    threshold: float

    @property
    def from_documents(self) -> bool: ...

    @property
    def weighs_utility(self) -> bool: ...

    @property
    def verdict_cut(self) -> float: ...

    def trusts(self, kind: str) -> bool: ...

    def rate(self, question: str, items: Sequence[Rated]) -> list[Rating]: ...

    def confidence(self, supported: Sequence[float]) -> float: ...

    def answer_confidence(self, supported: Sequence[float], supports: Sequence[float], words: int) -> float: ...

    def with_lead(self, confidence: float, kind: str | None, alone: bool = False) -> float: ...

    def refutes(self, claim: str, text: str) -> float | None: ...


@dataclass(frozen=True, slots=True)
class PaperRater:
    """The paper's critic: the model's own labels, nothing else; confidence = mean support credit."""

    threshold: float = 0.0

    @property
    def from_documents(self) -> bool:
        return False  # the paper's adaptive retrieval: the model may answer from memory

    @property
    def weighs_utility(self) -> bool:
        return True  # the paper's f: w_rel * s_rel + w_sup * s_sup + w_use * s_use

    @property
    def verdict_cut(self) -> float:
        return 0.5  # support credit: "fully" or "partially" (1 or 0.5) is supported, "no" is not

    def trusts(self, kind: str) -> bool:
        return True  # the paper trusts the model's reading

    def rate(self, question: str, items: Sequence[Rated]) -> list[Rating]:
        return [Rating(item.model_rel, item.model_sup) for item in items]

    def confidence(self, supported: Sequence[float]) -> float:
        return sum(supported) / len(supported) if supported else 0.0

    def answer_confidence(self, supported: Sequence[float], supports: Sequence[float], words: int) -> float:
        return self.confidence(supported)  # the paper's: the mean support credit of the answer's sentences

    def with_lead(self, confidence: float, kind: str | None, alone: bool = False) -> float:
        return confidence  # the paper's confidence speaks of the sentences' critique only

    def refutes(self, claim: str, text: str) -> float | None:
        return None  # the paper's verdict is the writer's


@dataclass(frozen=True, slots=True)
class EvidenceRater:
    """The model's labels plus the evidence features, through the fitted logistic heads."""

    model: CriticModel

    @property
    def threshold(self) -> float:
        return self.model.abstain_threshold

    @property
    def from_documents(self) -> bool:
        return True

    @property
    def weighs_utility(self) -> bool:
        # f is its P(relevant) + P(supported) alone: the 135M model's ISUSE label ranks the candidates that hold the
        # answer at chance (AUROC 0.54 on 1,022 HaluEval training candidates, against 0.79 for P(relevant) +
        # P(supported)), and at w_use 0.5 it outweighed them; the heads do not read it either
        return False

    @property
    def verdict_cut(self) -> float:
        return self.model.support_threshold  # fitted on judged statements; not the abstention cut

    def trusts(self, kind: str) -> bool:
        """A yes or no, or a name, number or date, the model states is printed only where the training counts
        show it right more often than wrong (`beats_a_coin`): a short answer is read first and plainly, and one
        that is more often wrong misleads more than it tells. The shipped counts (HaluEval training answers whose
        sentences were wrong) hold the 135M model's yes or no right on 14 of 27, its factoid on 10 of 58. Its
        choice between two options is printed as before (`HELD_KINDS`): counted 3 times, too few to judge."""
        if kind not in HELD_KINDS:
            return True
        right, of = self.model.lead.get(kind, (0, 0))
        return of >= MIN_LEAD_ANSWERS and beats_a_coin(right, of)

    def rate(self, question: str, items: Sequence[Rated]) -> list[Rating]:
        out = []
        for item in items:
            values = item.features(question)
            x = vector(values)
            p_rel, p_sup = self.model.relevant.probability(x), self.model.supported.probability(x)
            out.append(Rating(p_rel, p_sup, values, self.model.support(p_rel, p_sup, values, item.offered)))
        return out

    def confidence(self, supported: Sequence[float]) -> float:
        return self.model.confidence.probability(sum(supported) / len(supported)) if supported else 0.0

    def answer_confidence(self, supported: Sequence[float], supports: Sequence[float], words: int) -> float:
        return self.model.answer_confidence(supported, supports, words)

    def with_lead(self, confidence: float, kind: str | None, alone: bool = False) -> float:
        """The answer is right if its sentences are or, where they are not, its short answer is. A short answer
        saying the documents don't settle the question (`UNSETTLED_KINDS`) answers nothing: the confidence is how
        often such training answers were right, whatever their sentences' support (a sentence that backs one
        name of a yes/no question does not say yes or no). A short answer that stands `alone`, no sentence after
        it (`lead.standing`), is as sure as its kind's counts say however few they are: 7 of 8 for 6 right of 6,
        a half for none, never the 0 of sentences that are not there."""
        rate = self.model.lead_rate(kind, least=0 if alone else MIN_LEAD_ANSWERS)
        if rate is None:
            return confidence
        return rate if kind in UNSETTLED_KINDS.values() else confidence + (1 - confidence) * rate

    def refutes(self, claim: str, text: str) -> float | None:
        head = self.model.refutes
        return None if head is None else head.probability(polarity(claim, text))


def beats_a_coin(right: int, of: int) -> bool:
    """`right` of `of` is more than a coin's half beyond chance: the lower end of the rate's one-sided 95 % Wilson
    interval is over 0.5 (13 of 20 is not; 14 of 20 is)."""
    if of <= 0:
        return False
    rate, z2 = right / of, COIN_Z * COIN_Z
    centre = rate + z2 / (2 * of)
    spread = COIN_Z * math.sqrt(rate * (1 - rate) / of + z2 / (4 * of * of))
    return (centre - spread) / (1 + z2 / of) > 0.5


def rater_for(scorer: str, weights: str | None, shipped: str = SHIPPED) -> Rater:
    """The rater a config names (reads the weights file once; a bad file is a ConfigError naming it)."""
    if scorer == "paper":
        return PaperRater()
    return EvidenceRater(load_critic_model(weights, shipped))
