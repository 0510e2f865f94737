"""Prompt files: every file loads, declares exactly its placeholders, names a known reply model, is used by
the engine, and ships inside the wheel."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from selfrag.errors import ConfigError
from selfrag.prompts import PromptBook, load_prompt, prompts_dir

ROOT = Path(__file__).resolve().parent.parent


def test_every_prompt_loads_and_declares_its_inputs():
    book = PromptBook()
    assert book.names() == [
        "answer_lead",
        "check_answer",
        "confirm_decision",
        "critique_candidate",
        "generate_direct",
        "generate_direct_segment",
        "generate_fused",
        "generate_plain",
        "generate_pooled",
        "generate_segment",
        "retrieve_decide",
        "retrieve_variants",
    ]
    for name in book.names():
        prompt = book[name]
        used = set(prompt.system.get_identifiers()) | set(prompt.user.get_identifiers())
        assert used == set(prompt.spec.inputs)


def test_every_prompt_is_used_by_the_engine_and_every_reference_exists():
    source = "\n".join(p.read_text() for p in (ROOT / "selfrag" / "engine").glob("*.py"))
    referenced = set(re.findall(r'\.ask\(\s*"([a-z_]+)"', source))
    assert referenced == set(PromptBook().names())


def test_rendering_needs_every_declared_input_and_nothing_else():
    prompt = PromptBook()["retrieve_decide"]
    messages = prompt.render(conversation="(none)", question="Q?", draft="(nothing yet)")
    assert "Question: Q?" in messages[1].content
    with pytest.raises(ConfigError, match="missing inputs"):
        prompt.render(question="Q?", draft="")
    with pytest.raises(ConfigError, match="undeclared"):
        prompt.render(conversation="", question="Q?", draft="", extra="x")


def test_a_prompt_whose_placeholders_differ_from_its_inputs_is_refused(tmp_path):
    bad = tmp_path / "generate_plain.toml"
    text = (prompts_dir() / "generate_plain.toml").read_text().replace('"note"]', '"note", "unused"]')
    bad.write_text(text)
    with pytest.raises(ConfigError, match="differ from declared inputs"):
        load_prompt(bad)


def test_a_prompt_named_unlike_its_file_is_refused(tmp_path):
    bad = tmp_path / "other.toml"
    bad.write_text((prompts_dir() / "generate_plain.toml").read_text())
    with pytest.raises(ConfigError, match="file stem"):
        load_prompt(bad)


def test_prompts_ship_inside_the_wheel_and_load_from_an_installed_copy(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("selfrag-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n.removeprefix("selfrag/data/prompts/") for n in names if n.startswith("selfrag/data/prompts/")}
    home = {str(p.relative_to(ROOT / "prompts")) for p in (ROOT / "prompts").rglob("*.toml")}
    assert shipped == home and "bench/verify_claim.toml" in home  # the engine's and the benchmarks' prompts
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
    )
    code = (
        "from selfrag.prompts import PromptBook, prompts_dir; from selfrag.bench.systems import BenchPrompts; "
        "print(prompts_dir()); print(len(PromptBook().names())); print(len(BenchPrompts().names()))"
    )
    found = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={"PYTHONPATH": str(target)},
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert Path(found[0]) == target / "selfrag" / "data" / "prompts"  # the installed copy, not this checkout
    assert int(found[1]) == len(list((ROOT / "prompts").glob("*.toml"))) and int(found[2]) == len(home)


def test_a_checkout_reads_the_prompts_at_its_root():
    assert prompts_dir() == ROOT / "prompts"
    inside = [p for p in (ROOT / "selfrag").rglob("*.toml") if p.name != "shortform_tasks.toml"]  # not a prompt
    assert not inside  # prompts/ is the prompt files' one home
