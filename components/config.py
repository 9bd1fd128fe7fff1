"""The one configuration object: every setting of the pipeline, with its default.

A YAML file (see `pipeline/configs/`) and `--set section.key=value` overrides fill
it; components receive it (Transform and Trainer through `custom_config`), they do
not read globals or environment variables. It lives beside `features.py` so that
`components/` stands on its own and `pipeline/` (the DAG and its runners) sits on top.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import typing
from typing import Annotated, Any, Dict, List, Literal, Optional

import pydantic
import pydantic_core
import yaml
from pydantic import Field

from components import features


# Types of the settings, checked by pydantic when a config is loaded (`PipelineConfig.from_dict`):
# a bool is neither an int nor a number, an int is a number, and a string that reads as a
# number is one (YAML 1.1 reads 3e-5, without a dot, as a string).
def _not_a_bool(value):
    if isinstance(value, bool):
        raise pydantic_core.PydanticCustomError("number_type", "Input should be a number, not a boolean")
    return value


Int = Annotated[int, pydantic.Strict()]
Bool = Annotated[bool, pydantic.Strict()]
Float = Annotated[float, pydantic.BeforeValidator(_not_a_bool)]
PositiveInt = Annotated[Int, Field(ge=1)]
Count = Annotated[Int, Field(ge=0)]
Positive = Annotated[Float, Field(gt=0)]  # seconds, sizes, frequencies
NonNegative = Annotated[Float, Field(ge=0)]
Fraction = Annotated[Float, Field(ge=0, le=1)]  # probabilities, ratios


@dataclasses.dataclass
class DataConfig:
    input_base: str = "data/demo"  # folder of <label>/*.wav (+ optional metadata.csv, segments.csv)
    file_pattern: str = "*/*.wav"  # glob under input_base; TFX fingerprints these files
    # With TFX's {SPAN} in a folder of file_pattern (e.g. "day-{SPAN}/*/*.wav"): each run reads the
    # newest latest_spans span folders, found at run time (labels: the folder after the span's).
    latest_spans: PositiveInt = 1
    metadata_file: str = "metadata.csv"  # audiofolder-style, optional
    # Optional labelled spans (file_name,start_s,end_s,label), the way QA teams annotate calls.
    segments_file: str = "segments.csv"
    max_duration_s: Positive = 4 * 3600.0  # longer recordings are rejected (they are read window by window)
    max_file_mb: Positive = 4096.0  # larger files are rejected before anything is read (the WAV format's limit)
    max_reject_fraction: Fraction = 0.05  # ExampleGen fails when more are rejected
    # folders: <label>/*.wav. paired: noisy/[<label>/]*.wav with clean/ + the same path as
    # the clean reference (VoiceBank-DEMAND style; set file_pattern to match, e.g. noisy/*/*.wav).
    layout: Layout = "folders"
    # Recordings become examples window by window. fixed: windows of segment_s every hop_s;
    # vad: the same, inside the speech regions found by voice-activity detection.
    segmentation: Segmentation = "fixed"
    segment_s: Optional[Positive] = None  # window length; default and maximum: features.clip_seconds
    hop_s: Optional[Positive] = None  # default segment_s (windows do not overlap)
    min_segment_s: NonNegative = 0.2  # shorter windows (a recording's tail, a short span) are dropped and counted
    unlabelled_spans: UnlabelledSpans = "drop"  # drop | background: stretches no span of segments.csv covers
    background_label: str = "background"
    # webrtcvad: 0 keeps the most audio as speech, 3 the least
    vad_aggressiveness: Annotated[Int, Field(ge=0, le=3)] = 2
    vad_min_gap_s: NonNegative = 0.3  # speech regions closer than this are merged
    vad_pad_s: NonNegative = 0.1  # each speech region is widened by this on both sides
    # Noise augmentation: noisy_copies mixtures of each clean utterance with recordings
    # from noise_base/<noise kind>/*.wav at SNRs drawn from snr_db_range; seeded per file.
    noise_base: str = ""
    noisy_copies: Count = 0
    snr_db_range: Annotated[List[Float], Field(min_length=2, max_length=2)] = dataclasses.field(
        default_factory=lambda: [0.0, 20.0])
    mix_seed: Int = 0
    # Hash buckets per split; the split of an example is decided by its group.
    split_buckets: Annotated[Dict[str, PositiveInt], Field(min_length=1)] = dataclasses.field(
        default_factory=lambda: {"train": 8, "eval": 1, "test": 1})
    # The split key of a file metadata.csv gives no group: the first capture of this regular
    # expression on its path (VoiceBank-DEMAND: '(p[0-9]+)_', the speaker). Without either,
    # the folders layout groups by recording and the paired layout rejects the file.
    group_regex: str = ""
    # The examples' TFRecord files: none (data_tfrecord-*), or gzip (data_tfrecord-*.gz, TFX's
    # default). PCM audio barely compresses (noisy 16-bit speech: 7 % smaller) while gzip costs
    # about 12 ms of CPU per 10-s clip to write and 2 ms to read, every epoch; TFX's readers
    # (TFXIO, TFMA) and the Trainer tell the two apart by the file name (docs/architecture.md).
    example_compression: ExampleCompression = "none"


# The DataConfig fields the WAV ExampleGen takes as options.
INGEST_OPTIONS = ("metadata_file", "segments_file", "max_duration_s", "max_file_mb", "max_reject_fraction",
                  "layout", "segmentation", "segment_s", "hop_s", "min_segment_s", "unlabelled_spans",
                  "background_label", "vad_aggressiveness", "vad_min_gap_s", "vad_pad_s", "noise_base",
                  "noisy_copies", "snr_db_range", "mix_seed", "group_regex", "latest_spans",
                  "example_compression")
ExampleCompression = Literal["none", "gzip"]
EXAMPLE_COMPRESSIONS = typing.get_args(ExampleCompression)
Layout = Literal["folders", "paired"]
LAYOUTS = typing.get_args(Layout)
Segmentation = Literal["fixed", "vad"]
SEGMENTATIONS = typing.get_args(Segmentation)
UnlabelledSpans = Literal["drop", "background"]
UNLABELLED_SPANS = typing.get_args(UnlabelledSpans)
OnAnomalies = Literal["fail", "warn"]
ON_ANOMALIES = typing.get_args(OnAnomalies)


@dataclasses.dataclass
class FeatureConfig:
    clip_seconds: Positive = 1.0  # crop or pad every utterance to this length
    frame_length: PositiveInt = 400  # 25 ms STFT window
    frame_step: PositiveInt = 160  # 10 ms hop
    fft_length: PositiveInt = 512
    num_mel_bins: PositiveInt = 64
    lower_hz: NonNegative = 20.0
    upper_hz: Positive = 7600.0
    # Input-SNR buckets for slicing: edges [0, 5, 10, 20] give 0-5, 5-10, 10-20 (and
    # below-0 / 20-up outside them); examples without a clean reference get none.
    snr_bucket_edges_db: Annotated[List[Float], Field(min_length=1)] = dataclasses.field(
        default_factory=lambda: [0.0, 5.0, 10.0, 20.0])

    def __post_init__(self):
        if self.fft_length < self.frame_length:  # the STFT would crop every frame (components/transform.log_mel)
            raise ValueError(f"features.fft_length {self.fft_length} is shorter than features.frame_length "
                             f"{self.frame_length}: expected fft_length >= frame_length")

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
SpecAugmentPolicy = Literal[("custom", *SPEC_AUGMENT_POLICIES)]  # the choices, from the table above


@dataclasses.dataclass
class SpecAugmentConfig:
    """SpecAugment (Park et al. 2019) on the training stream only (log-mel backbone).

    `policy` LB, LD, SM or SS takes the paper's parameters; `custom` takes the fields
    below. Time warping is left out: the paper found it the least useful part.
    """
    enabled: Bool = True
    policy: SpecAugmentPolicy = "custom"
    freq_masks: Count = 2  # mF: number of frequency masks
    freq_mask_width: Count = 8  # F: maximum width in mel bins
    time_masks: Count = 2  # mT
    time_mask_width: Count = 10  # T: maximum width in frames
    time_mask_max_ratio: Fraction = 0.2  # p: a time mask covers at most p * frames

    def resolved(self) -> "SpecAugmentConfig":
        """The parameters in force: the named policy's, or the fields for `custom`."""
        if self.policy == "custom":
            return self
        if self.policy not in SPEC_AUGMENT_POLICIES:
            raise ValueError(f"trainer.spec_augment.policy {self.policy!r}: expected custom or one of "
                             f"{sorted(SPEC_AUGMENT_POLICIES)}")
        return dataclasses.replace(self, policy="custom", **SPEC_AUGMENT_POLICIES[self.policy])


