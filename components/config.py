"""The one configuration object: every setting of the pipeline, with its default.

A YAML file (see `pipeline/configs/`) and `--set section.key=value` overrides fill
it; components receive it (Transform and Trainer through `custom_config`), they do
not read globals or environment variables. It lives beside `features.py` so that
`components/` stands on its own and `pipeline/` (the DAG and its runners) sits on top.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, List, Optional

import yaml

from components import features


@dataclasses.dataclass
class DataConfig:
    input_base: str = "data/demo"  # folder of <label>/*.wav (+ optional metadata.csv, segments.csv)
    file_pattern: str = "*/*.wav"  # glob under input_base; TFX fingerprints these files
    metadata_file: str = "metadata.csv"  # audiofolder-style, optional
    # Optional labelled spans (file_name,start_s,end_s,label), the way QA teams annotate calls.
    segments_file: str = "segments.csv"
    max_duration_s: float = 4 * 3600.0  # longer recordings are rejected (they are read window by window)
    max_file_mb: float = 4096.0  # larger files are rejected before anything is read (the WAV format's limit)
    max_reject_fraction: float = 0.05  # ExampleGen fails when more are rejected
    # folders: <label>/*.wav. paired: noisy/[<label>/]*.wav with clean/ + the same path as
    # the clean reference (VoiceBank-DEMAND style; set file_pattern to match, e.g. noisy/*/*.wav).
    layout: str = "folders"
    # Recordings become examples window by window. fixed: windows of segment_s every hop_s;
    # vad: the same, inside the speech regions found by voice-activity detection.
    segmentation: str = "fixed"
    segment_s: Optional[float] = None  # window length; default and maximum: features.clip_seconds
    hop_s: Optional[float] = None  # default segment_s (windows do not overlap)
    min_segment_s: float = 0.2  # shorter windows (a recording's tail, a short span) are dropped and counted
    unlabelled_spans: str = "drop"  # drop | background: stretches no span of segments.csv covers
    background_label: str = "background"
    vad_aggressiveness: int = 2  # webrtcvad: 0 keeps the most audio as speech, 3 the least
    vad_min_gap_s: float = 0.3  # speech regions closer than this are merged
    vad_pad_s: float = 0.1  # each speech region is widened by this on both sides
    # Noise augmentation: noisy_copies mixtures of each clean utterance with recordings
    # from noise_base/<noise kind>/*.wav at SNRs drawn from snr_db_range; seeded per file.
    noise_base: str = ""
    noisy_copies: int = 0
    snr_db_range: List[float] = dataclasses.field(default_factory=lambda: [0.0, 20.0])
    mix_seed: int = 0
    # Hash buckets per split; the split of an example is decided by its group.
    split_buckets: Dict[str, int] = dataclasses.field(
        default_factory=lambda: {"train": 8, "eval": 1, "test": 1})


# The DataConfig fields the WAV ExampleGen takes as options.
INGEST_OPTIONS = ("metadata_file", "segments_file", "max_duration_s", "max_file_mb", "max_reject_fraction",
                  "layout", "segmentation", "segment_s", "hop_s", "min_segment_s", "unlabelled_spans",
                  "background_label", "vad_aggressiveness", "vad_min_gap_s", "vad_pad_s", "noise_base",
                  "noisy_copies", "snr_db_range", "mix_seed")
UNLABELLED_SPANS = ("drop", "background")


@dataclasses.dataclass
class FeatureConfig:
    clip_seconds: float = 1.0  # crop or pad every utterance to this length
    frame_length: int = 400  # 25 ms STFT window
    frame_step: int = 160  # 10 ms hop
    fft_length: int = 512
    num_mel_bins: int = 64
    lower_hz: float = 20.0
    upper_hz: float = 7600.0
    # Input-SNR buckets for slicing: edges [0, 5, 10, 20] give 0-5, 5-10, 10-20 (and
    # below-0 / 20-up outside them); examples without a clean reference get none.
    snr_bucket_edges_db: List[float] = dataclasses.field(default_factory=lambda: [0.0, 5.0, 10.0, 20.0])

    @property
    def num_samples(self) -> int:
        return int(round(self.clip_seconds * features.SAMPLE_RATE))

    @property
    def num_frames(self) -> int:
        return 1 + (self.num_samples - self.frame_length) // self.frame_step


# SpecAugment policies of Park et al. 2019 (Table 1): F, mF, T, p, mT.
SPEC_AUGMENT_POLICIES = {
    "LB": dict(freq_mask_width=27, freq_masks=1, time_mask_width=100, time_mask_max_ratio=1.0, time_masks=1),
    "LD": dict(freq_mask_width=27, freq_masks=2, time_mask_width=100, time_mask_max_ratio=1.0, time_masks=2),
    "SM": dict(freq_mask_width=15, freq_masks=2, time_mask_width=70, time_mask_max_ratio=0.2, time_masks=2),
    "SS": dict(freq_mask_width=27, freq_masks=2, time_mask_width=40, time_mask_max_ratio=0.2, time_masks=2),
}


@dataclasses.dataclass
class SpecAugmentConfig:
    """SpecAugment (Park et al. 2019) on the training stream only (log-mel backbone).

    `policy` LB, LD, SM or SS takes the paper's parameters; `custom` takes the fields
    below. Time warping is left out: the paper found it the least useful part.
    """
    enabled: bool = True
    policy: str = "custom"
    freq_masks: int = 2  # mF: number of frequency masks
    freq_mask_width: int = 8  # F: maximum width in mel bins
    time_masks: int = 2  # mT
    time_mask_width: int = 10  # T: maximum width in frames
    time_mask_max_ratio: float = 0.2  # p: a time mask covers at most p * frames

    def resolved(self) -> "SpecAugmentConfig":
        """The parameters in force: the named policy's, or the fields for `custom`."""
        if self.policy == "custom":
            return self
        if self.policy not in SPEC_AUGMENT_POLICIES:
            raise ValueError(f"trainer.spec_augment.policy {self.policy!r}: expected custom or one of "
                             f"{sorted(SPEC_AUGMENT_POLICIES)}")
        return dataclasses.replace(self, policy="custom", **SPEC_AUGMENT_POLICIES[self.policy])


