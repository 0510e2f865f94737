"""Capabilities remembered: what the probe learned about an endpoint, kept on disk for later processes.

One JSON file per endpoint under `<cache dir>/capabilities/` (the cache dir of `files.cache_dir`: $SELFRAG_HOME,
else $XDG_CACHE_HOME/selfrag, else ~/.cache/selfrag), named by a hash of the base URL (without user:password@),
the configured model (or none: the server's first), the protocol and the `--logprobs` mode. It holds the
Capabilities, the server's identity (a fingerprint of what `GET /props` and `GET /v1/models` report, so a
restarted server with another model, build or slot count is probed again) and when it was learned; an entry
older than `MAX_AGE` is probed again. Keys never reach the file or its name.

A file that is corrupt, from another format, too large or unreadable is a miss, and a cache that cannot be
written is skipped: each says so in one line (`note`) and the probe runs as before. Files are written to a
temporary name, fsynced and renamed, so a reader sees the old entry or the new one, never half of one.

(De)serialisation and the identity are pure functions; `CapCache` is the only part that touches the disk.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ..config import redact_url
from ..files import named_cache_dir, write_atomic
from .base import Capabilities

FORMAT = "selfrag-capabilities/1"
MAX_AGE = 24 * 3600.0  # seconds an entry is trusted without a contradicting error
MAX_BYTES = 64 * 1024  # a larger file is not read (an entry is well under 2 KiB)
PROPS_FIELDS = ("model_path", "model_alias", "build_info", "total_slots", "chat_template")
MODEL_FIELDS = ("id", "owned_by", "root", "parent", "max_model_len", "meta")  # not `created`: often the clock


@dataclass(frozen=True, slots=True)
class Remembered:
    """One endpoint's remembered capabilities: what was learned, from which server, and when (unix time)."""

    capabilities: Capabilities
    identity: str
    learned_at: float

    def fresh(self, identity: str, now: float, max_age: float = MAX_AGE) -> str | None:
        """None when the entry can be used for a server reporting `identity` at `now`, else why not."""
        if identity != self.identity:
            return "the server reports another identity (model, build or slots) than when it was probed"
        if not 0 <= now - self.learned_at <= max_age:
            return f"probed more than {max_age / 3600:g} h ago"
        return None


def entry_key(base_url: str | None, model: str | None, protocol: str, logprobs: str) -> str:
    """The file's name: a hash of what decides the probe's findings (never the key)."""
    text = "\0".join((redact_url(base_url or "openai"), model or "", protocol, logprobs))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def server_identity(props: object, models: object) -> str:
    """A fingerprint of what the server says about itself (`GET /props`, `GET /v1/models`), without fields that
    change from request to request; "" when it says nothing."""
    said: dict[str, Any] = {}
    if isinstance(props, Mapping):
        said["props"] = {k: props[k] for k in PROPS_FIELDS if k in props}
        settings = props.get("default_generation_settings")
        if isinstance(settings, Mapping) and "n_ctx" in settings:
            said["props"]["n_ctx"] = settings["n_ctx"]
    data = models.get("data") if isinstance(models, Mapping) else None
    if isinstance(data, list):
        said["models"] = sorted(
            (json.dumps({k: m[k] for k in MODEL_FIELDS if k in m}, sort_keys=True, default=str) for m in data
             if isinstance(m, Mapping)),
        )  # fmt: skip
    if not said:
        return ""
    return hashlib.sha256(json.dumps(said, sort_keys=True, default=str).encode()).hexdigest()[:16]


def dump(entry: Remembered, base_url: str | None) -> str:
    """The file's text: the format, where it came from (redacted URL, for people), the identity and time."""
    caps = {f.name: getattr(entry.capabilities, f.name) for f in fields(Capabilities)}
    caps["costs"] = [list(pair) for pair in entry.capabilities.costs]
    record = {
        "format": FORMAT,
        "base_url": redact_url(base_url or "openai"),
        "identity": entry.identity,
        "learned_at": entry.learned_at,
        "capabilities": caps,
    }
    return json.dumps(record, indent=1, sort_keys=True) + "\n"


