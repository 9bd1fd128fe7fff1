"""Settings of the Trainer (`trainer` and its sections)."""
from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Dict, List, Literal, Optional

from pydantic import Field

from components.config.types import (
    Bool,
    Count,
    Float,
    Fraction,
    Int,
    NonNegative,
    Objective,
    Positive,
    PositiveInt,
    setting,
)

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
    enabled: Bool = setting(True, "masks on the training stream's log-mel (off for evaluation and serving)")
    policy: SpecAugmentPolicy = setting("custom", "LB, LD, SM or SS: the paper's parameters; custom: the fields below")
    freq_masks: Count = setting(2, "mF: number of frequency masks")
    freq_mask_width: Count = setting(8, "F: maximum width in mel bins")
    time_masks: Count = setting(2, "mT")
    time_mask_width: Count = setting(10, "T: maximum width in frames")
    time_mask_max_ratio: Fraction = setting(0.2, "p: a time mask covers at most p * frames")

    def resolved(self) -> "SpecAugmentConfig":
        """The parameters in force: the named policy's, or the fields for `custom`."""
        if self.policy == "custom":
            return self
        return dataclasses.replace(self, policy="custom", **SPEC_AUGMENT_POLICIES[self.policy])


@dataclasses.dataclass
class VtlpConfig:
    """Vocal tract length perturbation of the log-mel features on the training stream
    (components/training/vtlp.py, Jaitly & Hinton 2013): formants scaled by a factor drawn per example,
    pitch and tempo kept. Log-mel backbones only; 0 turns it off (the default)."""
    probability: Fraction = setting(0.0, "share of training examples warped; 0 turns it off")
    factor_range: Annotated[List[Positive], Field(min_length=2, max_length=2)] = setting(
        factory=lambda: [0.9, 1.1], help="the warp factor is drawn uniformly from [low, high]")
    boundary_hz: Positive = setting(4800.0, "the warp's knee: above it, a line to the Nyquist frequency")


@dataclasses.dataclass
class Wav2Vec2Config:
    """The transformers Wav2Vec2 backbone (TFWav2Vec2ForSequenceClassification)."""
    pretrained: str = setting(
        "", "Local directory in save_pretrained layout, or a hub id (needs network). Empty: build from "
            "`config_overrides` with random weights (tests, benchmarks).")
    config_overrides: Dict[str, Any] = setting(
        factory=dict, help="fields of transformers' Wav2Vec2Config set on top of the pretrained one (or of the "
                           "default, without one)")
    freeze_feature_encoder: Bool = setting(
        True, "the convolutional feature encoder is not trained (the recipe's default)")
    freeze_layers: Count = setting(0, "the first N transformer layers are frozen too")
    mask_time_prob: Fraction = setting(0.05, "latent time masking, training only")
    mask_time_length: PositiveInt = setting(5, "frames per latent time mask")
    classifier_proj_size: PositiveInt = setting(256, "width of the projection before the classification head")


@dataclasses.dataclass
class AugmentConfig:
    """Placement, speed, rooms and phone calls on the training stream of waveform models
    (components/training/augment.py); probabilities per example, 0 turns each off (the default)."""
    placement_probability: Fraction = setting(
        0.0, "Moved to a random offset at which all its valid samples still fit the window (zeros before it): a "
             "short word anywhere in the window, as recorded keywords sit, not always at its start (Speech "
             "Commands' training shifts each clip by up to 100 ms). A clip that fills the window stays.")
    reverb_probability: Fraction = setting(0.0, "convolved with a simulated room's impulse response")
    rir_count: PositiveInt = setting(32, "rooms simulated (pyroomacoustics) when the Trainer starts")
    rt60_range_s: Annotated[List[Positive], Field(min_length=2, max_length=2)] = setting(
        factory=lambda: [0.15, 0.6], help="the simulated rooms' reverberation times are drawn from [low, high] "
                                          "seconds")
    phone_probability: Fraction = setting(0.0, "carried by a telephone call: voice band, mu-law, lost packets")
    phone_level_dbfs: Annotated[List[Float], Field(min_length=2, max_length=2)] = setting(
        factory=lambda: [-36.0, -12.0], help="the call's speech level: the coding noise it meets")
    max_dropout: Fraction = setting(0.03, "rate of lost 20-ms packets, drawn up to this per call")
    speed_probability: Fraction = setting(
        0.0, "Played faster or slower by one of speed_factors (resampled: tempo, pitch and formants move "
             "together, Kaldi's speed perturbation of Ko et al. 2015): other speakers' voices and pace.")
    speed_factors: Annotated[List[Positive], Field(min_length=1)] = setting(
        factory=lambda: [0.9, 1.1], help="the speed factors drawn from, each equally likely")