@dataclasses.dataclass
class Wav2Vec2Config:
    """The transformers Wav2Vec2 backbone (TFWav2Vec2ForSequenceClassification)."""
    # Local directory in save_pretrained layout, or a hub id (needs network). Empty:
    # build from `config_overrides` with random weights (tests, benchmarks).
    pretrained: str = ""
    config_overrides: Dict[str, Any] = dataclasses.field(default_factory=dict)
    freeze_feature_encoder: bool = True
    freeze_layers: int = 0  # the first N transformer layers are frozen too
    mask_time_prob: float = 0.05  # latent time masking, training only
    mask_time_length: int = 5
    classifier_proj_size: int = 256


@dataclasses.dataclass
class DenoiserConfig:
    """The denoiser front end (components/denoiser.py): STFT, conv + BiGRU mask, inverse STFT."""
    enabled: bool = False  # on: the classifier consumes the enhanced audio
    frame_length: int = 512  # 32 ms
    frame_step: int = 128  # 8 ms
    fft_length: int = 512
    channels: int = 256  # conv channels
    kernel_size: int = 3  # conv kernel, in frames
    gru_units: int = 128  # per direction
    init_mask_logit: float = 2.0  # mask starts near sigmoid(2) = 0.88: pass-through


OBJECTIVES = ("classify", "denoise", "joint")


