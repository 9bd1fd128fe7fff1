"""`create_pipeline(...)`: the tfx-audio TFX pipeline, for every orchestrator.

WavExampleGen -> StatisticsGen -> ImportSchemaGen -> ConfiguredSchema -> ExampleValidator
-> AnomaliesGate -> Transform -> Trainer -> (latest blessed model Resolver) -> Evaluator -> Pusher;
with `evaluator.heldout_base`, also HeldoutExampleGen -> HeldoutEvaluator (the trained model and
the latest blessed one on conditions the training never sees; reported, not gated).
"""
from __future__ import annotations

import dataclasses
import json
import os
from typing import List, Optional

import tensorflow as tf
import tensorflow_data_validation as tfdv
from ml_metadata.proto import metadata_store_pb2
from tfx import v1 as tfx

from components import features
from components.config import PipelineConfig
from components.evaluation.evaluator import HELDOUT_SPLIT, make_eval_config
from components.ingest import WavExampleGen
from components.models import denoiser_weights
from components.validation import schema

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PREPROCESSING_FN = "components.transform.preprocessing.preprocessing_fn"
RUN_FN = "components.training.trainer.run_fn"


def _absolute(path: str) -> str:
    """Local paths made absolute (components may run elsewhere); URLs (gs://...) kept."""
    return path if "://" in path else os.path.abspath(path)


@dataclasses.dataclass
class DataNodes:
    """The data half of the pipeline: ingestion, statistics, schema, validation, gate."""
    example_gen: tfx.dsl.components.base.base_component.BaseComponent
    statistics_gen: tfx.components.StatisticsGen
    schema_gen: tfx.components.ImportSchemaGen
    configured_schema: tfx.dsl.components.base.base_component.BaseComponent
    example_validator: tfx.components.ExampleValidator
    anomalies_gate: tfx.dsl.components.base.base_component.BaseComponent

    def components(self) -> list:
        return [self.example_gen, self.statistics_gen, self.schema_gen, self.configured_schema,
                self.example_validator, self.anomalies_gate]


def statistics_options() -> tfdv.StatsOptions:
    """StatisticsGen's TFDV options: top-k and unique counts from TFDV's sketches
    (Misra-Gries and KMV, fixed size; strings over 1 kB are counted under one placeholder)
    instead of its default exact generator, which groups the data by every distinct string
    value and so held each example's WAV bytes (`audio`, `clean_audio`) in Beam's buffers:
    StatisticsGen's memory grew with the corpus. The schema's checks on those features
    (type, presence, value counts) come from TFDV's basic statistics, which are unchanged."""
    return tfdv.StatsOptions(use_sketch_based_topk_uniques=True)


def _example_gen(config: PipelineConfig, input_base: str, file_pattern: str, splits: dict,
                 **ingest) -> WavExampleGen:
    return WavExampleGen(
        input_base=_absolute(input_base),
        file_pattern=file_pattern,
        output_config=tfx.proto.Output(split_config=tfx.proto.SplitConfig(
            splits=[tfx.proto.SplitConfig.Split(name=name, hash_buckets=buckets) for name, buckets in splits.items()],
            partition_feature_name=features.GROUP)),
        **dict(config.ingest_options(), **ingest))


def validated_data(config: PipelineConfig) -> DataNodes:
    """WavExampleGen -> StatisticsGen, ImportSchemaGen -> ConfiguredSchema -> ExampleValidator
    -> AnomaliesGate: what Transform may run on."""
    data = config.data
    example_gen = _example_gen(config, data.input_base, data.file_pattern, data.split_buckets,
                               noise_base=_absolute(data.noise_base) if data.noise_base else "")
    statistics_gen = tfx.components.StatisticsGen(examples=example_gen.outputs["examples"],
                                                  stats_options=statistics_options())
    schema_gen = tfx.components.ImportSchemaGen(schema_file=os.path.join(REPO_ROOT, config.schema_file))
    configured_schema = schema.ConfiguredSchema(  # the bounds that mirror settings, from the settings
        curated=schema_gen.outputs["schema"], bounds_json=json.dumps(schema.bounds(config)))
    example_validator = tfx.components.ExampleValidator(
        statistics=statistics_gen.outputs["statistics"], schema=configured_schema.outputs["schema"])
    anomalies_gate = schema.AnomaliesGate(anomalies=example_validator.outputs["anomalies"],
                                          on_anomalies=config.validation.on_anomalies)
    return DataNodes(example_gen, statistics_gen, schema_gen, configured_schema, example_validator,
                     anomalies_gate)


def trainer_noise_folders(config: PipelineConfig) -> List[str]:
    """The trainer sections whose `noise_base` the Trainer reads in this configuration."""
    return [name for name, used in (("context", config.trainer.context.clips),
                                    ("background", config.trainer.background.probability)) if used]


