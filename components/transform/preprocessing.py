"""Transform module: raw WAV bytes -> normalized log-mel features, plus SpecAugment.

TFX's Transform calls `preprocessing_fn`. Everything in the Transform graph uses
core TF ops only (tf.audio.decode_wav, tf.signal), because TF Serving must load
it; tensorflow-io's audio ops are custom ops and stay out.
`spec_augment_batch` is applied by the Trainer to the training stream only.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import tensorflow as tf
import tensorflow_transform as tft

from components import features
from components.config import FeatureConfig, SpecAugmentConfig

_EPS = 1e-6


def _dense(tensor: Any, default: Any) -> tf.Tensor:
    """A [B] dense tensor from a FixedLen [B, 1] tensor or a VarLen SparseTensor."""
    if isinstance(tensor, tf.sparse.SparseTensor):
        batch = tensor.dense_shape[0]
        tensor = tf.sparse.to_dense(tf.sparse.reset_shape(tensor, [batch, 1]), default_value=default)
    return tf.reshape(tensor, [-1])


def decode_16k(wav: tf.Tensor) -> tf.Tensor:
    """One WAV (bytes) -> [samples] float32 mono; fails, saying so, unless it is 16 kHz
    (the ExampleGen always writes 16 kHz; serving clients must send it)."""
    decoded = tf.audio.decode_wav(wav, desired_channels=1)
    check = tf.debugging.assert_equal(
        decoded.sample_rate, tf.constant(features.SAMPLE_RATE, tf.int32),
        message=f"expected {features.SAMPLE_RATE} Hz WAV audio")
    with tf.control_dependencies([check]):
        return tf.identity(decoded.audio[:, 0])


def normalize(audio: tf.Tensor, valid: Optional[tf.Tensor] = None):
    """(normalized, mean, std): zero mean and unit variance over the valid samples of the
    last axis (all of them by default), zeros elsewhere; mean and std keep that axis as 1.
    The one normalization of the Transform, the model's enhanced audio and serving."""
    valid = tf.ones_like(audio) if valid is None else tf.cast(valid, audio.dtype)
    count = tf.maximum(tf.reduce_sum(valid, -1, keepdims=True), 1.0)
    mean = tf.reduce_sum(audio * valid, -1, keepdims=True) / count
    centered = (audio - mean) * valid  # valid is 0 or 1: the same numbers as masking at the end
    std = tf.sqrt(tf.reduce_sum(tf.square(centered), -1, keepdims=True) / count + 1e-8)
    return centered / std, mean, std


# The header the ExampleGen writes (soundfile, PCM16 mono 16 kHz) after the RIFF size, up to the data size.
_PCM16_HEADER = (b"WAVEfmt " + (16).to_bytes(4, "little") + (1).to_bytes(2, "little") + (1).to_bytes(2, "little")
                 + features.SAMPLE_RATE.to_bytes(4, "little") + (2 * features.SAMPLE_RATE).to_bytes(4, "little")
                 + (2).to_bytes(2, "little") + (16).to_bytes(2, "little") + b"data")
_HEADER_BYTES = 44


def is_canonical_pcm16(wavs: tf.Tensor) -> tf.Tensor:
    """[B] bytes -> [B] bool: a 44-byte PCM16 mono 16 kHz WAV header whose data size is the
    rest of the bytes (even). Shorter inputs are False (their header is padded with zeros)."""
    header = tf.strings.join([tf.strings.substr(wavs, 0, _HEADER_BYTES), b"\0" * _HEADER_BYTES])
    data_size = tf.io.decode_raw(tf.strings.substr(header, 40, 4), tf.int32, fixed_length=4)[:, 0]
    # (tf.equal, not ==: in a TF1-style graph, as tf.Transform's compat mode builds, == on
    # tensors compares the objects and gives False)
    return (tf.equal(tf.strings.substr(header, 0, 4), b"RIFF")
            & tf.equal(tf.strings.substr(header, 8, len(_PCM16_HEADER)), _PCM16_HEADER)
            & tf.equal(data_size, tf.strings.length(wavs) - _HEADER_BYTES) & tf.equal(data_size % 2, 0))


