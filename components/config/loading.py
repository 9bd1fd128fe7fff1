"""Loading a configuration: a YAML file and `section.key=value` overrides, validated by pydantic with
errors that name the setting, the value and what is allowed."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import yaml

from components.config.checking import ConfigError
from components.config.run import PipelineConfig


def load_config(path: Optional[str] = None, overrides: Optional[List[str]] = None) -> PipelineConfig:
    """Loads a YAML config (or the defaults) and applies `section.key=value` overrides."""
    values: Dict[str, Any] = {}
    if path:
        with open(path) as f:
            values = yaml.safe_load(f) or {}
    for item in overrides or []:
        if "=" not in item:
            raise ValueError(f"override {item!r}: expected section.key=value")
        dotted, raw = item.split("=", 1)
        node = values
        keys = dotted.split(".")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
            if not isinstance(node, dict):
                raise ConfigError(f"override {item!r}: {key} is not a section")
        try:
            node[keys[-1]] = yaml.safe_load(raw)  # so 3 is an int, true a bool, [] a list
        except yaml.YAMLError:  # e.g. */*.wav: * starts a YAML alias
            node[keys[-1]] = raw
    return PipelineConfig.from_dict(values)
