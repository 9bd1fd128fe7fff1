"""The WAV ExampleGen's tables: `metadata.csv` (audiofolder style, a row per file) and `segments.csv`
(labelled spans, a row per span), read and checked; columns from `components.features`.

A table is configuration: anything wrong in it (not UTF-8, a broken quote, a field over the csv
module's limit, a name or a link out of input_base, a file over MAX_TABLE_MB, a value that
makes no sense) refuses the run, naming the file and the line. Each `file_name` (and
`clean_file_name`) is keyed by its one spelling (`listing.normalized`), the glob's, so a file is
one file however a table spells it."""
from __future__ import annotations

import csv
import io
import math
import os
from typing import Dict, Iterator, List, Optional, Tuple

from apache_beam.io.filesystems import FileSystems

from components import features
from components.ingest import listing

MAX_TABLE_MB = 256  # read whole into memory: a table of millions of rows fits, a stray huge file is refused
_QUOTE_HELP = "close it, or write a quote inside a quoted field as two (\"\"); a field may not hold a line break"


def _line_at(before: str) -> int:
    """The line number of the text just after `before` (lines end in \\n, \\r\\n or \\r, as csv's)."""
    return before.replace("\r\n", "\n").replace("\r", "\n").count("\n") + 1


def _table_path(input_base: str, table: str) -> Optional[str]:
    """input_base/table; None when there is none. Refused when it is not a regular file, or when it
    is named inside input_base but a symbolic link leads it out (not followed)."""
    path = os.path.join(input_base, table)
    if not table:
        return None
    if listing.leaves_base(listing.normalized(table, input_base)):
        raise ValueError(f"{path}: outside input_base {input_base}; not read: a table lives in input_base "
                         f"(name it relative to input_base, the files it names are there too)")
    if "://" in path:
        if not FileSystems.exists(path):
            return None
        size = FileSystems.match([path])[0].metadata_list[0].size_in_bytes
    else:
        if not os.path.lexists(path):
            return None
        base = os.path.realpath(input_base)
        if os.path.commonpath([os.path.realpath(path), base]) != base:
            raise ValueError(f"{path}: a symbolic link out of input_base; not read: copy the table into input_base")
        refused = listing.problem(path)
        if refused:
            raise ValueError(f"{path}: {refused}")
        size = os.path.getsize(path)
    if size > MAX_TABLE_MB * 2 ** 20:
        raise ValueError(f"{path}: {size / 2 ** 20:.0f} MB, over the {MAX_TABLE_MB} MB a table may be (a row per file "
                         f"or span is some 100 bytes: millions of rows); is this the table?")
    return path


def _text(path: str) -> str:
    """The table as text: UTF-8 (a byte-order mark allowed), else refused naming the line."""
    with FileSystems.open(path) as f:
        data = f.read()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = _line_at(data[:e.start].decode("utf-8", "replace"))
        raise ValueError(f"{path}:{line}: not UTF-8 text (a byte that UTF-8 does not allow there: UTF-16, or a "
                         f"spreadsheet's Windows or Latin-1 export?); save it as UTF-8") from None
    if "\x00" in text:
        raise ValueError(f"{path}:{_line_at(text[:text.index(chr(0))])}: not UTF-8 text (NUL bytes: UTF-16 "
                         f"without a byte-order mark?); save it as UTF-8")
    return text


def _csv_rows(path: str, text: str) -> Iterator[Tuple[int, List[str]]]:
    """(line where the row starts, fields) of each non-empty row; a field over the csv module's
    limit or a quote that runs on over lines refused, naming the line where the row started."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    while True:
        start = reader.line_num + 1
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            if "field larger than field limit" in str(e) and reader.line_num == start:
                raise ValueError(f"{path}:{start}: a field longer than {csv.field_size_limit()} characters; "
                                 f"a file name or label is never that long: is this the table?") from None
            if reader.line_num > start or "unexpected end of data" in str(e):
                raise ValueError(f"{path}:{start}: a quoted field runs on over several lines (to line "
                                 f"{reader.line_num}, {e}): an unbalanced quote? {_QUOTE_HELP}") from None
            raise ValueError(f"{path}:{start}: not a CSV row ({e}): {_QUOTE_HELP}") from None
        if any("\n" in field or "\r" in field for field in fields):
            raise ValueError(f"{path}:{start}: a quoted field runs on over several lines (to line "
                             f"{reader.line_num}): an unbalanced quote? {_QUOTE_HELP}")
        if fields:
            yield start, fields


def _read_csv(input_base: str, path: str, required: Tuple[str, ...],
              columns: Tuple[str, ...]) -> List[Tuple[int, str, Dict[str, str]]]:
    """(line, file_name as written, row) of each row; the row's names normalized."""
    rows_in = _csv_rows(path, _text(path))
    header = next(rows_in, (1, []))[1]
    missing = set(required) - set(header)
    if missing:
        raise ValueError(f"{path}: header lacks required column(s) {sorted(missing)}; "
                         f"expected {','.join(columns)}")
    rows = []
    for line_no, fields in rows_in:
        values = dict(zip(header, fields))
        row = {k: (values.get(k) or "").strip() for k in columns}
        written = row[features.FILE_NAME]
        if not written:
            raise ValueError(f"{path}:{line_no}: empty file_name")
        for key in (features.FILE_NAME, features.CLEAN_FILE_NAME):
            if row.get(key):
                row[key] = listing.normalized(row[key], input_base)
        rows.append((line_no, written, row))
    return rows