@dataclasses.dataclass
class DenoiserConfig:
    """The denoiser front end: STFT, conv + BiGRU mask, inverse STFT (components/models/denoiser.py), or
    DTLN's two causal LSTM stages (components/models/dtln.py)."""
    enabled: Bool = setting(False, "on: the classifier consumes the enhanced audio")
    design: Literal["conv_bigru", "dtln"] = setting(
        "conv_bigru", "conv_bigru: a conv + bidirectional GRU mask over the whole window (not causal); dtln: "
                      "Westhausen & Meyer's dual-signal transformation LSTM network (Interspeech 2020), "
                      "causal, one frame_length of latency")
    lstm_units: PositiveInt = setting(128, "dtln: units of each of its two LSTM layers per stage")
    encoder_size: PositiveInt = setting(256, "dtln: size of its second stage's learned frame encoding")
    dtln_input: Literal["log_norm", "magnitude"] = setting(
        "magnitude", "dtln: its first stage's input. magnitude: the magnitude as it is, the published DTLN's (the "
                     "authors' 500-h DNS-Challenge weights, components/models/published.py) and so the packaged "
                     "`pretrained`'s; log_norm: the log magnitude through an instant layer norm (DTLN_norm), the "
                     "project's own weights of R1 to R10 and the models pushed with them")
    dtln_level_dbfs: Optional[Float] = setting(
        -30.0, "dtln with dtln_input magnitude (level-dependent; log_norm is not): the unit-std audio it gets is "
               "brought to this RMS level in dBFS before it, and back after. The published weights were trained on "
               "DNS-Challenge mixtures of -35 to -15 dBFS; fed at unit std, 30 dB above, they remove less. -30 was "
               "chosen on the keyword validation part from -30, -25, -20 and unit std (docs/generalization.md). "
               "null: as it comes")
    dtln_warmup_seconds: NonNegative = setting(
        0.5, "dtln: its LSTM states, which start from zero, are first run over a mirrored lead-in of this many "
             "seconds (the input's start, time-reversed; its output cut off), so a short clip is not over before "
             "they have adapted to its noise. Costs this much more audio per call, and the first this-many seconds "
             "of a stream wait for their audio (causal after that); 0: none, strictly causal")
    warm_start: str = setting(
        "", "denoiser weights to start from instead of random ones: a pushed model (or its "
            "assets/denoiser.weights.h5), or `pretrained`, the packaged DTLN: the authors' published 500-h "
            "weights (components/models/pretrained/MODEL_CARD.md: design dtln, default sizes and dtln_input); the "
            "design, sizes and dtln_input must be these settings'. Not used when the Trainer resumes from a "
            "checkpoint")
    trainable: Bool = setting(
        True, "off: the denoiser's weights stay as warm_start gives them and only the classifier trains, on "
              "its output (the way a pretrained front end is kept, like wav2vec2's frozen feature encoder): a "
              "denoiser trained on real recordings is not pulled towards the training set's own noises")
    attenuation_limit_db: Optional[Positive] = setting(
        None, "served output only (not training): at most this much attenuation, the enhanced audio "
              "mixed with the noisy input at -limit dB (DeepFilterNet's atten_lim): less damage to the "
              "speech for a cap on the noise removed; null: none")
    frame_length: PositiveInt = setting(512, "32 ms")
    frame_step: PositiveInt = setting(128, "8 ms")
    fft_length: PositiveInt = setting(512, "FFT size of the denoiser's STFT")
    channels: PositiveInt = setting(256, "conv channels")
    kernel_size: PositiveInt = setting(3, "conv kernel, in frames")
    gru_units: PositiveInt = setting(128, "per direction")
    init_mask_logit: Float = setting(2.0, "mask starts near sigmoid(2) = 0.88 (complex: tanh(2) = 0.96): pass-through")
    mask: Literal["magnitude", "complex"] = setting(
        "magnitude", "magnitude: a [0, 1] gain per bin, the noisy phase kept; complex: a complex gain per bin "
                     "(magnitude tanh-bounded below 1, any phase: DCCRN's 'E' mask), so it can correct the "
                     "phase.")


