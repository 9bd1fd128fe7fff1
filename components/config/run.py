"""The whole configuration, `PipelineConfig`, and the settings of the evaluation, ML Metadata, Kubeflow
and the run report."""
from __future__ import annotations

import dataclasses
import os
from typing import Annotated, Any, Dict, List, Literal, Optional

from pydantic import Field

from components import features
from components.config.checking import validate
from components.config.data import INGEST_OPTIONS, DataConfig, FeatureConfig, ValidationConfig
from components.config.training import TrainerConfig
from components.config.types import (
    Bool,
    Count,
    Float,
    Fraction,
    Int,
    NonNegative,
    Positive,
    PositiveInt,
    setting,
)


@dataclasses.dataclass
class EvaluatorConfig:
    """The Evaluator: the split it scores, the blessing's floors and allowed regressions, the slices, the
    held-out corpus."""
    eval_split: str = setting("test", "the split the Evaluator scores and gates on")
    heldout_base: str = setting(
        "", "The generalization protocol: a folder of <label>/*.wav with metadata.csv (the folders layout, "
            "whatever data.layout says) holding voices, noises and channels the training never sees "
            "(pipeline/datagen/heldout.py writes one; bash scripts/demo.sh sets it). Read by its own "
            "ExampleGen, never trained on, evaluated beside eval_split and reported (not gated: the Pusher "
            "takes one blessing, eval_split's); '' turns it off.")
    heldout_file_pattern: str = setting("*/*.wav", "glob of the held-out corpus' files under heldout_base")
    min_accuracy: Fraction = setting(0.5, "blessing floor on the eval split's accuracy")
    max_accuracy_regression: Fraction = setting(
        0.0, "The candidate may not be worse than the latest blessed model by more than this.")
    min_si_snr_improvement_db: Optional[Float] = setting(
        None, "Denoising gate (needs trainer.denoiser.enabled): SI-SNR improvement on the split's examples with "
              "a clean reference; None turns the gate off.")
    max_si_snr_regression_db: NonNegative = setting(
        0.0, "the candidate's SI-SNR improvement may be at most this many dB below the latest blessed model's")
    perceptual_metrics: Bool = setting(
        True, "with the denoiser: also the PESQ (wideband) and STOI improvement (components/evaluation/"
              "tfma_quality.py), in the slices and the report; a fraction of a second of CPU per example")
    min_pesq_improvement: Optional[Float] = setting(
        None, "Perceptual gate (needs perceptual_metrics): the PESQ improvement on the split's examples with a "
              "clean reference, in MOS-LQO; None turns the gate off.")
    max_pesq_regression: NonNegative = setting(
        0.0, "the candidate's PESQ improvement may be at most this much below the latest blessed model's")
    slice_features: List[str] = setting(
        factory=lambda: [features.NOISE_KIND, features.SNR_BUCKET, features.CHANNEL], help="Slices reported "
                                                                                           "(not gated): raw or "
                                                                                           "transformed feature "
                                                                                           "names.")


@dataclasses.dataclass
class MetadataConfig:
    """Where local runs keep ML Metadata: SQLite in output_dir (the default), or a MySQL or
    MariaDB server shared by several machines. On Kubeflow the cluster's store is used."""
    backend: Literal["sqlite", "mysql"] = setting(
        "sqlite", "sqlite: a file in output_dir; mysql: a MySQL or MariaDB server")
    host: str = setting("127.0.0.1", "the MySQL server's host")
    port: PositiveInt = setting(3306, "the MySQL server's port")
    database: str = setting("tfx_audio_mlmd", "created by ML Metadata when the user may")
    user: str = setting("tfx", "the MySQL user")
    password_env: str = setting("TFX_AUDIO_MLMD_PASSWORD", "the password is read from this variable, never a file")


