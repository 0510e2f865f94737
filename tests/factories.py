"""Factories several test files share, defined once: JSON-lines files, benchmark run folders (for the fit and
compare commands) and forged index generations (a manifest whose checksums match what a forger wrote)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def write_jsonl(path: Path, rows: Sequence[Mapping[str, Any] | str]) -> Path:
    """One JSON line per row (a string row is written as it is, to test bad lines)."""
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


# -- benchmark run folders ---------------------------------------------------------------------------------------


def write_run(
    folder: Path,
    records: Sequence[Mapping[str, Any]] | Mapping[str, Mapping[str, Any]] = (),
    *,
    dataset: str = "halueval",
    split: str = "train",
    unanswerable: bool = False,
    system: Mapping[str, Any] | None = None,
    seed: int | None = None,
) -> Path:
    """A QA run folder as `selfrag bench run` writes it: config.json and samples.jsonl, one line per record
    (ids from a mapping's keys, else the records' positions)."""
    folder.mkdir(parents=True)
    config: dict[str, Any] = {
        "dataset": {"name": dataset, "task": "qa"},
        "sample": {"split": split},
        "corpus": {"unanswerable": True} if unanswerable else {},
        "system": dict(system or {"kind": "selfrag"}),
    }
    if seed is not None:
        config["seed"] = seed
    (folder / "config.json").write_text(json.dumps(config))
    items = records.items() if isinstance(records, Mapping) else ((str(n), r) for n, r in enumerate(records))
    (folder / "samples.jsonl").write_text("".join(json.dumps({"id": key, **r}) + "\n" for key, r in items))
    return folder


# -- forged index generations ------------------------------------------------------------------------------------


def generation_of(out: Path) -> Path:
    """The folder of the index's current generation."""
    return out / (out / "CURRENT").read_text().split()[0]


def sign(out: Path, manifest: Mapping[str, Any]) -> None:
    """Write the manifest and point CURRENT at its sha256, as a forger (or a buggy writer) would."""
    body = json.dumps(manifest).encode()
    (generation_of(out) / "manifest.json").write_bytes(body)
    (out / "CURRENT").write_text(f"{generation_of(out).name} {hashlib.sha256(body).hexdigest()}\n")


def forge(
    out: Path, name: str, data: bytes | None = None, *, size: int | None = None, **manifest_changes: object
) -> None:
    """Replace a listed file with `data` (checksums matching), or with a sparse file of `size` bytes (its listed
    checksum wrong: a reader that reads it first notices only afterwards), or neither (the manifest alone);
    `manifest_changes` are set on the manifest's top level."""
    path = generation_of(out) / name
    manifest = json.loads((generation_of(out) / "manifest.json").read_text())
    if data is not None:
        path.write_bytes(data)
        manifest["files"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    elif size is not None:
        with open(path, "wb") as handle:
            handle.truncate(size)  # sparse: no disk space, nothing in memory
        manifest["files"][name] = {"size": size, "sha256": "0" * 64}
    manifest.update(manifest_changes)
    sign(out, manifest)
