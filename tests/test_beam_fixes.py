"""The runner-side data-loss workaround (components/beam_fixes.py) and the ExampleGen's check that what it
wrote is what it made (components/ingest/report.check_written)."""
import importlib

import pytest
from apache_beam.runners.portability.fn_api_runner import worker_handlers

from components.ingest import executor, report
from pipeline import local_runner


@pytest.mark.parametrize("module", [executor, local_runner], ids=["ingest_executor", "local_runner"])
def test_the_modules_that_start_beam_pipelines_turn_off_the_runners_timed_flush(module):
    worker_handlers.DATA_BUFFER_TIME_LIMIT_MS = 1000  # Beam 2.59's default
    importlib.reload(module)
    assert worker_handlers.DATA_BUFFER_TIME_LIMIT_MS == 0


def test_a_split_short_of_what_was_made_fails_the_run_naming_the_counts():
    sizes = {"train": {"examples": 90, "bytes": 900}, "eval": {"examples": 5, "bytes": 50}}
    report.check_written(95, sizes, "/out/examples/2")  # all written: no error
    with pytest.raises(RuntimeError, match=r"made 100 examples but wrote 95 \(eval 5, train 90\) to /out/examples/2"):
        report.check_written(100, sizes, "/out/examples/2")
    with pytest.raises(RuntimeError, match="wrote 95"):
        report.check_written(94, sizes, "/out/examples/2")  # repeated elements fail too
    report.check_written(100, {}, "/out/examples/2")  # another ExampleGen's artifact: nothing to compare
