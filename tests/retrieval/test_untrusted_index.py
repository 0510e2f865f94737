"""An index folder from somewhere else: deep or oversized JSON, forged sizes and file names in a manifest
whose checksums all match. Every case is refused with the rebuild hint (or, for the file catalog, not reused),
never a RecursionError, MemoryError or a read outside the generation folder."""

from __future__ import annotations

import hashlib
import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from factories import forge, generation_of, sign

from selfrag.errors import InputError, RetrievalError
from selfrag.retrieval.chunking import ChunkingSettings
from selfrag.retrieval.dense import MAX_META_BYTES, META, DenseVectors, previous_vectors
from selfrag.retrieval.index import Index
from selfrag.retrieval.ingest import CATALOG, MAX_CATALOG_BYTES, index_paths
from selfrag.retrieval.store import MAX_JSON_BYTES, MAX_MANIFEST_BYTES

from .helpers import write

REBUILD = r"rebuild it with: selfrag index PATH --out"
DEEP = b"[" * 200_000 + b"]" * 200_000  # valid JSON, nested far deeper than the json module can parse
DEEP_SMALL = b"[" * 20_000 + b"]" * 20_000  # as deep, but under the 64 KiB cap of dense.json
MODEL = "test-embed"


@pytest.fixture
def dense_saved(tmp_path: Path, pet_index: Index) -> Path:
    """A saved index with dense vectors, so dense.json is there to tamper with."""
    rows = np.random.default_rng(0).random((len(pet_index), 4), dtype=np.float32) + 0.1
    vectors = DenseVectors(MODEL, rows / np.linalg.norm(rows, axis=1, keepdims=True))
    pet_index.save(tmp_path / "idx", extra=vectors.files())
    return tmp_path / "idx"


def load_everything(out: Path) -> None:
    index = Index.load(out)
    DenseVectors.load(out, index)


def peak_mib(call: Callable[[], object]) -> float:
    tracemalloc.start()
    try:
        call()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak / 2**20


# deep JSON -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("stemmed.vocab.json", DEEP, "stemmed matrix cannot be read"),
        (META, DEEP_SMALL, "dense vectors cannot be read"),
        (META, b'{"format": 1, "model": ' + DEEP_SMALL + b"}", "dense vectors cannot be read"),
        ("chunks.jsonl", b'{"doc_id": ' + DEEP + b"}\n", "chunks.jsonl is malformed"),
    ],
    ids=["vocabulary", "dense.json", "dense.json-field", "chunks.jsonl"],
)
def test_deep_json_in_a_listed_file_is_refused_with_the_rebuild_hint(
    dense_saved: Path, name: str, data: bytes, message: str
) -> None:
    forge(dense_saved, name, data)
    with pytest.raises(RetrievalError, match=f"{message}.*{REBUILD}"):
        load_everything(dense_saved)


@pytest.mark.parametrize("body", [DEEP, b'{"format": "selfrag-index", "files": ' + DEEP + b"}"], ids=["array", "field"])
def test_a_deep_manifest_is_refused_with_the_rebuild_hint(dense_saved: Path, body: bytes) -> None:
    (generation_of(dense_saved) / "manifest.json").write_bytes(body)
    (dense_saved / "CURRENT").write_text(f"{generation_of(dense_saved).name} {hashlib.sha256(body).hexdigest()}\n")
    with pytest.raises(RetrievalError, match=f"manifest is not valid JSON.*{REBUILD}"):
        Index.load(dense_saved)


def test_deep_chunks_in_the_previous_index_are_not_reused_for_embedding(dense_saved: Path) -> None:
    assert len(previous_vectors(dense_saved, MODEL)) == 6
    forge(dense_saved, "chunks.jsonl", b'{"doc_id": ' + DEEP + b"}\n")
    assert previous_vectors(dense_saved, MODEL) == {}  # every chunk is embedded again, nothing crashes


# oversized JSON and forged sizes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "size"), [("stemmed.vocab.json", MAX_JSON_BYTES + 1), (META, MAX_META_BYTES + 1)], ids=["vocab", "dense"]
)
def test_an_oversized_json_file_is_refused_before_it_is_read(dense_saved: Path, name: str, size: int) -> None:
    forge(dense_saved, name, size=size)

    def load() -> None:
        with pytest.raises(RetrievalError, match=f"{name} is larger than the .* a valid one can be.*{REBUILD}"):
            load_everything(dense_saved)

    assert peak_mib(load) < 16  # a read of the oversized file would show here