@dataclasses.dataclass
class VtlpConfig:
    """Vocal tract length perturbation of the log-mel features on the training stream
    (components/vtlp.py, Jaitly & Hinton 2013): formants scaled by a factor drawn per example,
    pitch and tempo kept. Log-mel backbones only; 0 turns it off (the default)."""
    probability: Fraction = 0.0
    factor_range: Annotated[List[Positive], Field(min_length=2, max_length=2)] = dataclasses.field(
        default_factory=lambda: [0.9, 1.1])
    boundary_hz: Positive = 4800.0  # the warp's knee: above it, a line to the Nyquist frequency


@dataclasses.dataclass
class Wav2Vec2Config:
    """The transformers Wav2Vec2 backbone (TFWav2Vec2ForSequenceClassification)."""
    # Local directory in save_pretrained layout, or a hub id (needs network). Empty:
    # build from `config_overrides` with random weights (tests, benchmarks).
    pretrained: str = ""
    config_overrides: Dict[str, Any] = dataclasses.field(default_factory=dict)
    freeze_feature_encoder: Bool = True
    freeze_layers: Count = 0  # the first N transformer layers are frozen too
    mask_time_prob: Fraction = 0.05  # latent time masking, training only
    mask_time_length: PositiveInt = 5
    classifier_proj_size: PositiveInt = 256


