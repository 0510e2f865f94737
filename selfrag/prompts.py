"""Prompt files: one TOML file per prompt in `prompts/`, with declared inputs and a reply model.

Each file holds `name` (= file stem), `version`, `description`, `inputs` (the $variables it uses, no more, no
less), `response_model` (a class in `selfrag.engine.replies`), `system` and `user`. Rendering uses `string.Template`
with `substitute`, so a missing value is an error, never an empty string; a literal dollar sign is `$$`.

The folder is found in the installed wheel (`selfrag/prompts`, force-included at build time) or, for an
editable install or a checkout, at the top of the source tree; a config value may point elsewhere.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template

from pydantic import BaseModel, ConfigDict, ValidationError

from .engine.replies import REPLY_MODELS
from .errors import ConfigError
from .llm.base import Message


class PromptSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    version: int
    description: str
    inputs: list[str]
    response_model: str
    system: str
    user: str


@dataclass(frozen=True, slots=True)
class Prompt:
    spec: PromptSpec
    system: Template
    user: Template

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def reply_model(self) -> type[BaseModel]:
        return REPLY_MODELS[self.spec.response_model]

    def render(self, **values: str) -> tuple[Message, ...]:
        declared = set(self.spec.inputs)
        if set(values) != declared:
            missing, extra = sorted(declared - set(values)), sorted(set(values) - declared)
            raise ConfigError(f"prompt {self.name!r}: missing inputs {missing}, undeclared inputs {extra}")
        return (
            Message("system", self.system.substitute(values)),
            Message("user", self.user.substitute(values)),
        )


def prompts_dir() -> Path:
    """The prompt folder of an installed wheel, else of the source tree."""
    packaged = resources.files("selfrag") / "prompts"
    if packaged.is_dir():
        return Path(str(packaged))
    source = Path(__file__).resolve().parent.parent / "prompts"
    if source.is_dir():
        return source
    raise ConfigError("the prompts folder is missing from this installation: reinstall selfrag")


def load_prompt(path: Path) -> Prompt:
    try:
        spec = PromptSpec.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
    except (OSError, tomllib.TOMLDecodeError, ValidationError) as error:
        raise ConfigError(f"prompt file {path.name} is invalid: {error}".splitlines()[0]) from None
    if spec.name != path.stem:
        raise ConfigError(f"prompt file {path.name} declares name {spec.name!r}; it must equal the file stem")
    if spec.response_model not in REPLY_MODELS:
        raise ConfigError(f"prompt {spec.name!r}: unknown response_model {spec.response_model!r}")
    system, user = Template(spec.system), Template(spec.user)
    for template in (system, user):
        if not template.is_valid():
            raise ConfigError(f"prompt {spec.name!r}: a '$' not followed by a name; write a literal $ as $$")
    used = set(system.get_identifiers()) | set(user.get_identifiers())
    if used != set(spec.inputs):
        raise ConfigError(
            f"prompt {spec.name!r}: placeholders {sorted(used)} differ from declared inputs {sorted(spec.inputs)}"
        )
    return Prompt(spec, system, user)


class PromptBook:
    """All prompts of one folder, loaded and checked once."""

    def __init__(self, folder: Path | None = None) -> None:
        folder = folder or prompts_dir()
        files = sorted(folder.glob("*.toml"))
        if not files:
            raise ConfigError(f"no prompt files (*.toml) in {folder}")
        self._prompts = {prompt.name: prompt for prompt in map(load_prompt, files)}

    def __getitem__(self, name: str) -> Prompt:
        try:
            return self._prompts[name]
        except KeyError:
            raise ConfigError(f"unknown prompt {name!r}; known: {', '.join(sorted(self._prompts))}") from None

    def names(self) -> list[str]:
        return sorted(self._prompts)

    def versions(self) -> dict[str, int]:
        return {name: prompt.spec.version for name, prompt in self._prompts.items()}
