"""Where selfrag keeps derived files (`cache_dir`), and writing a file so that a crash never leaves it torn: a
temporary file beside it, fsync, then os.replace."""

from __future__ import annotations

import contextlib
import os
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