@dataclasses.dataclass
class AugmentConfig:
    """Speed, rooms and phone calls on the training stream of waveform models (components/augment.py);
    probabilities per example, 0 turns each off (the default)."""
    reverb_probability: Fraction = 0.0  # convolved with a simulated room's impulse response
    rir_count: PositiveInt = 32  # rooms simulated (pyroomacoustics) when the Trainer starts
    rt60_range_s: Annotated[List[Positive], Field(min_length=2, max_length=2)] = dataclasses.field(
        default_factory=lambda: [0.15, 0.6])
    phone_probability: Fraction = 0.0  # carried by a telephone call: voice band, mu-law, lost packets
    phone_level_dbfs: Annotated[List[Float], Field(min_length=2, max_length=2)] = dataclasses.field(
        default_factory=lambda: [-36.0, -12.0])  # the call's speech level: the coding noise it meets
    max_dropout: Fraction = 0.03  # rate of lost 20-ms packets, drawn up to this per call
    # Played faster or slower by one of speed_factors (resampled: tempo, pitch and formants move
    # together, Kaldi's speed perturbation of Ko et al. 2015): other speakers' voices and pace.
    speed_probability: Fraction = 0.0
    speed_factors: Annotated[List[Positive], Field(min_length=1)] = dataclasses.field(
        default_factory=lambda: [0.9, 1.1])


@dataclasses.dataclass
class DenoiserConfig:
    """The denoiser front end (components/denoiser.py): STFT, conv + BiGRU mask, inverse STFT."""
    enabled: Bool = False  # on: the classifier consumes the enhanced audio
    frame_length: PositiveInt = 512  # 32 ms
    frame_step: PositiveInt = 128  # 8 ms
    fft_length: PositiveInt = 512
    channels: PositiveInt = 256  # conv channels
    kernel_size: PositiveInt = 3  # conv kernel, in frames
    gru_units: PositiveInt = 128  # per direction
    init_mask_logit: Float = 2.0  # mask starts near sigmoid(2) = 0.88 (complex: tanh(2) = 0.96): pass-through
    # magnitude: a [0, 1] gain per bin, the noisy phase kept; complex: a complex gain per bin
    # (magnitude tanh-bounded below 1, any phase: DCCRN's "E" mask), so it can correct the phase.
    mask: Literal["magnitude", "complex"] = "magnitude"


