"""The benchmark runner: one dataset x one system into one run folder, durable and resumable.

Run folder `<out>/<dataset>/<system label>/<config hash 8>/` (each part a plain name matching `SAFE_NAME`, never
`.` or `..`, so the folder stays inside `<out>`; a NUL byte in `--out` or `--run-dir` is refused up front):
    config.json    the resolved configuration (no secrets), written once; its hash names the folder
    samples.jsonl  one record per finished question, appended + fsynced, cut back if that fails (samples.py)
    results.json   metrics with bootstrap 95 % intervals, status, dataset checksum, seed, versions,
                   endpoint capabilities, cache statistics, times (written atomically at the end)
    results.md     the markdown table (also printed on stdout)
    .lock          held (flock) while a process uses the folder; a second process is refused

--resume skips finished ids (ok, and failed on their own unless --retry-failed; a question that failed at
the endpoint is always asked again), repairs a torn last line, and refuses a
folder whose config differs. Metrics are always computed from samples.jsonl, so resumed = uninterrupted.

Exit codes: 0 complete, no failed question; 3 complete, some questions failed (recorded and counted);
1 incomplete (interrupted, endpoint aborted, disk full, error; resumable); 2 usage error.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import fcntl
import json
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO

from ..config import Config, redact_url, resolve_endpoint, resolve_scorer
from ..engine.calibration import SHIPPED, load_critic_model, rater_for
from ..engine.fitted import scoring
from ..errors import MODEL_FAILURES, BudgetError, ConfigError, FatalLLMError, InputError, LLMError, SelfRagError
from ..files import write_atomic
from ..llm.base import ChatModel
from ..retrieval import Retriever
from ..schema import Meter
from . import datasets as ds
from .answer import answer
from .cache import CachedChatModel, RequestCache, digest
from .claims import claim_weights
from .progress import Progress
from .samples import SampleWriter, build_record, read_samples
from .score import markdown_table, summarize
from .shortform import PresetRetriever
from .systems import BENCH_DEFAULTS, BenchPrompts, Context, System, parse_system

EXIT_OK, EXIT_INCOMPLETE, EXIT_USAGE, EXIT_FAILURES = 0, 1, 2, 3
RUNNER_VERSION = 1
SAFE_NAME = re.compile(r"[A-Za-z0-9._+-]{1,64}")  # a dataset name or system label used as a folder name


class RunError(SelfRagError):
    """The run cannot start or go on (folder in use, config mismatch, endpoint down)."""


@dataclass
class RunOptions:
    dataset: str
    system: str
    config: Config = field(default_factory=lambda: Config(**BENCH_DEFAULTS))
    data_path: str | None = None
    limit: int | None = None
    seed: int = 0
    split: str = "all"  # "train": only examples that never appear in a reported sample (datasets.load)
    kind: str | None = None  # only questions of this kind (`Dataset.of_kind`), sampled among themselves
    ids: tuple[str, ...] | None = None  # only these questions of the sample (`Dataset.only`), over its corpus
    out: Path = Path("benchmarks/runs")
    run_dir: Path | None = None  # explicit folder instead of <out>/<dataset>/<label>/<hash>
    resume: bool = False
    retry_failed: bool = False
    cache_path: Path | None = None  # None: no cache
    jobs: int = 1  # questions in flight at once
    max_consecutive_failures: int = 10  # endpoint-level failures in a row that abort the run
    progress: bool = True
    embedded_threads: int | None = None  # llama.cpp threads of the embedded model (None: all cores)
    corpus_size: int | None = None  # memory-growth runs: gold chunks plus seeded distractors up to this size
    stale_copies: int = 0  # memory-growth runs: conflicting near-duplicates added per gold snippet
    unanswerable: bool = False  # the sampled questions with their gold chunks taken out of the corpus
    stale_dated: bool = False  # stale copies dated before their gold snippet (supersession can then act)
    environ: Mapping[str, str] | None = None
    given: ds.Dataset | None = None  # a dataset built in code (`selfrag calibrate`), asked instead of `dataset`


@dataclass
class RunReport:
    status: str  # complete | interrupted | aborted | error
    exit_code: int
    run_dir: Path
    summary: dict[str, Any]
    table: str
    message: str = ""


# -- endpoint ------------------------------------------------------------------------------------------


def open_endpoint(config: Config, environ: Mapping[str, str], threads: int | None = None) -> tuple[ChatModel, str]:
    """The chat model and an id for the cache key: the configured endpoint, else the embedded model
    (`threads`: llama.cpp threads; 1 is far faster than 2 when another process keeps a core busy)."""
    endpoint = config.endpoint
    if endpoint.base_url or environ.get("OPENAI_BASE_URL"):
        from ..llm.reflection_chat import open_chat, uses_reflection_tokens

        resolved = resolve_endpoint(endpoint, environ)
        url = redact_url(resolved.base_url or "openai").rstrip("/")
        key = f"{url}|model={endpoint.model}|top_logprobs={endpoint.top_logprobs}"
        if uses_reflection_tokens(endpoint):
            key += "|reflection-tokens"
        if endpoint.logprobs != "auto":  # the probed capabilities depend on it; auto keeps the keys cached before
            key += f"|logprobs={endpoint.logprobs}"
        return open_chat(endpoint, environ, config), key
    from ..llm.local import embedded_chat, served

    chat = embedded_chat(endpoint, environ, n_threads=threads)
    serving = served()
    settings = getattr(serving, "settings", None)
    file = serving.model_file.name if serving else "?"
    shape = f"n_ctx={getattr(settings, 'n_ctx', '?')}|logprobs={getattr(settings, 'logprobs', '?')}"
    return chat, f"embedded|{file}|{shape}|top_logprobs={endpoint.top_logprobs}"


# -- the run -------------------------------------------------------------------------------------------


def run_benchmark(options: RunOptions, *, chat: ChatModel | None = None, stream: TextIO | None = None) -> RunReport:
    """Run (or resume) one dataset x system; never raises for question-level failures."""
    environ = os.environ if options.environ is None else options.environ
    for flag, path in (("--out", options.out), ("--run-dir", options.run_dir)):
        if path is not None and "\x00" in str(path):
            raise InputError(f"{flag} {str(path)!r} holds a NUL byte; pass a real folder name")
    dataset = options.given or ds.load(options.dataset, options.data_path, options.split)
    dataset = dataset.of_kind(options.kind)
    dataset = dataset.sample(options.limit, options.seed)
    if options.corpus_size is not None:
        dataset = dataset.with_corpus_size(options.corpus_size, options.seed)
    if options.stale_copies:
        dataset = dataset.with_stale_copies(options.stale_copies, dated=options.stale_dated)
    if options.unanswerable:
        dataset = dataset.without_gold()
    dataset = dataset.only(options.ids)  # last: the corpus stays the whole sample's
    system = parse_system(options.system, options.config)
    # as `selfrag ask` rates: the embedded model's shipped weights, or those calibrated (or named) for an endpoint's
    # model; a chat passed in is rated as the config says
    scored = scoring(system.config, environ) if chat is None else resolve_scorer(system.config, embedded=False)
    system = replace(system, config=scored)
    if system.oracle_flip is not None and dataset.task != "qa":
        raise ConfigError(f"the oracle critic needs gold answers: use a QA dataset, not {dataset.name}")
    if system.kind == "critic" and not any(example.pairs for example in dataset.examples):
        raise ConfigError(
            f"the critic system needs gold-labelled pairs: use climate_fever or halueval, not {dataset.name}"
        )
    if chat is None:
        inner, endpoint_id = open_endpoint(system.config, environ, options.embedded_threads)
    else:
        inner, endpoint_id = chat, f"given|{chat.name}"
    config = resolved_config(options, dataset, system, endpoint_id)
    run_dir = options.run_dir or run_folder(options.out, dataset.name, system.label, config["hash"])
    run_dir.mkdir(parents=True, exist_ok=True)
    with folder_lock(run_dir):
        return asyncio.run(_run(options, dataset, system, inner, endpoint_id, config, run_dir, stream or sys.stderr))


def _critic_weights(system: System, dataset: ds.Dataset) -> dict[str, str]:
    """The evidence scorer's weights by content, so runs with other weights never share a folder or a hash."""
    if system.config.scorer != "evidence":
        return {}
    weights = load_critic_model(system.config.scorer_weights, shipped_weights(dataset, system))
    return {"critic_weights": digest(weights.to_json())}


