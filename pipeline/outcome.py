"""The exit codes `tfx-audio` ends with, for CI to gate on, and how a run maps to one."""
from __future__ import annotations

import enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # summary imports TFDV and TFMA: a bad configuration exits before they load
    from pipeline.summary import RunSummary

_DONE = ("COMPLETE", "CACHED")


class ExitCode(enum.IntEnum):
    """Each code with what it means; the CLI's --help, the README and the retraining workflow show
    `describe()` (tests/test_docs.py checks they do)."""

    def __new__(cls, value: int, meaning: str):
        member = int.__new__(cls, value)
        member._value_ = value
        member.meaning = meaning
        return member

    OK = 0, "done (run: the model was blessed and pushed; validate: the data passed)"
    FAILED = 1, "a component or the command failed (the message says which and why)"
    BAD_CONFIG = 2, "the configuration or the command line is invalid"
    ANOMALIES = 3, "the data failed validation: nothing was trained (validation.on_anomalies=fail)"
    NOT_BLESSED = 4, "trained and evaluated, but the Evaluator's checks failed: nothing was pushed"


def describe() -> str:
    """The exit codes in one line each: `0 done (...)`."""
    return "\n".join(f"{int(code)} {code.meaning}" for code in ExitCode)


def of_run(run: "RunSummary", crashed: bool, validate_only: bool = False) -> ExitCode:
    """The code for a run read back from ML Metadata; `crashed`: the runner raised."""
    states = run.node_states
    if states.get("AnomaliesGate") == "FAILED":
        return ExitCode.ANOMALIES
    if crashed or any(state not in _DONE for state in states.values()):
        return ExitCode.FAILED
    if validate_only:
        return ExitCode.OK if states.get("AnomaliesGate") in _DONE else ExitCode.FAILED
    if run.pushed:
        return ExitCode.OK
    if states.get("Evaluator") in _DONE and not run.blessed:
        return ExitCode.NOT_BLESSED
    return ExitCode.FAILED
