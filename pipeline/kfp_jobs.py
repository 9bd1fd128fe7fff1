"""Sends a compiled pipeline to Kubeflow Pipelines with the `kfp` client: one run, or a
recurring run on a cron schedule.

TFX's KubeflowV2DagRunner writes a pipeline *job* JSON (Vertex AI's format: the PipelineSpec
under "pipelineSpec", the pipeline root under "runtimeConfig"); the KFP client uploads a
PipelineSpec YAML, so `package` unwraps it.
"""
from __future__ import annotations

import dataclasses
import json
import os
from typing import Optional

import kfp
import yaml

HOST_ENV = "KFP_HOST"


@dataclasses.dataclass
class Package:
    path: str  # the PipelineSpec as KFP's client reads it (YAML)
    pipeline_root: Optional[str]  # where the compiled run writes its artifacts


def package(compiled_json: str, out_dir: str) -> Package:
    with open(compiled_json) as f:
        job = json.load(f)
    path = os.path.join(out_dir, "pipeline.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(job["pipelineSpec"], f, sort_keys=False)
    return Package(path, job.get("runtimeConfig", {}).get("gcsOutputDirectory"))


def host(flag: str, configured: str) -> str:
    """--host, else $KFP_HOST, else kubeflow.host; an error naming all three when none is set."""
    chosen = flag or os.environ.get(HOST_ENV) or configured
    if not chosen:
        raise ValueError(f"no Kubeflow Pipelines endpoint: pass --host, set {HOST_ENV} or kubeflow.host "
                         f"(e.g. http://localhost:8080 through kubectl port-forward)")
    return chosen


def cron(expression: str) -> str:
    """KFP's 6-field cron (seconds first); a standard 5-field expression gets second 0."""
    fields = expression.split()
    if len(fields) == 5:
        return "0 " + expression.strip()
    if len(fields) == 6:
        return expression.strip()
    raise ValueError(f"cron {expression!r}: expected 5 fields (minute hour day month weekday) or KFP's 6 "
                     f"(second first), e.g. '0 2 * * *' for 02:00 every day")


def submit(client: kfp.Client, pkg: Package, experiment: str, run_name: str) -> str:
    """One run now; returns its run id."""
    result = client.create_run_from_pipeline_package(
        pkg.path, arguments={}, run_name=run_name, experiment_name=experiment, pipeline_root=pkg.pipeline_root)
    return result.run_id


def schedule(client: kfp.Client, pkg: Package, experiment: str, name: str, cron_expression: str,
             max_concurrency: int = 1) -> str:
    """A recurring run (no catch-up of missed runs, one at a time by default); returns its id."""
    experiment_id = client.create_experiment(experiment).experiment_id
    recurring = client.create_recurring_run(
        experiment_id=experiment_id, job_name=name, cron_expression=cron(cron_expression),
        pipeline_package_path=pkg.path, pipeline_root=pkg.pipeline_root,
        max_concurrency=max_concurrency, no_catchup=True, enabled=True)
    return recurring.recurring_run_id
