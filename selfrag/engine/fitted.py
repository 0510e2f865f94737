"""Weights that know their model: which model a weights file was fitted for, where the weights `selfrag calibrate`
fits for an endpoint's model live, and which weights rate an answer on an endpoint.

    FittedFor    a weights file's `model` block: the model id, the endpoint (base URL without user:password, or
                 "embedded"), the server's identity when it reported one (`llm.capcache.server_identity`)
    EMBEDDED     what a file without a model block was fitted for (the shipped weights, files from before the
                 block): the embedded SmolLM2-135M-Instruct
    place, find  <data folder>/weights/<model slug>-<hash of endpoint and model>.json, the data folder being
                 `files.cache_dir`; the hash is of what is known before any call (the endpoint and the model as
                 configured, none for the endpoint's first), the slug of the model id for people to read
    pick         a config's scorer made concrete for a model on an endpoint (never the embedded model, which keeps
                 the shipped weights): weights named or calibrated for it make the scorer evidence
    scoring      `pick`, then `config.resolve_scorer`, for the endpoint a config names: the scorer and weights a
                 SelfRAG that opens its own chat rates with (the command line checks and reports this one)
    other_model  the one warning line when the weights in use were fitted for another model than the one answering

Pure but for `find`, which lists one folder; nothing here reads a weights file (`engine.calibration` does).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import Config, ResolvedEndpoint, redact_url, resolve_endpoint, resolve_scorer
from ..errors import ConfigError
from ..files import cache_dir, named_cache_dir

EMBEDDED_ENDPOINT = "embedded"
EMBEDDED_MODEL = "SmolLM2-135M-Instruct"  # llm.local.MODEL_ALIAS, what the embedded server lists (a test pins it)
WEIGHTS_FOLDER = "weights"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True, slots=True)
class FittedFor:
    """The model a weights file was fitted for: its id as the endpoint reported it (`Capabilities.model`), where it
    was served, and the server's identity when known (the model file, build and slots of a llama.cpp server)."""

    model: str
    endpoint: str
    identity: str = ""

    def describe(self) -> str:
        if self.endpoint == EMBEDDED_ENDPOINT:
            return f"{self.model} (the embedded model)"
        return f"{self.model} at {self.endpoint}"

    def to_dict(self) -> dict[str, str]:
        body = {"id": self.model, "endpoint": self.endpoint}
        return {**body, "identity": self.identity} if self.identity else body


EMBEDDED = FittedFor(EMBEDDED_MODEL, EMBEDDED_ENDPOINT)


def parse_fitted_for(value: Any, where: str) -> FittedFor:
    """A `model` block as `FittedFor.to_dict` writes it; ConfigError naming `where` otherwise."""
    said = value if isinstance(value, dict) else {}
    model, endpoint, identity = said.get("id"), said.get("endpoint"), said.get("identity", "")
    if not (_text(model, 500) and _text(endpoint, 500) and (identity == "" or _text(identity, 200))):
        raise ConfigError(
            f'{where}: model must be {{"id": ..., "endpoint": ...}}, the model the weights were fitted for; refit them'
        )
    return FittedFor(str(model), str(endpoint), str(identity))


def _text(value: Any, most: int) -> bool:
    return isinstance(value, str) and 0 < len(value.strip()) and len(value) <= most


def endpoint_name(resolved: ResolvedEndpoint) -> str:
    """How weights name an endpoint: "embedded", the base URL without user:password, or "openai" (the SDK's)."""
    if resolved.nothing_configured:
        return EMBEDDED_ENDPOINT
    return redact_url(resolved.base_url or "openai").rstrip("/")


def key(endpoint: str, model: str | None) -> str:
    """The short hash that names an endpoint's model among the weights files (`model` as configured; None: the
    endpoint's first)."""
    return hashlib.sha256(f"{endpoint}\0{model or ''}".encode()).hexdigest()[:12]


def place(environ: Mapping[str, str], endpoint: str, model: str | None, model_id: str) -> Path:
    """Where `selfrag calibrate` writes the weights of `model` (as configured) at `endpoint`; `model_id`, what the
    endpoint reported, names the file for people."""
    slug = _UNSAFE.sub("-", model_id or model or "model").strip("-.")[:48] or "model"
    return cache_dir(environ) / WEIGHTS_FOLDER / f"{slug}-{key(endpoint, model)}.json"


def find(environ: Mapping[str, str], endpoint: str, model: str | None) -> Path | None:
    """The weights calibrated for `model` (as configured) at `endpoint`: the newest file of its hash, if any; none
    for an environment that names no data folder ($SELFRAG_HOME, $XDG_CACHE_HOME, $HOME), as code that passes an
    empty one asks (`files.named_cache_dir`)."""
    data = named_cache_dir(environ)
    if data is None:
        return None
    try:
        found = [p for p in (data / WEIGHTS_FOLDER).glob(f"*-{key(endpoint, model)}.json") if p.is_file()]
        return max(found, key=lambda p: (p.stat().st_mtime, p.name)) if found else None
    except OSError:  # the folder or a file vanished while it was read: as if none were there
        return None


def pick(config: Config, endpoint: str, environ: Mapping[str, str]) -> Config:
    """The config's scorer made concrete for a model on an endpoint (not the embedded one): weights named
    (`scorer_weights`) or calibrated for this endpoint and model (`find`) make the scorer evidence, unless it is
    the paper's; with none, scorer auto stays for `config.resolve_scorer` (the paper's), and the evidence scorer is
    refused: the shipped weights were fitted on the embedded model's labels."""
    if config.scorer == "paper":
        return config
    weights = config.scorer_weights or find(environ, endpoint, config.endpoint.model)
    if weights is None:
        if config.scorer == "evidence":
            raise ConfigError(no_weights(endpoint, config.endpoint.model))
        return config
    return config.with_values(scorer="evidence", scorer_weights=str(weights))


def scoring(config: Config, environ: Mapping[str, str]) -> Config:
    """The config with its scorer and weights made concrete for the chat model it names: the embedded model's
    (`resolve_scorer`: evidence with the shipped weights unless told otherwise), or an endpoint's (`pick` first);
    ConfigError where the evidence scorer has no weights for an endpoint's model."""
    endpoint = resolve_endpoint(config.endpoint, environ)
    embedded = endpoint.nothing_configured
    return resolve_scorer(config if embedded else pick(config, endpoint_name(endpoint), environ), embedded=embedded)


def no_weights(endpoint: str, model: str | None) -> str:
    which = model or "the endpoint's first model"
    return (
        f"the evidence scorer has no weights for {which} at {endpoint} (the shipped ones are the embedded model's): "
        "fit them with `selfrag calibrate --index INDEX` and the same endpoint flags, or pass --scorer-weights FILE"
    )


def other_model(fitted: FittedFor, model: str, weights: str) -> str:
    """ "" when the weights were fitted for `model` (the id the endpoint reports), else the one warning line."""
    if not model or model == fitted.model:
        return ""
    return (
        f"the critic weights {weights} were fitted for {fitted.describe()}, not {model}: their cut and confidence "
        "speak for that model; run `selfrag calibrate` for this one"
    )
