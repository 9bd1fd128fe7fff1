"""`tfx-audio`: the one command line of the project.

    tfx-audio run       --config C [--set K=V ...] [--verbose]   the whole pipeline, LocalDagRunner
    tfx-audio validate  --config C ...                            ExampleGen, statistics, validation only
    tfx-audio compile   --config C --image I [--output F]         the Kubeflow V2 pipeline spec
    tfx-audio submit    --config C --image I [--host H]           one run on Kubeflow Pipelines
    tfx-audio schedule  --config C --image I --cron '0 2 * * *'   a recurring run on Kubeflow Pipelines
    tfx-audio predict   [--model DIR | --config C] FILE|DIR ...  labels (and enhanced audio) of recordings
    tfx-audio report    --config C                                the latest run's HTML report (again)

Exit codes (pipeline/outcome.py): 0 done (run: pushed), 1 failed, 2 bad configuration or
command line, 3 data anomalies, 4 not blessed.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
import tempfile
import warnings
from typing import List, Optional

VERBS = ("run", "validate", "compile", "submit", "schedule", "predict", "report")
_CODES = ("exit codes: 0 done (run: blessed and pushed), 1 failed, 2 bad configuration or command line, "
          "3 data anomalies (validation), 4 trained but not blessed (nothing pushed)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tfx-audio", description=__doc__.split("\n")[0], epilog=_CODES)
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    def verb(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = verbs.add_parser(name, help=help_text, description=help_text, epilog=_CODES)
        sub.add_argument("--config", default=None, help="YAML config (pipeline/configs/*.yaml); defaults when omitted")
        sub.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                         help="override one setting, e.g. --set trainer.epochs=3 (repeatable)")
        sub.add_argument("--verbose", action="store_true", help="show TFX's, Beam's and TensorFlow's logs")
        return sub

    run = verb("run", "run the whole pipeline locally (LocalDagRunner, SQLite ML Metadata) and print its summary")
    run.add_argument("--fresh", action="store_true",
                     help="after a run that did not finish, run everything anew (default: reuse its completed "
                          "components and resume the Trainer from its last checkpoint)")
    verb("validate", "ingest and validate the data only (WavExampleGen, StatisticsGen, schema, "
                     "ExampleValidator, AnomaliesGate): exit 3 on anomalies")
    for name, help_text in (("compile", "compile the Kubeflow V2 pipeline spec (JSON)"),
                            ("submit", "compile and start one run on Kubeflow Pipelines"),
                            ("schedule", "compile and create a recurring run on Kubeflow Pipelines")):
        sub = verb(name, help_text)
        sub.add_argument("--image", default="", help="the image built from the Dockerfile (default: kubeflow.image)")
        if name == "compile":
            sub.add_argument("--output", default="tfx-audio-kubeflow.json", help="where the spec is written")
        else:
            sub.add_argument("--host", default="", help="KFP API endpoint (default: $KFP_HOST, then kubeflow.host)")
            sub.add_argument("--experiment", default="", help="KFP experiment (default: kubeflow.experiment)")
            sub.add_argument("--name", default="", help="run or recurring-run name (default: the pipeline's, dated)")
        if name == "schedule":
            sub.add_argument("--cron", required=True,
                             help="when to run: 5 fields (minute hour day month weekday) or KFP's 6 (second first)")
            sub.add_argument("--max-concurrency", type=int, default=1, help="runs at the same time (default 1)")
    predict = verb("predict", "label recordings (and write enhanced audio) with a pushed model")
    predict.add_argument("inputs", nargs="+", metavar="FILE_OR_DIR", help="audio files, or folders searched for them")
    predict.add_argument("--model", default="", help="a SavedModel directory (default: the newest push under "
                                                      "the config's serving dir)")
    predict.add_argument("--out", default="predictions", help="output folder (default ./predictions)")
    predict.add_argument("--hop-s", type=float, default=None, help="seconds between windows (default: the window)")
    verb("report", "write the HTML report of the latest run recorded in the config's ML Metadata "
                   "(a run writes its own at the end; this one rewrites it, e.g. after report.* changes)")
    return parser


def _config(args):
    from components.config import load_config
    return load_config(args.config, args.set)


def _compile(args, config, output: str) -> str:
    from pipeline.kubeflow_v2_runner import compile_pipeline
    return compile_pipeline(config, args.image or config.kubeflow.image, output)


def _send(args, config) -> str:
    import kfp
    from pipeline import kfp_jobs
    host = kfp_jobs.host(args.host, config.kubeflow.host)
    experiment = args.experiment or config.kubeflow.experiment
    name = args.name or f"{config.name} {datetime.datetime.now():%Y-%m-%d %H-%M-%S}"
    cron = kfp_jobs.cron(args.cron) if args.verb == "schedule" else None  # a malformed one fails before the compile
    with tempfile.TemporaryDirectory() as tmp:
        pkg = kfp_jobs.package(_compile(args, config, os.path.join(tmp, "job.json")), tmp)
        client = kfp.Client(host=host)
        if args.verb == "submit":
            return f"run {kfp_jobs.submit(client, pkg, experiment, name)} started on {host}"
        recurring = kfp_jobs.schedule(client, pkg, experiment, name, cron, args.max_concurrency)
        return f"recurring run {recurring} ({cron}) created on {host}"


def _report(args, config) -> int:
    """The latest run's report; any failure (no run recorded, an artifact or a recording gone) exits 1."""
    from pipeline import metadata, report, summary
    from pipeline.outcome import ExitCode
    try:
        print(report.write(summary.latest_run(metadata.connection_config(config), config.name), config))
    except Exception as e:  # one line unless --verbose
        if args.verbose:
            raise
        print(f"tfx-audio report failed: {type(e).__name__}: {e}", file=sys.stderr)
        return ExitCode.FAILED
    return ExitCode.OK


