"""What the checks on a short answer cost and catch, with two scripted readers and no model (seconds).

The strong reader of `tests/engine/test_strong_reader.py` answers every yes/no and choice question from the
document that holds its answer; a contrary reader is the same reader giving the other yes or no, or the other
option. Each question is answered with the `denials` policy on and off (every other policy at its default, the
paper's scorer), and the counts are printed as JSON: right short answers printed by the strong reader, and how
many of them `denials` withheld; wrong short answers printed by the contrary reader, and how many it caught.

    python benchmarks/scripted_readers.py --set dev       # the generalisation set's dev split
    python benchmarks/scripted_readers.py --set sample    # the sample corpus' question sets
    python benchmarks/scripted_readers.py --set test      # measured only: never tuned on
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "engine")]

import test_strong_reader as reader  # noqa: E402

from selfrag import Config  # noqa: E402
from selfrag.api import SelfRAG  # noqa: E402
from selfrag.cli import main as selfrag_main  # noqa: E402
from selfrag.engine.questions import choice_options  # noqa: E402
from selfrag.result import Result  # noqa: E402
from selfrag.retrieval import RetrievalSettings, Retriever  # noqa: E402
from selfrag.retrieval.index import Index  # noqa: E402
from selfrag.retrieval.supersession import load_versions  # noqa: E402
from selfrag.testing import ScriptedChatModel  # noqa: E402


def cases(chosen: str) -> list[reader.Case]:
    if chosen == "sample":
        return reader.sample_cases()
    split = {}
    for path in sorted((reader.GENERALISATION / "questions").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                split[f"{path.stem}:{row['id']}"] = row.get("split")
    return [case for case in reader.generalisation_cases() if split.get(case.id) == chosen]


def contrary(case: reader.Case) -> ScriptedChatModel | None:
    """The strong reader with the other yes or no, or the other option, as its short answer."""
    gold = (case.gold or "").lower()
    if gold in ("yes", "no"):
        wrong = "No" if gold == "yes" else "Yes"
    else:
        offered = choice_options(case.question)
        if offered is None:
            return None
        first = offered[0].lower()
        wrong = offered[1] if first in gold or gold in first else offered[0]
    model = reader.strong_reader(case)
    model._script["answer_lead"] = {"answer": wrong}
    return model


def answer(case: reader.Case, chat: ScriptedChatModel, retriever: Retriever, denials: bool) -> Result:
    config = Config(nonce_seed="test", scorer="paper", lead=True, denials=denials)
    rag = SelfRAG(retriever, config, chat=chat, environ={})
    try:
        return rag.answer(case.question)
    finally:
        rag.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=("dev", "test", "sample"), required=True)
    args = parser.parse_args()
    indexes: dict[Path, Retriever] = {}
    counts = dict.fromkeys(
        ("questions", "strong_right_off", "strong_right_on", "strong_withheld", "contrary_wrong_off",
         "contrary_wrong_on", "contrary_caught"), 0,
    )  # fmt: skip
    withheld = []
    with tempfile.TemporaryDirectory() as scratch:
        for case in cases(args.set):
            if case.gold is None or not ((case.gold or "").lower() in ("yes", "no") or choice_options(case.question)):
                continue
            if case.corpus not in indexes:
                out = Path(scratch) / str(len(indexes))
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    selfrag_main(["index", str(case.corpus), "--out", str(out), "--quiet"])
                indexes[case.corpus] = Retriever(
                    Index.load(out), RetrievalSettings(supersession=True), versions=load_versions(out)
                )
            retriever = indexes[case.corpus]
            counts["questions"] += 1
            for on in (False, True):
                result = answer(case, reader.strong_reader(case), retriever, on)
                counts[f"strong_right_{'on' if on else 'off'}"] += reader.agrees(result.lead or "", case) and (
                    result.lead not in (None, reader.UNSETTLED)
                )
                if on and "by the model" in (result.trace.lead_refused or ""):
                    counts["strong_withheld"] += 1
                    withheld.append(f"{case.id}: {result.trace.lead_refused}")
                chat = contrary(case)
                if chat is None:
                    continue
                result = answer(case, chat, retriever, on)
                counts[f"contrary_wrong_{'on' if on else 'off'}"] += result.lead not in (None, reader.UNSETTLED) and (
                    not reader.agrees(result.lead or "", case)
                )
                counts["contrary_caught"] += on and "by the model" in (result.trace.lead_refused or "")
    print(json.dumps({"set": args.set, **counts, "withheld": withheld}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
