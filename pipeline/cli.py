"""`tfx-audio`: the one command line of the project.

Each verb is one function registered with `@_verb`; `tfx-audio --help` lists them and
`tfx-audio VERB --help` explains each. The exit codes are `pipeline.outcome.ExitCode`'s.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
import tempfile
import warnings
from typing import Callable, Dict, List, NamedTuple, Optional

from pipeline import outcome
from pipeline.outcome import ExitCode


class _Verb(NamedTuple):
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]  # after the config has loaded; returns an exit code


_VERBS: Dict[str, _Verb] = {}


def _verb(name: str, help_text: str, arguments: Callable[[argparse.ArgumentParser], None] = lambda sub: None):
    """Registers the decorated function as the verb `name`."""
    def register(run):
        _VERBS[name] = _Verb(help_text, arguments, run)
        return run
    return register


def _epilog() -> str:
    return "exit codes:\n" + "\n".join("  " + line for line in outcome.describe().splitlines())


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tfx-audio", description=__doc__.split("\n")[0], epilog=_epilog(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for name, verb in _VERBS.items():
        sub = verbs.add_parser(name, help=verb.help, description=verb.help, epilog=_epilog(),
                               formatter_class=argparse.RawDescriptionHelpFormatter)
        sub.add_argument("--config", default=None, help="YAML config (pipeline/configs/*.yaml); defaults when omitted")
        sub.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                         help="override one setting, e.g. --set trainer.epochs=3 (repeatable)")
        sub.add_argument("--verbose", action="store_true", help="show TFX's, Beam's and TensorFlow's logs")
        verb.arguments(sub)
    return parser


def _kubeflow_arguments(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--image", default="", help="the image built from the Dockerfile (default: kubeflow.image)")


def _send_arguments(sub: argparse.ArgumentParser) -> None:
    _kubeflow_arguments(sub)
    sub.add_argument("--host", default="", help="KFP API endpoint (default: $KFP_HOST, then kubeflow.host)")
    sub.add_argument("--experiment", default="", help="KFP experiment (default: kubeflow.experiment)")
    sub.add_argument("--name", default="", help="run or recurring-run name (default: the pipeline's, dated)")


def _run_locally(args, validate_only: bool) -> int:
    from pipeline import local_runner
    try:
        code, _ = local_runner.run(args.config_object, validate_only=validate_only, verbose=args.verbose,
                                   resume=not getattr(args, "fresh", False))
    except ValueError as e:  # raised before the run starts: the metadata store's settings
        print(f"tfx-audio: bad configuration: {e}", file=sys.stderr)
        return ExitCode.BAD_CONFIG
    return code


@_verb("run", "run the whole pipeline locally (LocalDagRunner, SQLite ML Metadata) and print its summary",
       lambda sub: sub.add_argument(
           "--fresh", action="store_true", help="after a run that did not finish, run everything anew (default: "
           "reuse its completed components and resume the Trainer from its last checkpoint)"))
def _run(args) -> int:
    return _run_locally(args, validate_only=False)


@_verb("validate", "ingest and validate the data only (WavExampleGen, StatisticsGen, schema, ExampleValidator, "
                   "AnomaliesGate): exit 3 on anomalies")
def _validate(args) -> int:
    return _run_locally(args, validate_only=True)


def _compile_to(args, output: str) -> str:
    from pipeline.kubeflow_v2_runner import compile_pipeline
    return compile_pipeline(args.config_object, args.image or args.config_object.kubeflow.image, output)


@_verb("compile", "compile the Kubeflow V2 pipeline spec (JSON)", lambda sub: (
    _kubeflow_arguments(sub),
    sub.add_argument("--output", default="tfx-audio-kubeflow.json", help="where the spec is written")))
def _compile(args) -> int:
    print(_compile_to(args, args.output))
    return ExitCode.OK


def _send(args) -> str:
    import kfp

    from pipeline import kfp_jobs
    config = args.config_object
    host = kfp_jobs.host(args.host, config.kubeflow.host)
    experiment = args.experiment or config.kubeflow.experiment
    name = args.name or f"{config.name} {datetime.datetime.now():%Y-%m-%d %H-%M-%S}"
    cron = kfp_jobs.cron(args.cron) if args.verb == "schedule" else None  # a malformed one fails before the compile
    with tempfile.TemporaryDirectory() as tmp:
        pkg = kfp_jobs.package(_compile_to(args, os.path.join(tmp, "job.json")), tmp)
        client = kfp.Client(host=host)
        if args.verb == "submit":
            return f"run {kfp_jobs.submit(client, pkg, experiment, name)} started on {host}"
        recurring = kfp_jobs.schedule(client, pkg, experiment, name, cron, args.max_concurrency)
        return f"recurring run {recurring} ({cron}) created on {host}"


@_verb("submit", "compile and start one run on Kubeflow Pipelines", _send_arguments)
def _submit(args) -> int:
    print(_send(args))
    return ExitCode.OK


@_verb("schedule", "compile and create a recurring run on Kubeflow Pipelines", lambda sub: (
    _send_arguments(sub),
    sub.add_argument("--cron", required=True,
                     help="when to run: 5 fields (minute hour day month weekday) or KFP's 6 (second first)"),
    sub.add_argument("--max-concurrency", type=int, default=1, help="runs at the same time (default 1)")))
def _schedule(args) -> int:
    print(_send(args))
    return ExitCode.OK


@_verb("predict", "label recordings (and write enhanced audio) with a pushed model", lambda sub: (
    sub.add_argument("inputs", nargs="+", metavar="FILE_OR_DIR", help="audio files, or folders searched for them"),
    sub.add_argument("--model", default="", help="a SavedModel directory (default: the newest push under the "
                                                 "config's serving dir)"),
    sub.add_argument("--out", default="predictions", help="output folder (default ./predictions)"),
    sub.add_argument("--hop-s", type=float, default=None, help="seconds between windows (default: the window)"),
    sub.add_argument("--tracks", choices=("mix", "split"), default=None,
                     help="mix: channels averaged; split: each channel on its own, calls.csv per call "
                          "(default: the config's data.tracks)")))
def _predict(args) -> int:
    from pipeline import predict
    config = args.config_object
    model = args.model or predict.latest_pushed(config.serving_model_dir)
    result = predict.predict(model, args.inputs, args.out, args.hop_s,
                             min_segment_s=config.data.min_segment_s,
                             max_duration_s=config.data.max_duration_s,
                             tracks=args.tracks or config.data.tracks, track_roles=config.data.track_roles,
                             calls=config.calls)
    print(f"{result.predicted} files predicted, {result.rejected} rejected "
          f"(see {os.path.join(result.out_dir, 'rejects.csv')}); results in {result.out_dir}")
    return ExitCode.FAILED if result.rejected else ExitCode.OK


@_verb("report", "write the HTML report of the latest run recorded in the config's ML Metadata (a run writes its "
                 "own at the end; this one rewrites it, e.g. after report.* changes)")
def _report(args) -> int:
    from pipeline import metadata, report, summary
    config = args.config_object
    print(report.write(summary.latest_run(metadata.connection_config(config), config.name), config))
    return ExitCode.OK


@_verb("settings", "print every setting with its value (from --config and --set), its default and what it does")
def _settings(args) -> int:
    from components.config import describe
    print(describe.text(args.config_object), end="")
    return ExitCode.OK


def _dispatch(args) -> int:
    from components.config import ConfigError, load_config
    try:
        args.config_object = load_config(args.config, args.set)
    except (ConfigError, OSError) as e:  # a bad value, an unknown key, a missing or unreadable file
        print(f"tfx-audio: bad configuration: {e}", file=sys.stderr)
        return ExitCode.BAD_CONFIG
    if args.verb in ("run", "validate"):  # the runner prints its own summary and failure
        return _VERBS[args.verb].run(args)
    try:
        return _VERBS[args.verb].run(args)
    except ValueError as e:  # a missing image or host, a malformed cron
        print(f"tfx-audio: bad configuration: {e}", file=sys.stderr)
        return ExitCode.BAD_CONFIG
    except Exception as e:  # the server refused, a file or a recorded run is missing...: one line unless --verbose
        if args.verbose:
            raise
        print(f"tfx-audio {args.verb} failed: {type(e).__name__}: {e}", file=sys.stderr)
        return ExitCode.FAILED


VERBS = tuple(_VERBS)  # the verbs, in the order --help lists them


def verb_table() -> str:
    """The verbs and what each does, as the README's markdown table shows them (tests/test_docs.py)."""
    rows = [f"| `tfx-audio {name}` | {verb.help} |" for name, verb in _VERBS.items()]
    return "\n".join(["| command | what it does |", "| --- | --- |", *rows])


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    # Before TensorFlow and the Google clients load: TF's C++ start-up messages, and the Google
    # clients' warnings about the Python version (3.10 is TFX 1.16's newest), go with the logs.
    if not args.verbose:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        categories = (FutureWarning, DeprecationWarning, UserWarning)
        for category in categories:
            warnings.filterwarnings("ignore", category=category)
        # The same for the processes Beam's DirectRunner starts (multi_processing mode).
        os.environ.setdefault("PYTHONWARNINGS", ",".join(f"ignore::{c.__name__}" for c in categories))
    import pipeline  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)
    from pipeline import quiet_exit
    quiet_exit.install()  # no TensorFlow destructor noise after the last line (the workers: local_runner)
    return int(_dispatch(args))


def console() -> None:
    sys.exit(main())


if __name__ == "__main__":
    console()