@dataclasses.dataclass
class TrainerConfig:
    """Defaults are the wav2vec2 classification recipe known to work (Hugging Face's
    run_audio_classification: lr 3e-5, warmup 0.1, feature encoder frozen, 32 x 4
    accumulation); the demo config switches to the CPU-sized log-mel CNN."""
    backbone: str = "wav2vec2"  # wav2vec2 | logmel_cnn
    epochs: int = 5
    batch_size: int = 32  # per replica; the global batch is this times the replicas
    grad_accum_steps: int = 4  # optimizer step every N batches
    learning_rate: float = 3e-5
    weight_decay: float = 1e-2  # AdamW; never on biases or norm layers
    warmup_ratio: float = 0.1  # linear warmup, then linear decay to 0
    clip_norm: float = 1.0  # global-norm clipping of the unscaled gradients
    precision: str = "auto"  # auto (mixed_float16 on GPU, float32 on CPU) | float32 | mixed_float16 | mixed_bfloat16
    shuffle_buffer: int = 2048
    log_every_steps: int = 20
    checkpoint_every_steps: int = 100
    seed: int = 7
    # classify: cross-entropy; denoise: -SI-SNR only (classifier untouched); joint:
    # cross-entropy + denoise_weight * -SI-SNR. SI-SNR counts only examples with a clean reference.
    objective: str = "classify"
    denoise_weight: float = 1.0  # the lambda of the joint objective
    spec_augment: SpecAugmentConfig = dataclasses.field(default_factory=SpecAugmentConfig)
    wav2vec2: Wav2Vec2Config = dataclasses.field(default_factory=Wav2Vec2Config)
    denoiser: DenoiserConfig = dataclasses.field(default_factory=DenoiserConfig)

    def __post_init__(self):
        if self.objective not in OBJECTIVES:
            raise ValueError(f"trainer.objective {self.objective!r}: expected one of {OBJECTIVES}")
        if self.objective != "classify" and not self.denoiser.enabled:
            raise ValueError(f"trainer.objective={self.objective} trains the denoiser: "
                             f"set trainer.denoiser.enabled=true")


@dataclasses.dataclass
class EvaluatorConfig:
    eval_split: str = "test"
    min_accuracy: float = 0.5  # blessing floor on the eval split's accuracy
    # The candidate may not be worse than the latest blessed model by more than this.
    max_accuracy_regression: float = 0.0
    # Denoising gate (needs trainer.denoiser.enabled): SI-SNR improvement on the split's
    # examples with a clean reference; None turns the gate off.
    min_si_snr_improvement_db: Optional[float] = None
    max_si_snr_regression_db: float = 0.0
    # Slices reported (not gated): raw or transformed feature names.
    slice_features: List[str] = dataclasses.field(default_factory=lambda: [features.NOISE_KIND, features.SNR_BUCKET])


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

    def __post_init__(self):
        if self.evaluator.min_si_snr_improvement_db is not None and not self.trainer.denoiser.enabled:
            raise ValueError("evaluator.min_si_snr_improvement_db gates the denoiser: set "
                             "trainer.denoiser.enabled=true or leave the floor unset")
        segment, hop = self.segment_s, self.ingest_options()["hop_s"]
        if segment > self.features.clip_seconds + 1e-9:
            raise ValueError(f"data.segment_s={segment} is longer than the model's window "
                             f"features.clip_seconds={self.features.clip_seconds}: examples would be cropped. "
                             f"Lower data.segment_s or raise features.clip_seconds")
        if not 0 < hop <= segment:
            raise ValueError(f"data.hop_s={hop}: expected 0 < hop_s <= segment_s ({segment})")
        if self.data.unlabelled_spans not in UNLABELLED_SPANS:
            raise ValueError(f"data.unlabelled_spans {self.data.unlabelled_spans!r}: expected one of "
                             f"{UNLABELLED_SPANS}")

    @property
    def segment_s(self) -> float:
        """The ExampleGen's window: data.segment_s, by default the model's window."""
        return float(self.data.segment_s or self.features.clip_seconds)

    def ingest_options(self) -> Dict[str, Any]:
        """The WAV ExampleGen's options, with the window lengths resolved."""
        options = {name: getattr(self.data, name) for name in INGEST_OPTIONS}
        options["segment_s"] = self.segment_s
        options["hop_s"] = float(self.data.hop_s or self.segment_s)
        return options

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
        elif isinstance(default, float) and isinstance(value, (int, str)) and not isinstance(value, bool):
            try:  # YAML reads 3e-5 (no dot) as a string
                kwargs[name] = float(value)
            except ValueError as e:
                raise ValueError(f"{where}.{name}: {value!r} is not a number") from e
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