@dataclasses.dataclass
class ContextConfig:
    """Multi-second sequences for the denoiser (components/training/context.py): each training batch's clean
    references, `clips` at a time, joined into one sequence and mixed with one stretch of a noise
    recording from `noise_base` at an SNR drawn from `snr_db_range`, then through `trainer.augment`;
    the denoiser's -SI-SNR on them is added to the loss. The keyword windows are 1 s; whole calls
    are minutes, with a noise that holds for seconds: these sequences are where the denoiser learns
    to use that. 0 clips turns it off."""
    clips: Count = setting(0, "clips joined per sequence (4 one-second clips: a 4-s sequence); divides batch_size")
    weight: NonNegative = setting(1.0, "of their term, beside the clips' own (both times denoise_weight)")
    noise_base: str = setting("", "<noise_base>/<noise kind>/*.wav, the layout of data.noise_base")
    snr_db_range: Annotated[List[Float], Field(min_length=2, max_length=2)] = setting(
        factory=lambda: [-5.0, 15.0], help="the sequences' SNRs are drawn uniformly from [low, high] dB")
    max_noise_mb: PositiveInt = setting(256, "the recordings are held in memory (float32): a clear error past this")
    second_noise_probability: Fraction = setting(
        0.0, "share of sequences that get a second noise: a stretch of another draw of the bank at its own SNR "
             "from snr_db_range, over the first")
    speech_level_db: NonNegative = setting(
        0.0, "each clip's speech level inside a sequence moves by up to +- this many dB (its own draw), the "
             "noise held: a talker nearer and farther; 0 keeps one level")


@dataclasses.dataclass
class BackgroundConfig:
    """Fresh background noise under the training examples that have none (components/training/background.py):
    each epoch, a drawn share of the clean recordings gets a stretch of a noise recording from `noise_base`
    at an SNR from `snr_db_range`, over the whole window (after `augment.placement_probability`'s move),
    and its clean recording becomes its reference. Speech Commands' training recipe (Warden 2018) mixes
    background noise into 80 % of its examples afresh every epoch. It takes a recording without a reference for
    clean speech (the demo's clips are): with noisy recordings that have none and a denoiser that trains, keep it
    off, or the denoiser learns to keep their noise. 0 turns it off."""
    probability: Fraction = setting(0.0, "share of the examples without a reference that get noise, each epoch")
    noise_base: str = setting("", "<noise_base>/<noise kind>/*.wav, the layout of data.noise_base")
    snr_db_range: Annotated[List[Float], Field(min_length=2, max_length=2)] = setting(
        factory=lambda: [0.0, 20.0], help="SNRs drawn uniformly from [low, high] dB, against the speech's "
                                          "power over its own samples (not the silence it was moved behind)")
    max_noise_mb: PositiveInt = setting(256, "the recordings are held in memory (float32): a clear error past this")


