"""Seeded held-out evaluation corpus: voices, noises and a channel the demo never trains on.

    python -m pipeline.datagen.heldout --part validation   # data/demo_heldout/validation
    python -m pipeline.datagen.heldout --part test         # data/demo_heldout/test

Two parts with no voice in common: `validation` (FLITE_VOICES and HELDOUT_VARIANTS), read as
often as tuning needs, and `test` (TEST_VARIANTS, each voice in TAKES takes at their own pace and
pitch; new noise realizations), read once per reported configuration (docs/generalization.md).

The generalization protocol (docs/generalization.md). Every condition here is outside
what pipeline/datagen/keywords.py generates for training:
- voices: the flite synthesizer (FLITE_VOICES: diphone and unit-selection voices; the
  training speaks only through espeak-ng) and espeak-ng's named voice variants
  (HELDOUT_VARIANTS; training uses demo_data.VARIANTS), at random speeds and pitches;
- noise kinds: fan, keyboard, music and alarm (HELDOUT_NOISE_KINDS; training mixes
  demo_data.NOISE_KINDS), each clip with its own realization;
- channels: wideband 16 kHz, and a mobile call (components/audio/channel.py, mobile: 300-3400 Hz
  at 8 kHz, AMR-NB at a random bit rate), a codec the training never hears.

Each utterance is written clean on both channels (`snr_bucket` no_reference) and noisy
at each of SNRS_DB, the kind and channel cycling so every kind meets every SNR and
channel. The noisy mobile clip is the call of the noisy mixture; its reference is the call
of the clean speech (the clean mobile file, same bit rate). `metadata.csv` has
`file_name,label,group,clean_file_name,noise_kind,snr_db,channel`; `group` is
`<synthesizer>:<voice>`.
The noise synthesis is written here because no package ships these noises as recordings.
"""
from __future__ import annotations

import argparse
import csv
import os
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Sequence, Tuple

import numpy as np
import scipy.signal
import soundfile

from components import features
from components.audio import channel, mixing, wav_io
from pipeline.datagen import keywords as demo_data
from pipeline.datagen.keywords import SR, WORDS, at_speech_level, trim_and_level

FLITE_VOICES = ("kal16", "awb", "rms", "slt")
HELDOUT_VARIANTS = ("Andy", "Annie", "anika", "Michael", "grandpa", "steph")
# The test part's: espeak-ng variants of no family the training or the validation part speaks in
TEST_VARIANTS = ("announcer", "kaukovalta", "croak", "Demonic")
TAKES = 2
PARTS = ("validation", "test")
ESPEAK_VOICES = ("en-us", "en-gb")
HELDOUT_NOISE_KINDS = ("fan", "keyboard", "music", "alarm")
CHANNELS = ("wideband", "mobile")
SNRS_DB = (0.0, 5.0, 10.0)
Voice = Tuple[str, str, float, int]  # (group, name, speed factor, pitch)


def voices(seed: int, part: str = "validation") -> List[Voice]:
    """Every voice of the part, with its own speed (and, for espeak-ng, pitch): validation's each
    once, the test part's each English voice of each variant in TAKES takes."""
    rng = np.random.default_rng(seed)
    if part == "test":
        return [(f"espeak:{accent}+{variant}", f"{accent}+{variant}", float(rng.uniform(0.85, 1.2)),
                 int(rng.integers(25, 76))) for variant in TEST_VARIANTS for accent in ESPEAK_VOICES
                for _ in range(TAKES)]
    out: List[Voice] = [(f"flite:{v}", v, float(rng.uniform(0.85, 1.2)), 0) for v in FLITE_VOICES]
    for variant in HELDOUT_VARIANTS:
        voice = f"{ESPEAK_VOICES[int(rng.integers(len(ESPEAK_VOICES)))]}+{variant}"
        out.append((f"espeak:{voice}", voice, float(rng.uniform(0.85, 1.2)), int(rng.integers(25, 76))))
    return out