def decode_batch(wavs: tf.Tensor, num_samples: int):
    """[B] WAV bytes -> ([B, num_samples] float32 zero-padded, [B] int64 lengths).

    Audio longer than `num_samples` is refused, never cropped unseen. A batch whose every
    WAV has the canonical 44-byte PCM16 mono 16 kHz header (what the ExampleGen writes) is
    read at once with `decode_raw`, which gives decode_wav's samples exactly (int16 / 2^15);
    any other batch goes clip by clip through `tf.audio.decode_wav`. Written here because
    decode_wav takes one file per call: on 10-s clips the batch read is about 6x faster."""
    total = tf.strings.length(wavs)

    def raw():
        samples = tf.io.decode_raw(tf.strings.substr(wavs, _HEADER_BYTES, 2 * num_samples), tf.int16,
                                   fixed_length=2 * num_samples)
        lengths = tf.cast((total - _HEADER_BYTES) // 2, tf.int64)
        return tf.cast(samples, tf.float32) / 32768.0, lengths

    def one_by_one():
        def pcm(wav: tf.Tensor):
            audio = decode_16k(wav)
            length = tf.shape(audio)[0]
            return tf.pad(audio[:num_samples], [[0, tf.maximum(num_samples - length, 0)]]), tf.cast(length, tf.int64)

        return tf.map_fn(pcm, wavs, fn_output_signature=(
            tf.TensorSpec([num_samples], tf.float32), tf.TensorSpec([], tf.int64)))

    audio, lengths = tf.cond(tf.reduce_all(is_canonical_pcm16(wavs)), raw, one_by_one)
    longest = tf.reduce_max(tf.concat([lengths, tf.zeros([1], tf.int64)], 0))
    fits = tf.debugging.assert_less_equal(longest, tf.constant(num_samples, tf.int64), message=(
        f"audio longer than the model's window of {num_samples} samples (features.clip_seconds): "
        f"it would be cropped. Cut recordings into windows (the ExampleGen does; for whole "
        f"recordings use components.serving.recording)"))
    with tf.control_dependencies([fits]):
        return tf.ensure_shape(tf.identity(audio), [None, num_samples]), tf.identity(lengths)


def decode_waveform(wav_bytes: tf.Tensor, num_samples: int,
                    reference_bytes: Optional[tf.Tensor] = None,
                    has_reference: Optional[tf.Tensor] = None) -> Dict[str, tf.Tensor]:
    """[B] PCM16 WAV bytes -> {WAVEFORM [B, num_samples], NUM_SAMPLES, WAVEFORM_MEAN,
    WAVEFORM_STD}: zero-padded, each utterance normalized to zero mean and unit
    variance over its own samples (as Wav2Vec2FeatureExtractor does). Audio longer than
    `num_samples` is refused, never cropped unseen (`decode_batch`).

    With `reference_bytes` (clean references, same length), also CLEAN_WAVEFORM:
    the reference cropped and normalized with the *noisy* utterance's mean and std,
    so enhanced, noisy and clean share one scale: SNRs are those of the pair with the
    noisy utterance's mean (its DC offset, about 0 for speech) removed from both.
    `has_reference` ([B] bool) marks the real references: the others are zeros, and a
    batch without any is not decoded at all."""
    audio, lengths = decode_batch(wav_bytes, num_samples)
    valid = tf.sequence_mask(lengths, num_samples, dtype=tf.float32)
    waveform, mean, std = normalize(audio, valid)
    result = {features.WAVEFORM: waveform, features.NUM_SAMPLES: lengths,
              features.WAVEFORM_MEAN: mean[:, 0], features.WAVEFORM_STD: std[:, 0]}
    if reference_bytes is not None:
        if has_reference is None:
            has_reference = tf.ones_like(lengths, tf.bool)
        keep = valid * tf.cast(has_reference, tf.float32)[:, None]

        def clean():
            return (decode_batch(tf.where(has_reference, reference_bytes, wav_bytes), num_samples)[0] - mean) / std

        result[features.CLEAN_WAVEFORM] = tf.cond(tf.reduce_any(has_reference), clean, lambda: audio) * keep
    return result


def snr_bucket_names(edges: Sequence[float]) -> List[str]:
    """Bucket names for edges [0, 5, 10, 20]: <0, 0-5, 5-10, 10-20, >=20."""
    return [f"<{edges[0]:g}"] + [f"{lo:g}-{hi:g}" for lo, hi in zip(edges, edges[1:])] + [f">={edges[-1]:g}"]


def snr_bucket(snr_db: tf.Tensor, has_clean: tf.Tensor, edges: Sequence[float]) -> tf.Tensor:
    """[B] input SNRs -> [B] bucket names (`snr_bucket_names`); NO_REFERENCE where
    there is no clean reference or no SNR."""
    names = snr_bucket_names(edges)
    index = tf.raw_ops.Bucketize(input=snr_db, boundaries=[float(e) for e in edges])
    known = has_clean & tf.math.is_finite(snr_db)
    return tf.where(known, tf.gather(tf.constant(names), index), features.NO_REFERENCE)


def log_mel(waveform: tf.Tensor, cfg: FeatureConfig) -> tf.Tensor:
    """[B, samples] -> [B, frames, mel bins] log-mel energies.

    The STFT is `tf.signal.stft(waveform, frame_length, frame_step, fft_length)` computed
    as frames of fft_length samples under the periodic Hann window of frame_length padded
    with zeros: the same numbers (each FFT sees the same input) without stft's pass that
    pads every frame to fft_length, about a third of the STFT's time on 10-s clips. The
    power is re^2 + im^2 (tf.abs of a complex tensor takes a scalar square root per bin,
    then ** 2 a pow: 0.9 ms of a 10-s clip's 5.3), the mel projection one matmul."""
    pad = cfg.fft_length - cfg.frame_length
    window = tf.pad(tf.signal.hann_window(cfg.frame_length, periodic=True), [[0, pad]])
    frames = tf.signal.frame(tf.pad(waveform, [[0, 0], [0, pad]]), cfg.fft_length, cfg.frame_step)
    stft = tf.signal.rfft(frames * window)
    power = tf.square(tf.math.real(stft)) + tf.square(tf.math.imag(stft))
    bins = cfg.fft_length // 2 + 1
    mel_matrix = tf.signal.linear_to_mel_weight_matrix(
        cfg.num_mel_bins, bins, features.SAMPLE_RATE, cfg.lower_hz, cfg.upper_hz)
    mel = tf.reshape(tf.matmul(tf.reshape(power, [-1, bins]), mel_matrix),
                     tf.concat([tf.shape(power)[:-1], [cfg.num_mel_bins]], 0))
    return tf.math.log(mel + _EPS)


def _feature_config(custom_config: Dict[str, Any] | None) -> FeatureConfig:
    return FeatureConfig(**((custom_config or {}).get("config", {}).get("features", {})))


def preprocessing_fn(inputs: Dict[str, Any], custom_config: Dict[str, Any] | None = None) -> Dict[str, Any]:
    """TFX Transform entry point: waveforms (noisy and clean reference), log-mel
    normalized per mel bin over the full pass, the input-SNR bucket, the label id."""
    cfg = _feature_config(custom_config)
    audio = _dense(inputs[features.AUDIO], b"")
    if features.CLEAN_AUDIO in inputs:
        clean = _dense(inputs[features.CLEAN_AUDIO], b"")
        has_clean = tf.strings.length(clean) > 0
    else:  # a schema without clean references
        has_clean, clean = tf.zeros_like(audio, tf.bool), audio
    outputs = decode_waveform(audio, cfg.num_samples, clean, has_clean)
    outputs[features.HAS_CLEAN] = tf.cast(has_clean, tf.int64)
    snr = _dense(inputs[features.SNR_DB], float("nan")) if features.SNR_DB in inputs else tf.fill(
        tf.shape(audio), float("nan"))
    outputs[features.SNR_BUCKET] = snr_bucket(snr, has_clean, cfg.snr_bucket_edges_db)
    mel = log_mel(outputs[features.WAVEFORM], cfg)
    per_bin = tf.reshape(mel, [-1, cfg.num_mel_bins])  # every frame is a sample of its bin
    mean = tft.mean(per_bin, reduce_instance_dims=False)
    var = tft.var(per_bin, reduce_instance_dims=False)
    outputs[features.LOG_MEL] = (mel - mean) / tf.sqrt(var + _EPS)
    if features.LABEL in inputs:
        outputs[features.LABEL_ID] = tft.compute_and_apply_vocabulary(
            _dense(inputs[features.LABEL], b""), vocab_filename=features.LABEL_VOCAB)
    return outputs


def spec_augment_batch(mel: tf.Tensor, cfg: SpecAugmentConfig, seeds: tf.Tensor | None = None) -> tf.Tensor:
    """SpecAugment time and frequency masking of a [B, frames, bins] batch, each example
    under masks of its own.

    The masks of example b are stateless draws from `seeds[b]` (shape [B, 2]): the same
    seed, the same masks (the Trainer seeds each example by (seed, epoch, index), so a
    resumed run draws what the uninterrupted one drew). Without seeds, fresh ones are drawn
    on every call. Masked cells are set to 0, the normalized features' mean. Only the
    draws go example by example; the masks are built for the whole batch at once.
    """
    cfg = cfg.resolved()
    batch, frames, bins = tf.shape(mel)[0], tf.shape(mel)[1], tf.shape(mel)[2]
    masks = cfg.freq_masks + cfg.time_masks
    if not masks:
        return mel
    if seeds is None:
        seeds = tf.random.uniform([batch, 2], 0, tf.int64.max, dtype=tf.int64)
    # Per example and mask, two uniforms in [0, 1): the width's, then the start's.
    draws = tf.map_fn(lambda s: tf.random.stateless_uniform([masks, 2], s), seeds,
                      fn_output_signature=tf.TensorSpec([masks, 2], tf.float32))

    def bands(u, max_width, size):  # u [B, k, 2] -> [B, size] True inside any of the k bands
        width = tf.minimum(tf.cast(u[..., 0] * tf.cast(max_width + 1, tf.float32), tf.int32), max_width)
        room = tf.maximum(size - width, 0)
        start = tf.minimum(tf.cast(u[..., 1] * tf.cast(room + 1, tf.float32), tf.int32), room)
        positions = tf.range(size)[tf.newaxis, tf.newaxis, :]
        inside = (positions >= start[..., tf.newaxis]) & (positions < (start + width)[..., tf.newaxis])
        return tf.reduce_any(inside, axis=1)

    max_time = tf.minimum(cfg.time_mask_width,
                          tf.cast(cfg.time_mask_max_ratio * tf.cast(frames, tf.float32), tf.int32))
    masked = tf.zeros([batch, frames, bins], tf.bool)
    if cfg.freq_masks:
        masked |= bands(draws[:, :cfg.freq_masks], cfg.freq_mask_width, bins)[:, tf.newaxis, :]
    if cfg.time_masks:
        masked |= bands(draws[:, cfg.freq_masks:], max_time, frames)[:, :, tf.newaxis]
    return tf.where(masked, tf.zeros_like(mel), mel)
