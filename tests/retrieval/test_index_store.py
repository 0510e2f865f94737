"""The BM25 index: searching edge cases, save/load round trip, crash safety, and refusing bad indexes."""

from __future__ import annotations

import errno
import io
import json
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from factories import forge, generation_of
from hypothesis import given, settings
from hypothesis import strategies as st

from selfrag.errors import ConfigError, InputError, RetrievalError
from selfrag.retrieval.index import Index, IndexSettings
from selfrag.retrieval.store import FileOps
from selfrag.schema import Chunk

from .helpers import chunk

REBUILD = r"rebuild it with: selfrag index PATH --out"


# searching -----------------------------------------------------------------------------------------------


def test_finds_the_relevant_chunk_first(pet_index: Index) -> None:
    hits = pet_index.find_relevant_chunks("Why do cats purr?", 3)
    assert hits[0].chunk.key == "cats#1"
    assert all(a.score >= b.score > 0 for a, b in pairwise(hits))


def test_k_larger_than_the_corpus_is_clamped(pet_index: Index) -> None:
    hits = pet_index.find_relevant_chunks("cat dog goldfish kittens", 1000)
    assert 0 < len(hits) <= len(pet_index) == 6


@pytest.mark.parametrize("query", ["", "   ", "the of and is it", "a b c ? !", "zebra quokka"])
def test_empty_stopword_only_and_unknown_queries_find_nothing(pet_index: Index, query: str) -> None:
    assert pet_index.find_relevant_chunks(query, 5) == []


def test_zero_score_chunks_are_dropped(pet_index: Index) -> None:
    hits = pet_index.find_relevant_chunks("goldfish", 6)
    assert [h.chunk.key for h in hits] == ["fish#0"]


def test_ties_are_ordered_by_chunk_position() -> None:
    same = [chunk(f"d{i}", 0, "identical words about tides") for i in (3, 1, 2)]
    index = Index.build(same)
    assert [h.chunk.doc_id for h in index.find_relevant_chunks("tides", 3)] == ["d3", "d1", "d2"]
    assert [h.chunk.doc_id for h in index.find_relevant_chunks("tides", 2)] == ["d3", "d1"]


TEMPLATES = ["tides", "tides and moons", "tides tides", "moons", "sand", "tides of sand"]


@settings(max_examples=60, deadline=None, database=None)
@given(picks=st.lists(st.sampled_from(TEMPLATES), min_size=2, max_size=60), k=st.integers(1, 60))
def test_cut_at_k_is_the_prefix_of_the_full_ranking(picks: list[str], k: int) -> None:
    """Many exact ties: the top k must be the first k of the full ranking (ties by chunk position)."""
    index = Index.build([chunk(f"d{i:02d}", 0, text) for i, text in enumerate(picks)])
    full = index.find_relevant_chunks("tides", len(picks))
    assert [h.chunk.doc_id for h in full] == sorted((h.chunk.doc_id for h in full), key=lambda d: (
        -next(h.score for h in full if h.chunk.doc_id == d), d))  # fmt: skip
    assert index.find_relevant_chunks("tides", k) == full[:k]


def test_ties_straddling_the_cut_keep_the_earliest_chunks() -> None:
    # A layout where numpy's partition alone would pick later rows among the tied ones at the cut.
    levels = "211000032322322223132013203230030201111000022212311"
    text = {"3": "tides tides", "2": "tides", "1": "tides and moons", "0": "sand"}
    index = Index.build([chunk(f"d{i:02d}", 0, text[level]) for i, level in enumerate(levels)])
    full = index.find_relevant_chunks("tides", 51)
    assert index.find_relevant_chunks("tides", 32) == full[:32]


def test_batch_search_equals_single_searches(pet_index: Index) -> None:
    queries = ["cats at dusk", "", "dog walks", "the", "kittens eyes days"]
    assert pet_index.find_many(queries, 4) == [pet_index.find_relevant_chunks(q, 4) for q in queries]


def test_title_is_indexed_with_the_text() -> None:
    chunks = [chunk("a", 0, "It rains a lot.", title="Weather in Bergen"), chunk("b", 0, "Bergen has fjords.")]
    with_title = Index.build(chunks)
    without = Index.build(chunks, IndexSettings(include_title=False))
    assert [h.chunk.doc_id for h in with_title.find_relevant_chunks("weather", 2)] == ["a"]
    assert without.find_relevant_chunks("weather", 2) == []


def test_chunk_access(pet_index: Index, pets: list[Chunk]) -> None:
    assert pet_index.get_chunk("dogs", 1) == pets[4]
    assert list(pet_index.loop_over_chunks()) == pets
    assert pet_index.chunks_of("cats") == tuple(pets[:3])
    with pytest.raises(InputError, match="no chunk dogs#9"):
        pet_index.get_chunk("dogs", 9)