@dataclasses.dataclass
class Resources:
    """What one step's container asks the cluster for (KFP v2's ResourceSpec); unset: nothing."""
    cpu: Optional[Positive] = setting(None, "vCPUs (the container's limit)")
    memory_gb: Optional[Positive] = setting(None, "GB (the container's limit)")
    accelerator_type: str = setting("", "nvidia.com/gpu on Kubeflow; NVIDIA_TESLA_T4 and the like on Vertex AI")
    accelerator_count: Count = setting(0, "accelerators of accelerator_type the step asks for")

    def __post_init__(self):
        if bool(self.accelerator_type) != bool(self.accelerator_count):
            raise ValueError(f"accelerator_type {self.accelerator_type!r} with accelerator_count "
                             f"{self.accelerator_count}: set both, or neither")


# Each step's defaults are its class's own, so setting one key (say the accelerator) keeps the rest.
@dataclasses.dataclass
class TrainerResources(Resources):
    """The Trainer's pod."""
    cpu: Optional[Positive] = setting(4.0, "the Trainer's vCPUs")
    memory_gb: Optional[Positive] = setting(16.0, "the Trainer's memory, GB")


@dataclasses.dataclass
class BeamResources(Resources):
    """Each Beam step's pod (WavExampleGen, StatisticsGen, Transform, Evaluator)."""
    cpu: Optional[Positive] = setting(2.0, "vCPUs of each Beam step's pod")
    memory_gb: Optional[Positive] = setting(8.0, "memory of each Beam step's pod, GB")


@dataclasses.dataclass
class StepResources(Resources):
    """Each other step's pod."""
    cpu: Optional[Positive] = setting(1.0, "vCPUs of each other step's pod")
    memory_gb: Optional[Positive] = setting(2.0, "memory of each other step's pod, GB")


@dataclasses.dataclass
class KubeflowConfig:
    """tfx-audio compile / submit / schedule: the image, the KFP endpoint, what each step asks for."""
    image: str = setting("", "the Dockerfile's image in your registry (--image overrides)")
    host: str = setting("", "the KFP API endpoint (--host, else KFP_HOST, override)")
    experiment: str = setting("tfx-audio", "the KFP experiment runs are filed under")
    trainer: TrainerResources = setting(
        factory=TrainerResources, help="Trainer: the GPU. Beam steps (WavExampleGen, StatisticsGen, Transform, "
                                       "Evaluator) on the DirectRunner do their work in their own pod; with "
                                       "Dataflow/Flink/Spark the pod only launches.")
    beam: BeamResources = setting(factory=BeamResources, help="")
    other: StepResources = setting(factory=StepResources, help="")


@dataclasses.dataclass
class ReportConfig:
    """The HTML run report (`tfx-audio report`, and the last step of `tfx-audio run`)."""
    enabled: Bool = setting(True, "write it at the end of every run")
    dir: Optional[str] = setting(None, "default <output_dir>/reports; one folder per run inside")
    clips: Count = setting(3, "test windows to listen to")
    scan_examples: PositiveInt = setting(2000, "test windows read to find them and the longest recording")
    recording_max_s: Positive = setting(30.0, "the recording is cut here: its audio is embedded in the page")


@dataclasses.dataclass
class CallsConfig:
    """Call-level QA figures (`tfx-audio predict` on calls with data.tracks=split, and the run report):
    each track's speech regions by the ExampleGen's voice-activity detector (webrtcvad) on the enhanced
    track (the noisy one without a denoiser), kept where a frame also stands out of the track's noise
    floor. Defaults tuned on generated stereo calls other than the demo's (`benchmarks/call_figures.py
    --part validation`: calls of seed 1, and of seed 3 as a second check), noisy and clean tracks together."""
    vad_aggressiveness: Annotated[Int, Field(ge=0, le=3)] = setting(3, "webrtcvad: 0 keeps the most audio as "
                                                                       "speech, 3 the least")
    min_gap_s: NonNegative = setting(0.3, "a pause shorter than this inside a turn is talk")
    pad_s: NonNegative = setting(0.02, "each speech region is widened by this on both sides")
    floor_margin_db: Optional[NonNegative] = setting(
        12.0, "a frame is speech only this far above the track's noise floor; None: the detector alone")
    floor_low_margin_db: Optional[NonNegative] = setting(
        3.0, "with floor_margin_db, a double threshold: a run of frames this far above the floor is speech "
             "when one of its frames is floor_margin_db above it (Lamel et al. 1981); None: each frame on its own")
    floor_percentile: Annotated[Float, Field(ge=0, le=100)] = setting(
        20.0, "the noise floor: this percentile of the frame levels of the last floor_window_s")
    floor_window_s: Positive = setting(30.0, "how much of the track the noise floor is taken over")

    def __post_init__(self):
        if None not in (self.floor_margin_db, self.floor_low_margin_db) and \
                self.floor_low_margin_db > self.floor_margin_db:
            raise ValueError(f"calls.floor_low_margin_db ({self.floor_low_margin_db}) is above calls.floor_margin_db "
                             f"({self.floor_margin_db}): the lower threshold must not exceed the higher")