def _check_metadata_row(path: str, line_no: int, written: str, row: Dict[str, str]) -> None:
    snr = row[features.SNR_DB]
    try:
        finite = not snr or math.isfinite(float(snr))
    except ValueError:
        finite = False
    if not finite:
        raise ValueError(f"{path}:{line_no}: snr_db {snr!r} is not a finite number; give the file's input "
                         f"SNR in dB or leave it empty")
    if row[features.TRACK] and not (row[features.TRACK].isascii() and row[features.TRACK].isdigit()):
        raise ValueError(f"{path}:{line_no}: track {row[features.TRACK]!r} is not a track index (0 is the first; "
                         f"empty: the file's own channels)")
    if row[features.CLEAN_FILE_NAME] == row[features.FILE_NAME]:
        raise ValueError(f"{path}:{line_no}: clean_file_name names the file itself ({written}); name its "
                         f"clean reference or leave it empty")


def read_metadata(input_base: str, metadata_file: str) -> Dict[str, Dict[str, str]]:
    """Reads metadata.csv into {file_name: row}; a missing file means no metadata."""
    path = _table_path(input_base, metadata_file)
    if path is None:
        return {}
    rows: Dict[str, Dict[str, str]] = {}
    lines: Dict[str, int] = {}
    for line_no, written, row in _read_csv(input_base, path, features.METADATA_REQUIRED,
                                           features.METADATA_COLUMNS + features.METADATA_OPTIONAL):
        name = row[features.FILE_NAME]
        if name in rows:
            shown = name if written == name else f"{written} (that is {name})"
            raise ValueError(f"{path}:{line_no}: {shown} is listed twice, also on line {lines[name]}: "
                             f"one row per file; keep one")
        _check_metadata_row(path, line_no, written, row)
        rows[name], lines[name] = row, line_no
    return rows


Span = Tuple[float, float, str, Optional[int]]  # start_s, end_s, label, track (None: every track)


def read_segments(input_base: str, segments_file: str) -> Dict[str, List[Span]]:
    """Reads segments.csv into {file_name: [(start_s, end_s, label, track)]}, checked: numbers,
    end after start, a label, a track that is a channel index when the optional `track` column
    gives one (None when it does not: the span covers every track), no overlap within a file's
    track (however its rows spell its name; a span of every track overlaps none)."""
    path = _table_path(input_base, segments_file)
    if path is None:
        return {}
    spans: Dict[str, List[Tuple[float, float, str, Optional[int], int]]] = {}
    for line_no, _, row in _read_csv(input_base, path, features.SEGMENT_COLUMNS,
                                     features.SEGMENT_COLUMNS + features.SEGMENT_OPTIONAL):
        try:
            start, end = float(row[features.START_S]), float(row[features.END_S])
        except ValueError:
            raise ValueError(f"{path}:{line_no}: start_s {row['start_s']!r} and end_s {row['end_s']!r} "
                             f"must be numbers of seconds") from None
        if not 0 <= start < end < math.inf or not row[features.LABEL]:
            raise ValueError(f"{path}:{line_no}: a span needs 0 <= start_s < end_s and a label")
        track = row[features.TRACK]
        if track and not (track.isascii() and track.isdigit()):
            raise ValueError(f"{path}:{line_no}: track {track!r} is not a channel index (0 is the first; empty: "
                             f"every track)")
        spans.setdefault(row[features.FILE_NAME], []).append(
            (start, end, row[features.LABEL], int(track) if track else None, line_no))
    out = {}
    for name, rows in spans.items():
        rows.sort(key=lambda r: (r[0], r[1]))
        latest: Dict[Optional[int], Tuple[float, int]] = {}  # per track (None: every track), the span ending last
        for start, end, _, track, line_no in rows:
            rivals = list(latest.values()) if track is None else [latest[k] for k in (track, None) if k in latest]
            for prev_end, prev_line in rivals:
                if start < prev_end:
                    where = "" if track is None else f" on track {track}"
                    raise ValueError(f"{path}:{line_no}: span of {name} overlaps the one on line {prev_line}{where}")
            latest[track] = max(latest.get(track, (end, line_no)), (end, line_no))
        out[name] = [(s, e, label, track) for s, e, label, track, _ in rows]
    return out
