"""Feature keys and audio constants, spelled once.

The WAV ExampleGen writes the RAW keys, the Transform reads them and writes the
TRANSFORMED keys, the Trainer and Evaluator consume those. Nothing else in the
project spells these strings.
"""

SAMPLE_RATE = 16000

# Raw tf.Example features written by the WAV ExampleGen.
AUDIO = "audio"  # 16 kHz mono PCM16 WAV bytes
CLEAN_AUDIO = "clean_audio"  # clean reference, same format, where known
LABEL = "label"
GROUP = "group"  # speaker / recording group; splits are hashed on it
SOURCE = "source"  # the recording: its path relative to input_base
DURATION_S = "duration_s"  # the example's (window's) length
OFFSET_S = "offset_s"  # where the window starts in the recording
SEGMENT_INDEX = "segment_index"  # the window's position among the recording's examples
NOISE_KIND = "noise_kind"
SNR_DB = "snr_db"
CHANNEL = "channel"  # how the audio reached the recorder, e.g. "phone" (metadata.csv); a slicing key
TRACK = "track"  # with data.tracks=split: the audio channel the example comes from (0: the first)
ROLE = "role"  # with data.tracks=split: the track's role from data.track_roles (e.g. agent); a slicing key
# Audio statistics of the window as the file holds it (components/audio/stats.py).
CLIPPING_RATIO = "clipping_ratio"  # fraction of samples at full scale
RMS_DBFS = "rms_dbfs"  # level, dB relative to full scale
DC_OFFSET = "dc_offset"  # mean sample value
SILENCE_FRACTION = "silence_fraction"  # fraction of 10-ms frames under -60 dBFS
SOURCE_SAMPLE_RATE = "source_sample_rate"  # the file's own rate, before conversion to 16 kHz
SOURCE_CHANNELS = "source_channels"  # the file's channels, before the mono mix
AUDIO_STATS = (CLIPPING_RATIO, RMS_DBFS, DC_OFFSET, SILENCE_FRACTION, SOURCE_SAMPLE_RATE, SOURCE_CHANNELS)

# metadata.csv (audiofolder style, a row per file: its label and the rest) and segments.csv (a row per
# labelled span); the ExampleGen reads them, the data generators write them. The columns that become
# features carry the feature's key.
FILE_NAME = "file_name"  # the file's path under input_base
CLEAN_FILE_NAME = "clean_file_name"  # its clean reference's path under input_base
START_S, END_S = "start_s", "end_s"  # a span's bounds, seconds from the recording's start
METADATA_COLUMNS = (FILE_NAME, LABEL, GROUP, CLEAN_FILE_NAME, NOISE_KIND, SNR_DB, CHANNEL)
METADATA_REQUIRED = (FILE_NAME, LABEL)
METADATA_OPTIONAL = (TRACK,)  # a one-channel file's side of a call kept as two files (data.tracks=split)
SEGMENT_COLUMNS = (FILE_NAME, START_S, END_S, LABEL)
SEGMENT_OPTIONAL = (TRACK,)  # a span's track (data.tracks=split); without it a span covers every track
NOISY_DIR, CLEAN_DIR = "noisy/", "clean/"  # the paired layout's folders (data.layout=paired)
# Ground truth of generated calls beside them (pipeline/datagen/calls.py --stereo), a row per call: what
# predict's calls.csv estimates; the run report compares the two on the test split's calls.
CALLS_TRUTH_FILE = "calls_truth.csv"

# Optional raw features: absent from some examples.
OPTIONAL_KEYS = (CLEAN_AUDIO, NOISE_KIND, SNR_DB, CHANNEL)

# Transformed features written by the Transform.
LOG_MEL = "log_mel"  # [frames, mel bins], normalized per bin (logmel_cnn input)
WAVEFORM = "waveform"  # [samples], per-utterance normalized, zero padded (wav2vec2 input)
NUM_SAMPLES = "num_samples"  # valid (unpadded) samples in WAVEFORM
WAVEFORM_MEAN = "waveform_mean"  # the per-utterance normalization of WAVEFORM, to undo it
WAVEFORM_STD = "waveform_std"
CLEAN_WAVEFORM = "clean_waveform"  # clean reference, normalized like WAVEFORM; zeros if none
HAS_CLEAN = "has_clean"  # 1 where CLEAN_WAVEFORM is a real reference, else 0
SNR_BUCKET = "snr_bucket"  # input-SNR bucket ("0-5", ...) or NO_REFERENCE; a slicing key
LABEL_ID = "label_id"
# The denoiser's multi-second training sequences (components/training/context.py), made in the Trainer's
# input pipeline, never written: [B, samples] rows, trainer.context.clips rows to a sequence.
CONTEXT_NOISY = "context_noisy"
CONTEXT_CLEAN = "context_clean"

NO_REFERENCE = "no_reference"

# tft vocabulary of label strings; its index is LABEL_ID.
LABEL_VOCAB = "label"

# Output keys of the exported model's signatures.
OUT_PROBABILITIES = "probabilities"
OUT_LABEL = "label"
OUT_ENHANCED = "enhanced"  # [B, samples] enhanced WAVEFORM (denoiser on), normalized scale
OUT_ENHANCED_WAV = "enhanced_wav"  # 16 kHz PCM16 WAV bytes of the enhanced audio (serve_wav)

# Output keys of the Keras models (components/models/model.py).
LOGITS = "logits"
OUT_CONTEXT_ENHANCED = "context_enhanced"  # the denoiser's output on CONTEXT_NOISY, joined sequences