class BadEntry(ValueError):
    """A capability file that cannot be used; the message says why (one line)."""


_TYPES: dict[str, tuple[type, ...]] = {
    "model": (str,), "structured": (str,), "logprobs": (bool,), "n": (bool,), "protocol": (str,),
    "reading": (str,), "note": (str,), "logprobs_offered": (bool, type(None)), "logprobs_reason": (str,),
    "parallel": (int, type(None)), "parallel_reason": (str,),
}  # fmt: skip


def load(text: str) -> Remembered:
    """An entry from its file's text, or BadEntry naming what is wrong."""
    try:
        record = json.loads(text)
    except ValueError:
        raise BadEntry("not JSON (a torn or corrupt file)") from None
    if not isinstance(record, dict):
        raise BadEntry("not a JSON object")
    if record.get("format") != FORMAT:
        raise BadEntry(f"format {str(record.get('format'))[:40]!r}, this selfrag reads {FORMAT!r}")
    caps, identity, learned_at = record.get("capabilities"), record.get("identity"), record.get("learned_at")
    if not isinstance(caps, dict) or not isinstance(identity, str):
        raise BadEntry("no capabilities or identity")
    if isinstance(learned_at, bool) or not isinstance(learned_at, (int, float)):
        raise BadEntry("no time it was learned")
    values: dict[str, Any] = {}
    for name, types in _TYPES.items():
        value = caps.get(name)
        if name not in caps or not isinstance(value, types) or (int in types and isinstance(value, bool)):
            raise BadEntry(f"capability {name!r} missing or of the wrong type")
        values[name] = value
    costs = caps.get("costs")
    if not isinstance(costs, list) or not all(
        isinstance(c, list) and len(c) == 2 and isinstance(c[0], str) and isinstance(c[1], (int, float)) for c in costs
    ):
        raise BadEntry("capability 'costs' malformed")
    values["costs"] = tuple((str(name), float(cost)) for name, cost in costs)
    return Remembered(Capabilities(**values), identity, float(learned_at))


class CapCache:
    """The folder of remembered capabilities. Every failure to read or write is a miss with a note, never an
    exception: the probe then runs as it would without a cache."""

    def __init__(self, folder: Path, max_age: float = MAX_AGE) -> None:
        self.folder = folder
        self.max_age = max_age

    @classmethod
    def default(cls, environ: Mapping[str, str]) -> CapCache | None:
        """The cache under the user's cache folder; None when `environ` names none ($SELFRAG_HOME,
        $XDG_CACHE_HOME, $HOME): code that passes an empty environment gets no remembered capabilities."""
        folder = named_cache_dir(environ)
        return None if folder is None else cls(folder / "capabilities")

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def read(self, key: str) -> tuple[Remembered | None, str]:
        """(the entry or None, a note when a file was there but could not be used)."""
        path = self.path(key)
        try:
            with open(path, "rb") as file:
                data = file.read(MAX_BYTES + 1)
        except FileNotFoundError:
            return None, ""
        except OSError as error:
            return None, f"cannot read the remembered capabilities {path}: {error.strerror or error}; probing"
        if len(data) > MAX_BYTES:
            return None, f"ignoring the remembered capabilities {path}: larger than {MAX_BYTES} bytes; probing"
        try:
            return load(data.decode("utf-8")), ""
        except UnicodeDecodeError:
            return None, f"ignoring the remembered capabilities {path}: not UTF-8 text (a corrupt file); probing"
        except BadEntry as error:
            return None, f"ignoring the remembered capabilities {path}: {error}; probing"

    def write(self, key: str, entry: Remembered, base_url: str | None) -> str:
        """Store atomically (files.write_atomic); "" when stored, else a note saying why not."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            write_atomic(self.path(key), dump(entry, base_url))
        except OSError as error:
            return f"cannot remember the capabilities in {self.folder}: {error.strerror or error}"
        return ""

    def forget(self, key: str) -> None:
        """Remove an entry an error contradicted (a missing or unremovable file is left as it is)."""
        try:
            self.path(key).unlink()
        except OSError:
            pass
