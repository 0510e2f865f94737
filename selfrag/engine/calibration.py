"""④ The fitted critic: evidence features and the model's labels combined into calibrated probabilities.

    P(relevant)  = sigmoid(w_rel · x + b_rel)       x = evidence.vector(features), in evidence.FEATURES order
    P(supported) = sigmoid(w_sup · x + b_sup)
    confidence   = sigmoid(a · logit(mean P(supported) of the answer's sentences) + c)   (Platt scaling), or, where
                   the weights have an `answered` head, sigmoid(w · v + b), v = (mean P(supported), mean answer
                   support, log(1 + words)) of the answer's sentences, fitted on the answers training runs gave
                   (`selfrag bench fit-confidence`; the map's one input does not rank a 135M model's answers), and
                   where `selfrag calibrate` found it predicts, the model's check of the answer (`engine.check`); an
                   abstention stays on the map of its best candidate's P(relevant)·P(supported);
                   with a short answer (`engine.lead`) stated first: c + (1 - c) · q_kind, q_kind = (right + 1) /
                   (of + 2) from training answers whose sentences were wrong (`lead`: how often the short answer
                   of that kind was right there; `selfrag bench fit-lead`), once `of` reaches MIN_LEAD_ANSWERS;
                   with "The documents don't settle it." first, q_unsettled alone: how often such training answers
                   were right
    answer support = P(relevant) · P(supported): the chunk is about *this* question and backs the sentence; a
                   candidate under the abstention cut on it is declined (a sentence copied well from a chunk
                   about something else is supported, not an answer). Where the weights have an `answers` head:
                   sigmoid(w_ans · z + b_ans), z = (P(relevant), P(supported), novelty, extracted), fitted on the
                   answers the engine keeps, right answers to training questions against answers to the same kind
                   of questions with their evidence taken out of the corpus (`fit.critic.fit_answers_head`)
    P(refutes)   = sigmoid(w_ref · y + b_ref)       y = evidence.polarity(claim, text), optional (`refutes`): the
                   claim protocol's verdict, once a chunk settles a claim, in the claim weights only

Weights are a versioned JSON file (`CriticModel.to_json`); the one shipped in `selfrag/data/` was fitted on
training ids only (its `fitted_on` and docs/decisions.md say which), and `selfrag critic fit` refits it
from a user's own judged data; `selfrag calibrate` fits a file for an endpoint's model, whose `model` block
names that model (`engine.fitted`; a file without one was fitted for the embedded model). A file is validated
before use (format, version, feature names, shapes, finite numbers, the model block) and a bad one is refused
with a message naming it. Fitting is L2-regularised logistic regression by
Newton's method in numpy (`selfrag.fit.critic`); the engine only reads and checks the file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

from ..errors import ConfigError
from ..files import read_regular
from ..result import DECIDED, UNSETTLED_KINDS
from .evidence import FEATURES, POLARITY, features, polarity, vector
from .fitted import EMBEDDED, FittedFor, parse_fitted_for

FORMAT = "selfrag-critic"
VERSION = 1
SHIPPED = "critic-v1.json"
MIN_LEAD_ANSWERS = 20  # the short answer's rate of a kind is used from this many training answers on
COIN_Z = 1.645  # one-sided 95 %: how sure the training counts must be that the model's short answer beats a coin
MAX_FILE_BYTES = 1 << 20
NO_CHECK = 0.5  # the check's input where the check was not made (its call failed, or the deadline passed)
LEAD_RUNS, LEAD_POOL = "lead", "lead_decided"  # `fitted_on` keys: where the short answer's counts were counted
HELD_KINDS = ("yes_no", "factoid")  # kinds whose short answer the model states only on its training counts
# what the answers head reads of a candidate: its two probabilities, the share of its words the question does not
# hold (evidence.features' `novelty`) and whether it was extracted from its chunk (`engine.extract`). In weights
# files that last one is named "offered", its name when version 1 was written: a file's names must match these, and
# the weights' text is part of a bench run's hash, so the old name is kept for the files and runs already made
ANSWER_FEATURES = ("p_relevant", "p_supported", "novelty", "offered")
# what the answered head reads of an answer: the mean P(supported) and answer support of its sentences, and how much
# they state (log(1 + words)); a head fitted with the model's check also reads its verdict that the sentences give
# what the question asks (`engine.check`: P(agree) + P(unclear) / 2), one call per answer
ANSWERED_FEATURES = ("p_supported", "answer_support", "log_words")
CHECKED_FEATURES = (*ANSWERED_FEATURES, "model_check")


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
        return _sigmoid(self.a * logit(p) + self.c)


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
    answered: Head | None = None  # over ANSWERED_FEATURES (or CHECKED_FEATURES): an answer's confidence; else the map
    fitted_for: FittedFor | None = None  # the model block (`selfrag calibrate`); None: a file from before it

    @property
    def made_for(self) -> FittedFor:
        """The model these weights were fitted for: a file without a model block (the shipped weights, older
        files) was fitted on the embedded model's labels."""
        return self.fitted_for or EMBEDDED

    def lead_rate(self, kind: str | None, least: int = MIN_LEAD_ANSWERS) -> float | None:
        """How often a short answer of this kind was right where the sentences after it were not (for the
        `UNSETTLED_KINDS`, how often such an answer was right at all), by Laplace's rule on the training counts;
        None for a kind with fewer than `least` training answers: a rate from a handful of answers is noise,
        and the sentences' confidence stands where there are sentences."""
        right, of = self.lead.get(kind or "", (0, 0))
        return (right + 1) / (of + 2) if of >= least else None

    def probabilities(self, values: Mapping[str, float]) -> tuple[float, float]:
        """P(relevant) and P(supported) of a candidate with these evidence features (`evidence.FEATURES`)."""
        x = vector(values)
        return self.relevant.probability(x), self.supported.probability(x)

    def support(self, p_relevant: float, p_supported: float, values: Mapping[str, float], extracted: bool) -> float:
        """The answer support of a candidate, what the abstention cut is applied to: the answers head's probability
        where the weights have one, else P(relevant) · P(supported)."""
        if self.answers is None:
            return answer_support(p_relevant, p_supported)
        return self.answers.probability(answer_inputs(p_relevant, p_supported, values, extracted))

    @property
    def reads_check(self) -> bool:
        """The answered head reads the model's check of the answer (`CHECKED_FEATURES`): the engine asks it."""
        return self.answered is not None and len(self.answered.weights) == len(CHECKED_FEATURES)

    def answer_confidence(
        self, p_supported: Sequence[float], supports: Sequence[float], words: int, check: float | None = None
    ) -> float:
        """The confidence of an answer whose sentences have these P(supported) and answer supports and state
        `words` words: the answered head where the weights have one (with the model's `check` where it reads one;
        None, a check not made, reads as NO_CHECK), else the map of the mean P(supported); 0 for an answer of no
        rated sentence."""
        if not p_supported:
            return 0.0
        if self.answered is None or len(supports) != len(p_supported):
            return self.confidence.probability(sum(p_supported) / len(p_supported))
        checked = (NO_CHECK if check is None else check) if self.reads_check else None
        return self.answered.probability(answered_inputs(p_supported, supports, words, checked))

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
            ("answered", self.answered, CHECKED_FEATURES if self.reads_check else ANSWERED_FEATURES),
        ):  # the optional heads carry the names of their own features (read back by `_named_head`)
            if head is not None:
                body[name] = {"features": list(names), "weights": list(head.weights), "bias": head.bias}
        if self.lead:
            body["lead"] = {kind: {"right": right, "of": of} for kind, (right, of) in self.lead.items()}
        if self.fitted_for is not None:
            body["model"] = self.fitted_for.to_dict()
        return json.dumps(body, indent=1, allow_nan=False) + "\n"


