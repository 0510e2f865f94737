"""`selfrag bench run|score|plot|growth`: benchmarks on public data (see selfrag.bench and benchmarks/README.md).

Exit codes of `bench run` and `bench growth`: 0 complete with no failed question, 3 complete with failed
questions (recorded and counted), 1 incomplete (resumable with --resume), 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import InputError, UsageError
from ..text import redact_secrets
from .common import OUTPUT_FILE, OUTPUT_FOLDER, add_engine_options, engine_flags

DATASETS = (
    "hotpotqa_smoke",
    "halueval",
    "halueval_hops",
    "scifact",
    "climate_fever",
    "popqa",
    "pubhealth",
    "arc_challenge",
)
SYSTEMS_HELP = (
    "no-retrieval | rag | selfrag | selfrag-beam2 | critic; ablations as suffixes: "
    "selfrag+separate, selfrag+wsup0, selfrag+always (or the flags --critic, --w-sup, --mode)"
)


def register(commands: Any) -> None:
    bench = commands.add_parser("bench", help="run benchmarks on public datasets", description=__doc__)
    sub = bench.add_subparsers(dest="bench_command", required=True, metavar="SUBCOMMAND")

    run = sub.add_parser("run", help="one dataset x one system into a run folder")
    run.add_argument("--dataset", required=True, choices=DATASETS)
    run.add_argument("--system", required=True, help=SYSTEMS_HELP)
    run.add_argument(
        "--unanswerable",
        action="store_true",
        help="QA only: take every sampled question's gold chunks out of the corpus (abstention test)",
    )
    _add_run_options(run)
    run.set_defaults(run=run_command, outputs={"out": OUTPUT_FOLDER, "run_dir": OUTPUT_FOLDER})

    growth = sub.add_parser("growth", help="the memory-growth experiment (corpus grows with distractors)")
    growth.add_argument("--dataset", default="halueval", choices=DATASETS)
    growth.add_argument("--systems", default="selfrag,rag", help="comma-separated systems (default selfrag,rag)")
    growth.add_argument("--sizes", default="100,1000,10000", help="corpus sizes (default 100,1000,10000)")
    growth.add_argument(
        "--stale",
        default="0",
        help="conflicting near-duplicates per gold snippet, comma-separated (e.g. 0,2,4,8; HaluEval only)",
    )
    growth.add_argument(
        "--stale-dated",
        action="store_true",
        help="date the stale copies before their gold snippet (supersession then prefers the gold one)",
    )
    _add_run_options(growth)
    growth.set_defaults(run=growth_command, outputs={"out": OUTPUT_FOLDER, "run_dir": OUTPUT_FOLDER})

    score = sub.add_parser("score", help="recompute metrics from samples.jsonl (no model calls)")
    score.add_argument("run_dirs", nargs="+", help="run folders")
    score.add_argument("--json", action="store_true", help="print the summaries as JSON")
    score.add_argument("--check", action="store_true", help="exit 1 unless each equals its results.json")
    score.set_defaults(run=score_command)

    compare = sub.add_parser("compare", help="two runs of the same questions, question by question: lost, gained")
    compare.add_argument("run_a", help="the run compared against (e.g. without the abstention cut)")
    compare.add_argument("run_b", help="the run compared (e.g. with it)")
    compare.add_argument("--list", action="store_true", help="also print each question lost or gained")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")
    compare.set_defaults(run=compare_command)

    judgments = sub.add_parser("judgments", help="judged candidates from runs, for `selfrag critic fit`")
    judgments.add_argument("run_dirs", nargs="+", help="run folders (Self-RAG QA runs or critic runs)")
    judgments.add_argument("--out", required=True, help="JSONL file to write")
    judgments.set_defaults(run=judgments_command, outputs={"out": OUTPUT_FILE})

    fit = sub.add_parser("fit-claims", help="fit the claim protocol's evidence scorer on a dataset's training claims")
    fit.add_argument("runs", nargs="*", help="claim-protocol run folders on --split train (fit the confidence map)")
    fit.add_argument("--dataset", required=True, choices=("scifact", "climate_fever"))
    fit.add_argument("--data", help="dataset folder (default: ../shared/datasets/<name> or $SELFRAG_DATASETS)")
    fit.add_argument("--ndocs", type=int, default=5, help="chunks retrieved per claim, as the runs (default 5)")
    fit.add_argument("--out", required=True, help="weights file to write")
    fit.set_defaults(run=fit_claims_command, outputs={"out": OUTPUT_FILE})

    lead = sub.add_parser(
        "fit-lead", help="count how often the short answer is right where the sentences are not (training runs)"
    )
    lead.add_argument("runs", nargs="*", help="Self-RAG QA run folders made with --split train --lead")
    lead.add_argument(
        "--decided-on", metavar="DATASET", choices=("halueval",),
        help="also count the choices the documents decide (dates, traits) over this dataset's training pool",
    )  # fmt: skip
    lead.add_argument("--data", help="the dataset folder for --decided-on (default: ../shared/datasets/<name>)")
    lead.add_argument("--ndocs", type=int, default=5, help="chunks read per question for --decided-on (default 5)")
    lead.add_argument("--weights", help="critic weights to add the counts to (default: the shipped ones)")
    lead.add_argument(
        "--only", metavar="KINDS",
        help="refit only these kinds from the runs (comma-separated, e.g. yes_no,yes_no_unsettled); the other "
        "kinds keep the counts of --weights",
    )  # fmt: skip
    lead.add_argument("--out", required=True, help="weights file to write")
    lead.set_defaults(run=fit_lead_command, outputs={"out": OUTPUT_FILE})

    answered = sub.add_parser(
        "fit-confidence", help="fit the answer's confidence on the answers training runs gave (evidence scorer)"
    )
    answered.add_argument("runs", nargs="+", help="Self-RAG QA run folders made with --split train")
    answered.add_argument("--weights", help="critic weights to add the head to (default: the shipped ones)")
    answered.add_argument("--out", required=True, help="weights file to write")
    answered.set_defaults(run=fit_confidence_command, outputs={"out": OUTPUT_FILE})

    plot = sub.add_parser("plot", help="PNG plots: quality vs LLM calls, reliability diagrams")
    plot.add_argument("run_dirs", nargs="+", help="run folders")
    plot.add_argument("--out", default="benchmarks/plots", help="folder for the PNG files")
    plot.set_defaults(run=plot_command, outputs={"out": OUTPUT_FOLDER})


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    data = parser.add_argument_group("data and run folder")
    data.add_argument("--data", help="dataset folder (default: ../shared/datasets/<name> or $SELFRAG_DATASETS)")
    data.add_argument("--limit", type=int, help="a seeded sample of N examples (default: all)")
    data.add_argument("--seed", type=int, default=0, help="sampling and bootstrap seed (default 0)")
    data.add_argument(
        "--split",
        choices=("all", "train"),
        default="all",
        help="all (default; reported samples) or train: examples that never appear in a reported sample, for fitting",
    )
    data.add_argument(
        "--kind", choices=("yes_no", "choice", "factoid"),
        help="QA only: sample among the questions of this kind (what the short answer reads them as)",
    )  # fmt: skip
    data.add_argument(
        "--ids", metavar="ID,ID,...",
        help="only these questions of the sample, each asked over the whole sample's corpus (ids as samples.jsonl "
        "writes them)",
    )  # fmt: skip
    data.add_argument("--out", default="benchmarks/runs", help="runs go to OUT/<dataset>/<system>/<hash>")
    data.add_argument("--run-dir", help="use exactly this run folder")
    data.add_argument("--resume", action="store_true", help="continue a run: skip finished ids")
    data.add_argument("--retry-failed", action="store_true", help="with --resume: answer failed questions again")
    data.add_argument("--cache", help="request cache file (default: <cache dir>/bench/requests.sqlite3)")
    data.add_argument("--no-cache", action="store_true", help="send every request")
    data.add_argument("--jobs", "-j", type=int, default=1, help="questions in flight at once (default 1)")
    data.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    data.add_argument(
        "--threads",
        type=int,
        help="embedded model only: llama.cpp threads (default: all cores; 1 is much faster on a busy machine)",
    )
    add_engine_options(parser)


def _ids(given: str | None) -> tuple[str, ...] | None:
    """The ids `--ids` names, each once, in the order given; UsageError for a list that names none."""
    if given is None:
        return None
    ids = tuple(dict.fromkeys(part.strip() for part in given.split(",") if part.strip()))
    if not ids:
        raise UsageError("--ids names no question: give ids separated by commas, as samples.jsonl writes them")
    return ids


def options_from(args: argparse.Namespace, dataset: str, system: str, **extra: Any) -> Any:
    import os

    from ..bench.runner import RunOptions
    from ..bench.systems import BENCH_DEFAULTS
    from ..settings import load_config

    config = load_config(engine_flags(args), config_file=args.config, defaults=BENCH_DEFAULTS)
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    cache = cache_path(args, os.environ)
    return RunOptions(
        dataset=dataset,
        system=system,
        config=config,
        data_path=args.data,
        limit=args.limit,
        seed=args.seed,
        split=args.split,
        kind=getattr(args, "kind", None),
        ids=_ids(getattr(args, "ids", None)),
        out=Path(args.out),
        run_dir=Path(args.run_dir) if getattr(args, "run_dir", None) else None,
        resume=args.resume,
        retry_failed=args.retry_failed,
        cache_path=cache,
        jobs=args.jobs,
        progress=not args.no_progress,
        embedded_threads=args.threads,
        stale_dated=getattr(args, "stale_dated", False),
        **extra,
    )


def cache_path(args: argparse.Namespace, environ: Any) -> Path | None:
    """The request cache of `--cache`, else the default under the cache dir; None with `--no-cache`."""
    from ..llm.local import cache_dir

    return None if args.no_cache else Path(args.cache or cache_dir(environ) / "bench" / "requests.sqlite3")


def run_command(args: argparse.Namespace) -> int:
    from ..bench.runner import EXIT_USAGE, run_benchmark
    from ..errors import ConfigError

    try:
        report = run_benchmark(options_from(args, args.dataset, args.system, unanswerable=args.unanswerable))
    except (ConfigError, InputError) as error:
        print(f"selfrag bench: error: {redact_secrets(str(error))}", file=sys.stderr)
        return EXIT_USAGE
    print(report.table)
    print(f"run folder: {report.run_dir} ({report.status})", file=sys.stderr)
    if report.message:
        print(f"selfrag bench: {report.message}", file=sys.stderr)
    return report.exit_code


def growth_command(args: argparse.Namespace) -> int:
    from ..bench.growth import run_growth

    sizes, stale = _integers(args.sizes, "--sizes"), _integers(args.stale, "--stale")
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if args.run_dir:
        raise UsageError("bench growth chooses its run folders under --out; --run-dir does not apply")
    base = options_from(args, args.dataset, systems[0])
    summary, code = run_growth(base, systems, sizes, stale=stale)
    print(summary["table"])
    print(f"growth results: {summary['path']}", file=sys.stderr)
    return code


def score_command(args: argparse.Namespace) -> int:
    from ..bench.score import calibration_table, markdown_table, score_run

    rows = [score_run(Path(d)) for d in args.run_dirs]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(markdown_table(rows))
        if any("critic" not in row["summary"] for row in rows):  # critic-agreement runs carry no confidence
            print("### Confidence and calibration\n")
            print(calibration_table(rows))
    if args.check:
        for folder, row in zip(args.run_dirs, rows, strict=True):
            results = Path(folder) / "results.json"
            if not results.is_file():
                raise InputError(
                    f"{folder} has no results.json (the run did not finish: --resume it); nothing to check"
                )
            stored = json.loads(results.read_text(encoding="utf-8"))["summary"]
            if json.loads(json.dumps(row["summary"])) != stored:
                print(f"selfrag bench: {folder}: recomputed metrics differ from results.json", file=sys.stderr)
                return 1
    return 0


def judgments_command(args: argparse.Namespace) -> int:
    from ..bench import datasets as ds
    from ..bench.judgments import row_dict, rows_from_records
    from ..bench.samples import read_samples

    lines, splits = [], set()
    for folder in map(Path, args.run_dirs):
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        dataset = ds.load(config["dataset"]["name"], config["dataset"]["path"])
        splits.add(config["sample"].get("split", "all"))
        records, _ = read_samples(folder / "samples.jsonl", repair=False)
        answerable = not config.get("corpus", {}).get("unanswerable", False)
        lines += [
            json.dumps(row_dict(r), ensure_ascii=False)
            for r in rows_from_records(records.values(), dataset.chunk_texts(), answerable=answerable)
        ]
    if splits != {"train"}:
        print("selfrag bench: note: some runs are not on --split train; do not report on what you fit", file=sys.stderr)
    Path(args.out).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    print(f"wrote {len(lines)} judged rows to {args.out}", file=sys.stderr)
    return 0


def fit_claims_command(args: argparse.Namespace) -> int:
    from ..bench import datasets as ds
    from ..bench.samples import read_samples
    from ..files import write_atomic
    from ..fit.claims import fit_confidence, fit_heads, keep_polarity
    from ..retrieval.index import Index

    if args.ndocs < 1:
        raise UsageError(f"--ndocs must be 1 or more, got {args.ndocs}")
    runs = [Path(folder) for folder in args.runs]
    configs = [_run_config(folder) for folder in runs]
    for folder, config in zip(runs, configs, strict=True):
        if config["sample"].get("split") != "train" or config["dataset"].get("name") != args.dataset:
            raise UsageError(f"{folder} is not a --split train run of {args.dataset}; fit only on training ids")
    dataset = ds.load(args.dataset, args.data, split="train")
    index = Index.build(dataset.corpus)
    claims = [(dataset, e, index.find_relevant_chunks(e.question, args.ndocs)) for e in dataset.examples]
    model = fit_heads(claims, {"source": f"{args.dataset} training claims (split train)"})
    trained = []
    for folder, config in zip(runs, configs, strict=True):
        records, _ = read_samples(folder / "samples.jsonl", repair=False)
        ndocs = (config["system"].get("config") or {}).get("ndocs", args.ndocs)
        ok = [record for record in records.values() if record.get("status") == "ok"]
        trained += [(record, index.find_relevant_chunks(record["question"], ndocs)) for record in ok]
    model, voted, polar = keep_polarity(model, trained)
    if voted:
        model = fit_confidence(model, voted, len(runs))
    write_atomic(Path(args.out), model.to_json())
    print(
        f"wrote {args.out}: {model.fitted_on['rows']} rows of {model.fitted_on['claims']} training claims, NEI cut "
        f"{model.abstain_threshold:.3f}, {polar}, confidence map from {len(voted)} voted claims",
        file=sys.stderr,
    )
    return 0


def fit_lead_command(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from ..engine.calibration import LEAD_KINDS, LEAD_POOL, LEAD_RUNS, load_critic_model
    from ..files import write_atomic
    from ..fit.lead import lead_counts
    from ..result import DECIDED

    if not args.runs and not args.decided_on:
        raise UsageError("give training run folders, --decided-on DATASET, or both")
    only = [kind.strip() for kind in (args.only or "").split(",") if kind.strip()]
    counted = [kind for kind in LEAD_KINDS if kind not in DECIDED]
    if args.only is not None and (not only or not set(only) <= set(counted) or not args.runs):
        raise UsageError(f"--only needs training runs and kinds among {', '.join(counted)}")
    records, _ = _training_records(args.runs, lead=True)
    model = load_critic_model(args.weights)
    counts, source = dict(model.lead), dict(model.fitted_on)
    if args.runs:
        counts = lead_counts(records)
        if only:  # the other kinds keep what they were counted on
            counts = {kind: n for kind, n in model.lead.items() if kind not in only} | {
                kind: n for kind, n in counts.items() if kind in only
            }
        if not counts:
            raise InputError(
                "no training answer in these runs stated a short answer over wrong sentences; nothing to fit"
            )
        runs = f"{len(records)} training answers of {len(args.runs)} run(s)"
        if only:
            runs = "; ".join(filter(None, [source.get(LEAD_RUNS), f"{', '.join(only)}: {runs}"]))
        source[LEAD_RUNS] = runs
        if LEAD_POOL in source:  # the documents' decisions were counted over a whole pool: runs do not replace them
            pooled = {kind: n for kind, n in model.lead.items() if kind in DECIDED}
            counts = {kind: n for kind, n in counts.items() if kind not in pooled} | pooled
    if args.decided_on:
        decided, source[LEAD_POOL] = _decided_on(args)
        counts = {kind: n for kind, n in counts.items() if kind not in decided} | decided
    model = replace(model, lead=counts, fitted_on=source)
    write_atomic(Path(args.out), model.to_json())
    said = ", ".join(f"{kind} {right} of {of}" for kind, (right, of) in counts.items())
    print(f"wrote {args.out}: short answers right (of those counted): {said}", file=sys.stderr)
    return 0


def fit_confidence_command(args: argparse.Namespace) -> int:
    from ..engine.calibration import load_critic_model
    from ..files import write_atomic
    from ..fit.answers import answered_all
    from ..fit.critic import fit_answered

    records, datasets = _training_records(args.runs)
    model = load_critic_model(args.weights)
    answers = answered_all(records, model, checked=model.reads_check)  # weights that read the check keep it
    if not answers:
        raise InputError("no answer in these runs has sentences rated by the evidence scorer; nothing to fit")
    source = f"{', '.join(datasets)} training answers of {len(args.runs)} run(s)"
    source += " with the model's check" if model.reads_check else ""
    model, n, right = fit_answered(model, answers, source)
    write_atomic(Path(args.out), model.to_json())
    print(f"wrote {args.out}: answer confidence fitted on {n} answers, {right} right", file=sys.stderr)
    return 0


def _training_records(folders: list[str], lead: bool = False) -> tuple[list[dict[str, Any]], list[str]]:
    """The records of QA runs made with `--split train` (with `lead`: made with `--lead` too), a question answered
    in two runs once (the first; a question made unanswerable is another question), and their datasets' names;
    a UsageError for a folder that is not such a run."""
    from ..bench.samples import read_samples

    records: dict[tuple[str, str, bool], dict[str, Any]] = {}
    for folder in map(Path, folders):
        config = _run_config(folder)
        if config["sample"].get("split") != "train" or config["dataset"].get("task") != "qa":
            raise UsageError(f"{folder} is not a --split train QA run; fit only on training ids")
        if lead and not (config["system"].get("config") or {}).get("lead"):
            raise UsageError(f"{folder} was run without --lead: its answers hold no short answer")
        name, unanswerable = str(config["dataset"].get("name")), bool((config.get("corpus") or {}).get("unanswerable"))
        found, _ = read_samples(folder / "samples.jsonl", repair=False)
        for key, record in found.items():
            records.setdefault((name, key, unanswerable), record)
    return list(records.values()), sorted({name for name, _, _ in records})


def _decided_on(args: argparse.Namespace) -> tuple[dict[str, tuple[int, int]], str]:
    """The documents' decisions counted over a dataset's training pool, and where they were counted."""
    from ..bench import datasets as ds
    from ..fit.lead import decided_counts
    from ..retrieval.index import Index

    if args.ndocs < 1:
        raise UsageError(f"--ndocs must be 1 or more, got {args.ndocs}")
    dataset = ds.load(args.decided_on, args.data, split="train")
    index = Index.build(dataset.corpus)
    asked = [
        (e.question, e.answers, [hit.chunk.text for hit in index.find_relevant_chunks(e.question, args.ndocs)])
        for e in dataset.examples
    ]
    counts = decided_counts(asked)
    if not counts:
        raise InputError(f"the documents decided no choice question of {args.decided_on}'s training pool")
    return counts, f"{args.decided_on} training pool, {len(asked)} questions, BM25 top {args.ndocs} read (no model)"


def compare_command(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from ..bench.paired import paired
    from ..bench.samples import read_samples
    from ..bench.score import run_label
    from ..text import clean_for_terminal

    folders = [Path(args.run_a), Path(args.run_b)]
    configs = [_run_config(folder) for folder in folders]
    datasets = [config["dataset"] for config in configs]
    if (datasets[0].get("name"), datasets[0].get("task")) != (datasets[1].get("name"), datasets[1].get("task")):
        raise InputError(f"{folders[0]} and {folders[1]} ran on different datasets; compare runs of one dataset")
    records = [read_samples(folder / "samples.jsonl", repair=False)[0] for folder in folders]
    result = paired(records[0], records[1], str(datasets[0].get("task")))
    labels = [run_label(config) for config in configs]
    if args.json:
        print(json.dumps({"a": labels[0], "b": labels[1], **asdict(result), "lost_share": result.lost_share}))
        return 0
    share = "" if result.lost_share is None else f" ({100 * result.lost_share:.1f} %)"
    print(f"A: {labels[0]} ({datasets[0].get('name')}, {result.questions} questions): right on {result.right_a}")
    print(f"B: {labels[1]}: right on {result.right_b}")
    print(f"lost (right in A, not in B): {len(result.lost)} of {result.right_a}{share}, "
          f"{result.lost_abstained} of them abstained in B")  # fmt: skip
    print(f"gained (right in B, not in A): {len(result.gained)}")
    if args.list:
        for how, ids in (("lost", result.lost), ("gained", result.gained)):
            for i in ids:
                a, b = records[0][i], records[1][i]
                said = "(abstained)" if b.get("abstained") else str(b.get("prediction") or b.get("label") or "")
                print(clean_for_terminal(f"{how:6s} {i}  {a.get('question') or a.get('claim') or ''}"))
                print(clean_for_terminal(f"       A: {a.get('prediction') or a.get('label') or ''}"))
                print(clean_for_terminal(f"       B: {said}"))
    return 0


def _run_config(folder: Path) -> dict[str, Any]:
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise InputError(f"{folder} is not a run folder (no readable config.json)") from None
    shape = isinstance(config, dict) and all(isinstance(config.get(k), dict) for k in ("sample", "dataset", "system"))
    if not shape or not (folder / "samples.jsonl").is_file():
        raise InputError(f"{folder} is not a benchmark run folder (config.json with its samples.jsonl)")
    return config


def plot_command(args: argparse.Namespace) -> int:
    from ..bench.plots import plot_runs

    for path in plot_runs([Path(d) for d in args.run_dirs], Path(args.out)):
        print(path)
    return 0


def _integers(text: str, flag: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"{flag} must be comma-separated integers, got {text!r}") from None
    if not values or min(values) < 0:
        raise UsageError(f"{flag} must be comma-separated integers of 0 or more, got {text!r}")
    return values
