"""Incremental ingestion: folders and files to chunks, reusing the chunks of files that did not change.

The file catalog (`catalog.jsonl`, stored inside each index generation) holds, per source file, its key
(path relative to its root, prefixed with the root's folder name when several paths are indexed), size,
mtime, sha256, encoding and the chunk texts of its documents before duplicate collapse. On the next run:

- same size and mtime as recorded, and the mtime older than the previous scan by `RACY_NS` → reused unread;
- otherwise the file is read and hashed: same hash → reused (only size/mtime updated); new → chunked;
- a recorded file that is gone (or now skipped) leaves the index.

The racy rule (git's "racily clean" entries) catches a file rewritten in the same second it was indexed with
the same size. The catalog is only reused with the same chunking settings, and only when it can be read: one
that is malformed, nested too deep or larger than `MAX_CATALOG_BYTES` is not reused, every file is read again
(a rebuild from scratch) and the report says why. Duplicate collapse runs over the
whole corpus every time, so deleting the newest copy of a passage brings back an older one.

Each generation also records the indexed files' sizes, mtimes and hashes and the folders they were read from
(`sources.json`), so `ask` and `doctor` can tell when files changed on disk since (staleness.py).

Versions (supersession.py) are linked over the whole corpus every time too, from per-document facts (date,
"replaces" claims, sketch) kept in `versions.json` and reused for files whose hash did not change, as of the
day of indexing (read once, in `index_paths`, or passed in). A date read from the text (an `Updated:` line,
the title, the file name) becomes the chunks' date when the format gave none.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from ..config import supersede_folders
from ..errors import InputError, RetrievalError
from ..schema import Chunk
from ..tokens import TokenOffsets, make_counter
from .chunking import ChunkingSettings, collapse_duplicates, split_text
from .corpus import FileEntry, FileRead, ReadLimits, Skipped, read_entry, scan
from .index import Index, IndexSettings
from .staleness import SOURCES, Recorded, Sources, sources_of
from .store import CURRENT, FileOps, checked_folder, open_current
from .supersession import MAX_VERSIONS_BYTES, VERSIONS, Table, known_facts, link
from .versions import Facts, facts

CATALOG = "catalog.jsonl"
CATALOG_VERSION = 1
MAX_CATALOG_BYTES = 8 * 2**30  # it holds every chunk text of a corpus of up to 2 GiB (ReadLimits), JSON-escaped
RACY_NS = 2_000_000_000


ProgressFn = Callable[[int, int, str], None]  # progress(done, total, label): label is a file key or a stage


@dataclass(frozen=True, slots=True)
class DocRecord:
    doc_id: str
    title: str
    source: str
    date: str | None
    chunks: tuple[str, ...]  # chunk texts in order; chunk id = position


@dataclass(frozen=True, slots=True)
class FileRecord:
    key: str
    size: int
    mtime_ns: int
    sha256: str
    encoding: str
    documents: tuple[DocRecord, ...]


@dataclass(frozen=True, slots=True)
class Catalog:
    scanned_ns: int  # wall-clock time the scan that produced it started
    files: Mapping[str, FileRecord]

    def to_bytes(self) -> bytes:
        lines = [json.dumps({"catalog": CATALOG_VERSION, "scanned_ns": self.scanned_ns})]
        lines += [json.dumps(asdict(record), ensure_ascii=False) for record in self.files.values()]
        return ("\n".join(lines) + "\n").encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes) -> Catalog:
        """Parse a catalog; ValueError if it is malformed (the caller then rebuilds from scratch)."""
        try:
            header, *rows = data.decode("utf-8").splitlines()
            head = json.loads(header)
            if head.get("catalog") != CATALOG_VERSION:
                raise ValueError("unknown catalog version")
            records = [_file_record(json.loads(row)) for row in rows]
            return cls(int(head["scanned_ns"]), {r.key: r for r in records})
        except (UnicodeDecodeError, KeyError, TypeError, AttributeError, RecursionError) as error:
            raise ValueError(f"malformed catalog: {error}") from error


def _file_record(row: dict[str, Any]) -> FileRecord:
    documents = tuple(DocRecord(**{**d, "chunks": tuple(d["chunks"])}) for d in row.pop("documents"))
    record = FileRecord(**row, documents=documents)
    if not all(isinstance(c, str) for d in documents for c in d.chunks):
        raise TypeError("chunk texts must be strings")
    return record


@dataclass(frozen=True, slots=True)
class Tally:
    seen: int = 0
    read: int = 0
    reused: int = 0
    added: int = 0
    changed: int = 0
    deleted: int = 0


@dataclass(frozen=True, slots=True)
class Collected:
    catalog: Catalog
    chunks: tuple[Chunk, ...]
    duplicates: int
    tally: Tally
    skipped: tuple[Skipped, ...]
    versions: Table  # dates read from the text, versions of one topic, what replaces what (supersession.py)


def collect(
    paths: Sequence[str | Path],
    previous: Catalog | None,
    *,
    chunking: ChunkingSettings,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    hidden: bool = False,
    limits: ReadLimits | None = None,
    counter: TokenOffsets | None = None,
    progress: ProgressFn | None = None,
    avoid: Sequence[Path] = (),
    known: Mapping[str, tuple[str, Facts]] | None = None,
    today: dt.date,
    supersede_from: Sequence[str] = (),
) -> Collected:
    """Scan `paths`, reuse or (re)chunk each file, and return the new catalog and the corpus's chunks.
    `known` holds the version facts of the previous run, reused for files whose hash did not change; `today`
    and `supersede_from` are the day of indexing and the folders that may supersede (supersession.link)."""
    scanned_ns = time.time_ns()
    limits = limits or ReadLimits()
    entries, skipped = _scan_all(paths, include, exclude, hidden, limits, avoid)
    run = _Pass(previous, chunking, limits, counter)
    records: dict[str, FileRecord] = {}
    for done, (key, prefix, entry) in enumerate(entries, start=1):
        record = run.record(key, prefix, entry)
        if record is not None:
            records[key] = record
        if progress is not None:
            progress(done, len(entries), key)
    old = previous.files if previous else {}
    tally = Tally(len(entries), deleted=len(set(old) - set(records)), **run.counts)
    versions = _versions(records.values(), known or {}, today, supersede_from)
    chunks = _chunks(records.values(), versions.dates())
    kept = collapse_duplicates(chunks) if chunking.dedupe else chunks
    catalog = Catalog(scanned_ns, records)
    return Collected(catalog, tuple(kept), len(chunks) - len(kept), tally, (*skipped, *run.skipped), versions)


def _versions(
    records: Iterable[FileRecord], known: Mapping[str, tuple[str, Facts]], today: dt.date, supersede_from: Sequence[str]
) -> Table:
    """Version facts of every document (a file whose hash did not change keeps its old facts), linked."""
    found: dict[str, tuple[str, Facts]] = {}
    files: dict[str, str] = {}
    for record in records:
        for d in record.documents:
            files[d.doc_id] = record.key
            old = known.get(d.doc_id)
            if old is not None and old[0] == record.sha256:
                found[d.doc_id] = old
            else:
                found[d.doc_id] = (record.sha256, facts(d.doc_id, d.title, d.date, "\n".join(d.chunks)))
    return link(found, today, supersede_from=supersede_from, files=files)


def _scan_all(
    paths: Sequence[str | Path],
    include: Sequence[str],
    exclude: Sequence[str],
    hidden: bool,
    limits: ReadLimits,
    avoid: Sequence[Path],
) -> tuple[list[tuple[str, str, FileEntry]], list[Skipped]]:
    prefixes = _prefixes(paths)
    entries, skipped = [], []
    for prefix, path in zip(prefixes, paths, strict=True):
        found, missed = scan(path, include=include, exclude=exclude, hidden=hidden, limits=limits, avoid=avoid)
        entries += [(prefix + e.rel, prefix, e) for e in found]
        skipped += [Skipped(prefix + s.path, s.reason) for s in missed]
    return entries, skipped


def _prefixes(paths: Sequence[str | Path]) -> list[str]:
    """The key prefix of each path's files: none for a single path, else the path's folder name and a slash."""
    if not paths:
        raise InputError("no path given; pass at least one folder or file to index")
    prefixes = [""] if len(paths) == 1 else [Path(os.path.realpath(p)).name + "/" for p in paths]
    if len(set(prefixes)) != len(prefixes):
        raise InputError("two of the paths have the same folder name; index them into separate --out folders")
    return prefixes


def _sources(paths: Sequence[str | Path], catalog: Catalog) -> Sources:
    """The indexed files and the folder each path was read from, for the staleness check (staleness.py)."""
    roots = {}
    for prefix, path in zip(_prefixes(paths), paths, strict=True):
        given = os.path.abspath(path)  # as given: a file's key is its name, whatever a link points to
        roots[prefix] = given if os.path.isdir(given) else os.path.dirname(given)
    files = [Recorded(r.key, r.size, r.mtime_ns, r.sha256) for r in catalog.files.values()]
    return sources_of(roots, files, [os.path.abspath(p) for p in paths])


class _Pass:
    """One indexing pass: per file, reuse the old record, re-read it, or chunk it; counts what it did."""

    def __init__(
        self, previous: Catalog | None, chunking: ChunkingSettings, limits: ReadLimits, counter: TokenOffsets | None
    ) -> None:
        self.previous, self.chunking, self.limits, self._counter = previous, chunking, limits, counter
        self.counts = {"read": 0, "reused": 0, "added": 0, "changed": 0}
        self.skipped: list[Skipped] = []

    def record(self, key: str, prefix: str, entry: FileEntry) -> FileRecord | None:
        """The old record if provably unchanged, else a fresh read (None if the file is skipped now)."""
        old = self.previous.files.get(key) if self.previous else None
        if old is not None and self.previous is not None and _unchanged(old, entry, self.previous.scanned_ns):
            self.counts["reused"] += 1
            return old
        read = read_entry(entry, self.limits, id_prefix=prefix)
        self.counts["read"] += 1
        if isinstance(read, Skipped):
            self.skipped.append(Skipped(key, read.reason))
            return None
        if old is not None and old.sha256 == read.sha256:
            self.counts["reused"] += 1
            return replace(old, size=read.size, mtime_ns=read.mtime_ns)
        self.counts["changed" if old is not None else "added"] += 1
        return self._chunked(key, read)

    def _chunked(self, key: str, read: FileRead) -> FileRecord:
        if self._counter is None:  # built only when some file needs chunking (tiktoken loads in ~0.2 s)
            self._counter = make_counter(self.chunking.tokenizer)
        documents = tuple(
            DocRecord(d.doc_id, d.title, d.source, d.date, tuple(split_text(d.text, self.chunking, self._counter)))
            for d in read.documents
        )
        return FileRecord(key, read.size, read.mtime_ns, read.sha256, read.encoding, documents)


def _unchanged(old: FileRecord, entry: FileEntry, scanned_ns: int) -> bool:
    return old.size == entry.size and old.mtime_ns == entry.mtime_ns and entry.mtime_ns < scanned_ns - RACY_NS


def _chunks(records: Iterable[FileRecord], dates: Mapping[str, str]) -> list[Chunk]:
    """Every chunk of every record (dated from `dates` when the format gave no date); InputError when two files
    yield the same document id."""
    owner: dict[str, str] = {}
    chunks = []
    for record in records:
        for d in record.documents:
            if owner.setdefault(d.doc_id, record.key) != record.key:
                raise InputError(
                    f"document id {d.doc_id!r} appears in both {owner[d.doc_id]} and {record.key}; ids must be unique"
                )
            date = d.date or dates.get(d.doc_id)
            chunks += [Chunk(d.doc_id, n, text, d.title, d.source, date) for n, text in enumerate(d.chunks)]
    return chunks


# indexing folders ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What `index_paths` did; the counters prove which files were re-read."""

    out_dir: Path
    generation: str  # folder name of the generation written
    documents: int
    chunks: int
    duplicates: int  # chunks collapsed as copies of another
    files_seen: int  # supported files found
    files_read: int  # files opened and hashed this run
    files_reused: int  # files whose stored chunks were reused (unchanged size+mtime, or same hash)
    files_added: int  # files chunked for the first time
    files_changed: int  # files whose content changed and were chunked again
    files_deleted: int  # files of the previous index no longer present (their chunks left the index)
    skipped: tuple[Skipped, ...]
    full_rebuild: str | None  # why nothing could be reused, when a previous index existed
    seconds: float
    links: int = 0  # older → newer links between versions of one document (supersession.py)
    notes: tuple[str, ...] = ()  # dates and supersession claims that were refused, and why
    supersede_from: tuple[str, ...] = ()  # the folders whose documents may supersede ("": any)


