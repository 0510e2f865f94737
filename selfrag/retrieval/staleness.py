"""Is the index stale? The files an index was built from, as recorded when it was built, against the disk now.

`sources.json` (in each generation, checksummed by its manifest) lists every indexed file by its key, size,
mtime and sha256, and the folder each indexed path was read from. `stale(...)` stats each file, never reads it:
a file whose size or mtime differs is changed, one that is gone has vanished. With `hashes=True` (doctor) the
files whose stat differs are read and hashed, so a file only touched (same bytes, new mtime) is told apart from
a changed one. Files added since indexing are not seen: that needs a walk of the folders (`selfrag index`
finds them). An index built before `sources.json` cannot be checked (`load_sources` gives None).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .store import open_current, unusable

SOURCES = "sources.json"
SOURCES_FORMAT = 1
MAX_SOURCES_BYTES = 64 * 2**20  # 100,000 files (ReadLimits.max_files) at well under 600 bytes each


@dataclass(frozen=True, slots=True)
class Recorded:
    """One indexed file as it was when the index was built."""

    key: str  # its path relative to its root (with the root's folder name first when several were indexed)
    size: int
    mtime_ns: int
    sha256: str


@dataclass(frozen=True, slots=True)
class Sources:
    """The files of an index and where they were read from."""

    roots: Mapping[str, str]  # key prefix ("" for a single indexed path) -> absolute folder it was read from
    files: tuple[Recorded, ...]
    indexed: tuple[str, ...] = ()  # the paths given to `selfrag index`, absolute (for the hint to run it again)

    def paths(self) -> list[tuple[Recorded, str]]:
        """Each recorded file with its path on disk now (plain strings: one stat each is the whole cost)."""
        prefixes = sorted(self.roots, key=len, reverse=True)
        found = []
        for recorded in self.files:
            prefix = next((p for p in prefixes if recorded.key.startswith(p)), "")
            found.append((recorded, os.path.join(self.roots.get(prefix, ""), recorded.key[len(prefix) :])))
        return found

    def to_bytes(self) -> bytes:
        body = {
            "sources": SOURCES_FORMAT,
            "roots": dict(self.roots),
            "indexed": list(self.indexed),
            "files": [[f.key, f.size, f.mtime_ns, f.sha256] for f in self.files],
        }
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes) -> Sources:
        """ValueError when `sources.json` is malformed."""
        try:
            body = json.loads(data)
            if body.get("sources") != SOURCES_FORMAT:
                raise ValueError(f"unknown sources format {body.get('sources')!r}")
            roots = {str(prefix): str(folder) for prefix, folder in body["roots"].items()}
            files = tuple(Recorded(str(k), int(s), int(m), str(h)) for k, s, m, h in body["files"])
            indexed = tuple(str(p) for p in body.get("indexed", []))
        except (KeyError, TypeError, AttributeError, RecursionError) as error:
            raise ValueError(f"malformed {SOURCES}: {error}") from error
        return cls(roots, files, indexed)

    def reindex_hint(self, index: str | Path) -> str:
        """The command that brings the index up to date (incrementally: unchanged files are not read again)."""
        return f"selfrag index {' '.join(self.indexed) or 'PATH'} --out {index}"


@dataclass(frozen=True, slots=True)
class Staleness:
    """What differs between the disk and the index (keys, sorted)."""

    changed: tuple[str, ...] = ()  # size or mtime differ (with hashes: the bytes differ)
    vanished: tuple[str, ...] = ()  # no longer a file there
    touched: tuple[str, ...] = ()  # with hashes only: a new mtime over the same bytes
    checked: int = 0  # files looked at

    def __bool__(self) -> bool:
        return bool(self.changed or self.vanished)

    def summary(self, shown: int = 3) -> str:
        """'changed on disk since indexing: a.md, b.md; vanished: c.md' (at most `shown` names of each)."""
        parts = []
        for what, keys in (("changed on disk since indexing", self.changed), ("vanished", self.vanished)):
            if keys:
                more = f" and {len(keys) - shown} more" if len(keys) > shown else ""
                parts.append(f"{what}: {', '.join(keys[:shown])}{more}")
        return "; ".join(parts)


def sources_of(roots: Mapping[str, str], files: Sequence[Recorded], indexed: Sequence[str]) -> Sources:
    return Sources(dict(roots), tuple(sorted(files, key=lambda f: f.key)), tuple(indexed))


def stale(sources: Sources, *, hashes: bool = False) -> Staleness:
    """Which recorded files changed or vanished: one `os.stat` per file; with `hashes`, a file whose stat differs
    is read and hashed too (doctor), and one with the same bytes counts as touched, not changed."""
    changed, vanished, touched = [], [], []
    for recorded, path in sources.paths():
        try:
            info = os.stat(path)
        except OSError:
            vanished.append(recorded.key)
            continue
        if info.st_size == recorded.size and info.st_mtime_ns == recorded.mtime_ns:
            continue
        if hashes and info.st_size == recorded.size and _sha256(path) == recorded.sha256:
            touched.append(recorded.key)
        else:
            changed.append(recorded.key)
    return Staleness(tuple(changed), tuple(vanished), tuple(touched), len(sources.files))


def _sha256(path: str) -> str | None:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            while block := handle.read(2**20):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def load_sources(path: str | Path) -> Sources | None:
    """The recorded files of the index at `path`; None for an index built before they were recorded.
    RetrievalError when the index or its `sources.json` cannot be read."""
    generation = open_current(path)
    if SOURCES not in generation.manifest["files"]:
        return None
    try:
        return Sources.from_bytes(generation.read(SOURCES, limit=MAX_SOURCES_BYTES))
    except ValueError as error:
        raise unusable(path, str(error)) from error
