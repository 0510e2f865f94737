"""What the commands share: engine flags, turning flags into a Config, rendering answers and traces.

Everything printed by selfrag goes through the `selfrag.cli` package; the library itself never prints.
"""

from __future__ import annotations

import argparse
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from ..config import LOGPROBS_MODES, PRESETS, PROTOCOLS, Config
from ..engine.report import with_marker
from ..errors import ConfigError, UsageError
from ..labels import CriticMode, Mode
from ..result import Result, SegmentEvent, Source, TraceStep
from ..text import clean_for_terminal, escape_name, inert_markdown, repair_text

KNOB_FLAGS = ("mode", "threshold", "beam_width", "max_depth", "ndocs", "w_rel", "w_sup", "w_use", "critic")
ENGINE_FLAGS = (
    *KNOB_FLAGS,
    "strategy",
    "fusion",
    "rerank",
    "freshness",
    "supersession",
    "query_variants",
    "dense",
    "embedding_model",
    "use_seqscore",
    "gate_irrelevant",
    "gate_unsupported",
    "preset",
    "scorer",
    "scorer_weights",
    "abstain_below",
    "lead",
    "lead_ahead",
    "decide",
    "confirm",
    "denials",
    "check",
    "pooled",
    "hops",
    "ground",
    "extract",
    "filters",
    "ask_plainly",
    "disowned",
    "short_replies",
    "deadline",
    "max_llm_calls",
    "base_url",
    "model",
    "critic_base_url",
    "critic_model",
    "max_concurrency",
    "timeout",
    "logprobs",
    "send_openai_key",
    "protocol",
)


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    search = parser.add_argument_group("search (the paper's knobs)")
    search.add_argument("--mode", choices=[m.value for m in Mode], help="when to retrieve (default adaptive)")
    search.add_argument("--threshold", type=float, help="adaptive: retrieve when P(retrieve) > this (default 0.2)")
    search.add_argument("--beam-width", type=int, help="partial answers kept per step (default 1, greedy)")
    search.add_argument("--max-depth", type=int, help="most sentences in an answer (default 7)")
    search.add_argument("--ndocs", type=int, help="chunks per retrieval = candidates per beam (default 5)")
    search.add_argument("--w-rel", type=float, help="weight of ISREL (default 1.0)")
    search.add_argument("--w-sup", type=float, help="weight of ISSUP (default 1.0)")
    search.add_argument("--w-use", type=float, help="weight of ISUSE with the paper's scorer (default 0.5)")
    search.add_argument("--critic", choices=[m.value for m in CriticMode], help="who judges candidates (default fused)")
    search.add_argument("--use-seqscore", action="store_const", const=True, help="add the sentence probability term")
    search.add_argument("--gate-irrelevant", action="store_const", const=True, help="drop irrelevant candidates")
    search.add_argument("--gate-unsupported", action="store_const", const=True, help="drop unsupported candidates")
    search.add_argument(
        "--preset",
        choices=list(PRESETS),
        help="which policies are on: default (every policy, each safe with any model) or paper (the paper's "
        "algorithm only: the paper's scorer, no short answer, no decided answers, no filters, grounding, extracted "
        "sentences, second hop or supersession); a policy's own flag wins (default: default)",
    )
    search.add_argument(
        "--scorer",
        choices=["auto", "paper", "evidence"],
        help="paper: the model's labels alone; evidence: labels plus evidence checks, fitted for the model; auto: "
        "evidence where there are weights for the model (the embedded model's ship; an endpoint's come from "
        "`selfrag calibrate` or --scorer-weights), else paper (default: the preset's, auto or paper)",
    )
    search.add_argument(
        "--lead",
        action=argparse.BooleanOptionalAction,
        help="a yes/no, choice or factoid question gets its short answer first (default on; benchmarks: off)",
    )
    search.add_argument(
        "--lead-ahead",
        action=argparse.BooleanOptionalAction,
        help="an endpoint's model: the short answer's call is sent while the last step writes, not after it (one "
        "round less; one call for nothing when the answer ends on other documents or abstains; default on)",
    )
    search.add_argument(
        "--decide",
        action=argparse.BooleanOptionalAction,
        help="the documents may decide that short answer with no call (by dates, traits, a stated clause or a "
        "value), checked against the kept sentences first; --no-decide keeps the short answer, from the model "
        "alone (default on)",
    )
    search.add_argument(
        "--confirm",
        action=argparse.BooleanOptionalAction,
        help="a decided short answer is printed only where the model, asked one closed question about the clause "
        "that decided it, agrees; else the model's own short answer (one call; an endpoint's model only; default "
        "on, --preset paper: off)",
    )
    search.add_argument(
        "--denials",
        action=argparse.BooleanOptionalAction,
        help="the model's own yes or chosen option is withheld (\"The documents don't settle it.\") where a kept "
        "sentence or a document read denies it (no call; default on, --preset paper: off)",
    )
    search.add_argument(
        "--check",
        action=argparse.BooleanOptionalAction,
        help="the answer's confidence reads the model's verdict that the answer gives what the question asks, "
        "where the weights read it (`selfrag calibrate` fits them so; one call; default on, --preset paper: off)",
    )
    search.add_argument(
        "--pooled",
        action=argparse.BooleanOptionalAction,
        help="one more candidate per step written from all its chunks together, as plain RAG reads them "
        "(one more call per beam and step; default off)",
    )
    search.add_argument(
        "--hops",
        action=argparse.BooleanOptionalAction,
        help="with the evidence scorer, a sentence written from the chunk the kept one's chunk names follows it "
        "(the second hop; no call; default on)",
    )
    search.add_argument(
        "--ground",
        action=argparse.BooleanOptionalAction,
        help="with the evidence scorer, a sentence stating a number, date or name its document does not hold is "
        "replaced by the document's sentence it was drawn from, or declined (no call; default on)",
    )
    search.add_argument(
        "--extract",
        action=argparse.BooleanOptionalAction,
        help="with the evidence scorer, from each retrieved chunk of several sentences also extract the sentence "
        "that shares most with the question, rated beside the model's (no call; default on)",
    )
    search.add_argument(
        "--filters",
        action=argparse.BooleanOptionalAction,
        help="decline sentences that restate the question, repeat the draft or speak of the document, and cut "
        "several sentences to one (no call; default on)",
    )
    search.add_argument(
        "--ask-plainly",
        action=argparse.BooleanOptionalAction,
        help="a sentence that restates the question is asked for once more, the question after the document; "
        "if that one restates it too, the document's own best sentence competes (one more call; default on)",
    )
    search.add_argument(
        "--disowned",
        action=argparse.BooleanOptionalAction,
        help="with the paper's scorer, sentences the model calls irrelevant and unsupported are declined where "
        "nothing else is left, so the answer abstains instead (no call; default on)",
    )
    search.add_argument(
        "--short-replies",
        action="store_const",
        const=True,
        help="cap the sentence, evidence quote and next query the model may write (faster on small local models)",
    )
    search.add_argument(
        "--scorer-weights",
        metavar="FILE",
        help="weights from `selfrag calibrate` or `selfrag critic fit` (default: those calibrated for this endpoint "
        "and model, else the shipped ones on the embedded model)",
    )
    search.add_argument(
        "--abstain-below",
        type=float,
        metavar="P",
        help="say the documents don't answer when no sentence reaches this answer support, the weights' "
        "P(the sentence answers this question) (default: the weights' own cut)",
    )
    retrieval = parser.add_argument_group("retrieval")
    retrieval.add_argument("--strategy", choices=["top", "window"], help="window: widen hits with neighbour chunks")
    retrieval.add_argument(
        "--fusion",
        choices=["none", "rrf", "weighted"],
        help="fuse stemmed and unstemmed BM25 (index built with --unstemmed-view)",
    )
    retrieval.add_argument("--rerank", action="store_const", const=True, help="lexical-overlap reranking")
    retrieval.add_argument("--freshness", type=float, help="recency bonus for dated chunks, e.g. 0.05 (default 0)")
    add_supersession_flag(retrieval)
    retrieval.add_argument(
        "--query-variants",
        metavar="KINDS",
        help="LLM-written queries fused with the query by RRF: comma list of multi, hyde, decompose (default none)",
    )
    retrieval.add_argument(
        "--dense",
        choices=["auto", "on", "off"],
        help="dense vectors (index built with --embed): auto uses them if present (default), on requires them",
    )
    retrieval.add_argument(
        "--embedding-model", help="embedding model for queries (default: the one the index was embedded with)"
    )
    limits = parser.add_argument_group("limits")
    limits.add_argument("--deadline", type=float, help="seconds per answer (default 600)")
    limits.add_argument("--max-llm-calls", type=int, help="HTTP requests per answer (default 400)")
    endpoint = parser.add_argument_group("endpoint (keys come from SELFRAG_API_KEY or OPENAI_API_KEY, never flags)")
    add_endpoint_options(endpoint)
    parser.add_argument("--config", help=CONFIG_HELP)


