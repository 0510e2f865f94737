"""Quality services: judgment lists for the retriever, and an LLM judge of answers.

- `generate_judgments`: one question per chunk (over `Index.loop_over_chunks`, optionally a seeded sample),
  written by the LLM with `judge_question`; the chunk it came from is the one relevant chunk.
- `retrieval_report`: precision@k, hit rate@k and MRR@k of the BM25 retriever on such a list, with
  bootstrap 95 % intervals. Deterministic once the list exists.
- `judge_answers`: an LLM judge (`judge_answer`) scores each answer of a QA run for contextual accuracy
  (against the chunks the answer cites, else those it retrieved; 1-5) and completeness (against the question;
  1-5). It writes judge.jsonl and judge.json beside the run's results and names the judge model: these scores
  are reported beside the deterministic metrics, never instead of them.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..config import Config
from ..engine.context import Deps, Run, run_all
from ..errors import ConfigError, FatalLLMError, InputError, LLMError
from ..llm.base import ChatModel
from ..retrieval import as_searcher
from ..schema import Chunk, Meter
from . import metrics
from .samples import SampleWriter, read_samples

MIN_CHUNK_CHARS = 40
MAX_CONTEXT_CHARS = 4000


def _run(chat: ChatModel, index: Any, prompts: Any, question: str = "") -> Run:
    config = Config(nonce_seed="selfrag-judge")
    return Run(Deps(chat, as_searcher(index), prompts), config, question, "", Meter(), b"selfrag-judge")


async def generate_judgments(
    index: Any, chat: ChatModel, out: Path, *, limit: int | None = None, seed: int = 0, prompts: Any = None
) -> int:
    """Write `out` (JSONL: id, chunk, question), one question per chunk; returns how many were written.
    Chunks shorter than a sentence are skipped; a chunk whose question fails is left out (and counted)."""
    from .systems import BenchPrompts

    prompts = prompts or BenchPrompts()
    chunks = [c for c in index.loop_over_chunks() if len(c.text.strip()) >= MIN_CHUNK_CHARS]
    if limit is not None and limit < len(chunks):
        order = list(range(len(chunks)))
        random.Random(seed).shuffle(order)
        chunks = [chunks[i] for i in sorted(order[:limit])]
    if not chunks:
        raise InputError("the index has no chunk long enough to ask a question about")

    async def ask(chunk: Chunk) -> dict[str, Any] | None:
        run = _run(chat, index, prompts)
        try:
            parsed = await run.ask("judge_question", logprobs=False, **run.document_values("judge", chunk))
        except FatalLLMError:
            raise
        except LLMError:
            return None
        question = parsed.value.question.strip()  # type: ignore[attr-defined]
        return {"id": chunk.key, "chunk": chunk.key, "question": question} if question else None

    rows = [row for row in await run_all(ask(c) for c in chunks) if row is not None]
    out.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    return len(rows)


def read_judgments(path: Path) -> list[dict[str, str]]:
    rows, seen = [], set()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror or error}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            key, question = str(row["chunk"]), str(row["question"])
        except (ValueError, KeyError, TypeError):
            raise InputError(f'{path}:{number}: expected a JSON object with "chunk" and "question"') from None
        rid = str(row.get("id", key))
        if rid in seen:
            raise InputError(f"{path}:{number}: duplicate id {rid!r}")
        seen.add(rid)
        rows.append({"id": rid, "chunk": key, "question": question})
    if not rows:
        raise InputError(f"{path} holds no judgments")
    return rows


def retrieval_report(index: Any, judgments: Sequence[dict[str, str]], k: int = 5, *, seed: int = 0) -> dict[str, Any]:
    """precision@k, hit@k and MRR@k of the index on a judgment list (one relevant chunk per question)."""
    if k < 1:
        raise InputError("-k must be at least 1")
    found = index.find_many([j["question"] for j in judgments], k)
    precision, hits, reciprocal = [], [], []
    for judgment, hits_of in zip(judgments, found, strict=True):
        keys = [hit.chunk.key for hit in hits_of]
        rank = keys.index(judgment["chunk"]) + 1 if judgment["chunk"] in keys else None
        precision.append((1.0 if rank else 0.0) / k)
        hits.append(1.0 if rank else 0.0)
        reciprocal.append(1.0 / rank if rank else 0.0)
    report: dict[str, Any] = {"queries": len(judgments), "k": k}
    for name, values in ((f"precision@{k}", precision), (f"hit@{k}", hits), (f"mrr@{k}", reciprocal)):
        value, low, high, _ = metrics.bootstrap_mean(values, seed=seed)
        report[name] = {"value": value, "low": low, "high": high}
    return report


async def judge_answers(run_dir: Path, chat: ChatModel, *, prompts: Any = None) -> dict[str, Any]:
    """Score every answered question of a QA run (resumable: judge.jsonl keeps finished ids)."""
    from . import datasets as ds
    from .systems import BenchPrompts

    config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    if config["dataset"]["task"] != "qa":
        raise ConfigError("the answer judge scores free-text answers: use it on QA runs (hotpotqa_smoke, halueval)")
    dataset = ds.load(config["dataset"]["name"], config["dataset"]["path"])
    chunks = dataset.chunk_texts()
    records, _ = read_samples(run_dir / "samples.jsonl", repair=False)
    judged, _ = read_samples(run_dir / "judge.jsonl", repair=True)
    prompts = prompts or BenchPrompts()
    writer = SampleWriter(run_dir / "judge.jsonl")
    try:
        for record in records.values():
            if record["status"] != "ok" or record["id"] in judged:
                continue
            keys = record.get("citations") or record.get("retrieved") or []
            context = "\n\n".join(chunks[k].text for k in dict.fromkeys(keys) if k in chunks)[:MAX_CONTEXT_CHARS]
            run = _run(chat, None, prompts, record["question"])
            answer = record.get("display") or record.get("prediction") or ""
            try:
                parsed = await run.ask(
                    "judge_answer",
                    logprobs=False,
                    question=record["question"],
                    answer=answer,
                    context=context or "(no context: the system retrieved nothing)",
                )
                row = {
                    "id": record["id"],
                    "status": "ok",
                    "contextual_accuracy": parsed.value.contextual_accuracy,
                    "completeness": parsed.value.completeness,
                }  # type: ignore[attr-defined]
            except FatalLLMError:
                raise
            except LLMError as error:
                row = {"id": record["id"], "status": "failed", "error": f"{type(error).__name__}: {error}"}
            writer.write(row)
            judged[row["id"]] = row
    finally:
        writer.close()
    rows = [r for r in judged.values() if r["status"] == "ok"]
    summary: dict[str, Any] = {
        "judge_model": chat.name,
        "judged": len(rows),
        "failed": len(judged) - len(rows),
        "note": "LLM judge scores (1-5); reported beside the deterministic metrics",
    }
    for name in ("contextual_accuracy", "completeness"):
        value, low, high, n = metrics.bootstrap_mean([float(r[name]) for r in rows])
        summary[name] = {"value": value, "low": low, "high": high, "n": n}
    (run_dir / "judge.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return summary
