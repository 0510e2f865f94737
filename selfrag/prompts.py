"""Prompt files: one TOML file per prompt, with declared inputs and a reply model.

Each file holds `name` (= file stem), `version`, `description`, `inputs` (the $variables it uses, no more, no
less), `response_model` (the name of one of the reply models the book was given), `system` and `user`.
Rendering uses `string.Template` with `substitute`, so a missing value is an error, never an empty string; a
literal dollar sign is `$$`.

The prompt files live in `prompts/` at the repository's root, their one home: the engine's at its top, the
benchmarks' in `prompts/bench/`. The engine's reply models are in `selfrag.llm.replies`: a `PromptBook()` loads
those. The benchmarks' book adds their own folder and reply models (`selfrag.bench`). The wheel carries the
folder as `selfrag/data/prompts/` (hatchling's force-include); `prompts_dir()` finds it there, else in the
checkout the package was imported from (an editable install or a source tree).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from string import Template

from pydantic import BaseModel, ConfigDict, ValidationError

from .errors import ConfigError
from .llm.base import Message
from .llm.replies import REPLY_MODELS

ReplyModels = Mapping[str, type[BaseModel]]  # response_model name -> the pydantic model of the reply


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
    reply_model: type[BaseModel]

    @property
    def name(self) -> str:
        return self.spec.name

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
    """The prompt folder: the wheel's copy (`selfrag/data/prompts`), else `prompts/` of the source checkout this
    package was imported from (a checkout has its pyproject.toml beside the package)."""
    package = Path(__file__).resolve().parent
    checkout = package.parent
    for folder in (package / "data" / "prompts", checkout / "prompts"):
        if folder.is_dir() and (folder is not checkout / "prompts" or (checkout / "pyproject.toml").is_file()):
            return folder
    raise ConfigError("the prompts folder is missing from this installation: reinstall selfrag")


def load_prompt(path: Path, models: ReplyModels = REPLY_MODELS) -> Prompt:
    try:
        spec = PromptSpec.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
    except (OSError, tomllib.TOMLDecodeError, ValidationError) as error:
        raise ConfigError(f"prompt file {path.name} is invalid: {error}".splitlines()[0]) from None
    if spec.name != path.stem:
        raise ConfigError(f"prompt file {path.name} declares name {spec.name!r}; it must equal the file stem")
    if spec.response_model not in models:
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
    return Prompt(spec, system, user, models[spec.response_model])


class PromptBook:
    """The prompts of some folders, loaded and checked once against the reply models they may use.

    `PromptBook()` is the engine's book: its folder and its reply models. A name may appear in one folder only.
    """

    def __init__(self, *folders: Path, models: ReplyModels = REPLY_MODELS) -> None:
        self._prompts: dict[str, Prompt] = {}
        for folder in folders or (prompts_dir(),):
            files = sorted(folder.glob("*.toml"))
            if not files:
                raise ConfigError(f"no prompt files (*.toml) in {folder}")
            loaded = {prompt.name: prompt for prompt in (load_prompt(path, models) for path in files)}
            clash = sorted(set(loaded) & set(self._prompts))
            if clash:
                raise ConfigError(f"prompts {clash} of {folder} clash with prompts of the same name in another folder")
            self._prompts.update(loaded)

    def __getitem__(self, name: str) -> Prompt:
        try:
            return self._prompts[name]
        except KeyError:
            raise ConfigError(f"unknown prompt {name!r}; known: {', '.join(sorted(self._prompts))}") from None

    def names(self) -> list[str]:
        return sorted(self._prompts)

    def versions(self) -> dict[str, int]:
        return {name: prompt.spec.version for name, prompt in self._prompts.items()}