CONFIG_HELP = "TOML config file (default: ~/.config/selfrag/config.toml)"
ENDPOINT_OPTIONS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {  # dest -> (flags, argparse keywords)
    "base_url": (("--base-url",), {"help": "OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1"}),
    "model": (("--model", "-m"), {"help": "model name (default: the endpoint's first model)"}),
    "critic_base_url": (
        ("--critic-base-url",),
        {"help": "separate critic: its base URL (default: the same endpoint)"},
    ),
    "critic_model": (("--critic-model",), {"help": "separate critic: its model"}),
    "max_concurrency": (("--max-concurrency",), {"type": int, "help": "requests in flight at once (default 32)"}),
    "timeout": (("--timeout",), {"type": float, "help": "seconds per HTTP request (default 60)"}),
    "protocol": (
        ("--protocol",),
        {
            "choices": PROTOCOLS,
            "help": "reflection-tokens: a fine-tuned Self-RAG model over /v1/completions (auto: when the model name "
            "has 'selfrag'); chat: JSON replies over /v1/chat/completions",
        },
    ),
    "logprobs": (
        ("--logprobs",),
        {
            "choices": list(LOGPROBS_MODES),
            "help": "token logprobs for soft scores: auto (default) uses them where the probe finds them cheap",
        },
    ),
    "send_openai_key": (
        ("--send-openai-key",),
        {
            "action": "store_const",
            "const": True,
            "help": "allow OPENAI_API_KEY to be sent to a base URL that is not OpenAI's",
        },
    ),
}