def create_pipeline(config: PipelineConfig, pipeline_root: Optional[str] = None,
                    metadata_connection_config: Optional[metadata_store_pb2.ConnectionConfig] = None,
                    beam_pipeline_args: Optional[List[str]] = None) -> tfx.dsl.Pipeline:
    """The pipeline for `config`; runners pass their own root, MLMD connection and Beam flags."""
    nodes = validated_data(config)
    example_gen, configured_schema = nodes.example_gen, nodes.configured_schema

    custom_config = {"config": config.components_dict()}  # rebuilt with PipelineConfig.from_dict
    for section in trainer_noise_folders(config):  # noise recordings the Trainer reads, wherever it runs
        noise_base = _absolute(getattr(config.trainer, section).noise_base)
        if "://" not in noise_base and not tf.io.gfile.glob(os.path.join(noise_base, "*", "*.wav")):
            raise ValueError(f"trainer.{section}.noise_base={noise_base}: no file matches <noise kind>/*.wav")
        custom_config["config"]["trainer"][section]["noise_base"] = noise_base
    # Read by the Trainer wherever it runs; `pretrained` names the packaged weights, found there.
    if config.trainer.denoiser.warm_start not in ("", denoiser_weights.PRETRAINED_NAME):
        warm_start = _absolute(config.trainer.denoiser.warm_start)
        if "://" not in warm_start and not tf.io.gfile.exists(warm_start):
            raise ValueError(f"trainer.denoiser.warm_start={warm_start}: no such file or model directory")
        custom_config["config"]["trainer"]["denoiser"]["warm_start"] = warm_start
    transform = tfx.components.Transform(
        examples=example_gen.outputs["examples"],
        schema=configured_schema.outputs["schema"],
        preprocessing_fn=PREPROCESSING_FN,
        splits_config=tfx.proto.SplitsConfig(analyze=["train"]),
        # Only what preprocessing_fn reads: TFX keys its cache on custom_config, so a change of the
        # Trainer's or the Evaluator's settings reuses the Transform's output.
        custom_config={"config": {"features": custom_config["config"]["features"]}},
        materialize=False,  # the Trainer featurizes the ExampleGen's records (components/training/input_pipeline.py)
        disable_statistics=True)
    transform.add_upstream_node(nodes.anomalies_gate)  # Transform runs on validated data only

    trainer = tfx.components.Trainer(
        run_fn=RUN_FN,
        examples=example_gen.outputs["examples"],
        transform_graph=transform.outputs["transform_graph"],
        schema=configured_schema.outputs["schema"],
        train_args=tfx.proto.TrainArgs(splits=["train"]),
        eval_args=tfx.proto.EvalArgs(splits=["eval"]),
        custom_config=custom_config)

    model_resolver = tfx.dsl.Resolver(
        strategy_class=tfx.dsl.experimental.LatestBlessedModelStrategy,
        model=tfx.dsl.Channel(type=tfx.types.standard_artifacts.Model),
        model_blessing=tfx.dsl.Channel(type=tfx.types.standard_artifacts.ModelBlessing),
    ).with_id("latest_blessed_model_resolver")

    evaluator = tfx.components.Evaluator(
        examples=example_gen.outputs["examples"],
        model=trainer.outputs["model"],
        baseline_model=model_resolver.outputs["model"],
        example_splits=[config.evaluator.eval_split],
        eval_config=make_eval_config(config.evaluator, config.trainer, config.features))

    heldout = []
    if config.evaluator.heldout_base:  # the generalization protocol: read, evaluated, never trained on
        heldout_base = config.evaluator.heldout_base
        if "://" not in heldout_base and not tf.io.gfile.glob(os.path.join(heldout_base,
                                                                              config.evaluator.heldout_file_pattern)):
            raise ValueError(f"evaluator.heldout_base={heldout_base}: no file matches "
                             f"{config.evaluator.heldout_file_pattern} there (python -m pipeline.datagen.heldout "
                             f"writes a held-out corpus)")
        # The corpus's own layout (labelled folders, metadata.csv), whatever data.* says of the training data.
        heldout_gen = _example_gen(config, heldout_base, config.evaluator.heldout_file_pattern, {HELDOUT_SPLIT: 1},
                                   noise_base="", noisy_copies=0, layout="folders", metadata_file="metadata.csv",
                                   segments_file="", group_regex="", latest_spans=1).with_id("HeldoutExampleGen")
        heldout_evaluator = tfx.components.Evaluator(
            examples=heldout_gen.outputs["examples"],
            model=trainer.outputs["model"],
            baseline_model=model_resolver.outputs["model"],  # the latest blessed model's figures beside
            example_splits=[HELDOUT_SPLIT],
            eval_config=make_eval_config(config.evaluator, config.trainer, config.features, heldout=True),
        ).with_id("HeldoutEvaluator")
        heldout = [heldout_gen, heldout_evaluator]

    pusher = tfx.components.Pusher(
        model=trainer.outputs["model"],
        model_blessing=evaluator.outputs["blessing"],
        push_destination=tfx.proto.PushDestination(
            filesystem=tfx.proto.PushDestination.Filesystem(
                base_directory=config.serving_model_dir)))

    return tfx.dsl.Pipeline(
        pipeline_name=config.name,
        pipeline_root=pipeline_root or config.pipeline_root,
        components=nodes.components() + [transform, trainer, model_resolver, evaluator, *heldout, pusher],
        enable_cache=config.enable_cache,
        metadata_connection_config=metadata_connection_config,
        beam_pipeline_args=beam_pipeline_args if beam_pipeline_args is not None else config.beam_args)
