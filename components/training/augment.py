"""Waveform augmentation on the Trainer's training stream: placement, speed, rooms and phone calls.

For models that read the waveform (the denoiser front end, wav2vec2), each training
example may pass, before it reaches the model, in this order:
- to a random place in the window (`place`, called first and apart): its valid samples moved to an
  offset drawn uniformly from those at which they still fit (zeros before them), its valid length
  growing by the offset;
- through a speed change by one of `speed_factors` (band-limited resampling by FFT, the
  example then read at the original rate: tempo, pitch and formants scale together, as in
  Kaldi's speed perturbation; a slowed example loses its end past the window, a hastened
  one ends early);
- through a room: convolution with one of `rir_count` impulse responses that
  pyroomacoustics simulates (image source method) for shoebox rooms with random sizes,
  positions and reverberation times in `rt60_range_s`, drawn once from the seed;
- through a telephone call: the 300-3400 Hz voice band, G.711-style mu-law coding at
  8 bits a sample at a random level (`phone_level_dbfs`), dropped 20-ms packets at a
  random rate up to `max_dropout`, and the voice band again (the receiving end's filter).
The clean reference goes through the same speed, room, band, coding level and dropouts, so the
denoiser learns to remove the noise, not to undo the call. Both are then scaled by the
noisy waveform's new RMS (the model's inputs are normalized to unit variance).

Draws are stateless, from (seed, epoch, index) like SpecAugment: a resumed run draws what
the uninterrupted one drew. Evaluation and serving never augment.
The call runs in TensorFlow (it is in the tf.data map, after the cache, fresh each epoch);
components/audio/channel.py has a numpy twin with the ITU's G.711 tables (`telephone`).
"""
from __future__ import annotations

from typing import Tuple

import numpy as np
import tensorflow as tf

from components import features
from components.audio.channel import PHONE_BAND_HZ
from components.config import AugmentConfig

_MU = 255.0
_PACKET = features.SAMPLE_RATE // 50  # 20 ms


