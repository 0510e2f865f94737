"""A model that restates every question, served over loopback HTTP: is the sample corpus still answered?

The loopback server (`selfrag.testing.fake_server`) plays a small instruct model that writes the question back
as its sentence, calling it relevant, fully supported and useful (`restating_responder`), as a 0.5B model did
on the README's first question. Two shapes: `plain`, which answers when the question comes after the document
(`generate_direct`, what `Config.ask_plainly` asks), and `always`, which restates whatever it is asked. The
engine runs with its defaults at `--base-url` (the paper's scorer), over an index of `examples/corpus/` built
here, on the README's first question and every question set in `examples/questions/`. No real model, no
network beyond 127.0.0.1: the counts say what the engine does with such replies, nothing of any model's quality.

Per set and shape: questions the documents answer (gold not "unsettled"); of those, the ones answered from the
documents (every sentence cites a document, or a short answer the documents decide stands alone, cited), the ones
abstained, the ones answered otherwise (a sentence written without documents), and those whose answer cites the
gold document; the questions the documents do not answer (gold "unsettled") and how many of those abstained or
opened with "The documents don't settle it."; the candidates the model wrote (every question, extracted sentences
aside), with how many restated the question (per 100); and the mean `Usage.llm_calls` per question. `--code DIR`
runs another checkout's engine (e.g. an export of main) with this script's server.

    python benchmarks/restating_endpoint.py                       # both shapes, every set
    python benchmarks/restating_endpoint.py --shape plain --set factoid-dev
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
README_QUESTION = (
    "What is the late fee for a bike returned after 24 hours, and how many days do I have to dispute a charge?"
)
README_GOLD = {"question": README_QUESTION, "answer": "$15", "doc": "late-returns-2026.md"}
SHAPES = ("plain", "always")
COLUMNS = (
    "set", "shape", "answerable", "answered from documents", "abstained", "answered otherwise", "gold document cited",
    "unsettled", "unsettled: abstained or not settled", "candidates written", "restated", "restated per 100",
    "calls per question",
)  # fmt: skip


def fake_server_module() -> Any:
    """This checkout's loopback server, loaded by path (an older engine under --code lacks its responder)."""
    spec = importlib.util.spec_from_file_location("restating_fake_server", ROOT / "selfrag/testing/fake_server.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def question_sets(names: list[str] | None) -> dict[str, list[dict[str, Any]]]:
    sets = {"readme": [README_GOLD]}
    for path in sorted((ROOT / "examples/questions").glob("*.jsonl")):
        if names is None or path.stem in names:
            sets[path.stem] = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {name: rows for name, rows in sets.items() if names is None or name in names}


def count(rag: Any, rows: list[dict[str, Any]]) -> dict[str, int]:
    tally = dict.fromkeys(
        ("answerable", "answered", "abstained", "other", "gold", "unsettled", "held", "written", "restated", "calls"), 0
    )
    for row in rows:
        result = rag.answer(row["question"])
        tally["calls"] += result.usage.llm_calls
        for step in result.trace.steps:
            written = [c for c in step.candidates if not c.extracted and c.error is None]
            tally["written"] += len(written)
            tally["restated"] += sum(c.flag == "restates_question" for c in written)
        if row["answer"] == "unsettled":
            tally["unsettled"] += 1
            tally["held"] += result.abstention is not None or result.answer.startswith("The documents don't settle it")
            continue
        tally["answerable"] += 1
        cited = bool(result.sources) and all(s.chunk for s in result.segments)  # a lead the documents decide: no
        tally["answered"] += result.abstention is None and cited  # sentence, its sources cited
        tally["abstained"] += result.abstention is not None
        tally["other"] += result.abstention is None and not cited
        tally["gold"] += any(source.doc_id == row["doc"] for source in result.sources)
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=SHAPES, action="append", help="default: both")
    parser.add_argument("--set", action="append", help="readme or a file stem of examples/questions (default: all)")
    parser.add_argument("--code", type=Path, help="run the engine of this checkout instead of this one")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON lines")
    args = parser.parse_args(argv)
    server_module = fake_server_module()  # before --code goes first on the path: this checkout's responder
    sys.path.insert(0, str(args.code.resolve() if args.code else ROOT))
    from selfrag import Config, SelfRAG
    from selfrag.cli import main as selfrag_main
    from selfrag.config import EndpointConfig

    rows_by_set = question_sets(args.set)
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        index = Path(tmp) / "index"
        assert selfrag_main(["index", str(ROOT / "examples/corpus"), "--out", str(index), "--quiet"]) == 0
        for shape in args.shape or SHAPES:
            responder = partial(server_module.restating_responder, answers_plainly=shape == "plain")
            with server_module.FakeOpenAIServer(responder=responder, model="restating-0.5b") as server:
                config = Config(endpoint=EndpointConfig(base_url=server.base_url), nonce_seed="restating")
                rag = SelfRAG.from_index(index, config, environ={})
                try:
                    for name, rows in rows_by_set.items():
                        t = count(rag, rows)
                        per_100 = 100 * t["restated"] / t["written"] if t["written"] else 0.0
                        lines.append(
                            [name, shape, t["answerable"], t["answered"], t["abstained"], t["other"], t["gold"],
                             t["unsettled"], t["held"], t["written"], t["restated"], f"{per_100:.0f}",
                             f"{t['calls'] / len(rows):.1f}"]
                        )  # fmt: skip
                        print(json.dumps(dict(zip(COLUMNS, lines[-1], strict=True))), file=sys.stderr, flush=True)
                finally:
                    rag.close()
    if args.json:
        for line in lines:
            print(json.dumps(dict(zip(COLUMNS, line, strict=True))))
        return 0
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for line in lines:
        print("| " + " | ".join(map(str, line)) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
