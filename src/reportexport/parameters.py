"""Typed parameters of a saved query: validation with errors that name the rule broken."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

TYPES = ("string", "integer", "number", "boolean", "date", "timestamp", "enum")


class ParameterError(ValueError):
    """A parameter value that breaks a rule; `parameter` and `rule` say which."""

    def __init__(self, parameter: str, rule: str, message: str) -> None:
        super().__init__(f"parameter {parameter!r}: {message}")
        self.parameter = parameter
        self.rule = rule
        self.message = message


@dataclass(frozen=True, kw_only=True)
class ParamSpec:
    name: str
    type: str
    required: bool = True
    default: Any = None
    description: str = ""
    min: Any = None
    max: Any = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    choices: tuple[str, ...] = field(default_factory=tuple)

    def describe(self) -> dict[str, Any]:
        """The spec as plain JSON-able data (for a job's snapshot and the API)."""
        data: dict[str, Any] = {"name": self.name, "type": self.type, "required": self.required}
        for key in ("default", "min", "max", "min_length", "max_length", "pattern"):
            value = getattr(self, key)
            if value is not None:
                data[key] = encode(value)
        if self.choices:
            data["choices"] = list(self.choices)
        if self.description:
            data["description"] = self.description
        return data


def coerce(spec: ParamSpec, raw: Any) -> Any:
    """The typed value of `raw` (JSON or text, as a form or CLI sends it), or ParameterError."""
    name = spec.name
    kind = spec.type
    try:
        if kind in ("string", "enum"):
            if not isinstance(raw, str):
                raise ParameterError(name, "type", f"expected text, got {_kind(raw)}")
            value: Any = raw
        elif kind == "integer":
            if isinstance(raw, bool) or not isinstance(raw, int | str):
                raise ParameterError(name, "type", f"expected an integer, got {_kind(raw)}")
            value = int(raw)
        elif kind == "number":
            if isinstance(raw, bool) or not isinstance(raw, int | float | str):
                raise ParameterError(name, "type", f"expected a number, got {_kind(raw)}")
            value = Decimal(str(raw))
            if not value.is_finite():
                raise ParameterError(name, "type", "expected a finite number")
        elif kind == "boolean":
            value = _boolean(name, raw)
        elif kind == "date":
            value = date.fromisoformat(_text(name, raw, "a date (YYYY-MM-DD)"))
        elif kind == "timestamp":
            value = datetime.fromisoformat(_text(name, raw, "a timestamp (ISO 8601)"))
            if value.tzinfo is None:
                value = value.replace(tzinfo=UTC)
        else:
            raise ParameterError(name, "type", f"unknown parameter type {kind!r}")
    except (ValueError, ArithmeticError) as exc:
        if isinstance(exc, ParameterError):
            raise
        raise ParameterError(name, "type", f"{raw!r} is not a valid {kind}") from None
    return value


def check_rules(spec: ParamSpec, value: Any) -> None:
    name = spec.name
    if spec.type == "enum" and value not in spec.choices:
        raise ParameterError(name, "choices", f"{value!r} is not one of {', '.join(spec.choices)}")
    if isinstance(value, str):
        if spec.min_length is not None and len(value) < spec.min_length:
            raise ParameterError(name, "min_length", f"needs at least {spec.min_length} characters")
        if spec.max_length is not None and len(value) > spec.max_length:
            raise ParameterError(name, "max_length", f"takes at most {spec.max_length} characters")
        if spec.pattern is not None and not re.fullmatch(spec.pattern, value):
            raise ParameterError(name, "pattern", f"must match {spec.pattern}")
    if spec.min is not None and value < coerce(spec, spec.min):
        raise ParameterError(name, "min", f"must be at least {encode(spec.min)}")
    if spec.max is not None and value > coerce(spec, spec.max):
        raise ParameterError(name, "max", f"must be at most {encode(spec.max)}")


def validate(specs: Mapping[str, ParamSpec], raw: Mapping[str, Any]) -> dict[str, Any]:
    """Typed values for every parameter, defaults filled in; unknown names are refused."""
    unknown = sorted(set(raw) - set(specs))
    if unknown:
        raise ParameterError(unknown[0], "unknown", "is not a parameter of this saved query")
    values: dict[str, Any] = {}
    for name, spec in specs.items():
        if name in raw and raw[name] is not None and raw[name] != "":
            value = coerce(spec, raw[name])
        elif spec.default is not None:
            value = coerce(spec, spec.default)
        elif spec.required:
            raise ParameterError(name, "required", "is required")
        else:
            values[name] = None
            continue
        check_rules(spec, value)
        values[name] = value
    return values


def encode(value: Any) -> Any:
    """A typed value as JSON: dates and timestamps in ISO 8601, numbers as exact text."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value


def decode(spec: ParamSpec, value: Any) -> Any:
    return None if value is None else coerce(spec, value)


def _boolean(name: str, raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.lower() in {
        "true",
        "false",
        "1",
        "0",
        "yes",
        "no",
        "on",
        "off",
    }:
        return raw.lower() in {"true", "1", "yes", "on"}
    raise ParameterError(name, "type", f"expected true or false, got {raw!r}")


def _text(name: str, raw: Any, what: str) -> str:
    if not isinstance(raw, str):
        raise ParameterError(name, "type", f"expected {what}, got {_kind(raw)}")
    return raw


def _kind(raw: Any) -> str:
    if isinstance(raw, bool):
        return "a boolean"
    if isinstance(raw, int | float):
        return "a number" if not (isinstance(raw, float) and math.isnan(raw)) else "NaN"
    if raw is None:
        return "nothing"
    return type(raw).__name__
