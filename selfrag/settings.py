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
A caller may add a layer of its own defaults below the file (the benchmarks' shorter answers); a flag value
out of range is a UsageError (the command line exits 2), a bad file or variable a ConfigError.
"""

from __future__ import annotations

import os
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from .config import Config, EndpointConfig
from .errors import ConfigError, SettingTypeError, UsageError
from .files import read_regular

MAX_CONFIG_BYTES = 1 << 20  # a config file is a few lines; a larger one is not one
ENDPOINT_FIELDS = {f.name for f in fields(EndpointConfig)} - {"api_key"}
KNOB_FIELDS = {f.name for f in fields(Config)} - {"endpoint", "critic_endpoint", "embedded"}  # embedded: found out


@dataclass(frozen=True, slots=True)
class ConfigLocation:
    """Where the config file is looked for, and whether that file is there."""

    path: Path
    reason: str  # --config, $SELFRAG_CONFIG, $XDG_CONFIG_HOME, ~/.config
    exists: bool


def config_location(explicit: str | None, environ: Mapping[str, str]) -> ConfigLocation:
    """The one file `load_config` reads, even when it is missing: --config, else $SELFRAG_CONFIG, else
    $XDG_CONFIG_HOME/selfrag/config.toml, else ~/.config/selfrag/config.toml."""
    if explicit:
        path, reason = Path(explicit), "--config"
    elif environ.get("SELFRAG_CONFIG"):
        path, reason = Path(environ["SELFRAG_CONFIG"]), "$SELFRAG_CONFIG"
    elif environ.get("XDG_CONFIG_HOME"):
        path, reason = Path(environ["XDG_CONFIG_HOME"]) / "selfrag" / "config.toml", "$XDG_CONFIG_HOME"
    else:
        path = Path(environ.get("HOME") or "~").expanduser() / ".config" / "selfrag" / "config.toml"
        reason = "~/.config"
    return ConfigLocation(path, reason, path.is_file())


def read_file(path: Path | None, *, required: bool) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        raw = read_regular(path, MAX_CONFIG_BYTES)  # a FIFO or device is refused, never waited on
    except FileNotFoundError:
        if required:
            raise ConfigError(f"config file not found: {path}") from None
        return {}
    except OSError as error:
        raise ConfigError(f"cannot read config file {path}: {error.strerror or error}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {path} is over {MAX_CONFIG_BYTES >> 10} KiB; not a selfrag config file")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"config file {path} is not valid TOML: {error}".splitlines()[0]) from None
    unknown = set(data) - KNOB_FIELDS - {"endpoint", "critic_endpoint"}
    if unknown:
        raise ConfigError(f"config file {path}: unknown setting(s) {', '.join(sorted(unknown))}")
    for table in ("endpoint", "critic_endpoint"):
        extra = set(data.get(table, {})) - ENDPOINT_FIELDS
        if extra:
            raise ConfigError(f"config file {path}: unknown [{table}] setting(s) {', '.join(sorted(extra))}")
    return data


def _from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    """SELFRAG_* variables as a layer shaped like the file (knobs at the top, the `endpoint` table)."""
    knobs = {n: environ[f"SELFRAG_{n.upper()}"] for n in KNOB_FIELDS if f"SELFRAG_{n.upper()}" in environ}
    endpoint = {n: environ[f"SELFRAG_{n.upper()}"] for n in ENDPOINT_FIELDS if f"SELFRAG_{n.upper()}" in environ}
    return {**knobs, "endpoint": endpoint}


Origin = typing.Callable[[str], str]  # a setting's name -> where its value came from, for a message
KIND_WORDS = {int: "a whole number", float: "a number", bool: "true or false", str: "a string"}
BOOL_AS_CHOICE = frozenset({"logprobs"})  # str settings that also read a TOML true/false (as on/off)
LIST_AS_COMMAS = frozenset({"supersede_from"})  # str settings (comma lists) that also read a TOML list of strings


def _convert(kind: Any, name: str, value: Any, source: str = "") -> Any:
    """A value from the environment or a REPL (a string, parsed) or from TOML or a caller (already typed, checked
    against the declared type: 2.5 is not a whole number, 1 is not true) as the field's type. `source` says where
    the value came from, for the message."""
    if isinstance(kind, str):
        kind = {"int": int, "float": float, "bool": bool, "str": str}.get(kind.split(" |")[0], str)
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(kind) if a is not type(None)]
        return None if value in (None, "", "none", "None") else _convert(inner[0], name, value, source)
    if not isinstance(value, str):
        _check_kind(kind, name, value, source)
        return value
    try:
        if kind is bool:
            if value.lower() not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                raise ValueError(value)
            return value.lower() in ("1", "true", "yes", "on")
        if kind in (int, float):
            return kind(value)
    except ValueError:
        raise _wrong_type(kind, name, repr(value), source) from None
    return value


def _check_kind(kind: Any, name: str, value: Any, source: str) -> None:
    """SettingTypeError unless `value` is of the declared `kind` (an int is a float; a bool is neither)."""
    if kind not in KIND_WORDS or (kind is str and name in BOOL_AS_CHOICE and isinstance(value, bool)):
        return  # an enum or a nested table: the dataclass checks it
    if kind is str and name in LIST_AS_COMMAS and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return
    allowed = {int: (int,), float: (int, float)}.get(kind)  # bool is an int to Python, never to a setting
    if not (type(value) in allowed if allowed else isinstance(value, kind)):
        raise _wrong_type(kind, name, str(value).lower() if isinstance(value, bool) else repr(value), source)


def _wrong_type(kind: type, name: str, shown: str, source: str) -> SettingTypeError:
    return SettingTypeError(f"{name} must be of type {kind.__name__} ({KIND_WORDS[kind]}), got {shown}{source}")


def typed_values(cls: type, values: Mapping[str, Any], where: Origin | None = None) -> dict[str, Any]:
    """Values (strings from the environment or a REPL, typed values from a TOML file or a caller) converted to
    the fields' types. `where(name)` names the value's origin for a message ("config file c.toml")."""
    hints = typing.get_type_hints(cls)
    return {
        name: _convert(hints[name], name, value, f" (from {where(name)})" if where else "")
        for name, value in values.items()
    }


def load_config(
    flags: Mapping[str, Any] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    config_file: str | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> Config:
    """The resolved Config: flag > SELFRAG_* environment > TOML file > `defaults` > the Config default.

    `flags` holds knob and endpoint names (None values are unset flags); endpoint flags use their plain names
    (base_url, model, ...), critic flags the prefix `critic_`. `defaults` holds knob names."""
    env = os.environ if environ is None else environ
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    _check_flags(flags)
    location = config_location(config_file, env)
    named = location.reason in ("--config", "$SELFRAG_CONFIG")  # a named file is read (or refused) as named
    data = read_file(location.path if named or location.exists else None, required=config_file is not None)
    return _merge(
        [
            (dict(defaults or {}), lambda name: "the caller's defaults"),
            (data, lambda name: f"config file {location.path}"),
            (_from_env(env), lambda name: f"${'SELFRAG_' + name.upper()}"),
            (_layer(flags), _flag_name),
        ]
    )


def _flag_name(name: str) -> str:
    return "--" + name.replace("_", "-")


def _layer(flags: Mapping[str, Any]) -> dict[str, Any]:
    """Flags as a layer shaped like the file: knobs at the top, `endpoint` and `critic_endpoint` tables."""
    knobs = {k: v for k, v in flags.items() if k in KNOB_FIELDS}
    endpoint = {k: v for k, v in flags.items() if k in ENDPOINT_FIELDS}
    critic = {k[len("critic_") :]: v for k, v in flags.items() if k.startswith("critic_") and k != "critic"}
    return {**knobs, "endpoint": endpoint, "critic_endpoint": critic}


def _merge(layers: list[tuple[Mapping[str, Any], Origin]]) -> Config:
    """Later layers win, field by field; the critic endpoint inherits what it does not set from the endpoint.
    Each layer's values are typed on their own, so a wrong type names the layer it came from."""
    knobs: dict[str, Any] = {}
    endpoint: dict[str, Any] = {}
    critic: dict[str, Any] = {}
    for layer, origin in layers:
        knobs.update(typed_values(Config, {k: v for k, v in layer.items() if k in KNOB_FIELDS}, origin))
        endpoint.update(typed_values(EndpointConfig, layer.get("endpoint", {}), origin))
        critic.update(typed_values(EndpointConfig, layer.get("critic_endpoint", {}), origin))
    critic_endpoint = None
    if critic:
        base = {k: v for k, v in endpoint.items() if k not in critic and k != "protocol"}  # a critic has its own
        critic_endpoint = EndpointConfig(**base, **critic)
    return Config(**knobs, endpoint=EndpointConfig(**endpoint), critic_endpoint=critic_endpoint)


def _check_flags(flags: Mapping[str, Any]) -> None:
    """Flag values checked on their own, so a bad one is a usage error whatever the file and environment say."""
    try:
        _merge([(_layer(flags), _flag_name)])
    except ConfigError as error:
        raise UsageError(str(error)) from None
