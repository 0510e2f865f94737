"""Yes/no questions over the sample corpus: is each one read as a yes/no question, and what do the documents decide?

Two sets of questions a member of the sample corpus's bike co-op might ask, each with its gold answer ("yes",
"no", or "unsettled": the documents do not say) and the sentence that settles it, live in `examples/questions/`.
Both were written by someone who read only the corpus, never the engine: `yes-no-dev.jsonl` (48 questions) was
looked at while the rules were made; `yes-no-heldout.jsonl` (60, written afterwards by another hand without seeing
the first) is for reporting.

With no model, per set: how many are read as yes/no questions (`engine.questions.question_kind`: one that is not
gets no short answer at all), and what the documents decide with no call (`engine.lead.documents_decide` over the
engine's own retrieval, superseded documents read as the engine reads them): right, wrong, or undecided. A
question with gold "unsettled" that the documents decide is counted wrong.

With `--model`, the embedded model answers every question through the engine with its defaults (short answer on)
and the short answers are counted: right, wrong, "The documents don't settle it." (right where the gold is
"unsettled"), or none, and by what gave them (`Result.lead_from`).

    python benchmarks/sample_questions.py                                # no model, seconds
    python benchmarks/sample_questions.py --model --threads 1 --set heldout   # the embedded model, ~20 min
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cli import print_table  # noqa: E402

from selfrag import Config, SelfRAG  # noqa: E402
from selfrag.engine.lead import UNSETTLED, current_texts, documents_decide  # noqa: E402
from selfrag.engine.questions import question_kind  # noqa: E402
from selfrag.retrieval import RetrievalSettings, Retriever  # noqa: E402
from selfrag.retrieval.index import Index  # noqa: E402
from selfrag.retrieval.ingest import index_paths  # noqa: E402
from selfrag.retrieval.supersession import load_versions  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SETS = {name: ROOT / f"examples/questions/yes-no-{name}.jsonl" for name in ("dev", "heldout")}
ANSWERS = ("yes", "no", "unsettled")
COLUMNS = ("set", "how", "questions", "read as yes/no", "right", "wrong", "unsettled (gold settled)", "no lead")


def read_set(path: Path) -> list[dict[str, str]]:
    """The questions of one set, each with its question and gold answer checked."""
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        row = json.loads(line)
        if not isinstance(row.get("question"), str) or row.get("answer") not in ANSWERS:
            raise SystemExit(f"{path}:{number}: needs a question and an answer in {', '.join(ANSWERS)}")
        rows.append(row)
    return rows


def said(lead: str | None) -> str:
    """A short answer as the gold writes it: yes, no, unsettled, or none."""
    if lead is None:
        return "none"
    return "unsettled" if lead == UNSETTLED else lead.rstrip(".").split(" [")[0].lower()


def tally(rows: list[dict[str, str]], answers: list[tuple[str, str | None]]) -> dict[str, object]:
    """Right, wrong, "don't settle it" and no short answer, and how often each source gave one."""
    counts: Counter[str] = Counter()
    for row, (got, source) in zip(rows, answers, strict=True):
        if got == "none":
            counts["no lead"] += 1
        elif got == row["answer"]:
            counts["right"] += 1
        elif got == "unsettled":
            counts["unsettled (gold settled)"] += 1
        else:
            counts["wrong"] += 1
        if source:
            counts[f"from {source}"] += 1
    return dict(counts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=[*SETS, "both"], default="both")
    parser.add_argument("--ndocs", type=int, default=Config().ndocs, help="chunks read per question (engine default)")
    parser.add_argument("--model", action="store_true", help="also answer every question with the embedded model")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    chosen = list(SETS) if args.set == "both" else [args.set]
    os.environ["SELFRAG_THREADS"] = str(args.threads)
    config = Config(ndocs=args.ndocs, nonce_seed="sample-questions")  # fixed delimiters: the same prompts each run
    table = []
    with tempfile.TemporaryDirectory() as folder:
        index_paths([ROOT / "examples/corpus"], folder)
        settings = RetrievalSettings(strategy=config.strategy, fusion=config.fusion, rerank=config.rerank,
                                     freshness=config.freshness, supersession=config.supersession)  # fmt: skip
        retriever = Retriever(Index.load(folder), settings, versions=load_versions(folder))  # as `from_index`
        for name in chosen:
            rows = read_set(SETS[name])
            kinds = [question_kind(row["question"]) for row in rows]
            decided = []
            for row in rows:
                chunks = [hit.chunk for hit in retriever.find_relevant_chunks(row["question"], args.ndocs)]
                decision = documents_decide(row["question"], "yes_no", current_texts(chunks))
                decided.append((decision.option.lower(), decision.by) if decision else ("none", None))
            head = {"set": name, "questions": len(rows), "read as yes/no": kinds.count("yes_no")}
            table.append({**head, "how": "documents, no model", **tally(rows, decided)})
            if args.model:
                with SelfRAG(retriever, config) as rag:
                    answers = [(said(r.lead), r.lead_from) for r in map(rag.answer, (row["question"] for row in rows))]
                table.append({**head, "how": "embedded model, engine defaults", **tally(rows, answers)})
    keys = [*COLUMNS, *sorted({key for row in table for key in row if key.startswith("from ")})]
    print_table("yes/no questions over the sample corpus", [{k: row.get(k, 0) for k in keys} for row in table])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
