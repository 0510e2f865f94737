"""Reading documents from disk: a folder walk that cannot escape its root, safe reads, and decoding.

Types: .txt, .md/.markdown, .html/.htm and .jsonl, parsed by `formats.py`. A BEIR `corpus.jsonl` is read
by `load_beir_corpus`.

Safety rules (reliability notes §8): `os.walk(followlinks=False)`; symbolic links under the root are skipped
and reported, so the walk never leaves the root and cannot loop; files are opened with O_NOFOLLOW|O_NONBLOCK
and checked with fstat (FIFOs, sockets and devices are skipped without blocking); each file is capped (10 MiB
by default) and so are the file count, total bytes and depth. A NUL byte in the first 8 KiB marks a binary
file. Decoding: UTF-32/UTF-16/UTF-8 by BOM, then strict UTF-8, else cp1252 with replacement characters; the
encoding used is recorded on every document. Text is NFC-normalised with `\\n` line ends.

Ids: a file's document id is its path relative to the root (posix); a jsonl document's id is its `id` field.
A file or folder whose name is not valid UTF-8 is skipped and reported: its id could not be written, cited or
matched to the file again (a name with a newline or control character is indexed; the CLI escapes it).
Limits: PDF text only through the optional pypdf (`pip install selfrag[pdf]`), at most 2,000 pages; no Office or
archive formats; no charset detection beyond the rules above. Glob patterns use
fnmatch, where `*` also matches `/`.
"""

from __future__ import annotations

import codecs
import fnmatch
import hashlib
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..errors import InputError
from ..text import escape_name
from .formats import Document, normalise, parse_jsonl, parse_text, pdf_document

MiB = 2**20
HIDDEN = (".*",)  # names of hidden files and folders: .git, .venv, editor swap files
KINDS = {
    ".txt": "text", ".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html", ".jsonl": "jsonl",
    ".pdf": "pdf",
}  # fmt: skip
SNIFF_BYTES = 8192
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """Caps on what one indexing run reads."""

    max_file_bytes: int = 10 * MiB
    max_files: int = 100_000
    max_total_bytes: int = 2048 * MiB
    max_depth: int = 32


@dataclass(frozen=True, slots=True)
class Skipped:
    """A file that was not indexed, and why."""

    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class FileEntry:
    """A candidate file found by `scan`; `rel` is its posix path relative to the root."""

    root: Path
    rel: str
    size: int
    mtime_ns: int

    @property
    def path(self) -> Path:
        return self.root / self.rel


@dataclass(frozen=True, slots=True)
class FileRead:
    """The documents of one file, with what identifies its content (size, mtime and hash at read time)."""

    entry: FileEntry
    size: int
    mtime_ns: int
    sha256: str
    encoding: str
    documents: tuple[Document, ...]


@dataclass(frozen=True, slots=True)
class Corpus:
    documents: tuple[Document, ...]
    skipped: tuple[Skipped, ...]


def read_folder(
    root: str | Path,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    hidden: bool = False,
    limits: ReadLimits = ReadLimits(),
) -> Corpus:
    """Every supported document under `root` (a folder or one file), plus the files skipped and why."""
    entries, skipped = scan(root, include=include, exclude=exclude, hidden=hidden, limits=limits)
    documents: list[Document] = []
    for entry in entries:
        result = read_entry(entry, limits)
        if isinstance(result, Skipped):
            skipped.append(result)
        else:
            documents.extend(result.documents)
    return Corpus(tuple(documents), tuple(skipped))


