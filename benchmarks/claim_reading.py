"""How well CLIMATE-FEVER's sentence-level support can be told without a model that reads (issue 12's critic target).

The critic-agreement target asks a verdict on each claim/sentence pair: does the sentence support the claim
(gold SUPPORTS) or not (REFUTES, NOT_ENOUGH_INFO)? This script measures, on training claims only (outside the
test pool), what the signals a 135M model can give carry:

- cues: the evidence scorer's word, number and name overlap features (`engine.evidence.features`, the model's own
  labels held neutral, as the claim weights are fitted) and the polarity cues (`engine.evidence.polarity`);
- likelihood (`--likelihood`): how much the sentence raises the embedded model's likelihood of the claim, and the
  claim that of the sentence (log P(claim | "Evidence: s") - log P(claim), both ways, in total and per token);
- hidden state (`--hidden`): a linear probe on what the embedded model holds after reading the pair and a question
  about it (its last layer at the last token, and averaged over the tokens: 2 x 576 numbers), fitted with the
  L2 strengths of `--l2`.

Each set is fitted by the project's logistic regression with the cut of best balanced accuracy on the training
folds, in 5-fold cross-validation grouped by claim, and scored on the held-out folds: balanced accuracy, AUROC,
and AUROC within claims (only pairs of the same claim compared, so a signal that tells claims apart, not their
sentences, scores 0.5 there).

    python benchmarks/claim_reading.py                                      # cues, every training claim
    python benchmarks/claim_reading.py --likelihood --claims 150 --threads 1 # + likelihood (about 20 min)
    python benchmarks/claim_reading.py --hidden --threads 1                  # + the probe (about 20 min)
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cli import print_table  # noqa: E402

from selfrag.bench.datasets import load  # noqa: E402
from selfrag.bench.metrics import auroc, balanced_accuracy  # noqa: E402
from selfrag.engine.evidence import features, polarity, vector  # noqa: E402
from selfrag.fit.critic import balanced_threshold, fit_logistic  # noqa: E402

FOLDS = 5


@dataclass(frozen=True, slots=True)
class Pair:
    claim_id: str
    claim: str
    sentence: str
    supports: bool


def training_pairs(claims: int | None, seed: int) -> list[Pair]:
    dataset = load("climate_fever", split="train")
    texts = dataset.chunk_texts()
    examples = list(dataset.examples)
    random.Random(seed).shuffle(examples)
    return [
        Pair(example.id, example.question, texts[pair.chunk].text, pair.gold_label == "SUPPORTS")
        for example in examples[:claims]
        for pair in example.pairs
    ]


def cues(pair: Pair) -> list[float]:
    values = features(
        pair.claim, pair.claim, pair.sentence, rank=0, score_rel=None, quote_ok=None, model_rel=0.5, model_sup=0.5
    )
    return vector(values) + polarity(pair.claim, pair.sentence)


class Likelihood:
    """Log-likelihoods of a continuation after a prefix under the embedded model (llama.cpp, prompt only)."""

    def __init__(self, model: Path, threads: int) -> None:
        from llama_cpp import Llama

        self._llama = Llama(model_path=str(model), n_ctx=1024, n_threads=threads, logits_all=True, verbose=False)

    def log_p(self, prefix: str, continuation: str) -> tuple[float, int]:
        head = self._llama.tokenize(prefix.encode(), add_bos=False, special=False)
        tail = self._llama.tokenize(continuation.encode(), add_bos=False, special=False)
        self._llama.reset()
        self._llama.eval(head + tail)
        logits = np.asarray(self._llama.scores[len(head) - 1 : len(head) + len(tail) - 1], dtype=float)
        log_probs = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
        return float(log_probs[np.arange(len(tail)), tail].sum()), len(tail)

    def features(self, pair: Pair, claim_alone: tuple[float, int]) -> list[float]:
        claim_given, claim_tokens = self.log_p(f"Evidence: {pair.sentence}\nClaim:", f" {pair.claim}")
        sentence_given, sentence_tokens = self.log_p(f"Claim: {pair.claim}\nEvidence:", f" {pair.sentence}")
        sentence_alone, _ = self.log_p("Evidence:", f" {pair.sentence}")
        raised_claim = claim_given - claim_alone[0]
        raised_sentence = sentence_given - sentence_alone
        return [raised_claim, raised_claim / claim_tokens, raised_sentence, raised_sentence / sentence_tokens]


class Hidden:
    """The embedded model's last layer after reading a claim, a sentence and the question between them."""

    def __init__(self, model: Path, threads: int) -> None:
        from llama_cpp import Llama

        self._llama = Llama(model_path=str(model), n_ctx=1024, n_threads=threads, embedding=True, verbose=False)

    def features(self, pair: Pair) -> list[float]:
        text = f"Claim: {pair.claim}\nEvidence: {pair.sentence}\nDoes the evidence support the claim?"
        states = np.asarray(self._llama.embed(text, truncate=True), dtype=float)
        return states[-1].tolist() + states.mean(axis=0).tolist()


