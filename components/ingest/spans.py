"""Spans: input patterns with TFX's `{SPAN}` in a folder name (daily folders, say
`day-{SPAN}/*/*.wav`), of which each run reads the newest `data.latest_spans`.

TFX's driver resolves the newest span at run time (so a scheduled run picks up a new
folder without a recompile) and fingerprints its files; the WAV driver adds the other
spans it reads. This reads several spans in the ExampleGen rather than resolving the last
N Examples artifacts downstream because TFX 1.16's Kubeflow V2 compiler accepts only the
latest-artifact and latest-blessed-model resolver strategies (not SpanRangeStrategy).
"""
from __future__ import annotations

import os
import re
from typing import List, Optional

from tfx.components.example_gen import utils as example_gen_utils

from components.ingest import listing


def span_depth(pattern: str) -> Optional[int]:
    """How many leading path components a pattern's span folder is (None: no {SPAN})."""
    parts = pattern.split("/")
    for i, part in enumerate(parts):
        if re.search(example_gen_utils.SPAN_FULL_REGEX, part):
            return i + 1
    return None


def with_span(pattern: str, span: int) -> str:
    """The pattern with its {SPAN} (or zero-padded {SPAN:n}) filled, as TFX fills it."""
    return example_gen_utils.get_pattern_for_span_version(pattern, True, False, False, span, None)


def present(input_base: str, pattern: str) -> List[int]:
    """The span numbers of the span folders under input_base, ascending."""
    depth = span_depth(pattern)
    if depth is None:
        return []
    parts = pattern.split("/")[:depth]
    prefix, span_part = parts[:-1], parts[-1]
    spec = re.search(example_gen_utils.SPAN_FULL_REGEX, span_part)
    before, after = span_part[:spec.start()], span_part[spec.end():]
    matcher = re.compile(re.escape(before) + r"(\d+)" + re.escape(after) + "$")
    folder_glob = os.path.join(input_base, *prefix, before + "*" + after)
    found = set()
    for path in listing.entries(folder_glob):  # (TF's glob raises on a name that is not UTF-8)
        hit = matcher.match(os.path.basename(path.rstrip("/")))
        if hit:
            found.add(int(hit.group(1)))
    return sorted(found)


def newest(input_base: str, pattern: str, latest: int, resolved: int) -> List[int]:
    """The `latest` newest spans up to the one TFX resolved."""
    return [span for span in present(input_base, pattern) if span <= resolved][-latest:] or [resolved]
