"""Settings of the data: the WAV ExampleGen's (`data`), the features' (`features`) and the
validation gate's (`validation`)."""
from __future__ import annotations

import dataclasses
from typing import Annotated, Dict, List, Optional

from pydantic import Field

from components import features
from components.config.types import (
    Count,
    ExampleCompression,
    Float,
    Fraction,
    Int,
    Layout,
    NonNegative,
    OnAnomalies,
    Positive,
    PositiveInt,
    Segmentation,
    Tracks,
    UnlabelledSpans,
    setting,
)


@dataclasses.dataclass
class DataConfig:
    """The WAV ExampleGen: where the audio is, how it is read, windowed, labelled, split and mixed with noise."""
    input_base: str = setting("data/demo", "folder of <label>/*.wav (+ optional metadata.csv, segments.csv)")
    file_pattern: str = setting("*/*.wav", "glob under input_base; TFX fingerprints these files")
    latest_spans: PositiveInt = setting(
        1, "With TFX's {SPAN} in a folder of file_pattern (e.g. 'day-{SPAN}/*/*.wav'): each run reads the "
           "newest latest_spans span folders, found at run time (labels: the folder after the span's).")
    metadata_file: str = setting("metadata.csv", "audiofolder-style, optional; a file inside input_base")
    segments_file: str = setting(
        "segments.csv", "Optional labelled spans (file_name,start_s,end_s,label), the way QA teams annotate "
                        "calls.")
    max_duration_s: Positive = setting(4 * 3600.0, "longer recordings are rejected (they are read window by window)")
    max_file_mb: Positive = setting(
        4096.0, "larger files are rejected before anything is read (the WAV format's limit)")
    max_reject_fraction: Fraction = setting(0.05, "ExampleGen fails when more are rejected")
    layout: Layout = setting(
        "folders", "folders: <label>/*.wav. paired: noisy/[<label>/]*.wav with clean/ + the same path as the "
                   "clean reference (VoiceBank-DEMAND style; set file_pattern to match, e.g. noisy/*/*.wav).")
    tracks: Tracks = setting(
        "mix", "Recordings of several channels. mix: their mean, one stream (each example's source_channels "
               "says how many). split: each channel its own stream (a call's agent and customer on their own "
               "tracks, as call recorders write them): examples carry `track` and `role`, segments.csv's optional "
               "track column names a span's track, statistics and seconds count per track, and both tracks of a "
               "call stay in one split (the file's group).")
    track_roles: List[str] = setting(
        factory=list, help="with tracks=split: the role of each track in order (e.g. [agent, customer]), the "
                           "examples' `role` (a slicing key) and predict's calls.csv columns; a track past the "
                           "list is `track<i>`")
    segmentation: Segmentation = setting(
        "fixed", "Recordings become examples window by window. fixed: windows of segment_s every hop_s; vad: "
                 "the same, inside the speech regions found by voice-activity detection.")
    segment_s: Optional[Positive] = setting(None, "window length; default and maximum: features.clip_seconds")
    hop_s: Optional[Positive] = setting(None, "default segment_s (windows do not overlap)")
    min_segment_s: NonNegative = setting(
        0.2, "shorter windows (a recording's tail, a short span) are dropped and counted")
    unlabelled_spans: UnlabelledSpans = setting("drop", "drop | background: stretches no span of segments.csv covers")
    background_label: str = setting(
        "background", "the label of the stretches no span covers, with unlabelled_spans=background")
    vad_aggressiveness: Annotated[Int, Field(ge=0, le=3)] = setting(
        2, "webrtcvad: 0 keeps the most audio as speech, 3 the least")
    vad_min_gap_s: NonNegative = setting(0.3, "speech regions closer than this are merged")
    vad_pad_s: NonNegative = setting(0.1, "each speech region is widened by this on both sides")
    noise_base: str = setting(
        "", "a folder of <noise kind>/*.wav noise recordings: each clean window gets noisy_copies mixtures "
            "with them, seeded per file ('': no mixtures)")
    noisy_copies: Count = setting(0, "noisy mixtures written per clean window (0: none); needs noise_base")
    snr_db_range: Annotated[List[Float], Field(min_length=2, max_length=2)] = setting(
        factory=lambda: [0.0, 20.0], help="the SNRs of those mixtures are drawn uniformly from [low, high] dB")
    mix_seed: Int = setting(0, "seed of the mixtures' draws (noise file, stretch, SNR), combined with each file's name")
    split_buckets: Annotated[Dict[str, PositiveInt], Field(min_length=1)] = setting(
        factory=lambda: {"train": 8, "eval": 1, "test": 1}, help="Hash buckets per split; the split of an "
                                     "example is decided by its group.")
    group_regex: str = setting(
        "", "The split key of a file metadata.csv gives no group: the first capture of this regular expression "
            "on its path (VoiceBank-DEMAND: '(p[0-9]+)_', the speaker). Without either, the folders layout "
            "groups by recording and the paired layout rejects the file.")
    example_compression: ExampleCompression = setting(
        "none", "The examples' TFRecord files: none (data_tfrecord-*), or gzip (data_tfrecord-*.gz, TFX's "
                "default). PCM audio barely compresses (noisy 16-bit speech: 7 % smaller) while gzip costs "
                "about 12 ms of CPU per 10-s clip to write and 2 ms to read, every epoch; TFX's readers (TFXIO, "
                "TFMA) and the Trainer tell the two apart by the file name (docs/architecture.md).")