def shipped_weights(dataset: ds.Dataset, system: System) -> str:
    """The shipped evidence-scorer weights a run is scored with: the claim protocol has its own per dataset, whose
    P(settles) counts a refuting sentence as settling. The critic system judges whether a sentence supports a
    statement: on a claim dataset whose weights carry a polarity head that is a settling sentence that does not
    refute (`qa.pair_verdict`); elsewhere it is what the QA weights' P(supported) says."""
    if dataset.task != "claim":
        return SHIPPED
    own = claim_weights(dataset.name)
    if system.kind != "critic":
        return own
    return own if load_critic_model(None, own).refutes is not None else SHIPPED


def run_folder(out: Path, dataset: str, label: str, config_hash: str) -> Path:
    """`<out>/<dataset>/<label>/<hash 8>`; InputError unless each part is a plain name and the folder is in `out`."""
    parts = (("dataset name", dataset), ("system label", label), ("config hash", config_hash[:8]))
    for what, part in parts:
        if not SAFE_NAME.fullmatch(part) or part in (".", ".."):
            raise InputError(
                f"the {what} {part!r} cannot name a run folder: use 1 to 64 letters, digits, '.', '_', '+' or '-'"
            )
    folder = out / dataset / label / config_hash[:8]
    if not Path(os.path.normpath(folder)).is_relative_to(os.path.normpath(out)):
        raise InputError(f"the run folder {folder} would be outside --out {out}")
    return folder


