"""A training split's documents and questions written out for `selfrag calibrate`, as a user's own would be.

    python benchmarks/calibration_corpus.py --dataset halueval --limit 2000 --out DIR

Writes DIR/docs/ (each of the first LIMIT training questions' gold documents, one file each), DIR/index (built with
`selfrag index`) and DIR/questions.jsonl (those questions with their gold answers), then prints the calibrate
command. Only the training split is read (`--split train` of run.py): no question of a reported sample is in it.
`--dataset halueval_hops` writes each snippet's parts as their own documents, so a question needs two of them, as a
HotpotQA one does.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from selfrag.bench.datasets import load
from selfrag.cli import main as selfrag_main
from selfrag.errors import SelfRagError


def write(dataset: str, limit: int, out: Path) -> tuple[int, int]:
    """The documents and questions of the first `limit` training questions under `out`; (documents, questions)."""
    data = load(dataset, split="train")
    if data.task != "qa":
        raise SelfRagError(f"{dataset} is not a question-answering dataset")
    texts = data.chunk_texts()
    docs, rows = out / "docs", []
    docs.mkdir(parents=True, exist_ok=False)
    written: set[str] = set()
    for example in data.examples[:limit]:
        for key in example.gold_chunks:
            if key not in written:
                written.add(key)
                (docs / f"{key.replace('#', '_')}.txt").write_text(texts[key].text + "\n", encoding="utf-8")
        rows.append({"question": example.question, "answers": list(example.answers)})
    (out / "questions.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return len(written), len(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", required=True, help="a QA dataset with a training split (halueval, halueval_hops)")
    parser.add_argument("--limit", type=int, default=2000, help="training questions whose documents are written")
    parser.add_argument("--out", required=True, help="a new folder")
    args = parser.parse_args()
    out = Path(args.out)
    if out.exists():
        print(f"calibration_corpus: {out} exists; give a new folder", file=sys.stderr)
        return 2
    try:
        documents, questions = write(args.dataset, args.limit, out)
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
