"""Progress of a long step as log records: a component calls `log(...)`, and the local
runner (`pipeline/progress.py`) shows those records without --verbose, at most one
every few seconds a step, between the component's start and finish lines.

Standard `logging` on a logger of its own at INFO, not absl: in a Beam worker process
absl's level is TensorFlow's (warnings), and the worker passes on to the runner what
reaches the root logger's handlers."""
import logging

LOGGER = "tfx_audio.progress"
PREFIX = "progress: "  # what marks the records once a Beam worker has turned them into text

_logger = logging.getLogger(LOGGER)
_logger.setLevel(logging.INFO)


def log(message: str, *args) -> None:
    _logger.info(PREFIX + message, *args)
