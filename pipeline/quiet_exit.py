"""A process that used TensorFlow ends without TensorFlow's teardown noise.

At the end of a process whose loaded models outlive TensorFlow's own modules (the Beam
workers of the Transform and the Evaluator: TFT's and TFMA's model caches hold them to
the end), Python clears TensorFlow's module globals first, and each function freed after
that prints `Exception ignored in: <function AtomicFunction.__del__ ...> TypeError:
'NoneType' object is not subscriptable`. Nothing failed (TensorFlow's __del__ already
swallows the AttributeError of the same race), but users read it as a crash. Collecting
garbage before the teardown does not help: those models are still referenced.

`install()` makes `sys.unraisablehook` drop the exceptions of TensorFlow's destructors
while the interpreter is finalizing, and pass every other one to the hook it replaces: exit
codes, exit handlers and all other errors stay as they were. Importing this module installs
it: the CLI does (pipeline/cli.py), and each DirectRunner worker, through
`--beam_plugin=pipeline.quiet_exit` (pipeline/local_runner.py).
"""
from __future__ import annotations

import sys
from typing import Any


def is_teardown_noise(unraisable: Any, finalizing: bool) -> bool:
    """An exception raised in a TensorFlow destructor (`__del__`) during interpreter teardown."""
    where = unraisable.object
    return (finalizing and getattr(where, "__name__", None) == "__del__"
            and str(getattr(where, "__module__", None)).startswith("tensorflow."))


def install() -> None:
    previous = sys.unraisablehook
    if getattr(previous, "quiets_tensorflow_teardown", False):
        return

    # Runs while module globals are being cleared: it uses only its arguments and builtins.
    def hook(unraisable, previous=previous, noise=is_teardown_noise, finalizing=sys.is_finalizing):
        if not noise(unraisable, finalizing()):
            previous(unraisable)

    hook.quiets_tensorflow_teardown = True
    sys.unraisablehook = hook


install()