def room_impulse_responses(cfg: AugmentConfig, seed: int) -> np.ndarray:
    """[rir_count, length] impulse responses of random shoebox rooms (pyroomacoustics),
    starting at the direct path, each scaled to unit energy; the same seed, the same rooms."""
    import pyroomacoustics as pra  # only where rooms are simulated

    rng = np.random.default_rng(seed)
    responses = []
    while len(responses) < cfg.rir_count:
        dims = rng.uniform([3.0, 3.0, 2.4], [10.0, 8.0, 4.0])
        rt60 = rng.uniform(*cfg.rt60_range_s)
        try:
            absorption, max_order = pra.inverse_sabine(rt60, dims)
        except ValueError:  # too large a room for so short a reverberation: draw another room
            continue
        room = pra.ShoeBox(dims, fs=features.SAMPLE_RATE, materials=pra.Material(absorption),
                           max_order=max_order)
        room.add_source(rng.uniform(0.5, dims - 0.5))
        room.add_microphone(rng.uniform(0.5, dims - 0.5))
        room.compute_rir()
        h = np.asarray(room.rir[0][0], np.float64)
        # From the direct path (the whole of its fractional-delay filter): no delay to learn.
        h = h[max(int(np.argmax(np.abs(h))) - pra.constants.get("frac_delay_length") // 2, 0):]
        responses.append(h / np.sqrt(np.sum(h ** 2)))
    length = max(len(h) for h in responses)
    return np.stack([np.pad(h, (0, length - len(h))) for h in responses]).astype(np.float32)


def _convolve(x: tf.Tensor, h: tf.Tensor) -> tf.Tensor:
    """[B, N] * [B, L] linear convolution, cut to N samples (FFT of a power of two)."""
    n = tf.shape(x)[1]
    size = 2 ** tf.cast(tf.math.ceil(tf.math.log(tf.cast(n + tf.shape(h)[1], tf.float64)) / np.log(2.0)), tf.int32)
    y = tf.signal.irfft(tf.signal.rfft(x, [size]) * tf.signal.rfft(h, [size]), [size])
    return y[:, :n]


def _speed(x: tf.Tensor, factor: float) -> tf.Tensor:
    """[B, N] played `factor` times as fast, kept to N samples: resampled to N / factor by
    truncating or zero-padding its spectrum (band-limited; scipy.signal.resample's method,
    here in the tf.data graph), then cut or padded to N."""
    n = tf.shape(x)[1]
    m = tf.cast(tf.round(tf.cast(n, tf.float32) / factor), tf.int32)
    y = tf.signal.irfft(tf.signal.rfft(x), [m]) * (tf.cast(m, tf.float32) / tf.cast(n, tf.float32))
    return tf.pad(y, [[0, 0], [0, tf.maximum(n - m, 0)]])[:, :n]


def _band(x: tf.Tensor) -> tf.Tensor:
    """[B, N] -> the 300-3400 Hz band (the telephone channel's), by FFT."""
    n = tf.shape(x)[1]
    bins = tf.cast(tf.range(n // 2 + 1), tf.float32) * features.SAMPLE_RATE / tf.cast(n, tf.float32)
    keep = tf.cast((bins >= PHONE_BAND_HZ[0]) & (bins <= PHONE_BAND_HZ[1]), tf.complex64)
    return tf.signal.irfft(tf.signal.rfft(x) * keep, [n])


def mu_law(y: tf.Tensor) -> tf.Tensor:
    """y (full scale 1) mu-law coded at 8 bits a sample and expanded again (G.711's curve)."""
    code = tf.round(tf.math.log1p(_MU * tf.abs(tf.clip_by_value(y, -1.0, 1.0))) / np.log1p(_MU) * 127.0) / 127.0
    return tf.sign(y) * ((1.0 + _MU) ** code - 1.0) / _MU


def _uniforms(seeds: tf.Tensor, count: int) -> tf.Tensor:
    return tf.map_fn(lambda s: tf.random.stateless_uniform([count], s), seeds,
                     fn_output_signature=tf.TensorSpec([count], tf.float32))


def _rms(x: tf.Tensor, valid: tf.Tensor) -> tf.Tensor:
    return tf.sqrt(tf.reduce_sum((x * valid) ** 2, axis=1, keepdims=True)
                   / tf.maximum(tf.reduce_sum(valid, axis=1, keepdims=True), 1.0))


def place(noisy: tf.Tensor, clean: tf.Tensor, num_samples: tf.Tensor, seeds: tf.Tensor,
          probability: float) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """The placement step, before the others (and before `trainer.background`'s noise, which then
    covers the silence before the word too): the drawn examples' valid samples moved to an offset
    uniform over those where they fit the window; the pair and the new valid lengths. Its draws are
    folded apart from the others' (`seeds` [B, 2] as `augment_waveforms` takes them)."""
    seeds = tf.map_fn(lambda s: tf.cast(tf.random.experimental.stateless_fold_in(s, 4), tf.int64), seeds,
                      fn_output_signature=tf.TensorSpec([2], tf.int64))
    u = _uniforms(seeds, 2)  # placed?, where
    n = tf.shape(noisy)[1]
    length = tf.minimum(tf.cast(num_samples, tf.int32), n)
    free = n - length
    offset = tf.where(u[:, 0] < probability,
                      tf.minimum(tf.cast(u[:, 1] * tf.cast(free + 1, tf.float32), tf.int32), free), 0)
    source = tf.range(n)[tf.newaxis, :] - offset[:, tf.newaxis]  # where each output sample comes from
    inside = tf.cast(source >= 0, noisy.dtype)

    def moved(x):
        return tf.gather(x, tf.maximum(source, 0), batch_dims=1) * inside

    return moved(noisy), moved(clean), tf.cast(length + offset, num_samples.dtype)


def augment_waveforms(noisy: tf.Tensor, clean: tf.Tensor, num_samples: tf.Tensor, seeds: tf.Tensor,
                      cfg: AugmentConfig, rirs: tf.Tensor | None) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """([B, N] noisy, [B, N] clean, [B] valid samples) through the drawn speeds, rooms and calls:
    the pair and its new valid lengths (a speed change moves them); `seeds` [B, 2],
    `num_samples` [B] the valid samples (the rest stays zero), `rirs` from
    `room_impulse_responses` (None: no rooms). A reference of zeros (none) stays zeros."""
    seeds = tf.map_fn(lambda s: tf.cast(tf.random.experimental.stateless_fold_in(s, 1), tf.int64), seeds,
                      fn_output_signature=tf.TensorSpec([2], tf.int64))  # draws apart from SpecAugment's
    u = _uniforms(seeds, 7)  # room?, which room, call?, level, dropout rate, speed?, which speed
    n = tf.shape(noisy)[1]

    def pair(fn, x, y):  # the same operation on noisy and clean, in one pass
        out = fn(tf.concat([x, y], axis=0))
        return out[:tf.shape(x)[0]], out[tf.shape(x)[0]:]

    if cfg.speed_probability > 0:
        factors = list(cfg.speed_factors)
        which = tf.minimum(tf.cast(u[:, 6] * len(factors), tf.int32), len(factors) - 1)
        which = tf.where(u[:, 5] < cfg.speed_probability, which, -1)  # -1: as it was
        length = tf.cast(num_samples, tf.float32)
        for k, factor in enumerate(factors):
            chosen = tf.equal(which, k)
            fast_noisy, fast_clean = pair(lambda x: _speed(x, factor), noisy, clean)
            noisy = tf.where(chosen[:, tf.newaxis], fast_noisy, noisy)
            clean = tf.where(chosen[:, tf.newaxis], fast_clean, clean)
            length = tf.where(chosen, tf.round(length / factor), length)
        num_samples = tf.minimum(length, tf.cast(n, tf.float32))
    valid = tf.cast(tf.range(n)[tf.newaxis, :] < tf.cast(num_samples, tf.int32)[:, tf.newaxis], tf.float32)
    noisy, clean = noisy * valid, clean * valid  # (the resampled padding's ringing cut off)
    if rirs is not None and cfg.reverb_probability > 0:
        count = tf.shape(rirs)[0]
        h = tf.gather(rirs, tf.minimum(tf.cast(u[:, 1] * tf.cast(count, tf.float32), tf.int32), count - 1))
        room = (u[:, 0] < cfg.reverb_probability)[:, tf.newaxis]
        wet_noisy, wet_clean = pair(lambda x: _convolve(x, tf.concat([h, h], axis=0)), noisy, clean)
        noisy, clean = tf.where(room, wet_noisy, noisy) * valid, tf.where(room, wet_clean, clean) * valid
    if cfg.phone_probability > 0:
        call = (u[:, 2] < cfg.phone_probability)[:, tf.newaxis]
        low, high = cfg.phone_level_dbfs
        band_noisy, band_clean = pair(_band, noisy, clean)
        # The pair at the level the noisy call is carried at (full scale 1).
        gain = 10.0 ** ((low + u[:, 3:4] * (high - low)) / 20.0) / (_rms(band_noisy, valid) + 1e-12)
        packets = tf.map_fn(lambda s: tf.random.stateless_uniform([n // _PACKET + 1], s + 1), seeds,
                            fn_output_signature=tf.TensorSpec([None], tf.float32))
        kept = tf.repeat(tf.cast(packets >= u[:, 4:5] * cfg.max_dropout, tf.float32), _PACKET, axis=1)[:, :n]
        # Coded, packets lost, and the receiving end's voice-band filter again.
        called_noisy, called_clean = pair(_band, *(mu_law(x * gain) / gain * kept for x in (band_noisy, band_clean)))
        called_noisy, called_clean = called_noisy * valid, called_clean * valid
        noisy, clean = tf.where(call, called_noisy, noisy), tf.where(call, called_clean, clean)
    scale = _rms(noisy, valid) + 1e-5  # normalized again, as the Transform normalizes the inputs
    return noisy / scale, clean / scale, tf.cast(num_samples, tf.int64)