def add_endpoint_options(parser: Any, names: tuple[str, ...] = tuple(ENDPOINT_OPTIONS)) -> None:
    """The endpoint flags `names` (all by default) on a parser or argument group. Keys are never flags."""
    for name in names:
        flags, keywords = ENDPOINT_OPTIONS[name]
        parser.add_argument(*flags, **keywords)


def add_supersession_flag(group: Any) -> None:
    group.add_argument(
        "--no-supersession",
        dest="supersession",
        action="store_const",
        const=False,
        help="let superseded documents rank as they score (default: they yield to their newer versions)",
    )


POSITIONALS = {"paths": "PATH", "question": "QUESTION", "query": "QUERY", "run_dirs": "RUN_DIR"}  # dest -> metavar


def refuse_nul_bytes(args: argparse.Namespace) -> None:
    """UsageError naming the first argument that holds a NUL byte: no path, name or question can contain one
    (the OS would refuse it deep inside the command, as "embedded null byte")."""
    for name, value in vars(args).items():
        values = value if isinstance(value, list | tuple) else [value]
        if any(isinstance(v, str) and "\x00" in v for v in values):
            flag = POSITIONALS.get(name, "--" + name.replace("_", "-"))
            raise UsageError(f"{flag} holds a NUL byte (\\x00); no path, name or question can contain one")


OUTPUT_FILE = "file"  # a file written in a folder that must exist
OUTPUT_FILE_IN_NEW_FOLDERS = "file, its folders made"  # a file whose missing folders the command makes
OUTPUT_FOLDER = "folder"  # a folder written in, made if missing


