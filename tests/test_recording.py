"""Whole-recording inference: windows that cover a recording, and the denoiser in
streaming chunks whose overlap-add output matches one pass over the whole recording."""
import numpy as np
import pytest
import soundfile
import tensorflow as tf
import tf_keras as keras

from components.config import DenoiserConfig
from components.models.denoiser import Denoiser
from components.serving import recording
from tests.audio_helpers import write_wav


def test_windows_cover_the_recording_every_hop_the_last_one_shorter():
    assert recording.window_starts(25.0, 10.0, 10.0) == [(0.0, 10.0), (10.0, 20.0), (20.0, 25.0)]
    assert recording.window_starts(20.0, 10.0, 5.0) == [(0.0, 10.0), (5.0, 15.0), (10.0, 20.0)]
    assert recording.window_starts(3.0, 10.0, 10.0) == [(0.0, 3.0)]
    assert recording.window_starts(20.1, 10.0, 10.0, min_window_s=0.2) == [(0.0, 10.0), (10.0, 20.0)]
    with pytest.raises(ValueError, match="need 0 < hop_s"):
        recording.window_starts(20.0, 10.0, 0.0)


def test_crossfade_weights_sum_to_one_over_the_overlap():
    fade_in = recording.crossfade(16000)
    np.testing.assert_allclose(fade_in + fade_in[::-1], 1.0, atol=1e-12)
    assert fade_in[0] < 1e-3 and fade_in[-1] > 1 - 1e-3


def test_chunked_output_of_a_10_minute_recording_matches_the_one_shot_output(tmp_path):
    """The denoiser (small, randomly initialized, its mask far from constant) over 10 minutes
    in 10-s chunks crossfaded over 1 s, against the same denoiser over the whole recording
    at once. Stated tolerance: the difference is at least 55 dB below the signal (measured
    62.8 dB; PCM16 rounding alone is 68.8 dB; the same chunks without the crossfade, 51.7 dB)."""
    keras.utils.set_random_seed(0)  # python, numpy and TF: the same weights whatever ran before
    denoiser = Denoiser(DenoiserConfig(channels=16, gru_units=8, init_mask_logit=0.0))
    rng = np.random.default_rng(0)
    seconds = 600
    t = np.arange(seconds * 16000) / 16000
    speechlike = np.sin(2 * np.pi * 220 * t) * (0.5 + 0.5 * np.sin(2 * np.pi * 0.7 * t)) ** 2
    audio = (0.1 * speechlike + 0.03 * rng.standard_normal(t.size)).astype(np.float32)
    write_wav(tmp_path / "call.wav", audio)
    stored = soundfile.read(tmp_path / "call.wav", dtype="float32")[0]  # as PCM16

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32), tf.TensorSpec([], tf.float32),
                                  tf.TensorSpec([], tf.float32)])
    def enhance(chunk, mean, std):
        return denoiser(((chunk - mean) / std)[tf.newaxis], training=False)[0] * std + mean

    def enhance_np(chunk, mean, std):
        return enhance(tf.constant(chunk), tf.constant(mean, tf.float32), tf.constant(std, tf.float32)).numpy()

    calls = []
    written = recording.denoise_file(str(tmp_path / "call.wav"), str(tmp_path / "out.wav"),
                                     lambda c, m, s: calls.append(c.size) or enhance_np(c, m, s),
                                     chunk_s=10.0, overlap_s=1.0)
    assert written == pytest.approx(seconds)
    assert max(calls) == 160000 and len(calls) == 67  # bounded by a chunk: 600 s in 9 s hops
    chunked = soundfile.read(tmp_path / "out.wav", dtype="float32")[0]

    mean, std = float(stored.mean(dtype=np.float64)), float(stored.std(dtype=np.float64))
    one_shot = np.clip(enhance_np(stored, mean, std), -1, 1)
    assert chunked.shape == one_shot.shape
    assert np.abs(one_shot - stored).mean() > 0.01  # the denoiser really changes the audio
    error_db = 10 * np.log10(np.mean(one_shot ** 2) / np.mean((chunked - one_shot) ** 2))
    assert error_db > 55.0, f"chunked output differs from one-shot by {error_db:.1f} dB"


def test_a_tracks_label_leaves_out_the_other_roles_unless_nothing_else_is_left():
    """On the customer's track, `agent` (the other track's role) is not a label its side can have: the
    most probable of the rest is the track's label, and the mean probabilities stay what they are."""
    labels = ["agent", "billing", "delivery"]
    aggregate = recording.Aggregate()
    for probabilities, speech in (([0.6, 0.1, 0.3], 1.0), ([0.5, 0.3, 0.2], 0.5), ([0.9, 0.1, 0.0], 0.0)):
        aggregate.add(recording.WindowResult(0.0, 1.0, "", np.array(probabilities), speech))
    np.testing.assert_allclose(aggregate.mean(), [(0.6 + 0.25) / 1.5, (0.1 + 0.15) / 1.5, (0.3 + 0.1) / 1.5])
    assert aggregate.label(labels) == "agent"
    assert aggregate.label(labels, ruled_out=["agent"]) == "delivery"
    assert aggregate.label(labels, ruled_out=labels) == "agent"  # nothing left: the plain most probable
