"""Compiles the pipeline for Kubeflow Pipelines (KFP v2 / Vertex AI Pipelines).

    python -m pipeline.kubeflow_v2_runner --config pipeline/configs/kubeflow.yaml \
        --image REGISTRY/tfx-audio:TAG --output tfx-audio.json

The JSON is a KFP v2 pipeline spec: upload it to the cluster and schedule it as a
recurring run (see README). Every component runs in the project's Docker image;
Beam steps use the runner named in `beam_args` (e.g. Dataflow, Flink, Spark).
"""
import argparse

import pipeline  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)
from tfx import v1 as tfx

from components.config import load_config
from pipeline.pipeline import create_pipeline


def compile_pipeline(config_path, overrides, image: str, output: str) -> str:
    config = load_config(config_path, overrides)
    runner = tfx.orchestration.experimental.KubeflowV2DagRunner(
        config=tfx.orchestration.experimental.KubeflowV2DagRunnerConfig(default_image=image),
        output_filename=output)
    # On Kubeflow the metadata store is the cluster's, so no connection config is passed.
    runner.run(create_pipeline(config, metadata_connection_config=None))
    return output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default=None)
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    parser.add_argument("--image", required=True, help="container image built from the Dockerfile")
    parser.add_argument("--output", default="tfx-audio-kubeflow.json")
    args = parser.parse_args()
    print(compile_pipeline(args.config, args.set, args.image, args.output))


if __name__ == "__main__":
    main()