@dataclasses.dataclass
class PipelineConfig:
    """Every setting of the pipeline: its name and folders, ML Metadata, the cache, Beam's flags and one
    section per stage."""
    name: str = setting("tfx-audio", "the pipeline's name in ML Metadata and on Kubeflow")
    output_dir: str = setting("outputs", "pipeline root, ML Metadata and serving dir live here")
    metadata_path: Optional[str] = setting(None, "SQLite MLMD; default <output_dir>/metadata.sqlite")
    metadata: MetadataConfig = setting(factory=MetadataConfig, help="")
    serving_dir: Optional[str] = setting(None, "Pusher target; default <output_dir>/serving")
    enable_cache: Bool = setting(
        False, "TFX's cache: a component whose inputs and settings are unchanged reuses its last output")
    schema_file: str = setting(
        "schemas/schema.pbtxt", "Curated schema; a relative path is taken from the repository root.")
    beam_args: List[str] = setting(
        factory=lambda: [ "--direct_running_mode=multi_processing", "--direct_num_workers=0"], help="Beam's own "
                                                                    "flags, passed to every Beam-based "
                                                                    "component (--runner, DirectRunner, "
                                                                    "Dataflow, Flink or Spark options)")
    data: DataConfig = setting(factory=DataConfig, help="")
    features: FeatureConfig = setting(factory=FeatureConfig, help="")
    trainer: TrainerConfig = setting(factory=TrainerConfig, help="")
    evaluator: EvaluatorConfig = setting(factory=EvaluatorConfig, help="")
    validation: ValidationConfig = setting(factory=ValidationConfig, help="")
    kubeflow: KubeflowConfig = setting(factory=KubeflowConfig, help="")
    report: ReportConfig = setting(factory=ReportConfig, help="")
    calls: CallsConfig = setting(factory=CallsConfig, help="")

    def __post_init__(self):
        if self.evaluator.min_si_snr_improvement_db is not None and not self.trainer.denoiser.enabled:
            raise ValueError("evaluator.min_si_snr_improvement_db gates the denoiser: set "
                             "trainer.denoiser.enabled=true or leave the floor unset")
        if self.evaluator.min_pesq_improvement is not None and not (
                self.trainer.denoiser.enabled and self.evaluator.perceptual_metrics):
            raise ValueError("evaluator.min_pesq_improvement gates the denoiser's PESQ: set "
                             "trainer.denoiser.enabled=true and evaluator.perceptual_metrics=true, or leave it unset")
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
        (cache, metadata store, Kubeflow resources, the report and its call figures) and which held-out corpus is scored
        (the HeldoutExampleGen's own input, read by no component from here) left at their defaults,
        so that changing them does not change the components' cache keys (TFX keys on custom_config):
        reading the held-out test part re-runs the held-out nodes only."""
        defaults = EvaluatorConfig()
        evaluator = dataclasses.replace(self.evaluator, heldout_base=defaults.heldout_base,
                                        heldout_file_pattern=defaults.heldout_file_pattern)
        return dataclasses.replace(self, enable_cache=False, metadata=MetadataConfig(), kubeflow=KubeflowConfig(),
                                   report=ReportConfig(), calls=CallsConfig(), evaluator=evaluator).to_dict()

    @classmethod
    def from_dict(cls, values: Dict[str, Any]) -> "PipelineConfig":
        return validate(cls, values)