def resolved_config(options: RunOptions, dataset: ds.Dataset, system: System, endpoint_id: str) -> dict[str, Any]:
    """Everything that decides the results (and nothing that does not, such as --jobs or the cache path)."""
    body = {
        "runner_version": RUNNER_VERSION,
        "dataset": {
            "name": dataset.name,
            "task": dataset.task,
            "path": dataset.path,
            "sha256": dataset.sha256,
            "files": dict(dataset.files),
            "total": dataset.total,
            "labels": list(dataset.labels),
            "notes": list(dataset.notes),
            "corpus_chunks": len(dataset.corpus),
        },
        "sample": {
            "limit": options.limit,
            "seed": options.seed,
            "size": len(dataset.examples),
            "how": "seeded random sample, file order"
            if options.limit and options.limit < dataset.total
            else "all examples",
            **({"split": options.split} if options.split != "all" else {}),
            **({"kind": options.kind} if options.kind else {}),
            **({"ids": sorted(options.ids)} if options.ids is not None else {}),
        },
        "seed": options.seed,
        "corpus": {
            "size": len(dataset.corpus),
            "cut": options.corpus_size is not None,
            **({"stale_copies": options.stale_copies} if options.stale_copies else {}),
            **({"unanswerable": True} if options.unanswerable else {}),
            **({"stale_dated": True} if options.stale_copies and options.stale_dated else {}),
        },
        "system": system.describe(),
        **_critic_weights(system, dataset),
        "endpoint": endpoint_id,
        # the BM25 text is part of the run hash: it keeps the old module name so existing runs still match
        "retriever": "each question's pre-retrieved ctxs from the dataset file"
        if dataset.presets
        else "BM25 (selfrag.index defaults: Lucene k1 1.5 b 0.75, English stopwords, Snowball stemmer)",
    }
    return {**body, "hash": digest(body)}


@contextlib.contextmanager
def folder_lock(run_dir: Path):  # type: ignore[no-untyped-def]
    """An exclusive flock on <run_dir>/.lock; released when the process ends, even on SIGKILL."""
    handle = open(run_dir / ".lock", "a+")  # noqa: SIM115
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise RunError(f"the run folder {run_dir} is in use by {holder}; wait for it or use another --out") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}\n")
    handle.flush()
    try:
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def _check_folder(run_dir: Path, config: dict[str, Any], resume: bool) -> None:
    config_file = run_dir / "config.json"
    has_samples = (run_dir / "samples.jsonl").exists() and (run_dir / "samples.jsonl").stat().st_size > 0
    if config_file.exists():
        stored = json.loads(config_file.read_text(encoding="utf-8"))
        if stored.get("hash") != config["hash"]:
            raise RunError(f"{run_dir} holds a run with another configuration; use another --out or --run-dir")
    if has_samples and not resume:
        raise RunError(f"{run_dir} already holds samples: pass --resume to continue it, or remove the folder")
    if not config_file.exists():
        write_atomic(config_file, json.dumps(config, indent=2, ensure_ascii=False))


