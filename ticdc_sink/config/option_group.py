"""Options as users give them (strings), parsed and checked: what the sink's and each protocol's options share.

An option group is a frozen dataclass whose fields are options: ``max_batch_size``
is the option ``max-batch-size``.  A field's metadata may set its ``minimum``
(integers) or its ``choices`` (strings); its repr masks secrets, since reprs
reach logs, Spark's UI and tracebacks.
"""

from __future__ import annotations

from dataclasses import Field, fields
from typing import Mapping

from ..errors import ConfigError
from ..redact import mask

_TRUE = {"1", "t", "true"}
_FALSE = {"0", "f", "false"}
SETTINGS = "settings"  # the metadata of a field of (setting, value) pairs: client settings, masked one by one
APART = "apart"  # the metadata of a field that no option of its name sets


def option_name(field: Field) -> str:
    return field.name.replace("_", "-")


def parse_bool(name: str, value: str) -> bool:
    lowered = str(value).strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ConfigError(name, value, "expected true or false")


def parse_int(name: str, value: str, minimum: int, maximum: int = 2**63 - 1) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ConfigError(name, value, f"expected an integer in {minimum}..{maximum}") from None
    if not minimum <= number <= maximum:
        raise ConfigError(name, value, f"expected an integer in {minimum}..{maximum}")
    return number


def parse_choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    lowered = str(value).strip().lower()
    if lowered not in choices:
        raise ConfigError(name, value, f"expected one of {', '.join(choices)}")
    return lowered


class OptionGroup:
    """A frozen dataclass of options (see the module's docstring)."""

    @classmethod
    def option_fields(cls) -> dict[str, Field]:
        """Option name -> field, for the fields users set by name (not the settings pairs)."""
        return {option_name(f): f for f in fields(cls) if not (f.metadata.get(SETTINGS) or f.metadata.get(APART))}

    @classmethod
    def parse_values(cls, values: Mapping[str, str]) -> dict[str, object]:
        """Field name -> parsed value of the options of ``values`` that this group has."""
        known = cls.option_fields()
        return {known[key].name: _parse(key, raw, known[key]) for key, raw in values.items() if key in known}

    def __repr__(self) -> str:
        shown = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.metadata.get(SETTINGS):
                value = tuple((setting, mask(setting, v)) for setting, v in value)
            else:
                value = mask(option_name(f), value)
            shown.append(f"{f.name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"


def _parse(key: str, raw: str, field: Field) -> object:
    if field.type == "bool":
        return parse_bool(key, raw)
    if field.type == "int":
        return parse_int(key, raw, field.metadata.get("minimum", 0))
    if "choices" in field.metadata:
        return parse_choice(key, raw, field.metadata["choices"])
    return raw if field.metadata.get("verbatim") else raw.strip()