def scan(
    root: str | Path,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    hidden: bool = False,
    limits: ReadLimits = ReadLimits(),
    avoid: Sequence[str | Path] = (),
) -> tuple[list[FileEntry], list[Skipped]]:
    """The supported files under `root` in sorted order, and the entries skipped on the way.

    A file is taken if it matches some `include` glob (or none are given) and no `exclude` glob; globs match
    the path relative to the root or the bare name. Hidden names (.git, .env) are left out unless `hidden`.
    Folders in `avoid` (such as the index's own output folder) are left out silently.
    """
    exclude = tuple(exclude) if hidden else (*HIDDEN, *exclude)
    given = Path(root)
    if "\x00" in str(given):
        raise InputError(f"the path {str(given)!r} holds a NUL byte; pass an existing folder or file")
    try:
        base = Path(os.path.realpath(given))  # the root itself may be a link; nothing below it is followed
        info = os.stat(base)
    except OSError as error:
        raise InputError(f"cannot read {given}: {error.strerror}; pass an existing folder or file") from error
    if not _utf8(str(base)):
        shown = escape_name(str(given))
        raise InputError(f"the path {shown} is not valid UTF-8: documents are cited by their paths; rename it")
    if stat.S_ISREG(info.st_mode):
        return _single_file(base, info, limits)
    if not stat.S_ISDIR(info.st_mode):
        raise InputError(f"{given} is neither a folder nor a regular file; pass a folder or a file to index")
    entries: list[FileEntry] = []
    skipped: list[Skipped] = []
    total = 0
    avoided = frozenset(os.path.realpath(p) for p in avoid)
    for entry in _walk(base, include, exclude, limits, skipped, avoided):
        entries.append(entry)
        total += entry.size
        if len(entries) > limits.max_files or total > limits.max_total_bytes:
            what = f"{limits.max_files}" if len(entries) > limits.max_files else f"{amount(limits.max_total_bytes)} of"
            raise InputError(
                f"{given} holds more than {what} supported files; narrow it with include/exclude patterns or raise"
                " the limits"
            )
    return entries, skipped


def _single_file(path: Path, info: os.stat_result, limits: ReadLimits) -> tuple[list[FileEntry], list[Skipped]]:
    entry = FileEntry(path.parent, path.name, info.st_size, info.st_mtime_ns)
    problem = _file_problem(path.name, info, limits)
    return ([], [Skipped(path.name, problem)]) if problem else ([entry], [])


def _walk(
    base: Path,
    include: Sequence[str],
    exclude: Sequence[str],
    limits: ReadLimits,
    skipped: list[Skipped],
    avoided: frozenset[str],
) -> Iterator[FileEntry]:
    def on_error(error: OSError) -> None:
        skipped.append(Skipped(_rel(base, Path(error.filename or base)), f"cannot list folder: {error.strerror}"))

    for folder, dirnames, filenames in os.walk(base, followlinks=False, onerror=on_error):
        here = Path(folder)
        depth = len(here.relative_to(base).parts)
        dirnames[:] = [
            d
            for d in sorted(dirnames)
            if str(here / d) not in avoided and _keep_dir(base, here / d, exclude, depth, limits, skipped)
        ]
        for name in sorted(filenames):
            rel = _rel(base, here / name)
            if _matches(rel, exclude) or (include and not _matches(rel, include)):
                continue
            try:
                info = os.lstat(here / name)
            except OSError as error:
                skipped.append(Skipped(rel, f"cannot stat: {error.strerror}"))
                continue
            problem = _file_problem(rel, info, limits)
            if problem:
                skipped.append(Skipped(rel, problem))
            else:
                yield FileEntry(base, rel, info.st_size, info.st_mtime_ns)


def _keep_dir(
    base: Path, path: Path, exclude: Sequence[str], depth: int, limits: ReadLimits, skipped: list[Skipped]
) -> bool:
    rel = _rel(base, path)
    if _matches(rel, exclude):
        return False
    if not _utf8(rel):
        skipped.append(Skipped(rel, NOT_UTF8))
        return False
    if path.is_symlink():
        skipped.append(Skipped(rel, "symbolic link to a folder (not followed)"))
        return False
    if depth + 1 > limits.max_depth:
        skipped.append(Skipped(rel, f"deeper than {limits.max_depth} folders"))
        return False
    return True


def _file_problem(rel: str, info: os.stat_result, limits: ReadLimits) -> str | None:
    if not _utf8(rel):
        return NOT_UTF8
    if stat.S_ISLNK(info.st_mode):
        return "symbolic link (not followed)"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file (FIFO, socket or device)"
    suffix = PurePosixPath(rel).suffix.lower()
    if suffix not in KINDS:
        return f"unsupported file type {suffix or '(no suffix)'}; supported: {', '.join(sorted(KINDS))}"
    if info.st_size > limits.max_file_bytes:
        return f"larger than the {amount(limits.max_file_bytes)} cap"
    return None


