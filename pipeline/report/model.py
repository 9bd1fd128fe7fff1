"""The report's content as plain data: sections of tables, figures and sounds.

Every figure is drawn from the rows it carries, and the page writes those rows
beside it as CSV, so what a plot shows can be read back as numbers."""
from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional


@dataclasses.dataclass
class Item:
    """A table, or a figure with its rows (written as data/<name>.csv)."""
    name: str
    title: str
    rows: List[dict]
    png: Optional[bytes] = None  # None: shown as a table
    caption: str = ""


@dataclasses.dataclass
class Sound:
    """A piece of audio to listen to: WAV bytes by name (noisy, enhanced, clean) and
    its spectrograms as an Item."""
    title: str
    wavs: Dict[str, bytes]
    spectrograms: Item


@dataclasses.dataclass
class Section:
    title: str
    items: List[Item] = dataclasses.field(default_factory=list)
    sounds: List[Sound] = dataclasses.field(default_factory=list)
    notes: List[str] = dataclasses.field(default_factory=list)  # one sentence each, e.g. what is missing