def answer_support(p_relevant: float, p_supported: float) -> float:
    """What the abstention cut is applied to without an answers head: P(the chunk is about the question) · P(it
    backs the sentence)."""
    return p_relevant * p_supported


def answer_inputs(p_relevant: float, p_supported: float, values: Mapping[str, float], extracted: bool) -> list[float]:
    """The answers head's inputs, in `ANSWER_FEATURES` order (`values`: the candidate's evidence features)."""
    return [p_relevant, p_supported, float(values["novelty"]), float(extracted)]


def answered_inputs(
    p_supported: Sequence[float], supports: Sequence[float], words: int, check: float | None = None
) -> list[float]:
    """The answered head's inputs, in `ANSWERED_FEATURES` order, from an answer's sentences; with the model's
    `check`, in `CHECKED_FEATURES` order."""
    inputs = [sum(p_supported) / len(p_supported), sum(supports) / len(supports), math.log1p(max(words, 0))]
    return inputs if check is None else [*inputs, check]


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def logit(p: float) -> float:
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
    if a is None or c is None or not finite(threshold) or not 0 < threshold < 1:
        raise ConfigError(f"{where}: confidence and support_threshold must be finite numbers (threshold in (0, 1))")
    if not finite(abstain) or not 0 <= abstain < 1:
        raise ConfigError(f"{where}: abstain_threshold must be a number from 0 to below 1")
    fitted = body.get("fitted_on") if isinstance(body.get("fitted_on"), dict) else {}
    lead = _lead_counts(body.get("lead", {}), where)
    refutes = _named_head(body, "refutes", POLARITY, where)
    answers = _named_head(body, "answers", ANSWER_FEATURES, where)
    checked = isinstance(body.get("answered"), dict) and body["answered"].get("features") == list(CHECKED_FEATURES)
    answered = _named_head(body, "answered", CHECKED_FEATURES if checked else ANSWERED_FEATURES, where)
    model = CriticModel(
        heads[0], heads[1], Platt(a, c), float(threshold), float(abstain), fitted, lead, refutes, answers, answered
    )
    return replace(model, fitted_for=parse_fitted_for(body["model"], where)) if "model" in body else model