def test_json_files_at_their_cap_are_read(dense_saved: Path) -> None:
    meta = json.loads((generation_of(dense_saved) / META).read_bytes())
    forge(dense_saved, META, json.dumps(meta).encode().ljust(MAX_META_BYTES))  # JSON may end in whitespace
    load_everything(dense_saved)


def test_an_oversized_manifest_is_refused_before_it_is_read(dense_saved: Path) -> None:
    with open(generation_of(dense_saved) / "manifest.json", "wb") as handle:
        handle.truncate(MAX_MANIFEST_BYTES + 1)
    (dense_saved / "CURRENT").write_text(f"{generation_of(dense_saved).name} {'0' * 64}\n")
    error: list[RetrievalError] = []

    def load() -> None:
        with pytest.raises(RetrievalError) as caught:
            Index.load(dense_saved)
        error.append(caught.value)

    assert peak_mib(load) < 16  # a read of the 256 MiB would show here
    assert "manifest.json is larger than 256 MiB" in str(error[0]) and "rebuild it with" in str(error[0])


@pytest.mark.parametrize("name", ["stemmed.data.npy", "chunks.jsonl"])
def test_a_forged_huge_size_is_refused_without_allocating_it(dense_saved: Path, name: str) -> None:
    manifest = json.loads((generation_of(dense_saved) / "manifest.json").read_text())
    manifest["files"][name]["size"] = 2**40  # reading size + 1 bytes would ask for a terabyte
    sign(dense_saved, manifest)
    with pytest.raises(RetrievalError, match=f"{name} does not match its checksum.*{REBUILD}"):
        Index.load(dense_saved)


# file names in the manifest ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["../x", "../../etc/passwd", "/etc/passwd", "a/b.json", "..", ".", "chunks.jsonl\n", "a\x00b", "", "x" * 65],
)
def test_manifest_file_names_must_be_plain_names(dense_saved: Path, name: str) -> None:
    manifest = json.loads((generation_of(dense_saved) / "manifest.json").read_text())
    manifest["files"][name] = manifest["files"]["chunks.jsonl"]
    sign(dense_saved, manifest)
    with pytest.raises(RetrievalError, match=f"file table is malformed.*{REBUILD}"):
        Index.load(dense_saved)


@pytest.mark.parametrize("size", [-1, 1.5, True, "12"])
def test_manifest_sizes_must_be_natural_numbers(dense_saved: Path, size: object) -> None:
    manifest = json.loads((generation_of(dense_saved) / "manifest.json").read_text())
    manifest["files"]["chunks.jsonl"]["size"] = size
    sign(dense_saved, manifest)
    with pytest.raises(RetrievalError, match=f"file table is malformed.*{REBUILD}"):
        Index.load(dense_saved)


# the file catalog ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "damage",
    [DEEP, b'{"catalog": 1, "scanned_ns": 1}\n{"key": ' + DEEP + b"}\n", b"not json\n", MAX_CATALOG_BYTES + 1],
    ids=["deep-header", "deep-record", "malformed", "oversized"],
)
def test_an_unreadable_catalog_is_not_reused_and_every_file_is_read_again(
    tmp_path: Path, words: ChunkingSettings, damage: bytes | int
) -> None:
    docs = tmp_path / "docs"
    for name in ("a.txt", "b.txt", "c.txt"):
        write(docs / name, f"Document {name} talks about its own topic at some length.")
    out = tmp_path / "idx"
    index_paths([docs], out, chunking=words)
    assert index_paths([docs], out, chunking=words).files_read == 0  # the catalog works when intact
    if isinstance(damage, int):
        forge(out, CATALOG, size=damage)
    else:
        forge(out, CATALOG, damage)
    report = index_paths([docs], out, chunking=words)
    assert report.full_rebuild is not None and "could not be reused" in report.full_rebuild
    assert isinstance(damage, bytes) or f"{CATALOG} is larger than" in report.full_rebuild  # refused unread
    assert report.files_read == 3 and report.chunks == 3
    assert len(Index.load(out)) == 3


# paths holding a NUL byte ------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["out", "source", "load"])
def test_a_nul_byte_in_a_path_is_an_input_error_not_a_value_error(
    tmp_path: Path, words: ChunkingSettings, where: str
) -> None:
    docs = tmp_path / "docs"
    write(docs / "a.txt", "Some words to index.")
    with pytest.raises(InputError, match="NUL byte"):
        if where == "out":
            index_paths([docs], tmp_path / "o\x00x", chunking=words)
        elif where == "source":
            index_paths([tmp_path / "do\x00cs"], tmp_path / "idx", chunking=words)
        else:
            Index.load(tmp_path / "i\x00dx")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs"]
