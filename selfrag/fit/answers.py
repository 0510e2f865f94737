"""The answer's confidence fitted on the answers training runs gave (`selfrag bench fit-confidence`).

The shipped confidence map reads one input, the mean P(supported) of the answer's sentences, and that input does
not rank a small model's answers, so the map can only sit near one right rate (docs/decisions.md, the calibrated
confidence). The answered head
(`engine.calibration`) reads the answer as the engine gave it: the mean P(supported) and the mean answer support
of its sentences, and how many words they state, and where it was fitted with it the model's check of the
answer (`engine.check`). This module reads those inputs back from run records, each
sentence matched to the candidate it was kept from, the answer support recomputed under the weights being fitted
(runs made before the weights had an answers head recorded P(relevant)·P(supported) there), and whether the
sentences hold a gold answer (the short answer's share is counted apart: `fit.lead`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..bench.metrics import answer_in
from ..engine.calibration import NO_CHECK, CriticModel, answered_inputs
from ..engine.evidence import FEATURES
from .lead import sentences_of


def answered(
    record: Mapping[str, Any], model: CriticModel, *, given: bool = False, checked: bool = False
) -> tuple[list[float], bool] | None:
    """An answered QA record's inputs to the answered head under `model`, and whether its sentences are right;
    None for a failed question, an abstention, or an answer with a sentence that no rated candidate matches, and
    with `given` for a question none of whose candidates reaches `model`'s abstention cut (the engine would have
    abstained). With `checked`, the model's check of the answer (`answer_check`; `NO_CHECK` where none was had)
    is the last input, as `CHECKED_FEATURES` orders them."""
    if record.get("status") != "ok" or record.get("abstained") or not record.get("segments"):
        return None
    candidates = [c for c in record.get("candidates") or [] if _estimated(c)]
    if given and max((_support(c, model) for c in candidates), default=0.0) < model.abstain_threshold:
        return None  # the engine abstains when even the best candidate is under the cut
    p_supported, supports = [], []
    for segment in record["segments"]:
        text = str(segment.get("text", ""))
        same = [c for c in candidates if c.get("text") == text]  # the one of its chunk first (a text may recur)
        match = next((c for c in same if c.get("chunk") == segment.get("chunk")), same[0] if same else None)
        if match is None:
            return None
        p_supported.append(_rated(match["critique"], model)[1])
        supports.append(_support(match, model))
    said = sentences_of(record)
    check = record.get("answer_check")
    credit = (NO_CHECK if check is None else float(check)) if checked else None
    inputs = answered_inputs(p_supported, supports, len(said.split()), credit)
    return inputs, bool(answer_in(said, record.get("answers") or []))


def answered_all(
    records: Iterable[Mapping[str, Any]], model: CriticModel, *, given: bool = False, checked: bool = False
) -> list[tuple[list[float], bool]]:
    """`answered` of each record that has them (with `given`, only the answers `model`'s cut lets through; with
    `checked`, the model's check of each as the last input)."""
    found = (answered(record, model, given=given, checked=checked) for record in records)
    return [inputs for inputs in found if inputs is not None]


def _support(candidate: Mapping[str, Any], model: CriticModel) -> float:
    """A rated candidate's answer support under `model`."""
    p_rel, p_sup = _rated(candidate["critique"], model)
    return model.support(p_rel, p_sup, candidate["critique"]["features"], bool(candidate.get("extracted")))


def _rated(critique: Mapping[str, Any], model: CriticModel) -> tuple[float, float]:
    """A candidate's P(relevant) and P(supported) under `model`'s heads, from its recorded evidence features (a
    run rated by other weights, as `selfrag calibrate`'s is, recorded other probabilities); the recorded ones where
    its features are not the heads' inputs."""
    values = critique["features"]
    if not all(name in values for name in FEATURES):
        return float(critique["p_relevant"]), float(critique["p_supported"])
    return model.probabilities(values)


def _estimated(candidate: Mapping[str, Any]) -> bool:
    """The rater's estimate is on the candidate's critique: P(relevant), P(supported) and the features."""
    critique = candidate.get("critique") or {}
    return all(critique.get(k) is not None for k in ("p_relevant", "p_supported", "features"))
