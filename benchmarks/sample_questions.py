"""Questions over the sample corpus with short answers: is each read as the kind it is, and what is answered?

Sets of questions a member of the sample corpus's bike co-op might ask, each with its gold answer and the
sentence that states it, live in `examples/questions/` (every `.jsonl` file there is a set). All were written by
someone who read only the corpus, never the engine: yes/no questions (gold "yes", "no", or "unsettled": the
documents do not say) and questions asking a value (a fee, a time, a place; or "unsettled"). The `dev` sets were
looked at while the rules were made; the `heldout` sets (60 each) were written afterwards, by another hand that
saw neither the engine nor the others.

With no model, per set: how many are read as their kind (`engine.questions.question_kind`: a question that is not
gets no short answer at all), and what the documents decide with no call (`engine.lead.documents_decide` over
the engine's own retrieval, superseded documents read as the engine reads them): right, wrong, or not decided
("no lead"; for a value question whose gold is "unsettled", not deciding is right). A question with gold
"unsettled" the documents decide is wrong. Two more sets, `factoid-heldout-b` and `yes-no-heldout-b` (48 each),
were written later still, blind in the same way, and first read once the rules they report on were made;
`factoid-keywords-heldout` (40) too, as a member types into a search box ("day pass price", "late fee after 24
hrs"): terse phrases, mostly with no question mark and no verb.

With `--model`, the embedded model answers every question through the engine with its defaults (short answer on)
and the short answers are counted: right (for a value, the gold or an alias in it as the benchmarks' metric reads
it), wrong, "The documents don't settle it." (counted right where the gold is "unsettled"), or none (also right
for a value the documents do not give), and by what gave them (`Result.lead_from`).

    python benchmarks/sample_questions.py                                      # no model, seconds
    python benchmarks/sample_questions.py --model --threads 1 --set yes-no-heldout   # the embedded model
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cli import print_table  # noqa: E402

from selfrag import Config, SelfRAG  # noqa: E402
from selfrag.bench.metrics import answer_in  # noqa: E402
from selfrag.engine.lead import current_texts, documents_decide  # noqa: E402
from selfrag.engine.questions import question_kind  # noqa: E402
from selfrag.engine.state import UNSETTLED  # noqa: E402
from selfrag.retrieval import RetrievalSettings, Retriever  # noqa: E402
from selfrag.retrieval.index import Index  # noqa: E402
from selfrag.retrieval.ingest import index_paths  # noqa: E402
from selfrag.retrieval.supersession import load_versions  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SETS = {path.stem: path for path in sorted((ROOT / "examples/questions").glob("*.jsonl"))}
YES_NO = ("yes", "no", "unsettled")
COLUMNS = (
    "set", "how", "questions", "read as its kind", "right", "wrong", "unsettled (gold settled)", "abstained", "no lead"
)  # fmt: skip


def read_set(path: Path, yes_no: bool) -> list[dict[str, Any]]:
    """The questions of one set, each with its question and gold answer checked."""
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        row = json.loads(line)
        gold = row.get("answer")
        if not isinstance(row.get("question"), str) or not isinstance(gold, str) or (yes_no and gold not in YES_NO):
            raise SystemExit(f"{path}:{number}: needs a question and a gold answer" + (" (yes/no/unsettled)" * yes_no))
        rows.append(row)
    return rows


def verdict(row: dict[str, Any], lead: str | None, yes_no: bool, abstained: bool = False) -> str:
    """A short answer against the gold: right, wrong, "unsettled (gold settled)", or "no lead" (right for a value
    the documents do not give); an answer that abstained with no lead is right where the gold is "unsettled"."""
    gold = row["answer"]
    if lead is None and abstained:
        return "right" if gold == "unsettled" else "abstained"
    if lead is None:
        return "right" if gold == "unsettled" and not yes_no else "no lead"
    if lead == UNSETTLED:
        return "right" if gold == "unsettled" else "unsettled (gold settled)"
    if yes_no:
        return "right" if lead.split(" [")[0].rstrip(".").lower() == gold else "wrong"
    return "right" if gold != "unsettled" and answer_in(lead, [gold, *row.get("aliases", [])]) else "wrong"


Said = tuple[str | None, str | None, bool]  # the short answer, what gave it, and whether the answer abstained


def tally(rows: list[dict[str, Any]], answers: list[Said], yes_no: bool) -> dict[str, object]:
    """Right, wrong, "don't settle it", abstained and no short answer, and how often each source gave one."""
    pairs = zip(rows, answers, strict=True)
    counts: Counter[str] = Counter(verdict(row, lead, yes_no, abstained) for row, (lead, _, abstained) in pairs)
    counts.update(f"from {source}" for _, source, _ in answers if source)
    return dict(counts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=[*SETS, "all"], default="all")
    parser.add_argument("--ndocs", type=int, default=Config().ndocs, help="chunks read per question (engine default)")
    parser.add_argument("--model", action="store_true", help="also answer every question with the embedded model")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--details", type=Path, help="with --model: add each answer, one JSON line, to this file")
    args = parser.parse_args(argv)
    chosen = list(SETS) if args.set == "all" else [args.set]
    os.environ["SELFRAG_THREADS"] = str(args.threads)
    config = Config(ndocs=args.ndocs, nonce_seed="sample-questions")  # fixed delimiters: the same prompts each run
    table = []
    with tempfile.TemporaryDirectory() as folder:
        index_paths([ROOT / "examples/corpus"], folder)
        settings = RetrievalSettings(strategy=config.strategy, fusion=config.fusion, rerank=config.rerank,
                                     freshness=config.freshness, supersession=config.supersession)  # fmt: skip
        retriever = Retriever(Index.load(folder), settings, versions=load_versions(folder))  # as `from_index`
        for name in chosen:
            kind = "yes_no" if name.startswith("yes-no") else "factoid"
            rows = read_set(SETS[name], kind == "yes_no")
            head = {"set": name, "questions": len(rows)}
            head["read as its kind"] = sum(question_kind(row["question"]) == kind for row in rows)
            decided = []
            for row in rows:
                chunks = [hit.chunk for hit in retriever.find_relevant_chunks(row["question"], args.ndocs)]
                decision = documents_decide(row["question"], question_kind(row["question"]), current_texts(chunks))
                decided.append((f"{decision.option}." if decision else None, decision.by if decision else None, False))
            table.append({**head, "how": "documents, no model", **tally(rows, decided, kind == "yes_no")})
            if args.model:
                with SelfRAG(retriever, config) as rag:
                    results = [rag.answer(row["question"]) for row in rows]
                if args.details:
                    with args.details.open("a") as out:
                        for row, r in zip(rows, results, strict=True):
                            said = {"set": name, "gold": row["answer"], "lead": r.lead, "lead_from": r.lead_from}
                            said |= {"lead_reply": r.trace.lead_reply, "abstained": r.abstention is not None}
                            said |= {"question": r.question, "answer": r.answer, "confidence": r.confidence}
                            out.write(json.dumps(said) + "\n")
                table.append(
                    {
                        **head,
                        "how": "embedded model",
                        **tally(
                            rows, [(r.lead, r.lead_from, r.abstention is not None) for r in results], kind == "yes_no"
                        ),
                    }
                )
    keys = [*COLUMNS, *sorted({key for row in table for key in row if key.startswith("from ")})]
    print_table("short-answer questions over the sample corpus", [{k: row.get(k, 0) for k in keys} for row in table])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
