"""The local runner's lines: a start and a finish line per component and, between them,
the progress a long step logs (components/progress_lines.py), at most one line every
`progress_every_s` seconds, the step's first always."""
import io
import logging

from components import progress_lines
from pipeline import progress
from pipeline.progress import ComponentLines


def _worker(message: str) -> logging.LogRecord:
    """A record of a Beam worker process as the DirectRunner's job service passes it on."""
    text = (f'Worker: severity: INFO timestamp {{   seconds: 1796065058 }} message: "{message}" '
            f'instruction_id: "bundle_4" transform_id: "Map(f)" thread: "Thread-13" ')
    return logging.LogRecord(progress._BEAM_WORKERS, logging.INFO, __file__, 1, text, None, None)


def _lines(progress_every_s: float) -> list:
    out = io.StringIO()
    handler = ComponentLines(lambda node: "", out, progress_every_s=progress_every_s)
    records = [logging.LogRecord("absl", logging.INFO, __file__, 1, "Component WavExampleGen is running.", None, None),
               logging.LogRecord(progress_lines.LOGGER, logging.INFO, __file__, 1,
                                 progress_lines.PREFIX + "WavExampleGen: 10 files", None, None)]
    records += [_worker(progress_lines.PREFIX + "WavExampleGen: 20 files"), _worker("Beam's own INFO line")]
    records += [logging.LogRecord("absl", logging.INFO, __file__, 1, message, None, None) for message in [
        "Component WavExampleGen is finished.", "Component Trainer is running.", "an INFO line of TFX's",
        *[progress_lines.PREFIX + f"Trainer step {step}/30" for step in (10, 20, 30)],
        "Component Trainer is finished."]]
    for record in records:
        handler.emit(record)
    return [line.split("] ", 1)[1] for line in out.getvalue().splitlines()]


def test_progress_lines_are_shown_between_a_components_lines_at_most_one_per_interval():
    assert _lines(progress_every_s=3600) == [
        "WavExampleGen started", "  WavExampleGen: 10 files", "WavExampleGen finished in 0.0 s",
        "Trainer started", "  Trainer step 10/30", "Trainer finished in 0.0 s"]
    assert _lines(progress_every_s=0) == [
        "WavExampleGen started", "  WavExampleGen: 10 files", "  WavExampleGen: 20 files",
        "WavExampleGen finished in 0.0 s", "Trainer started", "  Trainer step 10/30", "  Trainer step 20/30",
        "  Trainer step 30/30", "Trainer finished in 0.0 s"]