@dataclasses.dataclass
class ContextConfig:
    """Multi-second sequences for the denoiser (components/context.py): each training batch's clean
    references, `clips` at a time, joined into one sequence and mixed with one stretch of a noise
    recording from `noise_base` at an SNR drawn from `snr_db_range`, then through `trainer.augment`;
    the denoiser's -SI-SNR on them is added to the loss. The keyword windows are 1 s; whole calls
    are minutes, with a noise that holds for seconds: these sequences are where the denoiser learns
    to use that. 0 clips turns it off."""
    clips: Count = 0  # clips joined per sequence (4 one-second clips: a 4-s sequence); divides batch_size
    weight: NonNegative = 1.0  # of their term, beside the clips' own (both times denoise_weight)
    noise_base: str = ""  # <noise_base>/<noise kind>/*.wav, the layout of data.noise_base
    snr_db_range: Annotated[List[Float], Field(min_length=2, max_length=2)] = dataclasses.field(
        default_factory=lambda: [-5.0, 15.0])
    max_noise_mb: PositiveInt = 256  # the recordings are held in memory (float32): a clear error past this


Objective = Literal["classify", "denoise", "joint"]
OBJECTIVES = typing.get_args(Objective)


@dataclasses.dataclass
class TrainerConfig:
    """Defaults are the wav2vec2 classification recipe known to work (Hugging Face's
    run_audio_classification: lr 3e-5, warmup 0.1, feature encoder frozen, 32 x 4
    accumulation); the demo config switches to the CPU-sized log-mel CNN."""
    backbone: Literal["wav2vec2", "logmel_cnn"] = "wav2vec2"  # wav2vec2 | logmel_cnn
    epochs: PositiveInt = 5
    batch_size: PositiveInt = 32  # per replica; the global batch is this times the replicas
    grad_accum_steps: PositiveInt = 4  # optimizer step every N batches
    learning_rate: NonNegative = 3e-5  # 0 freezes the weights (a deliberately broken model)
    weight_decay: NonNegative = 1e-2  # AdamW; never on biases or norm layers
    warmup_ratio: Fraction = 0.1  # linear warmup, then linear decay to 0
    clip_norm: Positive = 1.0  # global-norm clipping of the unscaled gradients
    # auto: mixed_float16 on GPU, float32 on CPU
    precision: Literal["auto", "float32", "mixed_float16", "mixed_bfloat16"] = "auto"
    # The shuffle buffer holds at most shuffle_buffer examples and at most shuffle_buffer_mb of the
    # split's serialized records (their mean size: a 10-s noisy/clean pair is 0.64 MB, so 256 MB
    # is 400 of them; a 1-s keyword 32 kB, so the example count caps it first).
    shuffle_buffer: PositiveInt = 2048
    shuffle_buffer_mb: PositiveInt = 256
    # What the Trainer keeps in memory across epochs. auto: the featurized examples when they fit
    # cache_budget_mb, else the serialized records when they fit, else nothing (the files are read
    # and featurized every epoch); features | records | none force one.
    cache: Literal["auto", "features", "records", "none"] = "auto"
    cache_budget_mb: PositiveInt = 2048
    log_every_steps: PositiveInt = 20
    checkpoint_every_steps: PositiveInt = 100
    seed: Int = 7
    # classify: cross-entropy; denoise: -SI-SNR only (classifier untouched); joint:
    # cross-entropy + denoise_weight * -SI-SNR. SI-SNR counts only examples with a clean reference.
    objective: Objective = "classify"
    denoise_weight: NonNegative = 1.0  # the lambda of the joint objective
    # The denoising term is -SI-SNR + stft_loss_weight x the multi-resolution STFT loss (spectral
    # convergence + log-magnitude distance at 3 resolutions, Parallel WaveGAN's), per reference.
    stft_loss_weight: NonNegative = 0.0
    spec_augment: SpecAugmentConfig = dataclasses.field(default_factory=SpecAugmentConfig)
    vtlp: VtlpConfig = dataclasses.field(default_factory=VtlpConfig)
    # How the log-mel the model computes from the denoiser's output is normalized per bin: batch
    # (BatchNormalization alone) or utterance (each clip's mean over its valid frames taken off
    # first, cepstral mean normalization: a fixed channel's colouring, a phone line's or a
    # microphone's, adds a constant per bin to the log-mel and is removed; then BatchNormalization).
    mel_norm: Literal["batch", "utterance"] = "batch"
    augment: AugmentConfig = dataclasses.field(default_factory=AugmentConfig)
    wav2vec2: Wav2Vec2Config = dataclasses.field(default_factory=Wav2Vec2Config)
    denoiser: DenoiserConfig = dataclasses.field(default_factory=DenoiserConfig)
    context: ContextConfig = dataclasses.field(default_factory=ContextConfig)

    def __post_init__(self):
        if self.objective not in OBJECTIVES:
            raise ValueError(f"trainer.objective {self.objective!r}: expected one of {OBJECTIVES}")
        if self.objective != "classify" and not self.denoiser.enabled:
            raise ValueError(f"trainer.objective={self.objective} trains the denoiser: "
                             f"set trainer.denoiser.enabled=true")
        if self.mel_norm == "utterance" and not (self.denoiser.enabled and self.backbone == "logmel_cnn"):
            raise ValueError("trainer.mel_norm=utterance normalizes the log-mel the model computes from the "
                             "denoiser's output (trainer.denoiser.enabled=true, trainer.backbone=logmel_cnn); "
                             "otherwise the Transform normalizes it per bin over the training split")
        if self.context.clips:
            if self.objective == "classify":
                raise ValueError("trainer.context trains the denoiser on multi-second sequences: set "
                                 "trainer.objective to joint or denoise (and trainer.denoiser.enabled=true)")
            if not self.context.noise_base:
                raise ValueError("trainer.context.clips > 0 needs trainer.context.noise_base, a folder of "
                                 "<noise kind>/*.wav noise recordings")
            if self.batch_size % self.context.clips:
                raise ValueError(f"trainer.context.clips={self.context.clips} must divide trainer.batch_size="
                                 f"{self.batch_size}: each replica's batch is joined into whole sequences")
            low, high = self.context.snr_db_range
            if low > high:
                raise ValueError(f"trainer.context.snr_db_range {self.context.snr_db_range}: low above high")