def check_outputs(args: argparse.Namespace) -> None:
    """Every output path a command declares (`set_defaults(outputs={dest: OUTPUT_FILE, ...})`) checked before
    the command does any work, so a bad one fails before the first model call, not after the answer."""
    for dest, kind in getattr(args, "outputs", {}).items():
        path, flag = getattr(args, dest, None), "--" + dest.replace("_", "-")
        if path is None:
            continue
        if kind == OUTPUT_FOLDER:
            check_output_folder(path, flag)
        else:
            check_output_file(path, flag, make_folders=kind == OUTPUT_FILE_IN_NEW_FOLDERS)


def check_output_file(path: str, flag: str, *, make_folders: bool = False) -> Path:
    """`path` as a file this process can write (create, or replace whole), else UsageError naming `flag` and the
    path: a folder, a FIFO or device, a read-only file, a missing (unless `make_folders`) or read-only folder."""
    target = Path(path)
    shown = f"{flag} {escape_name(path)}"
    if not path.strip():
        raise UsageError(f"{flag} is empty: give a file name")
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    except OSError as error:
        raise UsageError(f"{shown}: cannot be written ({error.strerror})") from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{shown} is a folder: give a file name (e.g. {escape_name(str(target / 'out'))})")
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{shown} is not a regular file (a FIFO, socket or device); give a file name")
    if info is not None and not os.access(target, os.W_OK):
        raise UsageError(f"{shown} is not writable")
    _check_folder(_nearest(target.parent) if make_folders else target.parent, shown)
    return target


def check_output_folder(path: str, flag: str) -> Path:
    """`path` as a folder this process can write in, or create: else UsageError naming `flag` and the path."""
    target = Path(path)
    shown = f"{flag} {escape_name(path)}"
    if not path.strip():
        raise UsageError(f"{flag} is empty: give a folder name")
    existing = _nearest(target)
    if existing == target and not target.is_dir():
        raise UsageError(f"{shown} is not a folder")
    _check_folder(existing, shown)
    return target


def _nearest(path: Path) -> Path:
    """`path`, or its nearest ancestor that exists: where the folders that do not exist yet would be made."""
    while not path.exists() and not path.is_symlink() and path != path.parent:
        path = path.parent
    return path


def _check_folder(folder: Path, shown: str) -> None:
    where = escape_name(str(folder))
    if not folder.is_dir():
        missing = not folder.exists()
        raise UsageError(f"{shown}: the folder {where} {'does not exist' if missing else 'is not a folder'}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{shown}: the folder {where} is not writable")


def check_scorer_weights(args: argparse.Namespace, config: Config, environ: Mapping[str, str]) -> None:
    """`--scorer-weights` honoured or refused, never ignored: UsageError when its file is not there, or when the
    scorer this run uses does not read weights (`--scorer paper`); and the evidence scorer refused on an endpoint
    with no weights for its model (`engine.fitted.pick`: the shipped ones are the embedded model's)."""
    from ..engine.fitted import scoring

    given = getattr(args, "scorer_weights", None)
    shown = f"--scorer-weights {escape_name(given or '')}"
    if given is not None and not os.path.exists(given):
        raise UsageError(f"{shown}: no such file")
    if given is not None and not os.path.isfile(given):
        raise UsageError(f"{shown} is not a regular file")
    try:
        scorer = scoring(config, environ).scorer
    except ConfigError as error:
        raise UsageError(str(error)) from None
    if given is not None and scorer != "evidence":
        raise UsageError(
            f"{shown} would be ignored: only the evidence scorer reads weights, and this run's scorer is "
            f"{scorer}; drop --scorer {scorer}, or drop --scorer-weights"
        )


