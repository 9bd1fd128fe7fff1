"""The ingest report an ExampleGen run writes beside its examples (`<examples uri>/ingest_report/`):
rejects with their reasons, the seconds accounting and each split's size; written by the executor's
Beam steps, read here by the executor, the Trainer and the run report."""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

REPORT_DIR = "ingest_report"  # the folder inside the Examples artifact
REPORT_DIR_KEY = "_tfx_audio_report_dir"
REJECTS_FILE = "rejects.jsonl"
SECONDS_FILE = "seconds.json"
ACCEPTED_FILE = "accepted_count.txt"
AUGMENTED_FILE = "noisy_copies_count.txt"
SPLIT_SIZE_FILE = "split-{}.json"  # {"examples": N, "bytes": serialized bytes} of one split
REJECTS_TAG, SECONDS_TAG = "rejects", "seconds"


class SumSeconds(beam.CombineFn):
    """Totals of the per-file seconds records (accepted files) and of rejected seconds."""

    def create_accumulator(self):
        return {"accepted_files": 0, "accepted_tracks": 0, "seconds_in": 0.0, "seconds_in_examples": 0.0,
                "seconds_rejected": 0.0,
                "rejected_of_unknown_length": 0, "dropped": {}}

    def add_input(self, acc, record):
        if "reason" in record:  # a rejected file: its length, when its header was read
            if record["seconds"] is None:
                acc["rejected_of_unknown_length"] += 1
            else:
                acc["seconds_in"] += record["seconds"]
                acc["seconds_rejected"] += record["seconds"]
        else:
            acc["accepted_files"] += 1
            acc["accepted_tracks"] += record.get("tracks", 1)  # data.tracks=split: a stream per channel
            acc["seconds_in"] += record["seconds_in"]
            acc["seconds_in_examples"] += record["seconds_in_examples"]
        for reason, seconds in record.get("dropped", {}).items():
            acc["dropped"][reason] = acc["dropped"].get(reason, 0.0) + seconds
        return acc

    def merge_accumulators(self, accumulators):
        out = self.create_accumulator()
        for acc in accumulators:
            for key in ("accepted_files", "accepted_tracks", "seconds_in", "seconds_in_examples", "seconds_rejected",
                        "rejected_of_unknown_length"):
                out[key] += acc[key]
            for reason, seconds in acc["dropped"].items():
                out["dropped"][reason] = out["dropped"].get(reason, 0.0) + seconds
        return out

    def extract_output(self, acc):
        return acc


def split_sizes(examples_uri: str) -> Dict[str, Dict[str, int]]:
    """{split: {"examples": N, "bytes": B}} of an Examples artifact this ExampleGen wrote
    (B: serialized tf.Example bytes, before compression); {} for one written otherwise."""
    prefix, suffix = SPLIT_SIZE_FILE.split("{}")
    sizes = {}
    for path in FileSystems.match([os.path.join(examples_uri, REPORT_DIR, SPLIT_SIZE_FILE.format("*"))])[0] \
            .metadata_list:
        name = os.path.basename(path.path)[len(prefix):-len(suffix)]
        sizes[name] = json.loads(read_text(path.path))
    return sizes


def check_written(made: int, sizes: Dict[str, Dict[str, int]], examples_uri: str) -> None:
    """Raises when the splits hold fewer (or more) examples than the ExampleGen made: a runner that loses
    or repeats elements must fail the run, not train on part of the corpus. `sizes`: split_sizes'."""
    if not sizes:
        return  # written by another ExampleGen: nothing to compare
    written = sum(size["examples"] for size in sizes.values())
    if written != made:
        per_split = ", ".join(f"{name} {size['examples']}" for name, size in sorted(sizes.items()))
        raise RuntimeError(
            f"WAV ExampleGen: made {made} examples but wrote {written} ({per_split}) to {examples_uri}: the Beam "
            f"runner lost or repeated elements; rerun, or with --direct_num_workers=1 (components/beam_fixes.py)")


def read_text(path: str) -> str:
    with FileSystems.open(path) as f:
        return f.read().decode()


def read_report(report_dir: str) -> Tuple[int, List[Dict[str, Any]]]:
    """Returns (examples written before noisy copies, reject records) of one ExampleGen run."""
    accepted = int(read_text(os.path.join(report_dir, ACCEPTED_FILE)).strip() or 0)
    rejects_path = os.path.join(report_dir, REJECTS_FILE)
    rejects: List[Dict[str, Any]] = []
    if FileSystems.exists(rejects_path):
        rejects = [json.loads(line) for line in read_text(rejects_path).splitlines() if line.strip()]
    return accepted, rejects


def read_seconds(report_dir: str) -> Dict[str, Any]:
    """The run's seconds accounting: seconds_in, seconds_in_examples, seconds_rejected,
    dropped {reason: seconds}, and rejected_of_unknown_length (files refused before their
    header was read: outside input_base, over the size limit, missing or unopenable)."""
    return json.loads(read_text(os.path.join(report_dir, SECONDS_FILE)))