def speak(text: str, voice: Voice) -> np.ndarray:
    group, name, speed, pitch = voice
    if group.startswith("espeak:"):
        return demo_data.speak(text, name, int(round(165 / speed)), pitch)
    with tempfile.NamedTemporaryFile(suffix=".wav") as tmp:
        subprocess.run(["flite", "-voice", name, "--setf", f"duration_stretch={speed:.3f}", "-t", text,
                        "-o", tmp.name], check=True, capture_output=True)
        with open(tmp.name, "rb") as f:
            return trim_and_level(wav_io.decode_to_mono_16k(f.read()))


def _fan(rng: np.random.Generator, n: int) -> np.ndarray:
    """HVAC fan: low-passed turbulence plus the blade-pass tone and its harmonics, wobbling."""
    t = np.arange(n) / SR
    turbulence = scipy.signal.sosfilt(scipy.signal.butter(2, rng.uniform(300, 900), fs=SR, output="sos"),
                                      rng.standard_normal(n))
    blade = rng.uniform(40, 140)
    wobble = 1 + 0.02 * np.sin(2 * np.pi * rng.uniform(0.1, 0.5) * t)
    tones = sum(rng.uniform(0.3, 1.0) / h * np.sin(2 * np.pi * blade * h * np.cumsum(wobble) / SR)
                for h in range(1, 5))
    return turbulence / turbulence.std() + 0.7 * tones


def _keyboard(rng: np.random.Generator, n: int) -> np.ndarray:
    """Typing: short resonant clicks at a typist's irregular rate over faint room tone."""
    out = 0.15 * rng.standard_normal(n)
    click = int(0.03 * SR)
    decay = np.exp(-np.arange(click) / (0.004 * SR))
    t = 0
    while True:
        t += int(rng.exponential(SR / rng.uniform(5, 10)))
        if t + click >= n:
            break
        band = scipy.signal.butter(2, sorted(rng.uniform(1500, 6000, 2) + [0, 800]), btype="bandpass", fs=SR,
                                   output="sos")
        out[t:t + click] += rng.uniform(0.3, 1.0) * scipy.signal.sosfilt(band, rng.standard_normal(click)) * decay
    return out


def _music(rng: np.random.Generator, n: int) -> np.ndarray:
    """Music on hold: a melody and a bass line of harmonic notes in a major key, enveloped."""
    out = np.zeros(n)
    beat = int(SR * 60 / rng.uniform(80, 140))
    key = rng.uniform(196, 330)
    scale = np.array([0, 2, 4, 5, 7, 9, 11, 12])
    for start in range(0, n, beat):
        length = min(beat, n - start)
        t = np.arange(length) / SR
        envelope = np.minimum(t / 0.01, 1) * np.exp(-t / 0.25)
        melody, bass = key * 2 ** (rng.choice(scale) / 12), key / 2 * 2 ** (rng.choice(scale[:5]) / 12)
        for f0, gain in ((melody, 1.0), (bass, 0.6)):
            out[start:start + length] += gain * envelope * sum(
                np.sin(2 * np.pi * f0 * h * t) / h ** 1.5 for h in range(1, 7))
    return out


def _alarm(rng: np.random.Generator, n: int) -> np.ndarray:
    """A two-tone alarm beeping over hiss."""
    t = np.arange(n) / SR
    low, high = sorted(rng.uniform(600, 2500, 2))
    period = rng.uniform(0.2, 0.6)
    tone = np.where((t % period) < period / 2, low, high)
    beep = np.sign(np.sin(2 * np.pi * np.cumsum(tone) / SR)) * ((t % (period / 2)) < period * 0.4)
    beep = scipy.signal.sosfilt(scipy.signal.butter(2, 5000, fs=SR, output="sos"), beep)
    return beep + 0.3 * rng.standard_normal(n)


_NOISES = {"fan": _fan, "keyboard": _keyboard, "music": _music, "alarm": _alarm}