NOT_UTF8 = "its name is not valid UTF-8 (a document is cited by its name: rename it to index it)"


def _utf8(name: str) -> bool:
    """False for a name holding bytes that are not UTF-8 (the surrogate escapes os.walk reads them as)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def amount(size: int) -> str:
    """A byte count as people write caps: whole MiB when it is one, else bytes."""
    return f"{size // MiB} MiB" if size >= MiB and size % MiB == 0 else f"{size} bytes"


def _rel(base: Path, path: Path) -> str:
    return path.relative_to(base).as_posix()


def _matches(rel: str, patterns: Sequence[str]) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(rel, p) or fnmatch.fnmatchcase(name, p) for p in patterns)


def read_entry(entry: FileEntry, limits: ReadLimits = ReadLimits(), id_prefix: str = "") -> FileRead | Skipped:
    """Read, decode and parse one file; problems that only skip the file come back as `Skipped`.

    Raises InputError for a malformed .jsonl (bad JSON, missing or duplicate id), which the user must fix.
    """
    raw = read_bytes(entry.path, limits.max_file_bytes)
    if isinstance(raw, str):
        return Skipped(entry.rel, raw)
    data, info = raw
    kind = KINDS[PurePosixPath(entry.rel).suffix.lower()]
    sha = hashlib.sha256(data).hexdigest()
    if kind == "pdf":
        parsed = pdf_document(data, id_prefix + entry.rel, entry.path.as_posix())
        if isinstance(parsed, str):
            return Skipped(entry.rel, parsed)
        return FileRead(entry, info.st_size, info.st_mtime_ns, sha, "pdf", (parsed,) if parsed.text else ())
    decoded = decode(data)
    if decoded is None:
        return Skipped(entry.rel, "binary file (NUL byte in the first 8 KiB)")
    text, encoding = decoded
    source = entry.path.as_posix()
    if kind == "jsonl":
        documents = parse_jsonl(text, source, encoding=encoding)
    else:
        documents = [parse_text(kind, text, id_prefix + entry.rel, source, encoding)]
    return FileRead(entry, info.st_size, info.st_mtime_ns, sha, encoding, tuple(d for d in documents if d.text))


def read_bytes(path: Path, cap: int) -> tuple[bytes, os.stat_result] | str:
    """The bytes of a regular file of at most `cap` bytes, or the reason it cannot be read."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        return f"cannot open: {error.strerror}"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file (FIFO, socket or device)"
        if info.st_size > cap:
            return f"larger than the {amount(cap)} cap"
        parts, total = [], 0
        while total <= cap:
            part = os.read(fd, min(MiB, cap + 1 - total))
            if not part:
                break
            parts.append(part)
            total += len(part)
        if total > cap:
            return f"larger than the {amount(cap)} cap"
        return b"".join(parts), info
    except OSError as error:
        return f"cannot read: {error.strerror}"
    finally:
        os.close(fd)


def decode(data: bytes) -> tuple[str, str] | None:
    """(text, encoding) under the policy in the module docstring, or None for a binary file."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return normalise(data.decode(encoding, errors="replace")), encoding
    if b"\x00" in data[:SNIFF_BYTES]:
        return None
    try:
        return normalise(data.decode("utf-8")), "utf-8"
    except UnicodeDecodeError:
        return normalise(data.decode("cp1252", errors="replace")), "cp1252"


def load_beir_corpus(path: str | Path, *, max_bytes: int = 1024 * MiB) -> list[Document]:
    """The documents of a BEIR `corpus.jsonl` (`_id`, `title`, `text`), read with the same rules as above."""
    raw = read_bytes(Path(path), max_bytes)
    if isinstance(raw, str):
        raise InputError(f"cannot read the corpus {path}: {raw}")
    decoded = decode(raw[0])
    if decoded is None:
        raise InputError(f"{path} looks binary (NUL byte); pass a BEIR corpus.jsonl")
    return parse_jsonl(decoded[0], Path(path).name, encoding=decoded[1])
