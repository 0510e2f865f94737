"""Files read and written safely, and where selfrag keeps derived files.

- `cache_dir`: the folder for derived files (remembered capabilities, the embedded model's copies).
- `write_atomic`: a crash never leaves the file torn: a temporary file beside it, fsync, then os.replace.
- `read_regular`: a file read only if it is a regular file, opened so that it cannot block: a FIFO, socket or
  device named like a session, weights or config file is refused at once instead of hanging the command.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path


def cache_dir(environ: Mapping[str, str]) -> Path:
    """Where selfrag keeps derived files: $SELFRAG_HOME, else $XDG_CACHE_HOME/selfrag, else ~/.cache/selfrag."""
    if environ.get("SELFRAG_HOME"):
        return Path(environ["SELFRAG_HOME"]).expanduser()
    if environ.get("XDG_CACHE_HOME"):
        return Path(environ["XDG_CACHE_HOME"]).expanduser() / "selfrag"
    return Path(environ.get("HOME") or "~").expanduser() / ".cache" / "selfrag"


def named_cache_dir(environ: Mapping[str, str]) -> Path | None:
    """`cache_dir`, or None when `environ` names no folder ($SELFRAG_HOME, $XDG_CACHE_HOME, $HOME): code that
    passes an empty environment gets nothing remembered on disk."""
    if not any(environ.get(name) for name in ("SELFRAG_HOME", "XDG_CACHE_HOME", "HOME")):
        return None
    return cache_dir(environ)


def write_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Replace `path` with `text` in one step; the old file stays whole if anything fails. Returns the path."""
    target = Path(path)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
    return target


NOT_REGULAR = "not a regular file (a FIFO, socket or device)"


def read_regular(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The bytes of `path` (at most `limit` + 1 of them, so a caller can tell an oversized file), if it is a
    regular file. Opened with O_NONBLOCK, which a FIFO honours, then checked with fstat before any read; anything
    else raises OSError (EINVAL, `NOT_REGULAR`), as an unreadable file does."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, NOT_REGULAR, os.fspath(path))
        return handle.read() if limit is None else handle.read(limit + 1)