def test_unknown_view_and_empty_inputs_are_refused() -> None:
    index = Index.build([chunk("a", 0, "some words")])
    with pytest.raises(ConfigError, match="unstemmed_view"):
        index.find_many(["words"], 1, view="plain")
    with pytest.raises(RetrievalError, match="nothing to index"):
        Index.build([])
    with pytest.raises(RetrievalError, match="nothing to index"):
        Index.build([chunk("a", 0, "a the of")])
    with pytest.raises(InputError, match="unique id"):
        Index.build([chunk("a", 0, "one"), chunk("a", 0, "two")])


# persistence ----------------------------------------------------------------------------------------------


def test_save_load_round_trip(tmp_path: Path, pet_index: Index) -> None:
    pet_index.save(tmp_path / "idx")
    loaded = Index.load(tmp_path / "idx")
    assert list(loaded.loop_over_chunks()) == list(pet_index.loop_over_chunks())
    assert loaded.settings == pet_index.settings
    queries = ["cats purr", "dogs bark at strangers", "memory of goldfish", "the"]
    for view in ("stemmed", "plain"):
        assert loaded.find_many(queries, 5, view=view) == pet_index.find_many(queries, 5, view=view)
    mapped = Index.load(tmp_path / "idx", mmap=True)
    assert mapped.find_many(queries, 5) == pet_index.find_many(queries, 5)


def test_files_are_json_and_npy_only(tmp_path: Path, pet_index: Index) -> None:
    generation = pet_index.save(tmp_path / "idx")
    names = sorted(p.name for p in generation.iterdir())
    assert all(n.endswith((".json", ".jsonl", ".npy")) for n in names)
    manifest = json.loads((generation / "manifest.json").read_text())
    assert manifest["counts"]["chunks"] == 6 and manifest["counts"]["documents"] == 3
    assert [d[:2] for d in manifest["documents"]] == [["cats", 3], ["dogs", 2], ["fish", 1]]
    assert set(manifest["files"]) == set(names) - {"manifest.json"}
    assert manifest["settings"]["k1"] == 1.5 and manifest["bm25s_version"]


def test_old_generations_are_pruned_after_a_good_save(tmp_path: Path, pet_index: Index) -> None:
    first = pet_index.save(tmp_path / "idx")
    second = pet_index.save(tmp_path / "idx")
    assert not first.exists() and second.exists()
    assert sorted(p.name for p in (tmp_path / "idx").iterdir()) == ["CURRENT", "LOCK", second.name]


def failing(name: str, after: int = 0):  # type: ignore[no-untyped-def]
    """A FileOps whose `name` call raises ENOSPC after `after` successful calls."""
    calls = {"n": 0}
    real = getattr(FileOps(), name)

    def call(*args):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] > after:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args)

    return replace(FileOps(), **{name: call})


@pytest.mark.parametrize(
    "ops",
    [failing("replace"), failing("rename"), failing("fsync", after=3), failing("write", after=2)],
    ids=["replace-CURRENT", "rename-generation", "fsync", "write"],
)
def test_a_crash_during_save_leaves_the_old_index_loadable(tmp_path: Path, pet_index: Index, ops: FileOps) -> None:
    out = tmp_path / "idx"
    pet_index.save(out)
    before = sorted(p.name for p in out.iterdir())
    bigger = Index.build([*pet_index.loop_over_chunks(), chunk("owls", 0, "Owls hunt at night.")])
    with pytest.raises(RetrievalError, match="previous index is untouched"):
        bigger.save(out, ops=ops)
    assert sorted(p.name for p in out.iterdir()) == before  # temp folders and half generations cleaned up
    reloaded = Index.load(out)
    assert len(reloaded) == 6 and reloaded.find_relevant_chunks("owls", 3) == []
    bigger.save(out)  # and the next save works
    assert len(Index.load(out)) == 7


def test_a_failed_sync_after_the_switch_reports_an_updated_index(tmp_path: Path, pet_index: Index) -> None:
    switched = {"done": False}

    def replace_then_remember(src: str, dst: str) -> None:
        FileOps().replace(src, dst)
        switched["done"] = True

    def fsync(fd: int) -> None:
        if switched["done"]:
            raise OSError(errno.EIO, "Input/output error")
        FileOps().fsync(fd)

    out = tmp_path / "idx"
    pet_index.save(out)
    bigger = Index.build([*pet_index.loop_over_chunks(), chunk("owls", 0, "Owls hunt at night.")])
    with pytest.raises(RetrievalError, match="was updated but not synced"):
        bigger.save(out, ops=FileOps(replace=replace_then_remember, fsync=fsync))
    assert len(Index.load(out)) == 7


def test_missing_index_says_how_to_build(tmp_path: Path) -> None:
    with pytest.raises(RetrievalError, match=r"no index at .*build one with: selfrag index PATH --out"):
        Index.load(tmp_path / "nowhere")


@pytest.fixture
def saved(tmp_path: Path, pet_index: Index) -> Path:
    pet_index.save(tmp_path / "idx")
    return tmp_path / "idx"