LOGMEL_BACKBONES = ("logmel_cnn", "bc_resnet")  # the backbones that read the log-mel


@dataclasses.dataclass
class TrainerConfig:
    """Defaults are the wav2vec2 classification recipe known to work (Hugging Face's
    run_audio_classification: lr 3e-5, warmup 0.1, feature encoder frozen, 32 x 4
    accumulation); the demo config switches to the CPU-sized log-mel CNN."""
    backbone: Literal["wav2vec2", "logmel_cnn", "bc_resnet"] = setting(
        "wav2vec2", "wav2vec2 | logmel_cnn | bc_resnet (BC-ResNet, Kim et al. 2021: a keyword-spotting design on the "
                    "log-mel, as small as logmel_cnn's input)")
    bc_resnet_width: PositiveInt = setting(
        3, "bc_resnet: its width multiplier tau (BC-ResNet-tau; 3: about 50 k parameters, 8: about 320 k)")
    epochs: PositiveInt = setting(5, "passes over the training split")
    max_steps: Optional[PositiveInt] = setting(
        None, "stop after this many optimizer steps, the last epoch cut short (TFX's TrainArgs.num_steps; a "
              "smoke run or a benchmark at a large corpus); the learning rate decays to 0 there. None: epochs decide")
    batch_size: PositiveInt = setting(32, "per replica; the global batch is this times the replicas")
    grad_accum_steps: PositiveInt = setting(4, "optimizer step every N batches")
    learning_rate: NonNegative = setting(3e-5, "0 freezes the weights (a deliberately broken model)")
    weight_decay: NonNegative = setting(1e-2, "AdamW; never on biases or norm layers")
    warmup_ratio: Fraction = setting(0.1, "linear warmup, then linear decay to 0")
    clip_norm: Positive = setting(1.0, "global-norm clipping of the unscaled gradients")
    precision: Literal["auto", "float32", "mixed_float16", "mixed_bfloat16"] = setting(
        "auto", "auto: mixed_float16 on GPU, float32 on CPU")
    shuffle_buffer: PositiveInt = setting(
        2048, "The shuffle buffer holds at most shuffle_buffer examples and at most shuffle_buffer_mb of the "
              "split's serialized records (their mean size: a 10-s noisy/clean pair is 0.64 MB, so 256 MB is "
              "400 of them; a 1-s keyword 32 kB, so the example count caps it first).")
    shuffle_buffer_mb: PositiveInt = setting(256, "the shuffle buffer's cap in MB of serialized records")
    cache: Literal["auto", "features", "disk", "records", "none"] = setting(
        "auto", "What the Trainer keeps across epochs. auto: the featurized examples in memory when they fit "
                "cache_budget_mb, else in files under the Trainer's run directory when they fit "
                "cache_disk_budget_mb (disk: written in the first epoch, read after; a resumed run reuses a "
                "crashed run's, a finished run deletes them), else the serialized records in memory when they "
                "fit cache_budget_mb, else nothing (the files are read and featurized every epoch); "
                "features | disk | records | none force one.")
    cache_budget_mb: PositiveInt = setting(2048, "the memory the input cache may use, MB")
    cache_disk_budget_mb: Count = setting(
        20480, "the disk the featurized examples may use under the Trainer's run directory, MB (0: never)")
    log_every_steps: PositiveInt = setting(20, "a progress line (loss, rate, input wait) every N optimizer steps")
    checkpoint_every_steps: PositiveInt = setting(
        100, "a checkpoint every N optimizer steps; a retried or rerun Trainer resumes from the newest")
    seed: Int = setting(
        7, "seed of the weights, the shuffle and every augmentation draw (with the epoch and the example's "
           "index)")
    objective: Objective = setting(
        "classify", "classify: cross-entropy; denoise: -SI-SNR only (classifier untouched); joint: cross- "
                    "entropy + denoise_weight * -SI-SNR. SI-SNR counts only examples with a clean reference.")
    denoise_weight: NonNegative = setting(1.0, "the lambda of the joint objective")
    denoise_loss: Literal["si_snr", "snr", "hybrid"] = setting(
        "si_snr", "the denoising term's measure: si_snr (scale-invariant: the output's level is free), snr "
                  "(DTLN's negative SNR: the output keeps the reference's level) or hybrid (GTCRN's: power-law "
                  "compressed spectra's squared error, 30 x real and imaginary + 70 x magnitude, minus SI-SNR "
                  "in bels)")
    stft_loss_weight: NonNegative = setting(
        0.0, "The denoising term is -SI-SNR + stft_loss_weight x the multi-resolution STFT loss (spectral "
             "convergence + log-magnitude distance at 3 resolutions, Parallel WaveGAN's), per reference.")
    spec_augment: SpecAugmentConfig = setting(factory=SpecAugmentConfig, help="")
    vtlp: VtlpConfig = setting(factory=VtlpConfig, help="")
    mel_norm: Literal["batch", "utterance"] = setting(
        "batch", "How the log-mel the model computes from the denoiser's output is normalized per bin: batch "
                 "(BatchNormalization alone) or utterance (each clip's mean over its valid frames taken off "
                 "first, cepstral mean normalization: a fixed channel's colouring, a phone line's or a "
                 "microphone's, adds a constant per bin to the log-mel and is removed; then "
                 "BatchNormalization).")
    augment: AugmentConfig = setting(factory=AugmentConfig, help="")
    wav2vec2: Wav2Vec2Config = setting(factory=Wav2Vec2Config, help="")
    denoiser: DenoiserConfig = setting(factory=DenoiserConfig, help="")
    context: ContextConfig = setting(factory=ContextConfig, help="")
    background: BackgroundConfig = setting(factory=BackgroundConfig, help="")

    def __post_init__(self):
        if self.objective != "classify" and not self.denoiser.enabled:
            raise ValueError(f"trainer.objective={self.objective} trains the denoiser: "
                             f"set trainer.denoiser.enabled=true")
        if self.denoiser.warm_start and not self.denoiser.enabled:
            raise ValueError("trainer.denoiser.warm_start starts the denoiser from weights: set "
                             "trainer.denoiser.enabled=true")
        if self.denoiser.enabled and not self.denoiser.trainable and not self.denoiser.warm_start:
            raise ValueError("trainer.denoiser.trainable=false holds the denoiser's weights: set "
                             "trainer.denoiser.warm_start (a random denoiser held as it is only harms the audio)")
        if self.denoiser.enabled and not self.denoiser.trainable and self.objective != "classify":
            raise ValueError(f"trainer.objective={self.objective} trains the denoiser, which "
                             f"trainer.denoiser.trainable=false holds: set trainer.objective=classify")
        if self.mel_norm == "utterance" and not (self.denoiser.enabled and self.backbone in LOGMEL_BACKBONES):
            raise ValueError("trainer.mel_norm=utterance normalizes the log-mel the model computes from the "
                             "denoiser's output (trainer.denoiser.enabled=true, a log-mel trainer.backbone); "
                             "otherwise the Transform normalizes it per bin over the training split")
        if self.background.probability:
            if not self.background.noise_base:
                raise ValueError("trainer.background.probability > 0 needs trainer.background.noise_base, a "
                                 "folder of <noise kind>/*.wav noise recordings")
            if self.backbone != "wav2vec2" and not self.denoiser.enabled:
                raise ValueError("trainer.background mixes noise into the waveform: the model must read it "
                                 "(trainer.denoiser.enabled=true or trainer.backbone=wav2vec2)")
            if self.background.snr_db_range[0] > self.background.snr_db_range[1]:
                raise ValueError(f"trainer.background.snr_db_range {self.background.snr_db_range}: low above high")
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
