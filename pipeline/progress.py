"""One line per component while a local run goes, instead of TFX's thousands of log lines.

LocalDagRunner runs the components one after another and logs "Component X is running."
and "Component X is finished."; this handler turns those records into a start line and a
finish line with the duration and the component's key counts, read from ML Metadata
between two components (nothing else writes to it then).
"""
from __future__ import annotations

import contextlib
import json
import logging
import re
import sys
import time
from typing import Callable, Dict, Iterator, Optional, TextIO

from absl import logging as absl_logging
from ml_metadata.proto import metadata_store_pb2

from components import progress_lines
from components.validation import schema
from pipeline import summary

_RECORD = re.compile(r"^Component (\S+) is (running|finished)\.$")
# Beam's DirectRunner in multi-processing mode passes its workers' log records on through this
# logger, as text: 'Worker: severity: INFO ... message: "progress: ..." instruction_id: ...'.
_BEAM_WORKERS = "apache_beam.runners.portability.local_job_service"
_WORKER_MESSAGE = re.compile(r'message: "((?:[^"\\]|\\.)*)"')
# The artifact properties worth a word in a component's line, by component.
_COUNTS = {"WavExampleGen": {"num_input_files": "files in {:d}", "num_rejected": "rejected {:d}"},
           "Evaluator": {"blessed": "blessed {}"}, "Pusher": {"pushed": "pushed {}"}}


def _node_execution(store, pipeline_name: str, node: str) -> Optional[metadata_store_pb2.Execution]:
    context = store.get_context_by_type_and_name("node", f"{pipeline_name}.{node}")
    if context is None:
        return None
    executions = store.get_executions_by_context(context.id)
    return max(executions, key=lambda e: e.id) if executions else None


def key_counts(where: summary.Metadata, pipeline_name: str, node: str) -> str:
    """'cached; files in 192, rejected 0' for the latest execution of `node`."""
    store = summary.open_store(where)
    execution = _node_execution(store, pipeline_name, node)
    if execution is None:
        return ""
    parts = []
    if execution.last_known_state == metadata_store_pb2.Execution.CACHED:
        parts.append("cached")
    events = [e for e in store.get_events_by_execution_ids([execution.id])
              if e.type == metadata_store_pb2.Event.OUTPUT]
    for artifact in store.get_artifacts_by_id([e.artifact_id for e in events]):
        for name, shown in _COUNTS.get(node, {}).items():
            value = summary.prop(artifact, name)
            if value is not None:
                parts.append(shown.format(int(value)) if "{:d}" in shown else shown.format("yes" if value else "no"))
        splits = sorted(json.loads(summary.prop(artifact, "split_names") or "[]"))
        if node == "StatisticsGen":
            counts = summary.example_counts(artifact.uri, splits)
            parts += ["examples " + ", ".join(f"{k} {v}" for k, v in counts.items())] if counts else []
        if node == "ExampleValidator":
            found = schema.read_anomalies(artifact.uri, splits)
            names = sorted({anomaly.split(":")[0] for found_in in found.values() for anomaly in found_in})
            parts.append(f"anomalies in {', '.join(sorted(found))}: {', '.join(names)}" if found else "no anomalies")
    return "; ".join(parts)


class ComponentLines(logging.Handler):
    """Prints '[12:00:01] Trainer started' and '[12:03:09] Trainer finished in 188.0 s (...)'."""

    def __init__(self, counts: Callable[[str], str], out: Optional[TextIO] = None, progress_every_s: float = 30.0):
        super().__init__(logging.INFO)
        self._counts = counts
        self._out = out  # None: whatever sys.stdout is when a line is written
        self._started: Dict[str, float] = {}
        self._progress_every_s = progress_every_s
        self._last_progress: Optional[float] = None  # when the last progress line was written

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.name == _BEAM_WORKERS:
            found = _WORKER_MESSAGE.search(message)
            message = found.group(1) if found else ""
        if message.startswith(progress_lines.PREFIX):  # '[12:01:30]   Trainer step 40/300 ...'
            now = time.monotonic()
            if self._last_progress is None or now - self._last_progress >= self._progress_every_s:
                self._last_progress = now
                self._write(f"[{time.strftime('%H:%M:%S')}]   {message[len(progress_lines.PREFIX):]}")
            return
        match = _RECORD.match(message)
        if not match:
            return
        node, what = match.groups()
        stamp = time.strftime("%H:%M:%S")
        if what == "running":
            self._started[node] = time.monotonic()
            self._last_progress = None  # a step's first progress line is always shown
            self._write(f"[{stamp}] {node} started")
        else:
            took = time.monotonic() - self._started.pop(node, time.monotonic())
            try:
                counts = self._counts(node)
            except Exception as e:  # a progress line must never stop the run
                counts = f"counts unavailable: {e}"
            self._write(f"[{stamp}] {node} finished in {took:.1f} s" + (f" ({counts})" if counts else ""))

    def _write(self, line: str) -> None:
        out = self._out or sys.stdout
        out.write(line + "\n")
        out.flush()


def _errors_only(logger: logging.Logger) -> None:
    """The logger's records stop at it, its errors printed there."""
    logger.propagate = False
    if not any(getattr(h, "tfx_audio_errors", False) for h in logger.handlers):
        errors = logging.StreamHandler(sys.stderr)
        errors.setLevel(logging.ERROR)
        errors.tfx_audio_errors = True
        logger.addHandler(errors)


def quiet_logs(verbose: bool) -> None:
    """TFX's and Beam's logs only with --verbose; errors always (the CLI mutes warnings and TF's C++ logs)."""
    absl_logging.set_verbosity(absl_logging.INFO)  # the component records must reach the handler
    if not verbose:
        # TFX logs through absl's logger, Beam and others through their own; some of them add a
        # handler to the root logger while the run goes. So: absl's records, Beam's workers' and
        # the progress records (which the lines show) stop at their loggers (errors printed
        # there), everything else below ERROR is dropped at the root.
        for logger in (absl_logging.get_absl_logger(), logging.getLogger(_BEAM_WORKERS),
                       logging.getLogger(progress_lines.LOGGER)):
            _errors_only(logger)
        logging.getLogger().setLevel(logging.ERROR)


@contextlib.contextmanager
def component_lines(where: summary.Metadata, pipeline_name: str) -> Iterator[ComponentLines]:
    """Prints the component lines of the runs inside the block."""
    handler = ComponentLines(lambda node: key_counts(where, pipeline_name, node))
    workers = logging.getLogger(_BEAM_WORKERS)
    workers.setLevel(logging.INFO)  # the workers' progress records; shown (as the rest) only with --verbose
    loggers = (absl_logging.get_absl_logger(), workers, logging.getLogger(progress_lines.LOGGER))
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield handler
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
