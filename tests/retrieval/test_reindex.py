"""index_paths: first build, incremental re-indexing, deletions, empty corpora and leftovers of crashes."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from selfrag.errors import InputError
from selfrag.retrieval.chunking import ChunkingSettings
from selfrag.retrieval.index import Index
from selfrag.retrieval.ingest import IndexReport, index_paths

from .helpers import OLD, WORDS


def build(paths: list[Path], out: Path, chunking: ChunkingSettings = WORDS, **kwargs: object) -> IndexReport:
    return index_paths(paths, out, chunking=chunking, **kwargs)  # type: ignore[arg-type]


def counters(report: IndexReport) -> dict[str, int]:
    names = ("files_seen", "files_read", "files_reused", "files_added", "files_changed", "files_deleted")
    return {name: getattr(report, name) for name in names}


@pytest.fixture
def docs(put: Callable[..., Path], tmp_path: Path) -> Path:
    put("docs/returns.md", "# Returns\n\nReturns are accepted within 30 days. Keep the receipt.")
    put("docs/shipping.txt", "Shipping takes five business days. Express shipping costs extra.")
    put("docs/faq/warranty.html", "<title>Warranty</title><p>The warranty lasts two years.</p>")
    put("docs/news.jsonl", '{"id": "n1", "text": "The store opens a new branch in Oslo.", "date": "2026-04-01"}\n')
    return tmp_path / "docs"


def test_first_build_reads_everything(docs: Path, tmp_path: Path) -> None:
    seen: list[tuple[int, int, str]] = []
    report = build([docs], tmp_path / "idx", progress=lambda *args: seen.append(args))
    assert counters(report) == dict(files_seen=4, files_read=4, files_reused=0, files_added=4, files_changed=0,
                                    files_deleted=0)  # fmt: skip
    assert (report.documents, report.full_rebuild) == (4, None)
    assert seen[:4] == [(1, 4, "news.jsonl"), (2, 4, "returns.md"), (3, 4, "shipping.txt"), (4, 4, "faq/warranty.html")]
    assert seen[4] == (0, 1, "building the BM25 index") and seen[5][:2] == (1, 1)
    index = Index.load(tmp_path / "idx")
    assert index.find_relevant_chunks("warranty years", 1)[0].chunk.doc_id == "faq/warranty.html"
    assert index.get_chunk("n1", 0).date == "2026-04-01"


def test_reindex_rereads_only_changed_files(docs: Path, tmp_path: Path, put: Callable[..., Path]) -> None:
    out = tmp_path / "idx"
    build([docs], out)
    put("docs/shipping.txt", "Shipping now takes two business days.", mtime=OLD + 10)  # changed
    put("docs/new.md", "Gift cards never expire.")  # added
    os.utime(docs / "returns.md", (OLD + 20, OLD + 20))  # touched, same bytes

    report = build([docs], out)

    assert counters(report) == dict(files_seen=5, files_read=3, files_reused=3, files_added=1, files_changed=1,
                                    files_deleted=0)  # fmt: skip
    index = Index.load(out)
    assert index.find_relevant_chunks("gift cards", 1)[0].chunk.doc_id == "new.md"
    assert "two business days" in index.get_chunk("shipping.txt", 0).text

    again = build([docs], out)  # nothing changed: nothing is read
    assert counters(again) == dict(files_seen=5, files_read=0, files_reused=5, files_added=0, files_changed=0,
                                   files_deleted=0)  # fmt: skip
    assert list(Index.load(out).loop_over_chunks()) == list(index.loop_over_chunks())


def test_recently_modified_files_are_reread_even_with_equal_size_and_mtime(docs: Path, tmp_path: Path) -> None:
    os.utime(docs / "returns.md")  # modified "now": within the racy window of the scan
    build([docs], tmp_path / "idx")
    report = build([docs], tmp_path / "idx")
    assert (report.files_read, report.files_reused) == (1, 4)


def test_deleted_file_leaves_the_index(docs: Path, tmp_path: Path) -> None:
    out = tmp_path / "idx"
    build([docs], out)
    (docs / "shipping.txt").unlink()
    shutil.rmtree(docs / "faq")
    report = build([docs], out)
    assert (report.files_deleted, report.files_read) == (2, 0)
    index = Index.load(out)
    assert index.find_relevant_chunks("shipping express", 5) == []
    assert {c.doc_id for c in index.loop_over_chunks()} == {"returns.md", "n1"}


def test_duplicate_copies_collapse_to_the_newest(put: Callable[..., Path], tmp_path: Path) -> None:
    put("kb/policies.jsonl", "\n".join([
        '{"id": "p2024", "text": "Refunds are issued within 14 days.", "date": "2024-02-01"}',
        '{"id": "copy", "text": "refunds are issued within 14 days", "date": "2023-01-01"}',
        '{"id": "p2026", "text": "Refunds are issued within 30 days.", "date": "2026-04-01"}',
    ]))  # fmt: skip
    report = build([tmp_path / "kb"], tmp_path / "idx")
    assert (report.chunks, report.duplicates) == (2, 1)
    assert {c.doc_id for c in Index.load(tmp_path / "idx").loop_over_chunks()} == {"p2024", "p2026"}


def test_empty_folder_is_an_input_error_and_keeps_the_previous_index(docs: Path, tmp_path: Path) -> None:
    out = tmp_path / "idx"
    build([docs], out)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="nothing to index"):
        build([empty], out)
    (empty / "blank.txt").write_text("   \n")
    with pytest.raises(InputError, match="nothing to index"):
        build([empty], out)
    assert len(Index.load(out)) == 4


def test_changed_chunking_rebuilds_from_scratch(docs: Path, tmp_path: Path) -> None:
    build([docs], tmp_path / "idx")
    report = build([docs], tmp_path / "idx", chunking=ChunkingSettings(mode="document", tokenizer="whitespace"))
    assert report.full_rebuild == "the chunking settings changed"
    assert (report.files_read, report.files_added) == (4, 4)


def test_damaged_previous_index_means_full_rebuild(docs: Path, tmp_path: Path) -> None:
    out = tmp_path / "idx"
    build([docs], out)
    (out / "CURRENT").write_text("garbage\n")
    report = build([docs], out)
    assert report.full_rebuild and "could not be reused" in report.full_rebuild
    assert report.files_read == 4 and len(Index.load(out)) == 4


def test_output_folder_inside_the_corpus_is_not_indexed(docs: Path) -> None:
    out = docs / "index"
    build([docs], out)
    report = build([docs], out)
    assert report.files_seen == 4 and not any(s.path.startswith("index") for s in report.skipped)


def test_several_roots_prefix_ids_and_conflicting_ids_are_refused(put: Callable[..., Path], tmp_path: Path) -> None:
    put("a/notes.md", "Alpha notes about apples.")
    put("b/notes.md", "Beta notes about bananas.")
    report = build([tmp_path / "a", tmp_path / "b"], tmp_path / "idx")
    assert report.documents == 2
    assert {c.doc_id for c in Index.load(tmp_path / "idx").loop_over_chunks()} == {"a/notes.md", "b/notes.md"}
    put("a/x.jsonl", '{"id": "same", "text": "one"}')
    put("b/y.jsonl", '{"id": "same", "text": "two"}')
    with pytest.raises(InputError, match="'same' appears in both a/x.jsonl and b/y.jsonl"):
        build([tmp_path / "a", tmp_path / "b"], tmp_path / "idx")


def test_leftovers_of_a_killed_save_are_ignored_then_cleaned(docs: Path, tmp_path: Path) -> None:
    out = tmp_path / "idx"
    build([docs], out)
    (out / ".tmp-deadbeef0000").mkdir()  # killed while writing files
    (out / ".tmp-deadbeef0000" / "chunks.jsonl").write_text("partial")
    (out / "gen-000099-0123456789ab").mkdir()  # killed after the rename, before CURRENT moved
    assert len(Index.load(out)) == 4
    build([docs], out)
    assert sorted(p.name for p in out.iterdir() if p.name not in ("CURRENT", "LOCK")) == [
        (out / "CURRENT").read_text().split()[0]
    ]