@dataclasses.dataclass
class EvaluatorConfig:
    eval_split: str = "test"
    # The generalization protocol: a folder of <label>/*.wav with metadata.csv (the folders layout,
    # whatever data.layout says) holding voices, noises and channels the training never sees
    # (pipeline/heldout_data.py writes one; bash scripts/demo.sh sets it). Read by its own
    # ExampleGen, never trained on, evaluated beside eval_split and reported (not gated: the
    # Pusher takes one blessing, eval_split's); "" turns it off.
    heldout_base: str = ""
    heldout_file_pattern: str = "*/*.wav"
    min_accuracy: Fraction = 0.5  # blessing floor on the eval split's accuracy
    # The candidate may not be worse than the latest blessed model by more than this.
    max_accuracy_regression: Fraction = 0.0
    # Denoising gate (needs trainer.denoiser.enabled): SI-SNR improvement on the split's
    # examples with a clean reference; None turns the gate off.
    min_si_snr_improvement_db: Optional[Float] = None
    max_si_snr_regression_db: NonNegative = 0.0
    # Slices reported (not gated): raw or transformed feature names.
    slice_features: List[str] = dataclasses.field(
        default_factory=lambda: [features.NOISE_KIND, features.SNR_BUCKET, features.CHANNEL])


@dataclasses.dataclass
class ValidationConfig:
    """ExampleValidator's gate before Transform. The bounds below become the schema's
    domains of the ExampleGen's audio statistics (components/schema.py), and
    features.duration_s is bounded by the ExampleGen's window (data.segment_s)."""
    # fail: the run stops before Transform; warn: it goes on and the summary names them
    on_anomalies: OnAnomalies = "fail"
    max_clipping_ratio: Fraction = 0.05  # fraction of a window's samples at full scale
    min_rms_dbfs: Annotated[Float, Field(le=0)] = -80.0  # quieter windows (near-silence, a dead channel) are anomalies
    max_dc_offset: Fraction = 0.1  # |mean sample value|
    max_silence_fraction: Fraction = 1.0  # fraction of a window's 10-ms frames under -60 dBFS
    min_sample_rate: PositiveInt = 8000  # telephone audio; below it speech is not intelligible
    max_channels: PositiveInt = 2


