"""A workaround for a data-loss race in Beam 2.59's portable runner (the DirectRunner's FnApiRunner).

The runner streams each stage's input to its SDK workers through a data channel that, with
`DATA_BUFFER_TIME_LIMIT_MS` (1000) above 0, flushes from a timer thread every second; a write that lands
between that flush's read of the buffer and its clear is dropped (apache_beam/runners/worker/data_plane.py,
TimeBasedBufferingClosableOutputStream.flush: `self.get()` then `self._clear()` without the writer's lock).
With `--direct_running_mode=multi_processing` and two or more workers, a busy machine lost 10-12 % of the
WAV ExampleGen's examples, a different subset on each run, with no error. At 0 the channel flushes by size
only, from the writing thread, and nothing is lost; the buffer is still sent when full or at the bundle's end.
Written here because no Beam release on this stack (TFX 1.16 pins Beam 2.59) has a fix or a pipeline option
for the runner's side. Applied where a Beam pipeline starts: the local runner's process (every TFX
component of a local run) and the WAV ExampleGen's executor (wherever it runs); not on importing `components`,
which most of its users (settings, data generation, serving) do without Beam.
"""
from apache_beam.runners.portability.fn_api_runner import worker_handlers


def apply() -> None:
    """Turns off the runner's time-based flushing (read when a runner starts its gRPC servers)."""
    worker_handlers.DATA_BUFFER_TIME_LIMIT_MS = 0
