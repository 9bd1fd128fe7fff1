"""The one configuration object: every setting of the pipeline, with its default.

A YAML file (see `pipeline/configs/`) and `--set section.key=value` overrides fill
it; components receive it (Transform and Trainer through `custom_config`), they do
not read globals or environment variables.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, List, Optional

import yaml

from components import features


@dataclasses.dataclass
class DataConfig:
    input_base: str = "data/demo"  # folder of <label>/*.wav (+ optional metadata.csv)
    file_pattern: str = "*/*.wav"  # glob under input_base; TFX fingerprints these files
    metadata_file: str = "metadata.csv"  # audiofolder-style, optional
    max_duration_s: float = 30.0  # longer files are rejected
    max_reject_fraction: float = 0.05  # ExampleGen fails when more are rejected
    # Hash buckets per split; the split of an example is decided by its group.
    split_buckets: Dict[str, int] = dataclasses.field(
        default_factory=lambda: {"train": 8, "eval": 1, "test": 1})


@dataclasses.dataclass
class FeatureConfig:
    clip_seconds: float = 1.0  # crop or pad every utterance to this length
    frame_length: int = 400  # 25 ms STFT window
    frame_step: int = 160  # 10 ms hop
    fft_length: int = 512
    num_mel_bins: int = 64
    lower_hz: float = 20.0
    upper_hz: float = 7600.0

    @property
    def num_samples(self) -> int:
        return int(round(self.clip_seconds * features.SAMPLE_RATE))

    @property
    def num_frames(self) -> int:
        return 1 + (self.num_samples - self.frame_length) // self.frame_step


@dataclasses.dataclass
class SpecAugmentConfig:
    """SpecAugment (Park et al. 2019) on the training stream only."""
    enabled: bool = True
    freq_masks: int = 2  # number of frequency masks
    freq_mask_width: int = 8  # F: maximum width in mel bins
    time_masks: int = 2
    time_mask_width: int = 10  # T: maximum width in frames
    time_mask_max_ratio: float = 0.2  # p: a time mask covers at most p * frames


@dataclasses.dataclass
class TrainerConfig:
    backbone: str = "logmel_cnn"
    epochs: int = 30
    batch_size: int = 32
    learning_rate: float = 3e-3
    weight_decay: float = 1e-2
    warmup_ratio: float = 0.1
    clip_norm: float = 1.0
    shuffle_buffer: int = 2048
    log_every_steps: int = 20
    seed: int = 7
    spec_augment: SpecAugmentConfig = dataclasses.field(default_factory=SpecAugmentConfig)


@dataclasses.dataclass
class EvaluatorConfig:
    eval_split: str = "test"
    min_accuracy: float = 0.5  # blessing floor on the eval split's accuracy
    # The candidate may not be worse than the latest blessed model by more than this.
    max_accuracy_regression: float = 0.0
    slice_features: List[str] = dataclasses.field(default_factory=lambda: ["noise_kind"])


@dataclasses.dataclass
class PipelineConfig:
    name: str = "tfx-audio"
    output_dir: str = "outputs"  # pipeline root, ML Metadata and serving dir live here
    metadata_path: Optional[str] = None  # SQLite MLMD; default <output_dir>/metadata.sqlite
    serving_dir: Optional[str] = None  # Pusher target; default <output_dir>/serving
    enable_cache: bool = False
    # Curated schema; a relative path is taken from the repository root.
    schema_file: str = "schemas/schema.pbtxt"
    beam_args: List[str] = dataclasses.field(default_factory=lambda: [
        "--direct_running_mode=multi_processing", "--direct_num_workers=0"])
    data: DataConfig = dataclasses.field(default_factory=DataConfig)
    features: FeatureConfig = dataclasses.field(default_factory=FeatureConfig)
    trainer: TrainerConfig = dataclasses.field(default_factory=TrainerConfig)
    evaluator: EvaluatorConfig = dataclasses.field(default_factory=EvaluatorConfig)

    @property
    def pipeline_root(self) -> str:
        return os.path.join(self.output_dir, "pipeline")

    @property
    def metadata_sqlite(self) -> str:
        return self.metadata_path or os.path.join(self.output_dir, "metadata.sqlite")

    @property
    def serving_model_dir(self) -> str:
        return self.serving_dir or os.path.join(self.output_dir, "serving")

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: Dict[str, Any]) -> "PipelineConfig":
        return _build(cls, values, "config")


# Hand-written (about 30 lines) instead of OmegaConf/dacite: it keeps the lock small and
# gives error messages that name the offending key.
def _build(cls, values: Dict[str, Any], where: str):
    if not isinstance(values, dict):
        raise ValueError(f"{where}: expected a mapping, got {values!r}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ValueError(f"{where}: unknown setting(s) {unknown}; known: {sorted(fields)}")
    kwargs = {}
    for name, value in values.items():
        field = fields[name]
        has_factory = field.default_factory is not dataclasses.MISSING
        default = field.default_factory() if has_factory else field.default
        if dataclasses.is_dataclass(default):
            kwargs[name] = _build(type(default), value, f"{where}.{name}")
        else:
            kwargs[name] = value
    return cls(**kwargs)


def load_config(path: Optional[str] = None, overrides: Optional[List[str]] = None) -> PipelineConfig:
    """Loads a YAML config (or the defaults) and applies `section.key=value` overrides."""
    values: Dict[str, Any] = {}
    if path:
        with open(path) as f:
            values = yaml.safe_load(f) or {}
    for item in overrides or []:
        if "=" not in item:
            raise ValueError(f"override {item!r}: expected section.key=value")
        dotted, raw = item.split("=", 1)
        node = values
        keys = dotted.split(".")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = yaml.safe_load(raw)  # so 3 is an int, true a bool
    return PipelineConfig.from_dict(values)
