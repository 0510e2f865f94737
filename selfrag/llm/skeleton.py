"""What a JSON reply's schema makes it write next: the guesses of the embedded decoder's structured replies.

A reply constrained by a flat object schema (every property required, in the schema's order, as llama.cpp's
schema grammar lays them out) has long stretches that the schema alone decides: a key's name and its colon once
its opening quote is written, the rest of an enum value once its first letters single out one choice, the comma
and the next key after a value. `Skeleton.ahead(text)` is that stretch after the text written so far, with the
optional spaces the grammar allows guessed as the reply spaced them last (json.dumps' spacing until it has).
The decoder checks a guess against the model's own picks, so a wrong guess costs rows, never text.

Anything the walk does not recognise (a nested value, an optional property, text outside the grammar) gives no
guess: the schema is `None` for a shape it cannot follow, and `ahead` is "" where the text left the known path.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KINDS = ("string", "integer", "number", "boolean")


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    kind: str  # one of KINDS
    choices: tuple[str, ...] = ()  # the enum's values as JSON text ('"fully"', '3'); empty: any value


@dataclass(slots=True)
class _Spacing:
    """The optional spaces as the reply wrote them last (the grammar allows one space or none)."""

    open: str = ""  # after "{"
    colon: str = ""  # between a key's closing quote and its colon
    value: str = " "  # after the colon
    comma: str = ""  # between a value and its comma
    key: str = " "  # after the comma


@dataclass(frozen=True, slots=True)
class Skeleton:
    fields: tuple[Field, ...]

    @classmethod
    def of(cls, schema: Any) -> Skeleton | None:
        """The skeleton of a flat object schema whose properties are all required, else None."""
        if not isinstance(schema, Mapping) or schema.get("type") != "object":
            return None
        properties, required = schema.get("properties"), schema.get("required")
        if not isinstance(properties, Mapping) or not properties or not isinstance(required, list):
            return None
        if set(required) != set(properties):
            return None
        fields = []
        for name, spec in properties.items():
            if not isinstance(name, str) or not isinstance(spec, Mapping) or spec.get("type") not in KINDS:
                return None
            if '"' in name or "\\" in name:
                return None
            enum = spec.get("enum")
            if enum is not None and (not isinstance(enum, list) or not enum):
                return None
            choices = tuple(json.dumps(value, ensure_ascii=False) for value in enum) if enum else ()
            fields.append(Field(name, spec["type"], choices))
        return cls(tuple(fields))

    @classmethod
    def of_response_format(cls, response_format: Any) -> Skeleton | None:
        """The skeleton of an OpenAI response_format's schema (json_schema, or llama.cpp's json_object + schema)."""
        if not isinstance(response_format, Mapping):
            return None
        if response_format.get("type") == "json_schema":
            inner = response_format.get("json_schema")
            return cls.of(inner.get("schema")) if isinstance(inner, Mapping) else None
        if response_format.get("type") == "json_object":
            return cls.of(response_format.get("schema"))
        return None

    def ahead(self, text: str) -> str:
        """The characters the schema decides after `text` (with the spaces guessed), "" when it decides none."""
        spacing = _Spacing()
        if not text:
            return "{" + spacing.open + self._key(0, spacing)
        if text[0] != "{":
            return ""
        at = 1
        for index, spec in enumerate(self.fields):
            gap = _skip(text, at)  # the space before the key
            if gap == len(text):
                before = spacing.open if index == 0 else spacing.key
                return ("" if gap > at else before) + self._key(index, spacing)
            if index == 0:
                spacing.open = text[at:gap]
            else:
                spacing.key = text[at:gap]
            key = json.dumps(spec.name)
            written = text[gap : gap + len(key)]
            if not key.startswith(written):
                return ""
            if len(written) < len(key):
                return key[len(written) :] + spacing.colon + ":" + spacing.value + _opening(spec)
            at = gap + len(key)
            gap = _skip(text, at)  # the space before the colon
            if gap == len(text):
                return ("" if gap > at else spacing.colon) + ":" + spacing.value + _opening(spec)
            if text[gap] != ":":
                return ""
            spacing.colon, at = text[at:gap], gap + 1
            gap = _skip(text, at)  # the space before the value
            if gap == len(text):
                return ("" if gap > at else spacing.value) + _opening(spec)
            spacing.value = text[at:gap]
            end, rest = _value(text, gap, spec)
            if end is None:
                return rest + spacing.comma + self._next(index, spacing) if rest else ""
            at = end
            gap = _skip(text, at)  # the space before the comma
            if gap == len(text):
                return ("" if gap > at else spacing.comma) + self._next(index, spacing)
            if text[gap] != ("}" if index == len(self.fields) - 1 else ","):
                return ""
            spacing.comma, at = text[at:gap], gap + 1
        return ""

    def _key(self, index: int, spacing: _Spacing) -> str:
        """Field `index`'s key, its colon and what its value starts with."""
        spec = self.fields[index]
        return json.dumps(spec.name) + spacing.colon + ":" + spacing.value + _opening(spec)

    def _next(self, index: int, spacing: _Spacing) -> str:
        """After the value of field `index` and the space before its comma: the comma and the next key, or the
        closing brace."""
        if index == len(self.fields) - 1:
            return "}"
        return "," + spacing.key + self._key(index + 1, spacing)


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\n\r":
        at += 1
    return at


def _opening(spec: Field) -> str:
    """What a value of this field starts with for sure: a lone choice whole, a string's quote, else nothing."""
    if len(spec.choices) == 1:
        return spec.choices[0]
    if spec.kind == "string" and (not spec.choices or all(c.startswith('"') for c in spec.choices)):
        return '"'
    return ""


def _value(text: str, at: int, spec: Field) -> tuple[int | None, str]:
    """(where the value starting at `at` ends, "") once it is written whole and something follows it or nothing
    can; else (None, the rest of it the schema decides: "" when it decides none)."""
    written = text[at:]
    if spec.choices or spec.kind == "boolean":
        choices = spec.choices or ("true", "false")
        whole = [c for c in choices if written.startswith(c)]
        longer = [c for c in choices if c.startswith(written) and c != written]
        if whole and (len(written) > len(max(whole, key=len)) or not longer):
            return at + len(max(whole, key=len)), ""
        return (None, longer[0][len(written) :]) if len(longer) == 1 and not whole else (None, "")
    if spec.kind == "string":
        if text[at] != '"':
            return None, ""
        i = at + 1
        while i < len(text):
            if text[i] == "\\":
                i += 2
            elif text[i] == '"':
                return i + 1, ""
            else:
                i += 1
        return None, ""
    i = at  # a number ends where a character that cannot continue it is written
    while i < len(text) and text[i] in "+-0123456789.eE":
        i += 1
    return (i, "") if at < i < len(text) else (None, "")