@dataclasses.dataclass
class MetadataConfig:
    """Where local runs keep ML Metadata: SQLite in output_dir (the default), or a MySQL or
    MariaDB server shared by several machines. On Kubeflow the cluster's store is used."""
    backend: Literal["sqlite", "mysql"] = "sqlite"
    host: str = "127.0.0.1"
    port: PositiveInt = 3306
    database: str = "tfx_audio_mlmd"  # created by ML Metadata when the user may
    user: str = "tfx"
    password_env: str = "TFX_AUDIO_MLMD_PASSWORD"  # the password is read from this variable, never a file


@dataclasses.dataclass
class Resources:
    """What one step's container asks the cluster for (KFP v2's ResourceSpec); unset: nothing."""
    cpu: Optional[Positive] = None  # vCPUs (the container's limit)
    memory_gb: Optional[Positive] = None  # GB (the container's limit)
    accelerator_type: str = ""  # nvidia.com/gpu on Kubeflow; NVIDIA_TESLA_T4 and the like on Vertex AI
    accelerator_count: Count = 0

    def __post_init__(self):
        if bool(self.accelerator_type) != bool(self.accelerator_count):
            raise ValueError(f"accelerator_type {self.accelerator_type!r} with accelerator_count "
                             f"{self.accelerator_count}: set both, or neither")


# Each step's defaults are its class's own, so setting one key (say the accelerator) keeps the rest.
@dataclasses.dataclass
class TrainerResources(Resources):
    cpu: Optional[Positive] = 4.0
    memory_gb: Optional[Positive] = 16.0


@dataclasses.dataclass
class BeamResources(Resources):
    cpu: Optional[Positive] = 2.0
    memory_gb: Optional[Positive] = 8.0


@dataclasses.dataclass
class StepResources(Resources):
    cpu: Optional[Positive] = 1.0
    memory_gb: Optional[Positive] = 2.0


@dataclasses.dataclass
class KubeflowConfig:
    """tfx-audio compile / submit / schedule: the image, the KFP endpoint, what each step asks for."""
    image: str = ""  # the Dockerfile's image in your registry (--image overrides)
    host: str = ""  # the KFP API endpoint (--host, else KFP_HOST, override)
    experiment: str = "tfx-audio"
    # Trainer: the GPU. Beam steps (WavExampleGen, StatisticsGen, Transform, Evaluator) on the
    # DirectRunner do their work in their own pod; with Dataflow/Flink/Spark the pod only launches.
    trainer: TrainerResources = dataclasses.field(default_factory=TrainerResources)
    beam: BeamResources = dataclasses.field(default_factory=BeamResources)
    other: StepResources = dataclasses.field(default_factory=StepResources)


@dataclasses.dataclass
class ReportConfig:
    """The HTML run report (`tfx-audio report`, and the last step of `tfx-audio run`)."""
    enabled: Bool = True  # write it at the end of every run
    dir: Optional[str] = None  # default <output_dir>/reports; one folder per run inside
    clips: Count = 3  # test windows to listen to
    scan_examples: PositiveInt = 2000  # test windows read to find them and the longest recording
    recording_max_s: Positive = 30.0  # the recording is cut here: its audio is embedded in the page


