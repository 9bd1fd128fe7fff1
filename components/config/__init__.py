"""The one configuration object: every setting of the pipeline, with its default and its explanation.

A YAML file (see `pipeline/configs/`) and `--set section.key=value` overrides fill it
(`load_config`); components receive it (Transform and Trainer through `custom_config`), they do not
read globals or environment variables. It lives in `components/` so that `components/` stands on
its own and `pipeline/` (the DAG and its runners) sits on top. `tfx-audio settings` and
docs/settings.md list every field (`describe`).
"""
from components.config.checking import ConfigError
from components.config.data import INGEST_OPTIONS, DataConfig, FeatureConfig, ValidationConfig
from components.config.loading import load_config
from components.config.run import (
                                   BeamResources,
                                   CallsConfig,
                                   EvaluatorConfig,
                                   KubeflowConfig,
                                   MetadataConfig,
                                   PipelineConfig,
                                   ReportConfig,
                                   Resources,
                                   StepResources,
                                   TrainerResources,
)
from components.config.training import (
                                   LOGMEL_BACKBONES,
                                   SPEC_AUGMENT_POLICIES,
                                   AugmentConfig,
                                   BackgroundConfig,
                                   ContextConfig,
                                   DenoiserConfig,
                                   SpecAugmentConfig,
                                   TrainerConfig,
                                   VtlpConfig,
                                   Wav2Vec2Config,
)

__all__ = ["ConfigError", "INGEST_OPTIONS", "DataConfig", "FeatureConfig", "ValidationConfig", "load_config",
           "BeamResources", "CallsConfig", "EvaluatorConfig", "KubeflowConfig", "MetadataConfig", "PipelineConfig",
           "ReportConfig",
           "Resources", "StepResources", "TrainerResources", "LOGMEL_BACKBONES", "SPEC_AUGMENT_POLICIES",
           "AugmentConfig", "BackgroundConfig", "ContextConfig", "DenoiserConfig", "SpecAugmentConfig",
           "TrainerConfig", "VtlpConfig", "Wav2Vec2Config"]
