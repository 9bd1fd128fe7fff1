"""Checking a configuration: pydantic validates the dataclass tree, and every problem becomes one line
that names the setting, the value and what is allowed."""
from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Any, Dict, List

import pydantic


class ConfigError(ValueError):
    """An invalid configuration: one line per problem, each naming the setting, the value and what is allowed."""


# pydantic validates the dataclasses as they are (not dacite: it checks types only), so they stay plain
# dataclasses: built directly (tests), copied with dataclasses.replace, dumped with asdict.
# Types, ranges and choices are the field annotations above; the cross-field checks are the
# __post_init__ methods, which pydantic runs after the fields.
@functools.lru_cache(maxsize=None)
def _adapter(root: type) -> pydantic.TypeAdapter:
    pending = [root]
    while pending:  # every dataclass of the tree rejects keys it does not know
        cls = pending.pop()
        cls.__pydantic_config__ = pydantic.ConfigDict(extra="forbid")
        pending += [t for t in typing.get_type_hints(cls).values() if dataclasses.is_dataclass(t)]
    return pydantic.TypeAdapter(root)


def _dotted(path) -> str:
    return "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in path).lstrip(".")


def validate(root: type, values: Dict[str, Any]):
    """`values` as an instance of the dataclass `root`, checked; a ConfigError lists every problem."""
    try:
        return _adapter(root).validate_python(values)
    except pydantic.ValidationError as e:
        unknown: Dict[tuple, List[str]] = {}
        lines = []
        for error in e.errors():
            path, message = error["loc"], error["msg"]
            if error["type"] == "unexpected_keyword_argument":
                unknown.setdefault(path[:-1], []).append(path[-1])
            elif error["type"] == "value_error":  # a cross-field check (__post_init__): it names the keys
                message = message.removeprefix("Value error, ")
                lines.append(message if not path or _dotted(path) in message else f"{_dotted(path)}: {message}")
            else:  # e.g. trainer.epochs: got 'abc', expected a valid integer
                if message.startswith("Input should be "):
                    message = "expected " + message.removeprefix("Input should be ")
                    message = message.replace("expected greater", "expected a value greater")
                    message = message.replace("expected less", "expected a value less")
                lines.append(f"{_dotted(path) or 'config'}: got {error['input']!r}, {message}")
        for parent, names in unknown.items():
            cls = root
            for key in parent:
                cls = typing.get_type_hints(cls)[key]
            known = sorted(f.name for f in dataclasses.fields(cls))
            lines.append(f"{'.'.join(('config',) + parent)}: unknown setting(s) {sorted(names)}; known: {known}")
        raise ConfigError("\n".join(lines)) from None
