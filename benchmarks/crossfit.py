"""Cross-fitted calibration: the ECE a confidence map fitted on a corpus's own judged answers reaches, each
answer's confidence coming from a map that never saw its question (`selfrag critic map`).

    python benchmarks/crossfit.py RUN_DIR --out DIR [--folds 2] [--seed 0] -- RUN FLAGS...

RUN_DIR is a finished Self-RAG QA run and RUN FLAGS are the flags of benchmarks/run.py that made it. The run's
questions are cut into seeded folds. For each fold, the map is fitted on the judged candidates of the other
folds' questions (`selfrag bench judgments`) under the run's weights, and the run is made again with those
weights in DIR/fold<i>/run. The map changes no decision, so those answers come from the request cache and must
equal RUN_DIR's; the script stops if one does not. Each fold's own answers, put together, are scored as one run
in DIR/crossfit (its results.json, so `score.py --check` holds on it).

It says what a map fitted on this corpus's shape would do, not what the shipped one does: the folds are the
reported questions themselves, each scored by a map fitted on the others. A fold's weights carry no answered head
(`selfrag critic map` drops it): the map fitted there is what each answer's confidence reads.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from _cli import run_cli

from selfrag.bench import datasets as ds
from selfrag.bench.judgments import rows_from_records
from selfrag.bench.runner import EXIT_FAILURES, EXIT_OK
from selfrag.bench.samples import read_samples
from selfrag.bench.score import calibration_table, score_run
from selfrag.engine.calibration import load_critic_model
from selfrag.errors import InputError
from selfrag.fit.critic import fit_map


def folds_of(ids: list[str], folds: int, seed: int) -> dict[str, int]:
    """Each question id's fold: a seeded shuffle dealt round-robin, so the folds differ in size by one at most."""
    order = sorted(ids)
    random.Random(seed).shuffle(order)
    return {question: n % folds for n, question in enumerate(order)}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/crossfit.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", help="a finished Self-RAG QA run folder")
    parser.add_argument("--out", required=True, help="folder for the folds' weights, runs and the scored whole")
    parser.add_argument("--folds", type=int, default=2, help="number of folds (default 2)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the folds (default 0)")
    cut = argv.index("--") if "--" in argv else len(argv)
    args, flags = parser.parse_args(argv[:cut]), argv[cut + 1 :]
    try:
        return crossfit(Path(args.run_dir), Path(args.out), args.folds, args.seed, flags)
    except InputError as error:
        print(f"benchmarks/crossfit.py: error: {error}", file=sys.stderr)
        return 2


def crossfit(run_dir: Path, out: Path, folds: int, seed: int, flags: list[str]) -> int:
    if folds < 2:
        raise InputError(f"--folds must be at least 2, got {folds}")
    if not flags:
        raise InputError("give the run's own flags after -- (those of benchmarks/run.py that made RUN_DIR)")
    if "--scorer-weights" in flags or "--run-dir" in flags:
        raise InputError("the run's flags may not set --scorer-weights or --run-dir: the script sets them per fold")
    config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    if config["dataset"]["task"] != "qa" or config["system"]["kind"] != "selfrag":
        raise InputError(f"{run_dir} is not a Self-RAG QA run")
    records, _ = read_samples(run_dir / "samples.jsonl", repair=False)
    done = {question: record for question, record in records.items() if record.get("status") == "ok"}
    fold = folds_of(list(done), folds, seed)
    chunks = ds.load(config["dataset"]["name"], config["dataset"]["path"]).chunk_texts()
    model = load_critic_model(config["system"]["config"].get("scorer_weights"))
    whole = out / "crossfit"
    whole.mkdir(parents=True, exist_ok=True)
    kept: list[str] = []
    for n in range(folds):
        others = [record for question, record in done.items() if fold[question] != n]
        fitted, answered, right = fit_map(
            model, rows_from_records(others, chunks), f"{run_dir.name}, folds other than {n}"
        )
        weights = out / f"fold{n}.json"
        weights.write_text(fitted.to_json(), encoding="utf-8")
        print(
            f"fold {n}: map a={fitted.confidence.a:.2f} c={fitted.confidence.c:.2f}, {answered} answers, {right} right"
        )
        again = out / f"fold{n}" / "run"
        code = run_cli(["run", *flags, "--scorer-weights", str(weights), "--run-dir", str(again)], prog="crossfit")
        if code not in (EXIT_OK, EXIT_FAILURES):  # a question that failed on its own is recorded, and left out
            raise InputError(f"the run of fold {n} ended with exit code {code}; see {again}")
        answered_again, _ = read_samples(again / "samples.jsonl", repair=False)
        for question, record in answered_again.items():
            if fold.get(question) != n:
                continue
            if record.get("prediction") != done[question].get("prediction"):
                raise InputError(f"question {question} was answered otherwise in fold {n}: not the run of {run_dir}")
            kept.append(json.dumps(record, ensure_ascii=False))
    (whole / "config.json").write_text((out / "fold0" / "run" / "config.json").read_text(encoding="utf-8"))
    (whole / "samples.jsonl").write_text("".join(line + "\n" for line in kept), encoding="utf-8")
    row = score_run(whole)
    (whole / "results.json").write_text(json.dumps({"summary": row["summary"]}, indent=2) + "\n", encoding="utf-8")
    print(calibration_table([score_run(run_dir) | {"label": "one map (the run's)"}, row | {"label": "cross-fitted"}]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