def make_noise(kind: str, seed: int, seconds: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return at_speech_level(_NOISES[kind](rng, int(seconds * SR)))


def conditions(utterance: int) -> List[Tuple[str, float, str]]:
    """(noise kind, SNR, channel) of the noisy copies of the `utterance`-th utterance: one per
    SNR, kinds and channels cycling so that every 8 utterances hold every combination."""
    kinds, channels = len(HELDOUT_NOISE_KINDS), len(CHANNELS)
    return [(HELDOUT_NOISE_KINDS[(utterance + j) % kinds], snr, CHANNELS[(utterance // kinds + j) % channels])
            for j, snr in enumerate(SNRS_DB)]


def carry(audio: np.ndarray, ch: str, mode: int) -> np.ndarray:
    """16 kHz `audio` as channel `ch` of CHANNELS delivers it (mobile: AMR-NB at AMR_NB_KBPS[mode])."""
    return audio if ch == "wideband" else channel.mobile(audio, mode)


def _write(out: str, name: str, audio: np.ndarray) -> np.ndarray:
    """Writes PCM16 and returns the audio as stored (what the ExampleGen will read)."""
    soundfile.write(os.path.join(out, name), audio, SR, subtype="PCM_16")
    return soundfile.read(os.path.join(out, name), dtype="float32")[0]


def generate(out: str, words: Sequence[str] = WORDS, seed: int = 0, workers: int = 4,
             voice_count: int = 0, part: str = "validation") -> Dict[str, int]:
    """Writes the part of the held-out corpus (all its voices, or the first `voice_count`); the
    same arguments always write the same files (the test part's noise from another seed)."""
    if part not in PARTS:
        raise ValueError(f"part {part!r}: one of {PARTS}")
    spk = voices(seed, part)[:voice_count or None]
    jobs = [(w, v) for v in spk for w in words]
    with ThreadPoolExecutor(workers) as pool:  # the synthesizers run as subprocesses
        clips = list(pool.map(lambda job: speak(*job), jobs))
    rng = np.random.default_rng(seed + (1 if part == "validation" else 1001))
    rows, takes = [], {}
    for i, ((word, (group, _, _, _)), clean) in enumerate(zip(jobs, clips)):
        os.makedirs(os.path.join(out, word), exist_ok=True)
        stem = f"{word}/{group.replace(':', '_').replace('+', '_')}"
        if part == "test":  # a voice's takes
            takes[stem] = takes.get(stem, 0) + 1
            stem += f"_take{takes[stem]}"
        references = {}
        mode = int(rng.integers(len(channel.AMR_NB_KBPS)))  # the utterance's calls' bit rate
        for ch in CHANNELS:
            name = f"{stem}__clean_{ch}.wav"
            references[ch] = _write(out, name, carry(clean, ch, mode))
            rows.append([name, word, group, "", "", "", ch])
        for kind, snr, ch in conditions(i):
            noise = make_noise(kind, int(rng.integers(2 ** 31)), len(clean) / SR + 1.0)
            noisy, reference = mixing.mix_at_snr(references["wideband"], noise, snr, rng)
            if not np.array_equal(reference, references["wideband"]):
                raise ValueError(f"{stem} clips at {snr:.1f} dB SNR; lower SPEECH_RMS")
            name = f"{stem}__{kind}_{snr:g}dB_{ch}.wav"
            _write(out, name, carry(noisy, ch, mode))
            rows.append([name, word, group, f"{stem}__clean_{ch}.wav", kind, f"{snr:.2f}", ch])
    with open(os.path.join(out, "metadata.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(features.METADATA_COLUMNS)
        writer.writerows(rows)
    return {"files": len(rows), "utterances": len(clips), "voices": len({group for group, *_ in spk}),
            "words": len(words)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=PARTS, default="validation",
                        help="validation: tune on it; test: read once per reported configuration")
    parser.add_argument("--out", default=None, help="default data/demo_heldout/<part>")
    parser.add_argument("--words", type=int, default=len(WORDS), help="first N of the 10 keywords")
    parser.add_argument("--voices", type=int, default=0, help="first N held-out voices (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    out = args.out or os.path.join("data", "demo_heldout", args.part)
    counts = generate(out, WORDS[:args.words], args.seed, voice_count=args.voices, part=args.part)
    print(f"held-out data, {args.part} part: {counts['files']} files ({counts['utterances']} utterances, "
          f"{counts['voices']} voices, {counts['words']} words) in {out}")


if __name__ == "__main__":
    main()
