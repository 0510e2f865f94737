"""The generalisation set: corpora and questions the engine was not written on, answered and counted.

Five small corpora (an employee handbook, medicine leaflets, a changelog, a service contract, a product manual)
and their questions live in `examples/generalisation/` (its README says how they were written). Each corpus is
indexed as `selfrag index` does, every question of the chosen split is answered through the engine with the
flags given (the same engine and endpoint flags as `selfrag ask`: any preset, policy switch or backend), and
the answers are counted against the gold per kind, per rule that gave the short answer, per trap (negation,
exception, condition, version), per language and per corpus: accuracy on answerable questions, short answers
and decided answers printed and right, printed short answers contradicted by a cited clause, answers declined
on unanswerable and on answerable questions, and calls per question.

The `dev` split is for building and debugging; the `test` split is only measured, never tuned on.
With `--no-model`, only what the documents decide with no call is counted (seconds).

    python benchmarks/generalisation.py --split dev --no-model
    python benchmarks/generalisation.py --split test --limit 60 --threads 1              # embedded model, defaults
    python benchmarks/generalisation.py --split test --limit 60 --threads 1 --no-lead    # no short answer
    python benchmarks/generalisation.py --split test --base-url http://127.0.0.1:8000/v1 --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cli import print_table  # noqa: E402

from selfrag import SelfRAG  # noqa: E402
from selfrag.bench.cache import CachedChatModel, RequestCache  # noqa: E402
from selfrag.bench.general import GROUPS, Question, Said, judge, load_set, tally  # noqa: E402
from selfrag.bench.progress import Progress  # noqa: E402
from selfrag.bench.runner import open_endpoint  # noqa: E402
from selfrag.cli.common import add_engine_options, engine_flags  # noqa: E402
from selfrag.engine.fitted import scoring  # noqa: E402
from selfrag.errors import SelfRagError, UsageError  # noqa: E402
from selfrag.result import Result  # noqa: E402
from selfrag.retrieval.ingest import index_paths  # noqa: E402
from selfrag.settings import load_config  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SET = ROOT / "examples" / "generalisation"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set-dir", type=Path, default=SET, help="the set's folder (default examples/generalisation)")
    parser.add_argument("--split", choices=["dev", "test", "all"], required=True, help="dev builds, test only measures")
    parser.add_argument("--corpus", action="append", help="only this corpus (repeatable)")
    parser.add_argument("--kind", action="append", help="only this kind of question (repeatable)")
    parser.add_argument("--ids", help="only these question ids, comma-separated")
    parser.add_argument("--limit", type=int, help="a seeded sample of N of the chosen questions (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    parser.add_argument("--no-model", action="store_true", help="count only what the documents decide, no call")
    parser.add_argument("--threads", type=int, default=1, help="embedded model: llama.cpp threads (default 1)")
    parser.add_argument("--cache", type=Path, help="request cache file (default: none, every request is sent)")
    parser.add_argument("--json", action="store_true", help="print the tables as one JSON object")
    parser.add_argument("--details", type=Path, help="write each answer, one JSON line, to this file")
    parser.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    add_engine_options(parser)
    args = parser.parse_args(argv)
    try:
        questions, corpora = chosen(args)
        config = load_config(engine_flags(args), config_file=args.config)
        if args.details:
            args.details.parent.mkdir(parents=True, exist_ok=True)
            args.details.write_text("")
        judged = asyncio.run(answer_all(questions, corpora, config, args))
    except (SelfRagError, OSError) as error:
        print(f"generalisation: {error}", file=sys.stderr)
        return 2
    tables = {group: tally(judged, group) for group in GROUPS}
    if args.json:
        print(json.dumps({"split": args.split, "no_model": args.no_model, "config": args_used(args), **tables}))
        return 0
    how = "documents only, no model" if args.no_model else "engine"
    for group, rows in tables.items():
        print_table(f"generalisation set, {args.split} split, {how}: by {group}", rows)
        print()
    return 0


def chosen(args: argparse.Namespace) -> tuple[list[Question], dict[str, Path]]:
    """The questions the flags pick (a usage error names a corpus, kind or id the set does not have)."""
    full = load_set(args.set_dir)
    questions = [q for q in full.questions if args.split in ("all", q.split)]
    for flag, values, have in (
        ("--corpus", args.corpus, {q.corpus for q in full.questions}),
        ("--kind", args.kind, {q.kind for q in full.questions}),
        ("--ids", args.ids.split(",") if args.ids else None, {q.id for q in full.questions}),
    ):
        if values is None:
            continue
        if unknown := sorted(set(values) - have):
            raise UsageError(f"{flag}: {unknown[0]!r} is not in the set")
        questions = [q for q in questions if {q.corpus, q.kind, q.id} & set(values)]
    if not questions:
        raise UsageError("no question of the set matches the flags")
    if args.limit is not None:
        if args.limit < 1:
            raise UsageError("--limit must be at least 1")
        picked = set(random.Random(args.seed).sample(range(len(questions)), min(args.limit, len(questions))))
        questions = [q for i, q in enumerate(questions) if i in picked]
    return questions, full.corpora


async def answer_all(
    questions: list[Question], corpora: dict[str, Path], config: Any, args: argparse.Namespace
) -> list[tuple[Question, Said, Any]]:
    """Each corpus indexed once, then its questions answered one at a time."""
    os.environ["SELFRAG_THREADS"] = str(args.threads)
    config = config.with_values(nonce_seed=config.nonce_seed or "generalisation")  # the same prompts each run
    progress = Progress(len(questions), 0, sys.stderr, enabled=not args.no_progress)
    judged = []
    chat = None
    if not args.no_model:
        config = scoring(config, os.environ)  # as `SelfRAG` does when it opens the model itself (engine/fitted.py)
        inner, endpoint = open_endpoint(config, os.environ, threads=args.threads)
        chat = CachedChatModel(inner, RequestCache(args.cache) if args.cache else None, endpoint=endpoint)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for corpus in sorted({q.corpus for q in questions}):
                index = Path(scratch) / corpus
                index_paths([corpora[corpus]], index)
                rag = SelfRAG.from_index(index, config, chat=chat) if chat else None
                retriever = None if rag else documents_retriever(index, config)
                for question in (q for q in questions if q.corpus == corpus):
                    said, record = await ask(rag, question) if rag else decide(retriever, config, question)
                    verdict = judge(question, said)
                    judged.append((question, said, verdict))
                    if args.details:
                        with args.details.open("a") as out:
                            out.write(json.dumps({**record, "verdict": verdict_dict(verdict)}) + "\n")
                    progress.update({"status": "ok", "usage": record.get("usage", {})})
    finally:
        progress.close()
        if chat is not None:
            await chat.aclose()
    return judged


async def ask(rag: SelfRAG, question: Question) -> tuple[Said, dict[str, Any]]:
    result: Result = await rag.aanswer(question.question)
    cited = {segment.citation for segment in result.segments} | {n for s in result.segments for n in s.also}
    said = Said(
        answer=result.answer, lead=result.lead, lead_from=result.lead_from, abstained=result.abstention is not None,
        cited=tuple(source.text for source in result.sources if source.n in cited), calls=result.usage.llm_calls,
    )  # fmt: skip
    record = {"id": question.id, "question": question.question, "gold": question.gold, "answer": result.answer}
    record |= {"lead": result.lead, "lead_from": result.lead_from, "abstained": said.abstained}
    record |= {"confidence": result.confidence, "usage": {"llm_calls": result.usage.llm_calls}}
    return said, record


def documents_retriever(index: Path, config: Any) -> Any:
    """The index searched as `SelfRAG.from_index` searches it (BM25, superseded documents yielding)."""
    from selfrag.retrieval import RetrievalSettings, Retriever
    from selfrag.retrieval.index import Index
    from selfrag.retrieval.supersession import load_versions

    settings = RetrievalSettings(strategy=config.strategy, fusion=config.fusion, rerank=config.rerank,
                                 freshness=config.freshness, supersession=config.supersession)  # fmt: skip
    return Retriever(Index.load(index), settings, versions=load_versions(index) if config.supersession else None)


def decide(retriever: Any, config: Any, question: Question) -> tuple[Said, dict[str, Any]]:
    """What the documents decide with no call, over the chunks the engine would read first (the judge reads them
    all as cited)."""
    from selfrag.engine.lead import current_texts, documents_decide
    from selfrag.engine.questions import question_kind

    chunks = [hit.chunk for hit in retriever.find_relevant_chunks(question.question, config.ndocs)]
    decision = documents_decide(question.question, question_kind(question.question), current_texts(chunks))
    lead = f"{decision.option}." if decision else None
    said = Said(lead or "", lead, decision.by if decision else None, False, tuple(c.text for c in chunks), 0)
    return said, {"id": question.id, "question": question.question, "gold": question.gold, "lead": lead,
                  "lead_from": said.lead_from}  # fmt: skip


def verdict_dict(verdict: Any) -> dict[str, object]:
    return {name: getattr(verdict, name) for name in verdict.__slots__}


def args_used(args: argparse.Namespace) -> dict[str, object]:
    return {k: v for k, v in engine_flags(args).items() if v is not None} | {"threads": args.threads}


if __name__ == "__main__":
    raise SystemExit(main())