@dataclasses.dataclass
class PipelineConfig:
    name: str = "tfx-audio"
    output_dir: str = "outputs"  # pipeline root, ML Metadata and serving dir live here
    metadata_path: Optional[str] = None  # SQLite MLMD; default <output_dir>/metadata.sqlite
    metadata: MetadataConfig = dataclasses.field(default_factory=MetadataConfig)
    serving_dir: Optional[str] = None  # Pusher target; default <output_dir>/serving
    enable_cache: Bool = False
    # Curated schema; a relative path is taken from the repository root.
    schema_file: str = "schemas/schema.pbtxt"
    beam_args: List[str] = dataclasses.field(default_factory=lambda: [
        "--direct_running_mode=multi_processing", "--direct_num_workers=0"])
    data: DataConfig = dataclasses.field(default_factory=DataConfig)
    features: FeatureConfig = dataclasses.field(default_factory=FeatureConfig)
    trainer: TrainerConfig = dataclasses.field(default_factory=TrainerConfig)
    evaluator: EvaluatorConfig = dataclasses.field(default_factory=EvaluatorConfig)
    validation: ValidationConfig = dataclasses.field(default_factory=ValidationConfig)
    kubeflow: KubeflowConfig = dataclasses.field(default_factory=KubeflowConfig)
    report: ReportConfig = dataclasses.field(default_factory=ReportConfig)

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
        if self.data.latest_spans > 1 and "{SPAN" not in self.data.file_pattern:
            raise ValueError(f"data.latest_spans={self.data.latest_spans} needs {{SPAN}} in a folder of "
                             f"data.file_pattern ({self.data.file_pattern!r}), e.g. 'day-{{SPAN}}/*/*.wav'")
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

    @property
    def reports_dir(self) -> str:
        return self.report.dir or os.path.join(self.output_dir, "reports")

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    def components_dict(self) -> Dict[str, Any]:
        """What the components get (custom_config): the settings of how the pipeline is run
        (cache, metadata store, Kubeflow resources, the report) left at their defaults, so that
        changing them does not change the components' cache keys (TFX keys on custom_config)."""
        return dataclasses.replace(self, enable_cache=False, metadata=MetadataConfig(),
                                   kubeflow=KubeflowConfig(), report=ReportConfig()).to_dict()

    @classmethod
    def from_dict(cls, values: Dict[str, Any]) -> "PipelineConfig":
        return _validate(values)


class ConfigError(ValueError):
    """An invalid configuration: one line per problem, each naming the setting, the value and what is allowed."""


# pydantic validates the dataclasses as they are (not dacite: it checks types only), so they stay plain
# dataclasses: built directly (tests), copied with dataclasses.replace, dumped with asdict.
# Types, ranges and choices are the field annotations above; the cross-field checks are the
# __post_init__ methods, which pydantic runs after the fields.
@functools.lru_cache(maxsize=None)
def _adapter() -> pydantic.TypeAdapter:
    pending = [PipelineConfig]
    while pending:  # every dataclass of the tree rejects keys it does not know
        cls = pending.pop()
        cls.__pydantic_config__ = pydantic.ConfigDict(extra="forbid")
        pending += [t for t in typing.get_type_hints(cls).values() if dataclasses.is_dataclass(t)]
    return pydantic.TypeAdapter(PipelineConfig)


def _dotted(path) -> str:
    return "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in path).lstrip(".")


def _validate(values: Dict[str, Any]) -> PipelineConfig:
    try:
        return _adapter().validate_python(values)
    except pydantic.ValidationError as e:
        unknown: Dict[tuple, List[str]] = {}
        lines = []
        for error in e.errors():
            path, message = error["loc"], error["msg"]
            if error["type"] == "unexpected_keyword_argument":
                unknown.setdefault(path[:-1], []).append(path[-1])
            elif error["type"] == "value_error":  # a cross-field check (__post_init__): it names the keys
                message = message.removeprefix("Value error, ")
                lines.append(message if not path or _dotted(path) in message else f"{_dotted(path)}: {message}")
            else:  # e.g. trainer.epochs: got 'abc', expected a valid integer
                if message.startswith("Input should be "):
                    message = "expected " + message.removeprefix("Input should be ")
                    message = message.replace("expected greater", "expected a value greater")
                    message = message.replace("expected less", "expected a value less")
                lines.append(f"{_dotted(path) or 'config'}: got {error['input']!r}, {message}")
        for parent, names in unknown.items():
            cls = PipelineConfig
            for key in parent:
                cls = typing.get_type_hints(cls)[key]
            known = sorted(f.name for f in dataclasses.fields(cls))
            lines.append(f"{'.'.join(('config',) + parent)}: unknown setting(s) {sorted(names)}; known: {known}")
        raise ConfigError("\n".join(lines)) from None


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
            if not isinstance(node, dict):
                raise ConfigError(f"override {item!r}: {key} is not a section")
        try:
            node[keys[-1]] = yaml.safe_load(raw)  # so 3 is an int, true a bool, [] a list
        except yaml.YAMLError:  # e.g. */*.wav: * starts a YAML alias
            node[keys[-1]] = raw
    return PipelineConfig.from_dict(values)
