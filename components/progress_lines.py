"""Progress of a long step as log records: a component calls `log(...)`, and the local
runner (`pipeline/progress.py`) shows those records without --verbose, at most one
every few seconds a step, between the component's start and finish lines."""
from absl import logging

PREFIX = "progress: "


def log(message: str, *args) -> None:
    logging.info(PREFIX + message, *args)