async def _run(
    options: RunOptions,
    dataset: ds.Dataset,
    system: System,
    inner: ChatModel,
    endpoint_id: str,
    config: dict[str, Any],
    run_dir: Path,
    stream: TextIO,
) -> RunReport:
    _check_folder(run_dir, config, options.resume)
    samples = run_dir / "samples.jsonl"
    done, report = read_samples(samples, repair=True)
    if report.repaired:
        print(f"note: repaired a torn last line in {samples} ({report.torn_bytes} bytes dropped)", file=stream)
    todo = [e for e in dataset.examples if not _settled(done.get(e.id), options.retry_failed)]
    from ..retrieval.index import Index

    index: Any = Index.build(dataset.corpus)
    if dataset.presets:  # short-form files carry each question's passages: use those, as the paper did
        index = PresetRetriever(index, dataset.presets, dataset.chunk_texts())
    elif system.config.supersession and any(chunk.date for chunk in dataset.corpus):  # as SelfRAG.from_index does
        from ..retrieval.supersession import corpus_versions

        versions = corpus_versions(dataset.corpus, dt.datetime.now(dt.UTC).date())  # the day it is indexed
        index = Retriever(index, versions=versions) if versions else index
    cache = RequestCache(options.cache_path) if options.cache_path else None
    chat = CachedChatModel(inner, cache, endpoint=endpoint_id)
    started, status, message = time.time(), "complete", ""
    capabilities: dict[str, Any] = {}
    progress = Progress(len(dataset.examples), len(dataset.examples) - len(todo), stream, enabled=options.progress)
    writer = SampleWriter(samples)
    try:
        capabilities = (await chat.capabilities(Meter())).describe()
        if capabilities.get("note"):  # the reading a Self-RAG checkpoint's endpoint fell back to, said once
            print(f"note: {capabilities['note']}", file=stream)
        status, message = await _answer_all(options, dataset, system, chat, index, todo, writer, progress)
    except FatalLLMError as error:
        status, message = "aborted", f"the endpoint refused: {error}"
    except LLMError as error:
        status, message = "aborted", f"the endpoint failed: {error}"
    except OSError as error:
        status, message = "error", f"cannot write {samples}: {error.strerror or error}"
    except (KeyboardInterrupt, asyncio.CancelledError):
        status, message = "interrupted", "interrupted; run again with --resume to continue"
    finally:
        progress.close()
        writer.close()
        with contextlib.suppress(Exception):
            await chat.aclose()
        if cache is not None:
            cache.close()
    return _finish(options, dataset, system, config, run_dir, chat, capabilities, started, status, message)


def _settled(record: dict[str, Any] | None, retry_failed: bool) -> bool:
    """Whether --resume skips a question: answered, or failed on its own (invalid output, budget) unless
    --retry-failed. A question that failed because the endpoint did (an outage) is always asked again."""
    if record is None:
        return False
    if record.get("status") == "ok":
        return True
    return not retry_failed and record.get("failure") != "endpoint"