# the kinds of engine.questions.question_kind that get a short answer, what decided a choice the documents decided
# (result.DECIDED: the options' dates, or a trait said of one option only; engine.decide), and the answers whose
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
    if len(weights) != len(names) or not all(finite(w) for w in weights) or not finite(value.get("bias")):
        raise ConfigError(f"{where}: {name} needs {len(names)} finite weights and a finite bias")
    return Head(tuple(float(w) for w in weights), float(value["bias"]))


def _numbers(value: Mapping[str, Any], keys: Sequence[str], where: str, name: str) -> tuple[float | None, ...]:
    return tuple(float(value[k]) if finite(value.get(k)) else None for k in keys)


def finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# -- raters: how the engine turns a step's critiqued candidates into P(relevant), P(supported) ----------


@dataclass(frozen=True, slots=True)
class SupportEstimate:
    """What a rater says of one candidate: P(relevant), P(supported), the evidence features it read them from, and
    its own answer support where it has one."""

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
class CandidateView:
    """What a rater is shown of one candidate (all candidates of one beam's step are rated together)."""

    sentence: str
    chunk_text: str
    chunk_key: str
    rank: int
    score_rel: float | None
    quote_ok: bool | None
    model_rel: float
    model_sup: float
    others: tuple[str, ...]  # sentences written from the beam's other chunks this step
    extracted: bool = False  # the chunk's own sentence, extracted to stand beside the model's (`engine.extract`)

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
    """Rates candidates written from chunks: what the engine calls of a scorer. `threshold` is its default
    abstention cut on `answer_support`, `confidence` maps P(supported) values to the probability that the answer
    is right (an abstention's), `answer_confidence` is that probability for an answer from its sentences'
    P(supported), answer supports and words, and `with_lead` adds what a short answer of a kind stated before the
    sentences adds to it. `from_documents`: a question that asks for a fact is answered from the documents, never
    from the model's memory (the rater rates only sentences written from chunks, so such an answer's confidence is
    nil). `weighs_utility`: the model's ISUSE label enters a candidate's score f (w_use), as in the paper.
    `trusts(kind)`: the model's own short answer to a question of that kind is printed (`engine.lead`); where it
    is not, a yes/no question reads "The documents don't settle it." and a factoid gets no short answer.
    The claim benchmarks' verdict members (`verdict_cut`, `refutes`) are `bench.systems.ClaimRater`'s.
    """

    @property
    def threshold(self) -> float: ...

    @property
    def from_documents(self) -> bool: ...

    @property
    def weighs_utility(self) -> bool: ...

    def trusts(self, kind: str) -> bool: ...

    def reads_better(self, kind: str, rule: str) -> bool: ...

    def rate(self, question: str, views: Sequence[CandidateView]) -> list[SupportEstimate]: ...

    def confidence(self, supported: Sequence[float]) -> float: ...

    def answer_confidence(
        self, supported: Sequence[float], supports: Sequence[float], words: int, check: float | None = None
    ) -> float: ...

    @property
    def reads_check(self) -> bool: ...

    def with_lead(self, confidence: float, kind: str | None, alone: bool = False) -> float: ...


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

    def reads_better(self, kind: str, rule: str) -> bool:
        return False  # no counts: a rule's decision is not put to the embedded model

    def rate(self, question: str, views: Sequence[CandidateView]) -> list[SupportEstimate]:
        return [SupportEstimate(view.model_rel, view.model_sup) for view in views]

    def confidence(self, supported: Sequence[float]) -> float:
        return sum(supported) / len(supported) if supported else 0.0

    def answer_confidence(
        self, supported: Sequence[float], supports: Sequence[float], words: int, check: float | None = None
    ) -> float:
        return self.confidence(supported)  # the paper's: the mean support credit of the answer's sentences

    @property
    def reads_check(self) -> bool:
        return False  # the paper's confidence reads the critique only

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
        # f is its P(relevant) + P(supported) alone: a small model's ISUSE label ranks the candidates that hold the
        # answer at chance, and at w_use 0.5 it outweighed them (docs/decisions.md); the heads do not read it either
        return False

    @property
    def verdict_cut(self) -> float:
        return self.model.support_threshold  # fitted on judged statements; not the abstention cut

    def trusts(self, kind: str) -> bool:
        """A yes or no, or a name, number or date, the model states is printed only where the training counts
        show it right more often than wrong (`beats_a_coin`): a short answer is read first and plainly, and one
        that is more often wrong misleads more than it tells (the shipped counts: docs/decisions.md). Its choice
        between two options is printed as before (`HELD_KINDS`): too few were counted to judge."""
        if kind not in HELD_KINDS:
            return True
        right, of = self.model.lead.get(kind, (0, 0))
        return of >= MIN_LEAD_ANSWERS and beats_a_coin(right, of)

    def reads_better(self, kind: str, rule: str) -> bool:
        """The model's own short answer of this kind was right more often than the rule's decisions, by the
        training counts (`reads_better`): only then does the embedded model confirm a rule's decision."""
        return reads_better(self.model.lead, kind, rule)

    def rate(self, question: str, views: Sequence[CandidateView]) -> list[SupportEstimate]:
        out = []
        for view in views:
            values = view.features(question)
            p_rel, p_sup = self.model.probabilities(values)
            out.append(SupportEstimate(p_rel, p_sup, values, self.model.support(p_rel, p_sup, values, view.extracted)))
        return out

    def confidence(self, supported: Sequence[float]) -> float:
        return self.model.confidence.probability(sum(supported) / len(supported)) if supported else 0.0

    def answer_confidence(
        self, supported: Sequence[float], supports: Sequence[float], words: int, check: float | None = None
    ) -> float:
        return self.model.answer_confidence(supported, supports, words, check)

    @property
    def reads_check(self) -> bool:
        return self.model.reads_check

    def with_lead(self, confidence: float, kind: str | None, alone: bool = False) -> float:
        """The answer is right if its sentences are or, where they are not, its short answer is. A short answer
        saying the documents don't settle the question (`UNSETTLED_KINDS`) answers nothing: the confidence is how
        often such training answers were right, whatever their sentences' support (a sentence that backs one
        name of a yes/no question does not say yes or no). A short answer that stands `alone`, no sentence after
        it (`lead.standing`), is as sure as its kind's counts say however few they are (Laplace's rule: a half
        for none), never the 0 of sentences that are not there."""
        rate = self.model.lead_rate(kind, least=0 if alone else MIN_LEAD_ANSWERS)
        if rate is None:
            return confidence
        return rate if kind in UNSETTLED_KINDS.values() else confidence + (1 - confidence) * rate

    def refutes(self, claim: str, text: str) -> float | None:
        head = self.model.refutes
        return None if head is None else head.probability(polarity(claim, text))


def reads_better(counts: Mapping[str, tuple[int, int]], kind: str, rule: str) -> bool:
    """The model's short answers of `kind` were right more often than the decisions of `rule` (Laplace's rule on
    each's training counts), on at least MIN_LEAD_ANSWERS of the model's; against a rule with no counts, the
    model must beat a coin (`beats_a_coin`). With the shipped counts the embedded model beats no rule
    (docs/decisions.md, `confirm`)."""
    right, of = counts.get(kind, (0, 0))
    if of < MIN_LEAD_ANSWERS:
        return False
    rule_right, rule_of = counts.get(rule, (0, 0))
    if rule_of == 0:
        return beats_a_coin(right, of)
    return (right + 1) / (of + 2) > (rule_right + 1) / (rule_of + 2)


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
