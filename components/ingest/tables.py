"""The WAV ExampleGen's tables: `metadata.csv` (audiofolder style, a row per file) and `segments.csv`
(labelled spans, a row per span), read and checked; columns from `components.features`."""
from __future__ import annotations

import csv
import io
import os
from typing import Dict, List, Tuple

from apache_beam.io.filesystems import FileSystems

from components import features


def _read_csv(path: str, required: Tuple[str, ...], columns: Tuple[str, ...]) -> List[Tuple[int, Dict[str, str]]]:
    with FileSystems.open(path) as f:
        reader = csv.DictReader(io.StringIO(f.read().decode("utf-8-sig")))
    missing = set(required) - set(reader.fieldnames or [])
    if missing:
        raise ValueError(f"{path}: header lacks required column(s) {sorted(missing)}; "
                         f"expected {','.join(columns)}")
    rows = []
    for line_no, row in enumerate(reader, start=2):
        row = {k: (row.get(k) or "").strip() for k in columns}
        if not row[features.FILE_NAME]:
            raise ValueError(f"{path}:{line_no}: empty file_name")
        rows.append((line_no, row))
    return rows


def read_metadata(input_base: str, metadata_file: str) -> Dict[str, Dict[str, str]]:
    """Reads metadata.csv into {file_name: row}; a missing file means no metadata."""
    path = os.path.join(input_base, metadata_file)
    if not metadata_file or not FileSystems.exists(path):
        return {}
    rows: Dict[str, Dict[str, str]] = {}
    for line_no, row in _read_csv(path, features.METADATA_REQUIRED, features.METADATA_COLUMNS):
        if row[features.FILE_NAME] in rows:
            raise ValueError(f"{path}:{line_no}: {row['file_name']} is listed twice")
        rows[row[features.FILE_NAME]] = row
    return rows


def read_segments(input_base: str, segments_file: str) -> Dict[str, List[Tuple[float, float, str]]]:
    """Reads segments.csv into {file_name: [(start_s, end_s, label)]}, checked: numbers,
    end after start, a label, no overlap within a file."""
    path = os.path.join(input_base, segments_file)
    if not segments_file or not FileSystems.exists(path):
        return {}
    spans: Dict[str, List[Tuple[float, float, str, int]]] = {}
    for line_no, row in _read_csv(path, features.SEGMENT_COLUMNS, features.SEGMENT_COLUMNS):
        try:
            start, end = float(row[features.START_S]), float(row[features.END_S])
        except ValueError:
            raise ValueError(f"{path}:{line_no}: start_s {row['start_s']!r} and end_s {row['end_s']!r} "
                             f"must be numbers of seconds") from None
        if not 0 <= start < end or not row[features.LABEL]:
            raise ValueError(f"{path}:{line_no}: a span needs 0 <= start_s < end_s and a label")
        spans.setdefault(row[features.FILE_NAME], []).append((start, end, row[features.LABEL], line_no))
    out = {}
    for name, rows in spans.items():
        rows.sort()
        for (_, prev_end, _, prev_line), (start, _, _, line_no) in zip(rows, rows[1:]):
            if start < prev_end:
                raise ValueError(f"{path}:{line_no}: span of {name} overlaps the one on line {prev_line}")
        out[name] = [(s, e, label) for s, e, label, _ in rows]
    return out