def engine_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The engine and endpoint values given as flags (None where a flag was not given or the command has no
    such flag: `doctor` and `index` offer only some of them)."""
    return {name: getattr(args, name, None) for name in ENGINE_FLAGS}


def warn_if_stale(index: str, stream: TextIO) -> None:
    """One line on `stream` when indexed files changed or vanished on disk since the index was built (one stat
    per file, no read: staleness.py); nothing when they did not, or when the index predates the record."""
    from ..errors import RetrievalError
    from ..retrieval.staleness import load_sources, stale

    try:
        sources = load_sources(index)
    except RetrievalError as error:
        print(clean_for_terminal(f"selfrag: warning: cannot tell whether the index is current: {error}"), file=stream)
        return
    if sources is None:
        return
    found = stale(sources)
    if found:
        hint = sources.reindex_hint(index)
        print(clean_for_terminal(f"selfrag: warning: the index is out of date: {found.summary()}; update it: {hint}"),
              file=stream)  # fmt: skip


def read_question(text: str, stdin: TextIO) -> str:
    """The question of an argument, or of stdin for `-`, repaired (`repair_text`): bytes that are not UTF-8
    become U+FFFD, controls go."""
    question = repair_text(stdin.read() if text == "-" else text)
    if not question.strip():
        raise UsageError("the question is empty: give it as an argument, or pipe it in with `-`")
    return question.strip()


def render_segment(event: SegmentEvent) -> str:
    return clean_for_terminal(inert_markdown(with_marker(event.text, event.citation, event.also)))


def render_abstention(result: Result) -> str | None:
    """The short sentence an abstaining answer prints (None for an answer)."""
    if result.abstention is None:
        return None
    return clean_for_terminal(f"{result.answer} {result.abstention.message}")


def render_footer(result: Result) -> str:
    """What follows an answer's sentences: the abstention's reason, or the sources and how sure the engine is."""
    return render_abstention(result) or f"{render_sources(result.sources)}\n{render_confidence(result)}"


def render_confidence(result: Result) -> str:
    """The answer's confidence as the scorer means it: with the evidence scorer a calibrated probability that the
    answer is supported and right, with the paper's the mean of its sentences' support labels (no probability)."""
    if result.config.get("scorer") == "evidence":
        return f"Confidence: {round(100 * result.confidence)} % that this answer is supported and right."
    return f"Confidence: {result.confidence:.2f} (the critic's mean support of the sentences, not a probability)."


def render_sources(sources: list[Source]) -> str:
    if not sources:
        return "\nSources: none (the answer was written without retrieved evidence)"
    lines = ["", "Sources:"]
    for source in sources:  # names and titles escaped: a newline in a file name cannot print a line of its own
        title = f"{escape_name(source.title)} — " if source.title else ""
        newer = ", ".join(escape_name(name) for name in source.superseded_by)
        status = f"; superseded by {newer}" if source.superseded_by else ""
        lines.append(f"  [{source.n}] {title}{escape_name(source.doc_id)} (chunk {source.chunk_id}{status})")
    return "\n".join(lines)


def print_step(step: TraceStep, stream: TextIO) -> None:
    for beam in step.beams:
        p = f" p={beam.p_retrieve:.2f}" if beam.p_retrieve is not None else ""
        query = f" query={beam.query!r}" if beam.decision != "no" else ""
        query += f" variants={beam.queries[1:]!r}" if beam.queries else ""
        query += f" ({beam.retrieval_note})" if beam.retrieval_note else ""
        print(
            clean_for_terminal(
                f"step {step.step} beam {beam.beam}: retrieve={beam.decision}{p}{query} chunks={len(beam.chunks)}"
            ),
            file=stream,
        )
    for c in step.candidates:
        labels = ""
        if c.critique:
            k = c.critique
            labels = f" rel={k.relevance} sup={k.support} use={k.utility} final={k.is_final}"
        score = f" f={c.score:.3f}" if c.score is not None else ""
        agg = f" agg={c.aggregate:.3f}" if c.aggregate is not None else ""
        if c.critique and c.critique.p_supported is not None:
            labels += f" P(rel)={c.critique.p_relevant:.2f} P(sup)={c.critique.p_supported:.2f}"
        if c.critique and c.critique.answer_support is not None:  # what the abstention cut is applied to
            labels += f" answer_support={c.critique.answer_support:.2f}"
        flag = f" ({c.flag})" if c.flag else ""
        source = f"pooled, cites {c.chunk or '-'}" if c.pooled else c.chunk or "-"
        source += ", extracted" if c.extracted else ""
        source += ", asked again" if c.asked_again else ""
        text = c.error or c.text
        print(
            clean_for_terminal(f"  [{c.status:>7}] {source}{labels}{score}{agg}{flag}: {text[:100]}"),
            file=stream,
        )
        if c.written:  # quoted: what the model wrote, which its document does not hold
            print(clean_for_terminal(f"            the model wrote: {c.written[:100]}"), file=stream)
