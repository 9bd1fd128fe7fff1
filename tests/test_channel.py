"""The telephone channel: the voice band passes, the rest does not, and G.711 codes it."""
import numpy as np
import pytest
import scipy.signal

from components import features
from components.audio import channel
from pipeline.datagen import keywords

SR = features.SAMPLE_RATE


def _tone(hz: float, seconds: float = 1.0, level: float = 0.1) -> np.ndarray:
    return (level * np.sin(2 * np.pi * hz * np.arange(int(seconds * SR)) / SR)).astype(np.float32)


def _gain_db(hz: float) -> float:
    tone = _tone(hz)
    out = channel.telephone(tone)
    assert out.shape == tone.shape and out.dtype == np.float32
    middle = slice(SR // 4, 3 * SR // 4)  # past the filters' transients
    return 10 * np.log10(np.mean(out[middle] ** 2) / np.mean(tone[middle] ** 2))


def test_the_voice_band_passes_and_what_a_call_cannot_carry_is_gone():
    assert abs(_gain_db(1000)) < 1.0
    assert _gain_db(100) < -15  # below the 300 Hz edge
    assert _gain_db(6000) < -40  # above the 8 kHz channel's Nyquist frequency


@pytest.mark.parametrize("codec", channel.CODECS)
def test_g711_codes_to_8_bits_a_sample_with_its_usual_quantization_noise(codec):
    tone = _tone(440, level=0.1)
    coded = channel.g711(tone, codec)
    error = coded - tone
    snr = 10 * np.log10(np.mean(tone ** 2) / np.mean(error ** 2))
    assert 30 < snr < 45, snr  # G.711's 8-bit companding: about 38 dB, never lossless
    assert len(np.unique(coded)) <= 256


def test_mu_law_and_a_law_are_different_codes():
    tone = _tone(440, level=0.01)
    assert not np.array_equal(channel.g711(tone, "mulaw"), channel.g711(tone, "alaw"))
    with pytest.raises(ValueError, match="codec 'gsm'"):
        channel.g711(tone, "gsm")


def test_a_mobile_call_is_band_limited_aligned_and_coded_at_its_bit_rate():
    speech = keywords.speak("please stop the conveyor on line three", "en-us", 160, 50)
    narrow = channel.telephone(speech)  # the same band, coded almost transparently
    likeness = []
    for mode in (0, 7):
        coded = channel.mobile(speech, mode)
        assert coded.shape == speech.shape and coded.dtype == np.float32
        spectrum = np.abs(np.fft.rfft(coded)) ** 2
        assert spectrum[len(spectrum) // 2:].sum() / spectrum.sum() < 1e-4  # nothing above 4 kHz
        lags = scipy.signal.correlate(coded, narrow, mode="full")
        assert np.argmax(lags) - (len(narrow) - 1) == 0  # the codec's delay taken out
        likeness.append(np.corrcoef(coded, narrow)[0, 1])
    assert 0.8 < likeness[0] < likeness[1] < 0.99, likeness  # 4.75 kbit/s loses more than 12.2
    with pytest.raises(ValueError, match="AMR-NB mode 8"):
        channel.mobile(speech, 8)