# The DataConfig fields the WAV ExampleGen takes as options.
INGEST_OPTIONS = ("metadata_file", "segments_file", "max_duration_s", "max_file_mb", "max_reject_fraction",
                  "layout", "segmentation", "segment_s", "hop_s", "min_segment_s", "unlabelled_spans",
                  "background_label", "vad_aggressiveness", "vad_min_gap_s", "vad_pad_s", "noise_base",
                  "noisy_copies", "snr_db_range", "mix_seed", "group_regex", "latest_spans",
                  "example_compression", "tracks", "track_roles")


@dataclasses.dataclass
class FeatureConfig:
    """The Transform's features: the model's window and the log-mel's STFT and mel bands."""
    clip_seconds: Positive = setting(1.0, "crop or pad every utterance to this length")
    frame_length: PositiveInt = setting(400, "25 ms STFT window")
    frame_step: PositiveInt = setting(160, "10 ms hop")
    fft_length: PositiveInt = setting(512, "FFT size of the log-mel's STFT; at least frame_length")
    num_mel_bins: PositiveInt = setting(64, "mel bands of the log-mel")
    lower_hz: NonNegative = setting(20.0, "the lowest mel band's lower edge, Hz")
    upper_hz: Positive = setting(7600.0, "the highest mel band's upper edge, Hz (at most half the 16 kHz rate)")
    snr_bucket_edges_db: Annotated[List[Float], Field(min_length=1)] = setting(
        factory=lambda: [0.0, 5.0, 10.0, 20.0], help="Input-SNR buckets for slicing: edges [0, 5, 10, 20] give "
                                                     "0-5, 5-10, 10-20 (and below-0 / 20-up outside them); "
                                                     "examples without a clean reference get none.")

    def __post_init__(self):
        # the STFT would crop every frame (log_mel, components/transform/preprocessing.py)
        if self.fft_length < self.frame_length:
            raise ValueError(f"features.fft_length {self.fft_length} is shorter than features.frame_length "
                             f"{self.frame_length}: expected fft_length >= frame_length")

    @property
    def num_samples(self) -> int:
        return int(round(self.clip_seconds * features.SAMPLE_RATE))

    @property
    def num_frames(self) -> int:
        return 1 + (self.num_samples - self.frame_length) // self.frame_step


@dataclasses.dataclass
class ValidationConfig:
    """ExampleValidator's gate before Transform. The bounds below become the schema's
    domains of the ExampleGen's audio statistics (components/validation/schema.py), and
    features.duration_s is bounded by the ExampleGen's window (data.segment_s)."""
    on_anomalies: OnAnomalies = setting(
        "fail", "fail: the run stops before Transform; warn: it goes on and the summary names them")
    max_clipping_ratio: Fraction = setting(0.05, "fraction of a window's samples at full scale")
    min_rms_dbfs: Annotated[Float, Field(le=0)] = setting(
        -80.0, "quieter windows (near-silence, a dead channel) are anomalies")
    max_dc_offset: Fraction = setting(0.1, "|mean sample value|")
    max_silence_fraction: Fraction = setting(1.0, "fraction of a window's 10-ms frames under -60 dBFS")
    min_sample_rate: PositiveInt = setting(8000, "telephone audio; below it speech is not intelligible")
    max_channels: PositiveInt = setting(2, "files with more channels are anomalies (calls are mono or stereo)")
