"""A stale index is said (issue 47): `ask` and `chat` warn in one line on stderr when indexed files changed or
vanished on disk since indexing (one stat per file), `doctor` names them (hashing where size or mtime differ),
and `selfrag index` brings the index up to date incrementally, after which nothing is said."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest

from selfrag.cli import main
from selfrag.retrieval.ingest import index_paths
from selfrag.retrieval.staleness import SOURCES, Recorded, Sources, load_sources, stale
from selfrag.retrieval.store import open_current
from selfrag.testing.fake_server import FakeOpenAIServer

from .helpers import WORDS, write

DOCS = {
    "fees.md": "# Fees\n\nA day pass costs $6.00.",
    "late.md": "# Late returns\n\nThe late fee is $15.",
    "helmets.md": "# Helmets\n\nHelmets are lent for free.",
}


@pytest.fixture
def indexed(tmp_path: Path) -> tuple[Path, Path]:
    corpus, out = tmp_path / "corpus", tmp_path / "index"
    for name, text in DOCS.items():
        write(corpus / name, text)
    index_paths([corpus], out, chunking=WORDS)
    return corpus, out


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SELFRAG_API_KEY", "SELFRAG_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SELFRAG_HOME", str(tmp_path / "home"))


def change_and_delete(corpus: Path) -> None:
    write(corpus / "fees.md", "# Fees\n\nA day pass costs $7.50.", mtime=None)  # edited now: another mtime
    os.remove(corpus / "late.md")


def warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if "warning" in line]


def ask(index: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["ask", "How much is a day pass?", "--index", str(index), "--base-url", server.base_url]) == 0
    return capsys.readouterr().err


def test_ask_warns_in_one_line_when_indexed_files_changed_or_vanished(indexed, capsys) -> None:
    corpus, out = indexed
    with FakeOpenAIServer() as server:
        assert warnings(ask(out, server, capsys)) == []  # nothing changed: nothing said
        change_and_delete(corpus)
        said = warnings(ask(out, server, capsys))
    assert said == [
        "selfrag: warning: the index is out of date: changed on disk since indexing: fees.md; vanished: late.md; "
        f"update it: selfrag index {corpus} --out {out}"
    ]


def test_reindexing_updates_incrementally_and_the_warning_goes(indexed, capsys) -> None:
    corpus, out = indexed
    change_and_delete(corpus)
    report = index_paths([corpus], out, chunking=WORDS)
    assert (report.files_changed, report.files_deleted, report.files_reused) == (1, 1, 1)
    with FakeOpenAIServer() as server:
        assert warnings(ask(out, server, capsys)) == []


def test_chat_warns_once_at_start(indexed, capsys, monkeypatch) -> None:
    corpus, out = indexed
    change_and_delete(corpus)
    monkeypatch.setattr(sys, "stdin", io.StringIO("How much is a day pass?\nAnd a helmet?\n/exit\n"))
    with FakeOpenAIServer() as server:
        assert main(["chat", "--index", str(out), "--base-url", server.base_url, "--no-history"]) == 0
    said = warnings(capsys.readouterr().err)
    assert len(said) == 1 and "changed on disk since indexing: fees.md; vanished: late.md" in said[0]


def test_doctor_names_each_changed_vanished_and_touched_file(indexed, capsys) -> None:
    corpus, out = indexed
    change_and_delete(corpus)
    os.utime(corpus / "helmets.md", (2e9, 2e9))  # a new mtime over the same bytes
    with FakeOpenAIServer() as server:
        code = main(["doctor", "--index", str(out), "--base-url", server.base_url])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0  # out of date is a warning: the index itself is sound
    files = [line for line in lines if line.split()[1] in ("files", "changed", "vanished", "touched")]
    assert files == [
        "warn files        2 of 3 indexed files differ from the index (1 changed, 1 vanished); 1 touched with the same "
        f"bytes  (hint: update it: selfrag index {corpus} --out {out})",
        "warn changed      fees.md: its bytes differ from the indexed ones: answers may quote the old text",
        "warn vanished     late.md: gone from disk: answers may still quote it",
        "warn touched      helmets.md: a new mtime over the same bytes: no answer changes; ask warns until reindexed",
    ]
    index_paths([corpus], out, chunking=WORDS)
    with FakeOpenAIServer() as server:
        main(["doctor", "--index", str(out), "--base-url", server.base_url])
    fresh = [line for line in capsys.readouterr().out.splitlines() if line.split()[1] == "files"]
    assert fresh == ["ok   files        the 2 indexed files are as they were indexed (size and mtime)"]


def test_the_check_stats_and_reads_only_on_demand(indexed) -> None:
    corpus, out = indexed
    recorded = load_sources(out)
    assert recorded is not None and [f.key for f in recorded.files] == sorted(DOCS)
    forged = Sources(recorded.roots, tuple(Recorded(f.key, f.size, f.mtime_ns, "0" * 64) for f in recorded.files))
    assert not stale(forged)  # same size and mtime: no file was read, so the wrong hashes went unseen
    os.utime(corpus / "fees.md", (2e9, 2e9))
    assert stale(forged).changed == ("fees.md",)
    assert stale(recorded, hashes=True).touched == ("fees.md",) and not stale(recorded, hashes=True)
    assert stale(forged, hashes=True).changed == ("fees.md",)  # read on demand: the bytes are not the recorded ones


def test_several_indexed_paths_and_a_single_file_are_found_again(tmp_path: Path) -> None:
    a, b, out = tmp_path / "a", tmp_path / "b", tmp_path / "index"
    write(a / "x.md", "# X\n\nOne.")
    write(b / "y.md", "# Y\n\nTwo.")
    index_paths([a, b / "y.md"], out, chunking=WORDS)
    body = json.loads(open_current(out).read(SOURCES))
    assert body["roots"] == {"a/": str(a), "y.md/": str(b)} and body["indexed"] == [str(a), str(b / "y.md")]
    assert not stale(load_sources(out))
    os.remove(b / "y.md")
    assert stale(load_sources(out)).vanished == ("y.md/y.md",)


def test_an_index_built_before_the_record_is_not_checked(indexed, capsys) -> None:
    from selfrag.retrieval.index import Index

    _, out = indexed
    old = out.parent / "old-index"
    Index.load(out).save(old)  # no catalog, no sources.json: what an older selfrag wrote
    assert load_sources(old) is None
    with FakeOpenAIServer() as server:
        assert warnings(ask(old, server, capsys)) == []