async def _answer_all(
    options: RunOptions,
    dataset: ds.Dataset,
    system: System,
    chat: CachedChatModel,
    index: Any,
    todo: list[ds.Example],
    writer: SampleWriter,
    progress: Progress,
) -> tuple[str, str]:
    prompts, chunks = BenchPrompts(), dataset.chunk_texts()
    gate = asyncio.Semaphore(max(1, options.jobs))
    streak = {"failures": 0}
    abort: list[str] = []

    stop: list[BaseException] = []  # a fatal endpoint error or a failed write stops the run
    rater = rater_for(system.config.scorer, system.config.scorer_weights, shipped_weights(dataset, system))

    async def one(example: ds.Example) -> None:
        async with gate:
            if abort or stop:
                return
            view = chat.scoped()
            ctx = Context(dataset, index, chunks, prompts, view, rater=rater)
            began = time.monotonic()
            outcome, error, kind = None, None, "question"
            try:
                outcome = await answer(system, example, ctx)
            except FatalLLMError as failure:
                stop.append(failure)
                return
            except (LLMError, BudgetError, InputError, ConfigError) as failure:
                error = f"{type(failure).__name__}: {failure}"
                endpoint_level = isinstance(failure, LLMError) and not isinstance(failure, MODEL_FAILURES)
                streak["failures"] = streak["failures"] + 1 if endpoint_level else 0
                kind = "endpoint" if endpoint_level else "question"
            except Exception as failure:  # a bug on one question: recorded, the run goes on
                error = f"internal {type(failure).__name__}: {failure}"
            if error is None:
                streak["failures"] = 0
            plain = index.index if isinstance(index, Retriever) else index  # similarity: BM25's, supersession aside
            record = build_record(example, outcome, error, dataset, plain, view, time.monotonic() - began)
            if error is not None:
                record["failure"] = kind
            try:
                writer.write(record)
            except OSError as failure:  # disk full: the question is not done; stop scheduling
                stop.append(failure)
                return
            progress.update(record)
            if streak["failures"] >= options.max_consecutive_failures:
                abort.append(f"{streak['failures']} questions in a row failed at the endpoint; last: {error}")

    async with asyncio.TaskGroup() as group:
        for example in todo:
            group.create_task(one(example))
    if stop:
        raise stop[0]
    if abort:
        return "aborted", abort[0]
    return "complete", ""


def _finish(
    options: RunOptions,
    dataset: ds.Dataset,
    system: System,
    config: dict[str, Any],
    run_dir: Path,
    chat: CachedChatModel,
    capabilities: dict[str, Any],
    started: float,
    status: str,
    message: str,
) -> RunReport:
    records, _ = read_samples(run_dir / "samples.jsonl", repair=False)
    wanted = {e.id for e in dataset.examples}
    records = {k: v for k, v in records.items() if k in wanted}
    if status == "complete" and len(records) < len(wanted):
        status, message = "incomplete", f"{len(wanted) - len(records)} questions have no record"
    summary = summarize(list(records.values()), task=dataset.task, labels=dataset.labels, seed=options.seed)
    row = {"label": system.label, "dataset": dataset.name, "summary": summary}
    table = markdown_table([row])
    if chat.cache is not None and chat.cache.write_error:
        message = "; ".join(filter(None, [message, f"the request cache stopped storing ({chat.cache.write_error})"]))
    results = {
        "status": status,
        "message": message,
        "system": system.describe(),
        "dataset": config["dataset"],
        "sample": config["sample"],
        "seed": options.seed,
        "config_hash": config["hash"],
        "endpoint": {
            "id": config["endpoint"],
            "capabilities": capabilities,
            "probe_requests": chat.probe_meter.llm_calls,
        },
        "cache": {
            "path": str(options.cache_path) if options.cache_path else None,
            "hits_this_process": chat.counters.hits,
            "misses_this_process": chat.counters.misses,
            "write_error": chat.cache.write_error if chat.cache is not None else None,
        },
        "versions": versions(),
        "started": _iso(started),
        "finished": _iso(time.time()),
        "summary": summary,
    }
    try:
        write_atomic(run_dir / "results.json", json.dumps(results, indent=2, ensure_ascii=False, allow_nan=False))
        write_atomic(run_dir / "results.md", table + "\n")
    except OSError as error:  # disk full: samples.jsonl stays the truth; `bench score` recomputes later
        status = "error" if status == "complete" else status
        message = "; ".join(filter(None, [message, f"cannot write results.json: {error.strerror or error}"]))
    complete = status == "complete"
    code = (EXIT_FAILURES if summary["failed"] else EXIT_OK) if complete else EXIT_INCOMPLETE
    return RunReport(status, code, run_dir, summary, table, message)


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in ("selfrag", "openai", "bm25s", "numpy", "pydantic", "llama_cpp_python"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[package] = metadata.version(package)
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        root = Path(__file__).resolve().parents[2]
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        ).stdout.strip()
        if commit:
            out["git_commit"] = commit
    return out


def _iso(stamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp))
