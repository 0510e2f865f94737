"""samples.jsonl: one JSON record per finished question, appended, flushed and fsynced before the question
counts as done; read back with torn-tail repair.

- A record is `json.dumps(..., ensure_ascii=False, allow_nan=False) + "\\n"` with `schema_version`.
- Reading: the last line without its newline, or one that does not parse, is a torn write (a kill during the
  append): `repair=True` truncates the file to the last good newline (what --resume does), `repair=False`
  ignores it and leaves the file alone (what scoring a live run does). A bad line anywhere else is corruption
  and is refused. If an id appears twice (a failed question retried), the last record wins.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class ReadReport:
    lines: int  # good records read
    torn_bytes: int  # bytes of a torn last line (removed when repairing)
    repaired: bool


def read_samples(path: str | Path, *, repair: bool) -> tuple[dict[str, dict[str, Any]], ReadReport]:
    """Records by id, in first-seen order (a later record for the same id replaces the earlier one)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}, ReadReport(0, 0, False)
    good_end = data.rfind(b"\n") + 1  # everything after the last newline is a torn tail
    body, tail = data[:good_end], data[good_end:]
    lines = body.split(b"\n")[:-1] if body else []
    records: dict[str, dict[str, Any]] = {}
    parsed = 0
    for number, line in enumerate(lines, 1):
        record = _parse(line)
        if record is None:
            if number == len(lines) and not tail:  # the last complete line is garbage: also a torn write
                tail = line + b"\n"
                good_end -= len(tail)
                break
            raise InputError(f"{path} line {number} is corrupt (not a sample record); refusing to resume over it")
        records[record["id"]] = record
        parsed += 1
    torn = len(tail)
    if torn and repair:
        with open(path, "r+b") as file:
            file.truncate(good_end)
            file.flush()
            os.fsync(file.fileno())
    return records, ReadReport(parsed, torn, bool(torn and repair))


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("id"), str) or "status" not in record:
        return None
    return record


class SampleWriter:
    """Appends records durably: write, flush, fsync; an OSError (disk full) propagates and nothing counts."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file = open(self.path, "ab")  # noqa: SIM115 - closed in close()

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps({"schema_version": SCHEMA_VERSION, **record}, ensure_ascii=False, allow_nan=False) + "\n"
        self._file.write(line.encode("utf-8"))
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()