def cross_validated(x: np.ndarray, pairs: Sequence[Pair], l2: float = 1.0) -> dict[str, object]:
    """Held-out P(supports) of every pair, each fold fitted on the others (claims never split across folds)."""
    y = np.array([p.supports for p in pairs])
    claim_ids = sorted({p.claim_id for p in pairs})
    fold_of = {claim_id: n % FOLDS for n, claim_id in enumerate(claim_ids)}
    folds = np.array([fold_of[p.claim_id] for p in pairs])
    held_out = np.zeros(len(pairs))
    verdicts = np.zeros(len(pairs), dtype=bool)
    for fold in range(FOLDS):
        train, test = folds != fold, folds == fold
        scaled = (x - x[train].mean(axis=0)) / (x[train].std(axis=0) + 1e-9)  # by the training folds alone
        head = fit_logistic(scaled[train], y[train].astype(float), l2=l2)
        p = 1 / (1 + np.exp(-(scaled @ np.array(head.weights) + head.bias)))
        cut = balanced_threshold(p[train].tolist(), y[train].tolist())
        held_out[test] = p[test]
        verdicts[test] = p[test] >= cut
    return {
        "balanced acc. (CV)": _pct(balanced_accuracy(y.tolist(), verdicts.tolist())),
        "AUROC (CV)": _pct(auroc(held_out.tolist(), y.tolist())),
        "AUROC within claims": _pct(_within_claims(held_out, y, [p.claim_id for p in pairs])),
    }


def _within_claims(scores: np.ndarray, y: np.ndarray, claim_ids: Sequence[str]) -> float | None:
    """AUROC over the (supporting, other) pairs of sentences of the same claim: each claim's AUROC weighted by its
    number of such pairs."""
    ids = np.array(claim_ids)
    weighed = []
    for claim_id in set(claim_ids):
        mine = ids == claim_id
        area = auroc(scores[mine].tolist(), y[mine].tolist())
        if area is not None:
            weighed.append((area, int(y[mine].sum()) * int((~y[mine]).sum())))
    total = sum(n for _, n in weighed)
    return sum(area * n for area, n in weighed) / total if total else None


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def _loaded(parser: argparse.ArgumentParser, reader: type[Likelihood | Hidden], path: Path, threads: int) -> Any:
    """The model reader, or the parser's one-line error when llama.cpp cannot load the file."""
    try:
        return reader(path, threads)
    except (ImportError, ValueError) as error:
        parser.error(f"cannot load {path}: {error}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=None, help="the first N training claims of the seeded shuffle")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--likelihood", action="store_true", help="add the embedded model's likelihood features")
    parser.add_argument("--hidden", action="store_true", help="add a linear probe on the model's hidden state")
    parser.add_argument("--l2", type=float, nargs="+", default=[10.0, 100.0, 1000.0, 10000.0], help="L2 strengths")
    parser.add_argument("--model", type=Path, default=None, help="a GGUF file (default: the embedded model's)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    if args.claims is not None and args.claims < FOLDS:
        parser.error(f"--claims must be at least {FOLDS}")
    if any(value <= 0 for value in args.l2):
        parser.error("--l2 strengths must be positive")
    pairs = training_pairs(args.claims, args.seed)
    cue_x = np.array([cues(p) for p in pairs])
    fits = {"cues": (cue_x, 1.0)}  # each set of features with the L2 strength it is fitted at
    if args.likelihood or args.hidden:
        from selfrag.llm.local import local_model_path

        path = args.model or local_model_path()
        if not path.is_file():
            parser.error(f"no model file at {path}")
    if args.likelihood:
        model = _loaded(parser, Likelihood, path, args.threads)
        started, alone, read = time.monotonic(), {}, []
        for pair in pairs:
            if pair.claim not in alone:
                alone[pair.claim] = model.log_p("Claim:", f" {pair.claim}")
            read.append(model.features(pair, alone[pair.claim]))
        print(f"likelihoods of {len(pairs)} pairs in {time.monotonic() - started:.0f} s", file=sys.stderr)
        fits["likelihood"] = (np.array(read), 1.0)
        fits["cues + likelihood"] = (np.hstack([cue_x, np.array(read)]), 1.0)
    if args.hidden:
        reader = _loaded(parser, Hidden, path, args.threads)
        started = time.monotonic()
        states = np.array([reader.features(pair) for pair in pairs])
        print(f"hidden states of {len(pairs)} pairs in {time.monotonic() - started:.0f} s", file=sys.stderr)
        for l2 in args.l2:
            fits[f"hidden state (L2 {l2:g})"] = (states, l2)
            fits[f"cues + hidden state (L2 {l2:g})"] = (np.hstack([cue_x, states]), l2)
    claims = len({p.claim_id for p in pairs})
    share = sum(p.supports for p in pairs) / len(pairs)
    rows = [
        {"features": name, "claims": claims, "pairs": len(pairs), **cross_validated(x, pairs, l2)}
        for name, (x, l2) in fits.items()
    ]
    print_table(f"CLIMATE-FEVER training pairs (SUPPORTS {100 * share:.1f} %), seed {args.seed}", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