def index_paths(
    paths: Sequence[str | Path],
    out_dir: str | Path,
    *,
    chunking: ChunkingSettings | None = None,
    settings: IndexSettings | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    hidden: bool = False,
    limits: ReadLimits | None = None,
    progress: ProgressFn | None = None,
    counter: TokenOffsets | None = None,
    ops: FileOps | None = None,
    extra_files: Callable[[Index], Mapping[str, bytes]] | None = None,
    supersede_from: Sequence[str] | str = (),
    today: dt.date | None = None,
) -> IndexReport:
    """Index folders and files into `out_dir`, re-reading only what changed since the last run there.

    `include`/`exclude` are globs on paths relative to each root (or bare names); hidden files and folders are
    skipped unless `hidden`. `progress(done, total, label)` is called after each file and for the index and
    save stages. `extra_files(index)` may add files to the generation before it is saved (dense vectors,
    `dense.embed_hook`). `supersede_from` pins the folders whose documents may supersede others (the
    `supersede_from` setting); `today` is the day of indexing (default: the clock's, in UTC), which decides what
    lies in the future. Raises InputError for bad paths, malformed .jsonl or an empty corpus, RetrievalError
    when the index cannot be written; in every failure the previous index at `out_dir` stays as it was.
    """
    started = time.monotonic()
    out = checked_folder(out_dir)
    chunking = chunking or ChunkingSettings()
    folders = supersede_folders(supersede_from)
    previous, why, known = _previous_catalog(out, chunking)
    got = collect(paths, previous, chunking=chunking, include=include, exclude=exclude, hidden=hidden,
                  limits=limits or ReadLimits(), counter=counter, progress=progress, avoid=(out,),
                  known=known, today=today or dt.datetime.now(dt.UTC).date(), supersede_from=folders)  # fmt: skip
    if not got.chunks:
        raise InputError(
            f"nothing to index in {', '.join(map(str, paths))}: no .txt, .md, .html or .jsonl file with text "
            f"({len(got.skipped)} skipped); check the path and include/exclude patterns"
        )
    if progress is not None:
        progress(0, 1, "building the BM25 index")
    index = Index.build(got.chunks, settings or IndexSettings(), chunking=chunking)
    extra = {**(extra_files(index) if extra_files is not None else {}), CATALOG: got.catalog.to_bytes(),
             VERSIONS: got.versions.to_bytes(), SOURCES: _sources(paths, got.catalog).to_bytes()}  # fmt: skip
    generation = index.save(out, extra=extra, ops=ops)
    if progress is not None:
        progress(1, 1, f"saved {generation.name}")
    t = got.tally
    return IndexReport(
        out, generation.name, index.document_count, len(index), got.duplicates, t.seen, t.read, t.reused,
        t.added, t.changed, t.deleted, got.skipped, why, time.monotonic() - started, len(got.versions.links),
        got.versions.notes, folders,
    )  # fmt: skip


def _previous_catalog(
    out_dir: Path, chunking: ChunkingSettings
) -> tuple[Catalog | None, str | None, dict[str, tuple[str, Facts]]]:
    """The previous run's catalog (or why it cannot be reused) and its version facts."""
    if not (out_dir / CURRENT).exists():
        return None, None, {}
    try:
        generation = open_current(out_dir)
        if generation.manifest.get("chunking") != chunking.to_dict():
            return None, "the chunking settings changed", {}
        if CATALOG not in generation.manifest["files"]:
            return None, "the previous index has no file catalog", {}
        catalog = Catalog.from_bytes(generation.read(CATALOG, limit=MAX_CATALOG_BYTES))
    except (RetrievalError, ValueError) as error:
        return None, f"the previous index could not be reused ({error})", {}
    try:
        known = known_facts(generation.read(VERSIONS, limit=MAX_VERSIONS_BYTES))
    except RetrievalError:  # absent (an index from before versions) or unreadable: read every document again
        known = {}
    return catalog, None, known
