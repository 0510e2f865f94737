"""The fit commands reproduce the shipped weights (`selfrag/data/`) from the datasets, where no model is needed.

Reproduced from the training data alone: the claim scorers' heads, verdict cut and NEI cut (`bench fit-claims`
with no run: training claims and their BM25 chunks), CLIMATE-FEVER's polarity head (`fit.claims.fit_polarity`), and
the short answer's counts over HaluEval's training pool (`bench fit-lead --decided-on halueval`). The rest was
fitted on model runs or judged rows the repository does not hold (each file's `fitted_on` names them): the claim
confidence maps, the decision to keep the polarity head, and critic-v1.json's heads, cut, maps and run counts.

The datasets are read from `bench.datasets.default_root()` ($SELFRAG_DATASETS, else ../shared/datasets beside the
checkout); without them the tests are skipped. Floats are compared to 1e-9: numpy's linear algebra may round the
last digits of a weight differently from the machine that fitted it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import selfrag
from selfrag.bench import datasets as ds
from selfrag.cli import main
from selfrag.fit.claims import fit_polarity

DATA = Path(selfrag.__file__).parent / "data"
ROOT = ds.default_root()

pytestmark = pytest.mark.slow  # each builds a BM25 index over a whole training corpus (about 30 s)


def folder(name: str) -> Path:
    path = ROOT / ds.FOLDERS[name]
    if not path.is_dir():
        pytest.skip(f"dataset {name} is not at {path} (set SELFRAG_DATASETS)")
    return path


def close(fitted: dict[str, Any], shipped: dict[str, Any]) -> bool:
    """Two heads alike: the same features, weights and bias to 1e-9."""
    return (
        fitted.get("features") == shipped.get("features")
        and len(fitted["weights"]) == len(shipped["weights"])
        and all(abs(a - b) <= 1e-9 for a, b in zip(fitted["weights"], shipped["weights"], strict=True))
        and abs(fitted["bias"] - shipped["bias"]) <= 1e-9
    )


@pytest.mark.parametrize("dataset", ["scifact", "climate_fever"])
def test_fit_claims_reproduces_the_shipped_heads_and_cuts(dataset: str, tmp_path: Path) -> None:
    out = tmp_path / "claims.json"
    assert main(["bench", "fit-claims", "--dataset", dataset, "--data", str(folder(dataset)), "--out", str(out)]) == 0
    fitted = json.loads(out.read_text())
    shipped = json.loads((DATA / f"critic-claims-{dataset}-v1.json").read_text())
    for key in ("format", "version", "features", "support_threshold", "abstain_threshold"):
        assert fitted[key] == shipped[key], key
    for key in ("rows", "claims", "task", "source"):
        assert fitted["fitted_on"][key] == shipped["fitted_on"][key], key
    assert close(fitted["relevant"], shipped["relevant"]) and close(fitted["supported"], shipped["supported"])


def test_the_polarity_head_is_the_shipped_one() -> None:
    dataset = ds.load("climate_fever", folder("climate_fever"), split="train")
    head, rows = fit_polarity((dataset, example) for example in dataset.examples)
    shipped = json.loads((DATA / "critic-claims-climate_fever-v1.json").read_text())
    assert head is not None and rows == shipped["fitted_on"]["polarity_rows"]
    fitted = {"features": shipped["refutes"]["features"], "weights": list(head.weights), "bias": head.bias}
    assert close(fitted, shipped["refutes"])


@pytest.mark.xfail(
    strict=True,
    reason="the shipped pool counts predate later changes to the engine's choice rules (at 8b57fea they decide 3 "
    "right questions fewer, of dates, same and traits, and 1 wrong more, of both): refit them to pass",
)
def test_fit_lead_reproduces_the_shipped_file_byte_for_byte(tmp_path: Path) -> None:
    out = tmp_path / "critic.json"
    shipped = DATA / "critic-v1.json"
    argv = ["bench", "fit-lead", "--decided-on", "halueval", "--data", str(folder("halueval")), "--weights"]
    assert main([*argv, str(shipped), "--out", str(out)]) == 0
    assert out.read_bytes() == shipped.read_bytes()
