"""Compiles the pipeline for Kubeflow Pipelines (KFP v2 / Vertex AI Pipelines).

    tfx-audio compile --config pipeline/configs/kubeflow.yaml \
        --image REGISTRY/tfx-audio:TAG --output tfx-audio.json

The JSON is TFX's KFP v2 pipeline job (a PipelineSpec inside); `tfx-audio submit` and
`tfx-audio schedule` send it to a cluster. Every component runs in the project's image and
asks for the CPU, memory and accelerator of `kubeflow.*` in the config; Beam steps use the
runner named in `beam_args` (e.g. Dataflow, Flink, Spark).
"""
from __future__ import annotations

import json

from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2
from tfx import v1 as tfx
from tfx.dsl.components.base import base_component

import pipeline  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)
from components.config import PipelineConfig, Resources
from pipeline.pipeline import create_pipeline

ResourceSpec = pipeline_spec_pb2.PipelineDeploymentConfig.PipelineContainerSpec.ResourceSpec
BEAM_STEPS = ("WavExampleGen", "StatisticsGen", "Transform", "Evaluator")


def resource_spec(resources: Resources) -> ResourceSpec:
    spec = ResourceSpec()
    if resources.cpu:
        spec.cpu_limit = resources.cpu
    if resources.memory_gb:
        spec.memory_limit = resources.memory_gb
    if resources.accelerator_count:
        spec.accelerator.type = resources.accelerator_type
        spec.accelerator.count = resources.accelerator_count
    return spec


def resources_of(config: PipelineConfig, component_id: str) -> Resources:
    kubeflow = config.kubeflow
    if component_id == "Trainer":
        return kubeflow.trainer
    return kubeflow.beam if component_id in BEAM_STEPS else kubeflow.other


def compile_pipeline(config: PipelineConfig, image: str, output: str) -> str:
    """Writes the KFP v2 job JSON for `config` to `output` and returns its path."""
    if not image:
        raise ValueError("no image: pass --image REGISTRY/tfx-audio:TAG or set kubeflow.image")
    kfp_pipeline = create_pipeline(config, metadata_connection_config=None)  # the cluster's MLMD
    for component in kfp_pipeline.components:
        if isinstance(component, base_component.BaseComponent):  # the Resolver runs no container
            component.with_platform_config(resource_spec(resources_of(config, component.id)))
    runner = tfx.orchestration.experimental.KubeflowV2DagRunner(
        config=tfx.orchestration.experimental.KubeflowV2DagRunnerConfig(default_image=image),
        output_filename=output)
    runner.run(kfp_pipeline)
    # TFX 1.16 builds a FileBasedExampleGen's container without its platform_config
    # (step_builder._build_file_based_example_gen_spec): the WAV ExampleGen's is set here.
    with open(output) as f:
        job = json.load(f)
    executors = job["pipelineSpec"]["deploymentSpec"]["executors"]
    for label, executor in executors.items():
        node = label[:-len("_executor")]
        if "container" in executor and not executor["container"].get("resources"):
            resources = json_format.MessageToDict(resource_spec(resources_of(config, node)))
            if resources:
                executor["container"]["resources"] = resources
    with open(output, "w") as f:
        json.dump(job, f, indent=2, sort_keys=True)
    return output
