"""The documents stay written for their readers: the README short and in short sentences, the results page short,
and a decision log entry for every policy the engine can switch, citing tests and archive sections that exist.

Sentences are read from the prose only: fenced code blocks and table rows are left out, each heading and each
list item starts afresh, an inline code span or a link counts as one word, and a sentence ends at ".", "!" or "?"
followed by a space and anything but a lower-case letter ("e.g. the" goes on)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from selfrag.engine.policies import NAMES

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
RESULTS = ROOT / "benchmarks" / "README.md"
DECISIONS = ROOT / "docs" / "decisions.md"
PAGES = (README, RESULTS, DECISIONS)

README_LINES, RESULTS_LINES, SENTENCE_WORDS = 260, 320, 60

_FENCE = re.compile(r"^\s*(```|~~~)")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_CODE = re.compile(r"`[^`]*`")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_END = re.compile(r"(?<=[.!?])[\"'”’)\]*_]*\s+(?=[^a-z\s])")


def prose_blocks(text: str) -> list[str]:
    """The paragraphs, headings and list items of a Markdown text, outside code blocks and tables."""
    blocks: list[str] = []
    current: list[str] = []
    fenced = False

    def close() -> None:
        if current:
            blocks.append(" ".join(current))
            current.clear()

    for line in text.splitlines():
        if _FENCE.match(line):
            close()
            fenced = not fenced
            continue
        stripped = line.strip()
        if fenced or not stripped or stripped.startswith("|"):
            close()
            continue
        if stripped.startswith("#") or _ITEM.match(line):
            close()
            stripped = _ITEM.sub("", stripped, count=1).lstrip("#").strip()
        current.append(stripped)
        if line.lstrip().startswith("#"):
            close()
    close()
    return blocks


def sentences(text: str) -> list[str]:
    out = []
    for block in prose_blocks(text):
        plain = _LINK.sub(lambda m: "LINK" if not m.group(1).strip() else m.group(1), _CODE.sub("CODE", block))
        out.extend(part.strip() for part in _END.split(plain) if part.strip())
    return out


def too_long(text: str, limit: int = SENTENCE_WORDS) -> list[str]:
    return [s for s in sentences(text) if len(s.split()) > limit]


def test_the_sentence_reader_skips_code_and_tables_and_splits_at_sentence_ends():
    long = " ".join(["word"] * 61) + "."
    text = f"# Title\n\nOne. Two, e.g. three.\n\n```\n{long}\n```\n\n| {long} |\n\n- item one\n- {long}\n"
    assert sentences(text)[:3] == ["Title", "One.", "Two, e.g. three."]
    assert too_long(text) == [long]  # the list item, not the code block or the table row
    assert too_long("`" + long + "` ends here.") == []  # a code span is one word


def test_the_readme_is_short():
    lines = README.read_text().count("\n")
    assert lines <= README_LINES, f"README.md has {lines} lines; keep it to about 250 (test limit {README_LINES})"


def test_no_readme_sentence_is_over_60_words():
    long = too_long(README.read_text())
    assert not long, "README sentences over 60 words:\n" + "\n".join(f"- ({len(s.split())}) {s}" for s in long)


def test_the_results_page_is_short():
    lines = RESULTS.read_text().count("\n")
    assert lines <= RESULTS_LINES, f"benchmarks/README.md has {lines} lines (test limit {RESULTS_LINES})"


def entry_headings(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("### ")]


@pytest.mark.parametrize("name", NAMES)
def test_every_policy_has_an_entry_in_the_decision_log(name):
    headings = entry_headings(DECISIONS.read_text())
    assert any(h.startswith(f"### `{name}`") for h in headings), f"docs/decisions.md has no entry '### `{name}` ...'"


def test_an_entry_removed_from_the_log_is_missed():
    text = DECISIONS.read_text()
    name = NAMES[0]
    without = "\n".join(line for line in text.splitlines() if not line.startswith(f"### `{name}`"))
    assert not any(h.startswith(f"### `{name}`") for h in entry_headings(without))


_TEST_PATH = re.compile(r"\btests/[\w./-]+\.py\b")
_TEST_NAME = re.compile(r"\b(tests/[\w./-]+\.py)::(test_\w+)")


def test_every_test_the_log_cites_exists():
    text = DECISIONS.read_text()
    paths = set(_TEST_PATH.findall(text))
    assert paths, "the decision log cites no test"
    missing = sorted(p for p in paths if not (ROOT / p).is_file())
    assert not missing, f"docs/decisions.md cites missing test files: {missing}"
    absent = sorted(
        f"{path}::{name}"
        for path, name in set(_TEST_NAME.findall(text))
        if not re.search(rf"^(async )?def {name}\(", (ROOT / path).read_text(), re.M)
    )
    assert not absent, f"docs/decisions.md cites tests that do not exist: {absent}"


_SOURCE_PATH = re.compile(r"\bselfrag/[\w./-]+\.(?:py|toml|json)\b")


def code_cited(text: str, name: str) -> list[str]:
    """The package files the `**Code:**` item of a policy's entry cites (the item and the lines that go on from it)."""
    entry = text.split(f"\n### `{name}`", 1)[1].split("\n### ", 1)[0]
    item = entry.split("\n- **Code:**", 1)[1].split("\n- **", 1)[0] if "\n- **Code:**" in entry else ""
    return _SOURCE_PATH.findall(item)


@pytest.mark.parametrize("name", NAMES)
def test_every_policy_entry_cites_the_module_its_code_lives_in(name):
    cited = [path for path in code_cited(DECISIONS.read_text(), name) if path.endswith(".py")]
    assert cited, f"docs/decisions.md's entry for `{name}` has no '- **Code:**' item citing a module"


def test_every_package_file_the_log_cites_exists():
    text = DECISIONS.read_text()
    cited = set(_SOURCE_PATH.findall(text))
    missing = sorted(p for p in cited if not (ROOT / p).is_file())
    assert cited and not missing, f"docs/decisions.md cites package files that do not exist: {missing}"
    name = NAMES[0]  # an entry without its code item is missed
    without = "\n".join(line for line in text.splitlines() if not line.startswith("- **Code:**"))
    assert not code_cited(without, name)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    fenced = False
    for line in path.read_text().splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#+ (.*)", line)):
            base = slug(match.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


_LOCAL_LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#([^)\s]+))?\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_to_a_page_and_its_section_resolves(page):
    broken = []
    for target, anchor in _LOCAL_LINK.findall(page.read_text()):
        if "://" in target:
            continue
        path = (page.parent / target).resolve()
        if not path.is_file():
            broken.append(target)
        elif anchor and anchor not in anchors(path):
            broken.append(f"{target}#{anchor}")
    assert not broken, f"{page.relative_to(ROOT)} links to what does not exist: {broken}"