def _dispatch(args) -> int:
    from components.config import ConfigError
    from pipeline.outcome import ExitCode
    try:
        config = _config(args)
    except (ConfigError, OSError) as e:  # a bad value, an unknown key, a missing or unreadable file
        print(f"tfx-audio: bad configuration: {e}", file=sys.stderr)
        return ExitCode.BAD_CONFIG
    if args.verb in ("run", "validate"):
        from pipeline import local_runner
        try:
            code, _ = local_runner.run(config, validate_only=args.verb == "validate", verbose=args.verbose,
                                       resume=not getattr(args, "fresh", False))
        except ValueError as e:  # raised before the run starts: the metadata store's settings
            print(f"tfx-audio: bad configuration: {e}", file=sys.stderr)
            return ExitCode.BAD_CONFIG
        return code
    try:
        if args.verb == "compile":
            print(_compile(args, config, args.output))
        elif args.verb == "predict":
            from pipeline import predict
            result = predict.predict(args.model or predict.latest_pushed(config.serving_model_dir), args.inputs,
                                     args.out, args.hop_s)
            print(f"{result.predicted} files predicted, {result.rejected} rejected "
                  f"(see {os.path.join(result.out_dir, 'rejects.csv')}); results in {result.out_dir}")
            return ExitCode.FAILED if result.rejected else ExitCode.OK
        elif args.verb == "report":
            return _report(args, config)
        else:
            print(_send(args, config))
    except ValueError as e:  # a missing image or host, a malformed cron
        print(f"tfx-audio: bad configuration: {e}", file=sys.stderr)
        return ExitCode.BAD_CONFIG
    except Exception as e:  # the server refused, a file is missing...: one line unless --verbose
        if args.verbose:
            raise
        print(f"tfx-audio {args.verb} failed: {type(e).__name__}: {e}", file=sys.stderr)
        return ExitCode.FAILED
    return ExitCode.OK


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
    return int(_dispatch(args))


def console() -> None:
    sys.exit(main())


if __name__ == "__main__":
    console()