def test_corrupt_file_is_refused(saved: Path) -> None:
    path = generation_of(saved) / "stemmed.data.npy"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(RetrievalError, match=r"stemmed.data.npy does not match its checksum.*" + REBUILD):
        Index.load(saved)


@pytest.mark.parametrize("name", ["chunks.jsonl", "plain.indptr.npy", "stemmed.vocab.json"])
def test_truncated_or_deleted_files_are_refused(saved: Path, name: str) -> None:
    path = generation_of(saved) / name
    path.write_bytes(path.read_bytes()[:10])
    with pytest.raises(RetrievalError, match=REBUILD):
        Index.load(saved)
    path.unlink()
    with pytest.raises(RetrievalError, match=REBUILD):
        Index.load(saved)


def test_edited_manifest_is_refused(saved: Path) -> None:
    path = generation_of(saved) / "manifest.json"
    edited = path.read_text().replace('"k1":1.5', '"k1":1.2')
    assert edited != path.read_text()
    path.write_text(edited)
    with pytest.raises(RetrievalError, match=r"manifest.json was modified.*" + REBUILD):
        Index.load(saved)


def test_damaged_current_pointer_is_refused(saved: Path) -> None:
    (saved / "CURRENT").write_text("../../etc deadbeef\n")
    with pytest.raises(RetrievalError, match=r"CURRENT file is damaged.*" + REBUILD):
        Index.load(saved)


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def test_older_format_is_refused(saved: Path) -> None:
    forge(saved, "manifest.json", format_version=0)
    with pytest.raises(RetrievalError, match=r"uses an older format \(version 0.*" + REBUILD):
        Index.load(saved)


def test_settings_mismatch_is_refused(saved: Path) -> None:
    with pytest.raises(RetrievalError, match=r"k1=1.5 on disk, 1.2 asked.*" + REBUILD):
        Index.load(saved, settings=IndexSettings(k1=1.2, unstemmed_view=True))
    forge(saved, "manifest.json", settings={"k1": 1.5, "tokenizer": "mystery"})
    with pytest.raises(RetrievalError, match=r"settings this selfrag does not understand.*" + REBUILD):
        Index.load(saved)


def test_pickled_object_arrays_are_refused_even_with_valid_checksums(saved: Path) -> None:
    forge(saved, "stemmed.data.npy", npy(np.array([{"boom": 1}], dtype=object)))
    with pytest.raises(RetrievalError, match=r"stemmed matrix cannot be read.*" + REBUILD):
        Index.load(saved)


@pytest.mark.parametrize(
    ("name", "array", "problem"),
    [
        ("stemmed.indices.npy", "out_of_range", "points past the last chunk"),
        ("stemmed.indptr.npy", "decreasing", "pointer array"),
        ("stemmed.data.npy", "nan", "non-finite"),
    ],
)
def test_inconsistent_matrices_are_refused(saved: Path, name: str, array: str, problem: str) -> None:
    folder = generation_of(saved)
    original = np.load(folder / name)
    if array == "out_of_range":
        changed = original.copy()
        changed[0] = 10_000
    elif array == "decreasing":
        changed = original.copy()
        changed[1], changed[2] = changed[2], changed[1] - 1
    else:
        changed = original.copy()
        changed[0] = np.nan
    forge(saved, name, npy(changed))
    with pytest.raises(RetrievalError, match=problem):
        Index.load(saved)


def test_chunk_count_mismatch_is_refused(saved: Path) -> None:
    lines = (generation_of(saved) / "chunks.jsonl").read_bytes().splitlines(keepends=True)
    forge(saved, "chunks.jsonl", b"".join(lines[:-1]))
    with pytest.raises(RetrievalError, match="chunk count"):
        Index.load(saved)


def test_concurrent_save_is_refused_while_locked(saved: Path, pet_index: Index) -> None:
    import fcntl
    import os

    fd = os.open(saved / "LOCK", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(RetrievalError, match="another process is writing"):
            pet_index.save(saved)
    finally:
        os.close(fd)
    assert len(Index.load(saved)) == 6


def test_selfrag_index_is_refused_while_another_process_writes_the_same_index(
    saved: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import subprocess
    import sys

    from selfrag.cli import main

    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(saved / "LOCK")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        corpus = tmp_path / "docs"
        corpus.mkdir()
        (corpus / "a.md").write_text("A second writer must wait its turn.")
        assert main(["index", str(corpus), "--out", str(saved), "--quiet"]) == 1
        err = capsys.readouterr().err
        assert "another process is writing" in err and err.count("\n") == 1
    finally:
        holder.kill()
        holder.communicate()
    assert len(Index.load(saved)) == 6  # the index the other process guards is untouched


HOLD_LOCK = """
import fcntl, sys, time
lock = open(sys.argv[1], "a")
fcntl.flock(lock, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(60)
"""
