"""Where configuration comes from: command-line flag > SELFRAG_* environment > TOML file > default.

The TOML file (`--config FILE`, else $SELFRAG_CONFIG, else $XDG_CONFIG_HOME/selfrag/config.toml, else
~/.config/selfrag/config.toml) holds the paper's knobs at the top level and endpoint settings under
`[endpoint]` and `[critic_endpoint]`:

    beam_width = 2
    mode = "adaptive"
    [endpoint]
    base_url = "http://127.0.0.1:8000/v1"
    model = "Qwen2.5-7B-Instruct"

Keys never live in the file or on the command line: they come from SELFRAG_API_KEY or OPENAI_API_KEY
(see config.resolve_endpoint). Environment names are the knob names upper-cased: SELFRAG_BEAM_WIDTH,
SELFRAG_BASE_URL, SELFRAG_MODEL, ... This is the only module that reads the file or the environment.
"""

from __future__ import annotations

import os
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from .config import Config, EndpointConfig
from .errors import ConfigError

ENDPOINT_FIELDS = {f.name for f in fields(EndpointConfig)} - {"api_key"}
KNOB_FIELDS = {f.name for f in fields(Config)} - {"endpoint", "critic_endpoint"}


def config_path(explicit: str | None, environ: Mapping[str, str]) -> Path | None:
    if explicit:
        return Path(explicit)
    if environ.get("SELFRAG_CONFIG"):
        return Path(environ["SELFRAG_CONFIG"])
    base = environ.get("XDG_CONFIG_HOME") or str(Path(environ.get("HOME", "~")).expanduser() / ".config")
    candidate = Path(base) / "selfrag" / "config.toml"
    return candidate if candidate.is_file() else None


def read_file(path: Path | None, *, required: bool) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if required:
            raise ConfigError(f"config file not found: {path}") from None
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"config file {path} is not valid TOML: {error}".splitlines()[0]) from None
    unknown = set(data) - KNOB_FIELDS - {"endpoint", "critic_endpoint"}
    if unknown:
        raise ConfigError(f"config file {path}: unknown setting(s) {', '.join(sorted(unknown))}")
    for table in ("endpoint", "critic_endpoint"):
        extra = set(data.get(table, {})) - ENDPOINT_FIELDS
        if extra:
            raise ConfigError(f"config file {path}: unknown [{table}] setting(s) {', '.join(sorted(extra))}")
    return data


def _from_env(environ: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    knobs = {n: environ[f"SELFRAG_{n.upper()}"] for n in KNOB_FIELDS if f"SELFRAG_{n.upper()}" in environ}
    endpoint = {n: environ[f"SELFRAG_{n.upper()}"] for n in ENDPOINT_FIELDS if f"SELFRAG_{n.upper()}" in environ}
    return knobs, endpoint


def _convert(kind: Any, name: str, value: Any) -> Any:
    """A value from the environment (a string) or TOML as the field's type."""
    if isinstance(kind, str):
        kind = {"int": int, "float": float, "bool": bool, "str": str}.get(kind.split(" |")[0], str)
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(kind) if a is not type(None)]
        return None if value in (None, "", "none", "None") else _convert(inner[0], name, value)
    if not isinstance(value, str):
        return value
    try:
        if kind is bool:
            if value.lower() not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                raise ValueError(value)
            return value.lower() in ("1", "true", "yes", "on")
        if kind in (int, float):
            return kind(value)
    except ValueError:
        raise ConfigError(f"{name} must be of type {kind.__name__}, got {value!r}") from None
    return value


def typed_values(cls: type, values: Mapping[str, Any]) -> dict[str, Any]:
    """Values (strings from the environment, a TOML file or a REPL) converted to the fields' types."""
    hints = typing.get_type_hints(cls)
    return {name: _convert(hints[name], name, value) for name, value in values.items()}


def load_config(
    flags: Mapping[str, Any] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    config_file: str | None = None,
) -> Config:
    """The resolved Config. `flags` holds knob and endpoint names (None values are unset flags);
    endpoint flags use their plain names (base_url, model, ...), critic flags the prefix `critic_`."""
    env = os.environ if environ is None else environ
    data = read_file(config_path(config_file, env), required=config_file is not None)
    env_knobs, env_endpoint = _from_env(env)
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    knobs = {**{k: v for k, v in data.items() if k in KNOB_FIELDS}, **env_knobs}
    knobs.update({k: v for k, v in flags.items() if k in KNOB_FIELDS})
    endpoint = {**data.get("endpoint", {}), **env_endpoint}
    endpoint.update({k: v for k, v in flags.items() if k in ENDPOINT_FIELDS})
    critic = dict(data.get("critic_endpoint", {}))
    critic.update({k[len("critic_") :]: v for k, v in flags.items() if k.startswith("critic_") and k != "critic"})
    critic_endpoint = None
    if critic:
        base = {k: v for k, v in endpoint.items() if k not in critic and k != "protocol"}  # a critic has its own
        critic_endpoint = EndpointConfig(**typed_values(EndpointConfig, {**base, **critic}))
    return Config(
        **typed_values(Config, knobs),
        endpoint=EndpointConfig(**typed_values(EndpointConfig, endpoint)),
        critic_endpoint=critic_endpoint,
    )
