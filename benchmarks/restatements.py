"""How often the model writes the question back as its sentence, per 100 candidates it wrote, before and after the
engine asks such a sentence again with the question after the document (the `ask_plainly` policy).

    python benchmarks/restatements.py RUN [RUN ...]

Reads each run folder's samples.jsonl (a QA run of `benchmarks/run.py`). A candidate the model wrote first
(neither the chunk's own sentence nor one asked again) counts as written; "before" is the share of those flagged as
restating the question, "after" the share still restating once asked again (a restated sentence asked again and
written plainly no longer counts). Runs recorded before candidates carried `asked_again` are refused.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

RESTATES = "restates_question"


def counts(records: list[dict]) -> dict[str, int]:
    """written, restated when first written, asked again, still restating when asked again."""
    written = restated = asked = still = 0
    for record in records:
        for candidate in record.get("candidates") or []:
            if "asked_again" not in candidate:
                raise ValueError("a record from before candidates carried asked_again: run it again")
            if candidate["asked_again"]:
                asked += 1
                still += candidate.get("flag") == RESTATES
            elif not candidate.get("extracted"):
                written += 1
                restated += candidate.get("flag") == RESTATES
    return {"written": written, "restated": restated, "asked_again": asked, "still_restating": still}


def per_100(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}" if whole else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="benchmark run folders")
    args = parser.parse_args(argv)
    print("| run | questions | candidates written | restating, before | after |")
    print("|---|---|---|---|---|")
    for run in args.runs:
        path = run / "samples.jsonl"
        try:
            records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            c = counts(records)
        except (OSError, ValueError) as error:
            print(f"restatements: {path}: {error}", file=sys.stderr)
            return 2
        unfixed = c["restated"] - (c["asked_again"] - c["still_restating"])
        print(
            f"| {run.name} | {len(records)} | {c['written']} | {per_100(c['restated'], c['written'])} "
            f"| {per_100(unfixed, c['written'])} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
