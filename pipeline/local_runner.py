"""Runs the pipeline locally with TFX's LocalDagRunner and SQLite ML Metadata.

    tfx-audio run --config pipeline/configs/demo.yaml [--set trainer.epochs=3] [--verbose]

(`python -m pipeline.local_runner ...` is the same command.) Ends by printing a summary
read back from ML Metadata and returns an exit code CI can gate on (pipeline/outcome.py).
"""
from __future__ import annotations

import dataclasses
import os
import sys
import time
from typing import Optional, Tuple

from absl import logging
from tfx import v1 as tfx

import pipeline  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)
from components import beam_fixes
from components.config import PipelineConfig
from pipeline import metadata, outcome, progress, summary
from pipeline.pipeline import REPO_ROOT, create_pipeline, validated_data

# TFX's Beam components (StatisticsGen, Transform, Evaluator) run in this process on the DirectRunner.
beam_fixes.apply()

# The Beam options that name a pipeline's Python dependencies; TFX builds a package when none is set.
_DEPENDENCY_OPTIONS = ("extra_packages", "setup_file", "requirements_file", "worker_harness_container_image",
                       "sdk_container_image")


def workers_share_this_environment(options: dict) -> bool:
    """True on the DirectRunner, and on a portable runner (Flink, Spark) whose Python workers are this
    installation's: an EXTERNAL pool (pipeline/job_servers.py) or LOOPBACK. Those install nothing staged."""
    runner = (options.get("runner") or "DirectRunner").lower()
    return runner in ("directrunner", "direct") or (options.get("environment_type") or "").upper() in (
        "EXTERNAL", "LOOPBACK")


def local_beam_args(config: PipelineConfig) -> list:
    """`beam_args`, plus `--setup_file=<this project's setup.py>` when the workers run in this
    environment (`workers_share_this_environment`: the DirectRunner, or Flink with a pool) and no
    dependency flag is given. Without one, TFX's BaseBeamExecutor copies its own installation
    and runs `setup.py sdist` on it before every Beam component (dependency_utils.
    make_beam_dependency_flags: 15 s of CPU each here, and 41 MB left in /tmp each time) for
    workers to install; these workers run in this environment and install nothing (this project's
    own sdist, which a portable runner stages, takes a second).
    There each worker also imports pipeline.quiet_exit (a Beam plugin): the Transform's and the
    Evaluator's workers end without TensorFlow's `Exception ignored in: AtomicFunction.__del__`."""
    from apache_beam.options.pipeline_options import PipelineOptions

    args = list(config.beam_args)
    options = PipelineOptions(args).get_all_options()
    setup_file = os.path.join(REPO_ROOT, "setup.py")
    if (workers_share_this_environment(options)
            and os.path.isfile(setup_file) and not any(options.get(name) for name in _DEPENDENCY_OPTIONS)):
        if "pipeline.quiet_exit" not in (options.get("beam_plugins") or []):
            args.append("--beam_plugin=pipeline.quiet_exit")
        args.append(f"--setup_file={setup_file}")
    return args


def _pipeline(config: PipelineConfig, connection, validate_only: bool) -> tfx.dsl.Pipeline:
    if not validate_only:
        return create_pipeline(config, metadata_connection_config=connection,
                               beam_pipeline_args=local_beam_args(config))
    # The data half under the same pipeline name: with enable_cache a later full run reuses
    # the validated ExampleGen and StatisticsGen outputs.
    return tfx.dsl.Pipeline(
        pipeline_name=config.name, pipeline_root=config.pipeline_root,
        components=validated_data(config).components(), enable_cache=config.enable_cache,
        metadata_connection_config=connection, beam_pipeline_args=local_beam_args(config))


def _unfinished(connection, pipeline_name: str) -> Optional[str]:
    """'<run id> (Trainer RUNNING)' when the latest run of the pipeline did not finish."""
    try:
        last = summary.latest_run(connection, pipeline_name)
    except RuntimeError:  # no run yet
        return None
    stopped = {node: state for node, state in last.node_states.items() if state not in ("COMPLETE", "CACHED")}
    return f"{last.run_id} ({', '.join(f'{n} {s}' for n, s in sorted(stopped.items()))})" if stopped else None


def write_report(run_summary: summary.RunSummary, config: PipelineConfig, verbose: bool) -> Optional[str]:
    """The run's HTML report (pipeline/report); a report that fails is said, and does not
    change the run's exit code."""
    from pipeline import report
    started = time.monotonic()
    try:
        path = report.write(run_summary, config)
        print(f"[{time.strftime('%H:%M:%S')}] run report written in {time.monotonic() - started:.1f} s", flush=True)
        return path
    except Exception as e:  # the run's outcome stands; the report is for people
        if verbose:
            logging.exception("the report failed")
        print(f"tfx-audio: the run report failed: {type(e).__name__}: {e}", file=sys.stderr)
        return None


def run(config: PipelineConfig, validate_only: bool = False, verbose: bool = False,
        resume: bool = True) -> Tuple[outcome.ExitCode, Optional[summary.RunSummary]]:
    """Runs the pipeline (or its data half), prints one line per component and the summary.

    After a run that did not finish (a crash, a kill, a failed component), the cache is on
    for this run: the components that completed are reused when their inputs and settings
    are the same, and the Trainer resumes from the stopped execution's last checkpoint
    (components/training/resume.py). `resume=False` (--fresh) runs everything anew."""
    config.output_dir = os.path.abspath(config.output_dir)
    os.makedirs(config.output_dir, exist_ok=True)
    progress.quiet_logs(verbose)
    connection = metadata.connection_config(config)
    stopped = _unfinished(connection, config.name) if resume and not config.enable_cache else None
    if stopped:
        config = dataclasses.replace(config, enable_cache=True)
        print(f"the last run {stopped} did not finish: its completed components are reused and the "
              f"Trainer resumes from its last checkpoint (--fresh starts over)", flush=True)
    crashed = None
    with progress.component_lines(connection, config.name):
        try:
            tfx.orchestration.LocalDagRunner().run(_pipeline(config, connection, validate_only))
        except Exception as e:  # mapped to an exit code below, its message printed
            crashed = e
            if verbose:
                logging.exception("the run failed")
    try:
        run_summary = summary.latest_run(connection, config.name)
    except RuntimeError as e:  # nothing was recorded: the run failed before its first component
        print(f"tfx-audio: {crashed or e} ({metadata.describe(connection)})", file=sys.stderr)
        return outcome.ExitCode.FAILED, None
    if config.report.enabled:
        run_summary.report = write_report(run_summary, config, verbose)
    print(run_summary.text(), flush=True)
    code = outcome.of_run(run_summary, crashed is not None, validate_only)
    if crashed is not None:
        print(f"tfx-audio: the run failed: {type(crashed).__name__}: {crashed}", file=sys.stderr)
    print(f"exit code {int(code)} ({code.name.lower().replace('_', ' ')})", flush=True)
    return code, run_summary

