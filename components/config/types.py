"""The types of the settings, checked by pydantic when a config is loaded, and `setting()`, which
declares a field with its default and its explanation (shown by `tfx-audio settings` and
docs/settings.md, the way Hugging Face's argument dataclasses carry a `help`)."""
from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

import pydantic
import pydantic_core
from pydantic import Field

HELP = "help"  # the key of a field's explanation in its dataclasses metadata


def setting(default=dataclasses.MISSING, help: str = "", *, factory=dataclasses.MISSING):
    """A dataclass field with its default (or default factory) and its one-paragraph explanation."""
    return dataclasses.field(default=default, default_factory=factory, metadata={HELP: help})


# Types of the settings, checked by pydantic when a config is loaded (`PipelineConfig.from_dict`):
# a bool is neither an int nor a number, an int is a number, and a string that reads as a
# number is one (YAML 1.1 reads 3e-5, without a dot, as a string).
def _not_a_bool(value):
    if isinstance(value, bool):
        raise pydantic_core.PydanticCustomError("number_type", "Input should be a number, not a boolean")
    return value


Int = Annotated[int, pydantic.Strict()]
Bool = Annotated[bool, pydantic.Strict()]
Float = Annotated[float, pydantic.BeforeValidator(_not_a_bool)]
PositiveInt = Annotated[Int, Field(ge=1)]
Count = Annotated[Int, Field(ge=0)]
Positive = Annotated[Float, Field(gt=0)]  # seconds, sizes, frequencies
NonNegative = Annotated[Float, Field(ge=0)]
Fraction = Annotated[Float, Field(ge=0, le=1)]  # probabilities, ratios

ExampleCompression = Literal["none", "gzip"]
Layout = Literal["folders", "paired"]
Tracks = Literal["mix", "split"]
Segmentation = Literal["fixed", "vad"]
UnlabelledSpans = Literal["drop", "background"]
OnAnomalies = Literal["fail", "warn"]
Objective = Literal["classify", "denoise", "joint"]
