"""The benchmark's prompt files: all load beside the engine's, declare their inputs, and are all used."""

from __future__ import annotations

import re
from pathlib import Path

from selfrag.bench.systems import BenchPrompts
from selfrag.prompts import PromptBook, prompts_dir

SOURCES = Path(__file__).resolve().parents[2] / "selfrag" / "bench"


def test_bench_prompts_load_beside_the_engine_prompts_and_are_all_used():
    book, engine = BenchPrompts(), PromptBook()
    ours = {p.stem for p in (prompts_dir() / "bench").glob("*.toml")}
    assert set(book.names()) == set(engine.names()) | ours
    source = "\n".join(p.read_text() for p in SOURCES.glob("*.py"))
    used = set(re.findall(r'(?:\.ask\(|_written\(run,|ask_over_top_chunks\([^"]*?)\s*"([a-z_]+)"', source))
    assert ours <= used
    for name in ours:
        prompt = book[name]
        identifiers = set(prompt.system.get_identifiers()) | set(prompt.user.get_identifiers())
        assert identifiers == set(prompt.spec.inputs)
