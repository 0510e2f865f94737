"""Durable index folders: write a generation atomically, find the current one, read files back verified.

Layout of an index folder `DIR`:

    DIR/CURRENT                   "gen-000007-3fa2c1d09b7e <sha256 of its manifest.json>\\n"
    DIR/gen-000007-3fa2c1d09b7e/  manifest.json and the files it lists (size and sha256 of each)
    DIR/LOCK                      flock'ed while a save runs, so two saves cannot interleave

A save builds `DIR/.tmp-<random>/`, writes and fsyncs every file and the manifest, fsyncs the folder, renames
it to `DIR/gen-<n>-<hash>/`, then writes `CURRENT.tmp-<random>`, fsyncs it and `os.replace`s it over
`CURRENT` (LevelDB's CURRENT/MANIFEST design). A crash or error at any point before that last replace leaves
`CURRENT` naming the previous generation, which still loads; leftovers are removed by the next save. Old
generations are deleted only after the new one has been read back and verified (`prune`); a reader that
opens the index at that very moment can fail once with "cannot be read" and succeeds when it retries.

Reading checks, in order: CURRENT's syntax, the manifest's size (at most `MAX_MANIFEST_BYTES`) and sha256
against CURRENT (so an edited manifest is refused), its format name and version and the names of the files it
lists (plain names, never `..` or a path), each listed file's size (and, for JSON files, a cap on it, checked
before anything is read), then its sha256 on the bytes actually used. JSON nested deeper than the parser goes
is refused like any malformed file.
Every refusal is a RetrievalError that says how to rebuild. Filesystem calls a save makes go through
`FileOps`, the seam tests use to make a write, fsync or rename fail.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError, RetrievalError

FORMAT = "selfrag-index"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
CURRENT = "CURRENT"
MAX_JSON_BYTES = 256 * 2**20  # manifest and vocabulary: json.loads can need 20x the file size in memory
MAX_MANIFEST_BYTES = MAX_JSON_BYTES
_GENERATION = re.compile(r"^gen-(\d{6})-([0-9a-f]{12})$")
_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True, slots=True)
class FileOps:
    """The filesystem calls a save makes; tests pass ones that fail to simulate a crash or a full disk."""

    write: Callable[[int, memoryview], int] = os.write
    fsync: Callable[[int], None] = os.fsync
    rename: Callable[[str, str], None] = os.rename
    replace: Callable[[str, str], None] = os.replace


@dataclass(frozen=True, slots=True)
class Generation:
    """A verified-on-open index generation: its folder and its parsed manifest."""

    folder: Path
    manifest: Mapping[str, Any]

    def read(self, name: str, *, limit: int | None = None) -> bytes:
        """The bytes of a listed file after checking its size (at most `limit`, before reading) and sha256."""
        entry = self.manifest["files"].get(name)
        if entry is None:
            raise unusable(self.folder.parent, f"its manifest does not list {name}")
        if limit is not None and entry["size"] > limit:
            raise unusable(self.folder.parent, f"{name} is larger than the {_size(limit)} a valid one can be")
        path = self.folder / name
        try:
            with open(path, "rb") as handle:
                if os.fstat(handle.fileno()).st_size != entry["size"]:  # before a read of a forged huge size
                    raise unusable(self.folder.parent, f"{name} does not match its checksum")
                data = handle.read(entry["size"] + 1)
        except OSError as error:
            raise unusable(self.folder.parent, f"{name} cannot be read ({error.strerror})") from error
        if len(data) != entry["size"] or hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise unusable(self.folder.parent, f"{name} does not match its checksum")
        return data

    def path(self, name: str, *, verify: bool = True) -> Path:
        """The path of a listed file, checked like `read` (for memory-mapping)."""
        if verify:
            self.read(name)
        return self.folder / name


def checked_folder(out_dir: str | Path) -> Path:
    """`out_dir` as a Path; InputError if it holds a NUL byte (which no file name can)."""
    if "\x00" in str(out_dir):
        raise InputError(f"the index folder {str(out_dir)!r} holds a NUL byte; pass a real folder name")
    return Path(out_dir)


def rebuild_hint(out_dir: str | Path) -> str:
    return f"rebuild it with: selfrag index PATH --out {out_dir}"


def unusable(out_dir: str | Path, why: str) -> RetrievalError:
    """The error for an index that exists but cannot be used."""
    return RetrievalError(f"the index at {out_dir} is unusable: {why}; {rebuild_hint(out_dir)}")


def write_generation(
    out_dir: Path, files: Mapping[str, bytes], manifest: Mapping[str, Any], ops: FileOps = FileOps()
) -> Path:
    """Write `files` plus a manifest (with their sizes and hashes added) as the new current generation."""
    out_dir = checked_folder(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise RetrievalError(f"cannot create the index folder {out_dir}: {error.strerror}") from error
    with _locked(out_dir):
        _check_space(out_dir, sum(len(data) for data in files.values()))
        table = {name: {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()} for name, data in files.items()}
        body = json.dumps(
            {**manifest, "files": table}, sort_keys=True, ensure_ascii=False, allow_nan=False, separators=(",", ":")
        )  # compact: with `indent` the json module falls back to its slow pure-Python encoder
        manifest_bytes = body.encode("utf-8")
        digest = hashlib.sha256(manifest_bytes).hexdigest()
        name = f"gen-{_next_number(out_dir):06d}-{digest[:12]}"
        try:
            _commit(out_dir, name, {**files, MANIFEST: manifest_bytes}, f"{name} {digest}\n".encode(), ops)
        except OSError as error:
            if _current_name(out_dir) == name:  # only the last directory fsync failed
                raise RetrievalError(
                    f"the index at {out_dir} was updated but not synced to disk ({error.strerror or error}); "
                    "run the command again so that it survives a power loss"
                ) from error
            raise RetrievalError(
                f"could not save the index to {out_dir} ({error.strerror or error}); the previous index is untouched;"
                " free disk space or fix permissions and run again"
            ) from error
    return out_dir / name


def _commit(out_dir: Path, name: str, files: Mapping[str, bytes], pointer: bytes, ops: FileOps) -> None:
    temp = out_dir / f".tmp-{secrets.token_hex(6)}"
    final = out_dir / name
    temp.mkdir()
    renamed = False
    try:
        for file_name, data in files.items():
            _write_file(temp / file_name, data, ops)
        _fsync_dir(temp, ops)
        ops.rename(str(temp), str(final))
        renamed = True
        _fsync_dir(out_dir, ops)
        pointer_temp = out_dir / f"{CURRENT}.tmp-{secrets.token_hex(6)}"
        try:
            _write_file(pointer_temp, pointer, ops)
            ops.replace(str(pointer_temp), str(out_dir / CURRENT))
        finally:
            pointer_temp.unlink(missing_ok=True)
        _fsync_dir(out_dir, ops)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        if renamed and _current_name(out_dir) != name:
            shutil.rmtree(final, ignore_errors=True)
        raise


def _write_file(path: Path, data: bytes, ops: FileOps) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[ops.write(fd, view) :]
        ops.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path, ops: FileOps) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        ops.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _locked(out_dir: Path) -> Iterator[None]:
    fd = os.open(out_dir / "LOCK", os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise RetrievalError(
                    f"another process is writing the index at {out_dir}; wait for it to finish"
                ) from error
            raise
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _check_space(out_dir: Path, needed: int) -> None:
    free = shutil.disk_usage(out_dir).free
    if free < needed + 2**20:
        raise RetrievalError(
            f"not enough disk space to save the index at {out_dir}: {needed // 2**20 + 1} MiB needed, "
            f"{free // 2**20} MiB free; free some space and run again"
        )


def _next_number(out_dir: Path) -> int:
    numbers = [int(m.group(1)) for p in out_dir.iterdir() if (m := _GENERATION.match(p.name))]
    return max(numbers, default=0) + 1


def _current_name(out_dir: Path) -> str | None:
    try:
        return (out_dir / CURRENT).read_text("ascii").split()[0]
    except (OSError, UnicodeDecodeError, IndexError):
        return None


def open_current(out_dir: str | Path) -> Generation:
    """The current generation of the index at `out_dir`, with its manifest checked (not yet its files)."""
    out_dir = checked_folder(out_dir)
    pointer = out_dir / CURRENT
    if not pointer.is_file():
        raise RetrievalError(f"no index at {out_dir}; build one with: selfrag index PATH --out {out_dir}")
    try:
        name, digest = pointer.read_text("ascii").split()
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise unusable(out_dir, "its CURRENT file is damaged") from error
    if not _GENERATION.match(name) or not _SHA256.match(digest):
        raise unusable(out_dir, "its CURRENT file is damaged")
    folder = out_dir / name
    try:
        with open(folder / MANIFEST, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_MANIFEST_BYTES:
                raise unusable(out_dir, f"{name}/{MANIFEST} is larger than {_size(MAX_MANIFEST_BYTES)}")
            manifest_bytes = handle.read(size + 1)  # read(n) reserves n bytes first: the cap would cost 256 MiB
    except OSError as error:
        raise unusable(out_dir, f"{name}/{MANIFEST} cannot be read ({error.strerror})") from error
    if hashlib.sha256(manifest_bytes).hexdigest() != digest:
        raise unusable(out_dir, f"{name}/{MANIFEST} was modified or is incomplete")
    return Generation(folder, _parse_manifest(out_dir, manifest_bytes))


def _parse_manifest(out_dir: Path, data: bytes) -> Mapping[str, Any]:
    try:
        manifest = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise unusable(out_dir, "its manifest is not valid JSON") from error
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise unusable(out_dir, "its manifest is not a selfrag index manifest")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        age = "an older" if isinstance(version, int) and version < FORMAT_VERSION else "another"
        raise RetrievalError(
            f"the index at {out_dir} uses {age} format (version {version}; this selfrag reads version "
            f"{FORMAT_VERSION}); {rebuild_hint(out_dir)}"
        )
    files = manifest.get("files")
    if not isinstance(files, dict) or not all(_valid_entry(k, v) for k, v in files.items()):
        raise unusable(out_dir, "its manifest's file table is malformed")
    return manifest


def _size(limit: int) -> str:
    return f"{limit // 2**20} MiB" if limit >= 2**20 else f"{limit} bytes"


def _valid_entry(name: object, entry: object) -> bool:
    return (
        isinstance(name, str)
        and bool(_FILE_NAME.fullmatch(name))
        and isinstance(entry, dict)
        and type(entry.get("size")) is int
        and entry["size"] >= 0
        and isinstance(entry.get("sha256"), str)
        and bool(_SHA256.match(entry["sha256"]))
    )


def prune(out_dir: str | Path) -> list[str]:
    """Delete every generation and leftover temp folder except the current one; returns what was removed."""
    out_dir = Path(out_dir)
    keep = _current_name(out_dir)
    removed = []
    with _locked(out_dir):
        for path in sorted(out_dir.iterdir()):
            stale_temp = path.name.startswith((".tmp-", f"{CURRENT}.tmp-"))
            if (stale_temp or _GENERATION.match(path.name)) and path.name != keep:
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)
                removed.append(path.name)
    return removed
