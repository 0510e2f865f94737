"""A training split's documents and questions written out for `selfrag calibrate`, as a user's own would be.

    python benchmarks/calibration_corpus.py --dataset halueval --limit 2000 --out DIR

Writes DIR/docs/ (each of the first LIMIT training questions' gold documents, one file each), DIR/index (built with
`selfrag index`) and DIR/questions.jsonl (those questions with their gold answers), then prints the calibrate
command. Only the training split is read (`--split train` of run.py): no question of a reported sample is in it.
`--dataset halueval_hops` writes each snippet's parts as their own documents, so a question needs two of them, as a
HotpotQA one does. `--distractors K` adds, per question, the K documents of later training questions that BM25 ranks
first for it: a corpus where each question has look-alikes beside its own, as HotpotQA's distractor setting has.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from selfrag.bench.datasets import Dataset, load
from selfrag.cli import main as selfrag_main
from selfrag.errors import SelfRagError
from selfrag.retrieval.index import Index


def pick(data: Dataset, limit: int, distractors: int = 0) -> tuple[dict[str, str], list[dict[str, object]]]:
    """The documents (key: text) and questions of `data`'s first `limit` questions, in order.

    With `distractors`, each question also brings the `distractors` documents of later questions that BM25 ranks
    first for it (never an asked question's own document).
    """
    if data.task != "qa":
        raise SelfRagError(f"{data.name} is not a question-answering dataset")
    texts = data.chunk_texts()
    asked = data.examples[:limit]
    own = {key for example in asked for key in example.gold_chunks}
    later = dict.fromkeys(key for example in data.examples[limit:] for key in example.gold_chunks if key not in own)
    if distractors and not later:
        raise SelfRagError(f"{data.name} has no question after the first {limit} to take distractors from")
    questions = [example.question for example in asked]
    if distractors:
        near = Index.build(texts[key] for key in later).find_many(questions, distractors)
    else:
        near = [[] for _ in asked]
    docs: dict[str, str] = {}
    for example, hits in zip(asked, near, strict=True):
        for key in (*example.gold_chunks, *(hit.chunk.key for hit in hits)):
            docs.setdefault(key, texts[key].text)
    return docs, [{"question": e.question, "answers": list(e.answers)} for e in asked]


def write(dataset: str, limit: int, out: Path, distractors: int = 0) -> tuple[int, int]:
    """`pick` on `dataset`'s training split, written under `out` as documents and JSON lines; (documents, questions)."""
    docs, rows = pick(load(dataset, split="train"), limit, distractors)
    folder = out / "docs"
    folder.mkdir(parents=True, exist_ok=False)
    for key, text in docs.items():
        (folder / f"{key.replace('#', '_')}.txt").write_text(text + "\n", encoding="utf-8")
    (out / "questions.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return len(docs), len(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", required=True, help="a QA dataset with a training split (halueval, halueval_hops)")
    parser.add_argument("--limit", type=int, default=2000, help="training questions whose documents are written")
    parser.add_argument("--distractors", type=int, default=0, help="per question, K look-alike documents (default 0)")
    parser.add_argument("--out", required=True, help="a new folder")
    args = parser.parse_args()
    if args.distractors < 0:
        print("calibration_corpus: --distractors must be 0 or more", file=sys.stderr)
        return 2
    out = Path(args.out)
    if out.exists():
        print(f"calibration_corpus: {out} exists; give a new folder", file=sys.stderr)
        return 2
    try:
        documents, questions = write(args.dataset, args.limit, out, args.distractors)
    except SelfRagError as error:
        print(f"calibration_corpus: {error}", file=sys.stderr)
        return 2
    if selfrag_main(["index", str(out / "docs"), "--out", str(out / "index"), "--quiet"]) != 0:
        return 1
    print(f"{documents} documents and {questions} questions under {out}; calibrate with:")
    print(f"selfrag calibrate --index {out / 'index'} --questions {out / 'questions.jsonl'} --base-url URL")
    return 0


if __name__ == "__main__":
    sys.exit(main())
