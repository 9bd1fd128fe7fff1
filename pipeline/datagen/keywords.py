"""Seeded, deterministic demo data: spoken keywords in synthetic industrial noise.

    python -m pipeline.datagen.keywords --out data/demo --noise-out data/demo_noise

Writes `<out>/<label>/<speaker>.wav` (clean) and `<out>/<label>/<speaker>__<kind>_<n>.wav`
(noisy copies, each mixed with its own realization of the noise), all 16 kHz mono
PCM16, plus an audiofolder `metadata.csv`
(`file_name,label,group,clean_file_name,noise_kind,snr_db`). Each speaker is an
espeak-ng voice variant with its own speed and pitch, recorded as the `group`.
Noise recordings of each kind (NOISE_KINDS: pink, hum, machinery, babble; with `--variety broad`,
the default, also MORE_NOISE_KINDS: white, brown, crowd, and speakers drawn from
MORE_VARIANTS too), for the ExampleGen's `data.noise_base` augmentation, go to `--noise-out`.
None of them is a voice family or noise kind of the held-out corpus (pipeline/datagen/heldout.py).
Speech comes from espeak-ng (Debian package), resampling from soxr; the noise
synthesis is written here because no package ships industrial noise.
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
import soundfile

from components import features
from components.audio import mixing, wav_io

SR = features.SAMPLE_RATE
WORDS = ("yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go")
VOICES = ("en-us", "en-gb", "en-gb-scotland", "en-gb-x-rp", "en-029", "en-gb-x-gbclan",
          "en-gb-x-gbcwmd", "en-us-nyc")
VARIANTS = ("m1", "m2", "m3", "m4", "m7", "f1", "f2", "f3", "f4", "f5", "klatt", "klatt3")
NOISE_KINDS = ("pink", "hum", "machinery", "babble")
# The broad training set (`--variety broad`, the demo's): every other espeak-ng variant that
# speaks clearly, but none of pipeline/datagen/heldout.py's held-out families, and more noise kinds.
MORE_VARIANTS = ("m5", "m6", "m8", "klatt2", "klatt4", "klatt5", "klatt6", "adam", "Alex", "Alicia", "Andrea",
                 "antonio", "aunty", "belinda", "benjamin", "boris", "caleb", "david", "Denis", "Diogo", "ed",
                 "edward", "Gene", "gustave", "Henrique", "Hugo", "iven", "Jacky", "john", "Lee", "linda",
                 "marcelo", "Marco", "Mario", "max", "michel", "miguel", "Mike", "Nguyen", "pablo", "paul",
                 "pedro", "quincy", "rob", "robert", "Storm", "zac", "norbert", "sandro", "shelby", "travis",
                 "victor", "grandma")
# A second speech engine for the broad set: Festival (Debian festival + festvox-kdlpc16k), its
# American male diphone voice, at many paces and pitches. Not a held-out voice: the held-out
# corpus speaks through flite's kal16, awb, rms and slt and espeak-ng's HELDOUT_VARIANTS.
FESTIVAL_VOICE = "ked_diphone"
FESTIVAL_SPEAKERS = 32
# Not rotating machinery with blade or firing harmonics (the held-out fan) nor short clicks
# (the held-out keyboard): kinds unlike the held-out ones.
MORE_NOISE_KINDS = ("white", "brown", "crowd")
BABBLE_TEXT = (
    "please hold the line while I check the order", "the shipment left the warehouse today",
    "can you repeat the account number for me", "the conveyor on line three is jammed again",
    "we will call you back after the shift change", "the invoice was sent last week",
    "my manager approved the replacement part", "the forklift needs a new battery",
)
SPEECH_RMS = 0.05  # clean speech level, about -26 dBFS: mixtures at 0 dB SNR do not clip


def speakers(count: int, seed: int, variants: Sequence[str] = VARIANTS,
             festival: int = 0) -> List[Tuple[str, str, int, int]]:
    """(group, voice+variant, words per minute, pitch) for `count` distinct espeak-ng speakers,
    then `festival` speakers of Festival's diphone voice (FESTIVAL_VOICE: a second speech
    engine, each speaker its own pace and mean pitch in Hz; drawn apart, so the espeak-ng
    speakers are the same whatever `festival` is)."""
    rng = np.random.default_rng(seed)
    combos = [(v, var) for v in VOICES for var in variants]
    if count > len(combos):
        raise ValueError(f"at most {len(combos)} speakers, asked for {count}")
    order = rng.permutation(len(combos))[:count]
    out = []
    for i in order:
        voice, variant = combos[i]
        out.append((f"{voice}+{variant}", f"{voice}+{variant}",
                    int(rng.integers(135, 196)), int(rng.integers(25, 76))))
    rng = np.random.default_rng([seed, 1])
    for i in range(festival):  # (slower than espeak-ng's paces: its fast "on" and "up" last under 0.2 s)
        out.append((f"festival:{FESTIVAL_VOICE}-{i:02d}", f"festival:{FESTIVAL_VOICE}",
                    int(rng.integers(110, 166)), int(rng.integers(80, 221))))
    return out


def speak(text: str, voice: str, wpm: int, pitch: int) -> np.ndarray:
    """Speech at 16 kHz, silence trimmed, scaled to SPEECH_RMS: espeak-ng's (pitch 0-99), or
    Festival's for a `festival:<voice>` (pitch: the mean F0 in Hz; the pace from wpm)."""
    if voice.startswith("festival:"):
        return _festival(text, voice[len("festival:"):], wpm, pitch)
    with tempfile.NamedTemporaryFile(suffix=".wav") as tmp:
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(wpm), "-p", str(pitch), "-w", tmp.name, text],
                       check=True, capture_output=True)
        with open(tmp.name, "rb") as f:
            return trim_and_level(wav_io.decode_to_mono_16k(f.read()))


def _festival(text: str, voice: str, wpm: int, f0_hz: int) -> np.ndarray:
    """Festival's text2wave with `voice`, stretched to about `wpm` (its voices speak near 165)
    and its intonation model's mean F0 moved to `f0_hz`."""
    scheme = (f"(begin (voice_{voice}) (Parameter.set 'Duration_Stretch {165 / wpm:.3f}) "
              f"(set! int_lr_params '((target_f0_mean {f0_hz}) (target_f0_std {max(10, f0_hz // 7)}) "
              f"(model_f0_mean 170) (model_f0_std 34))))")
    with tempfile.NamedTemporaryFile(suffix=".wav") as tmp:
        subprocess.run(["text2wave", "-o", tmp.name, "-eval", scheme], input=text.encode(), check=True,
                       capture_output=True)
        with open(tmp.name, "rb") as f:
            return trim_and_level(wav_io.decode_to_mono_16k(f.read()))


def trim_and_level(audio: np.ndarray) -> np.ndarray:
    """Synthesized speech with its leading and trailing silence cut (50 ms kept), at SPEECH_RMS."""
    loud = np.flatnonzero(np.abs(audio) > 0.02 * np.abs(audio).max())
    margin = int(0.05 * SR)
    audio = audio[max(loud[0] - margin, 0): loud[-1] + margin]
    return (audio * SPEECH_RMS / np.sqrt(np.mean(audio ** 2))).astype(np.float32)


def _pink(rng: np.random.Generator, n: int) -> np.ndarray:
    spectrum = np.fft.rfft(rng.standard_normal(n))
    freqs = np.fft.rfftfreq(n, 1 / SR)
    spectrum /= np.sqrt(np.maximum(freqs, 20.0))  # 1/f power
    return np.fft.irfft(spectrum, n)


def _hum(rng: np.random.Generator, n: int) -> np.ndarray:
    t = np.arange(n) / SR
    mains = rng.choice([50.0, 60.0])
    out = np.zeros(n)
    for h in range(1, 12):
        out += rng.uniform(0.2, 1.0) / h * np.sin(2 * np.pi * mains * h * t + rng.uniform(0, 2 * np.pi))
    hiss = _pink(rng, n)
    return out + 0.05 * hiss / hiss.std()


def _machinery(rng: np.random.Generator, n: int) -> np.ndarray:
    t = np.arange(n) / SR
    rate = rng.uniform(8, 30)  # strokes per second
    envelope = np.maximum(np.sin(2 * np.pi * rate * t), 0) ** 8
    rumble = np.convolve(rng.standard_normal(n), np.ones(32) / 32, mode="same")
    whine = np.sin(2 * np.pi * rng.uniform(900, 3000) * t * (1 + 0.01 * np.sin(2 * np.pi * 0.5 * t)))
    clank = envelope * rng.standard_normal(n)
    return rumble / rumble.std() + 0.3 * whine + 1.5 * clank / max(clank.std(), 1e-9)


def _babble(rng: np.random.Generator, n: int, talkers: Sequence[np.ndarray]) -> np.ndarray:
    out = np.zeros(n)
    for _ in range(6):
        talk = talkers[rng.integers(len(talkers))]
        start = int(rng.integers(0, n))
        reps = np.tile(talk, n // len(talk) + 2)
        out += np.roll(reps[:n], start)
    return out


def _brown(rng: np.random.Generator, n: int) -> np.ndarray:
    spectrum = np.fft.rfft(rng.standard_normal(n))
    return np.fft.irfft(spectrum / np.maximum(np.fft.rfftfreq(n, 1 / SR), 20.0), n)  # 1/f^2 power


def _crowd(rng: np.random.Generator, n: int, talkers: Sequence[np.ndarray]) -> np.ndarray:
    """A canteen: many talkers at once, a diffuse murmur (babble is six)."""
    return sum(_babble(rng, n, talkers) for _ in range(4))


def at_speech_level(noise: np.ndarray) -> np.ndarray:
    """A noise recording scaled to SPEECH_RMS (so an SNR is the mixing gain alone), float32."""
    return (noise / np.sqrt(np.mean(noise ** 2)) * SPEECH_RMS).astype(np.float32)


def make_noise(kind: str, seed: int, seconds: float, talkers: Sequence[np.ndarray]) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = int(seconds * SR)
    noise = {"pink": lambda: _pink(rng, n), "hum": lambda: _hum(rng, n),
             "machinery": lambda: _machinery(rng, n), "babble": lambda: _babble(rng, n, talkers),
             "white": lambda: rng.standard_normal(n), "brown": lambda: _brown(rng, n),
             "crowd": lambda: _crowd(rng, n, talkers)}[kind]()
    return at_speech_level(noise)


def generate(out: str, noise_out: str, num_speakers: int = 64, words: Sequence[str] = WORDS,
             noisy_per_clean: int = 2, snr_range: Tuple[float, float] = (0.0, 20.0), seed: int = 0,
             workers: int = 4, variants: Sequence[str] = VARIANTS,
             noise_kinds: Sequence[str] = NOISE_KINDS, festival_speakers: int = 0) -> Dict[str, int]:
    """Writes the demo data set; the same arguments always write the same files."""
    spk = speakers(num_speakers, seed, variants, festival_speakers)
    jobs = [(w, s) for s in spk for w in words]
    with ThreadPoolExecutor(workers) as pool:  # espeak-ng runs as a subprocess
        clips = list(pool.map(lambda j: speak(j[0], j[1][1], j[1][2], j[1][3]), jobs))
        talkers = list(pool.map(lambda i: speak(BABBLE_TEXT[i], spk[i % len(spk)][1], 160, 50),
                                range(len(BABBLE_TEXT))))
    noises = {}
    for k, kind in enumerate(noise_kinds):
        os.makedirs(os.path.join(noise_out, kind), exist_ok=True)
        noises[kind] = [make_noise(kind, seed * 1000 + k * 10 + i, 10.0, talkers) for i in range(3)]
        for i, noise in enumerate(noises[kind]):
            soundfile.write(os.path.join(noise_out, kind, f"{kind}_{i}.wav"), noise, SR, subtype="PCM_16")
    rows = []
    rng = np.random.default_rng(seed + 1)
    for (word, (group, _, _, _)), clean in zip(jobs, clips):
        os.makedirs(os.path.join(out, word), exist_ok=True)
        name = group.replace("+", "_").replace(":", "_")
        clean_name = f"{word}/{name}.wav"
        soundfile.write(os.path.join(out, clean_name), clean, SR, subtype="PCM_16")
        rows.append([clean_name, word, group, "", "", ""])
        # The noisy copy must be mixed against the clean signal as stored (PCM16).
        clean_q = soundfile.read(os.path.join(out, clean_name), dtype="float32")[0]
        for _ in range(noisy_per_clean):
            kind = noise_kinds[int(rng.integers(len(noise_kinds)))]
            # A fresh realization of the noise process per clip: test clips never
            # share a noise waveform with training clips, only its kind.
            noise = make_noise(kind, int(rng.integers(2 ** 31)), len(clean_q) / SR + 1.0, talkers)
            snr = float(np.round(rng.uniform(*snr_range), 2))
            noisy_name = f"{word}/{name}__{kind}_{len(rows)}.wav"
            noisy, reference = mixing.mix_at_snr(clean_q, noise, snr, rng)
            if not np.array_equal(reference, clean_q):  # the stored clean file must stay the reference
                raise ValueError(f"{noisy_name} clips at {snr:.1f} dB SNR; lower SPEECH_RMS")
            soundfile.write(os.path.join(out, noisy_name), noisy, SR, subtype="PCM_16")
            rows.append([noisy_name, word, group, clean_name, kind, f"{snr:.2f}"])
    with open(os.path.join(out, "metadata.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(features.METADATA_COLUMNS[:6])  # no channel column
        writer.writerows(rows)
    return {"files": len(rows), "clean": len(clips), "speakers": len(spk), "words": len(words)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="data/demo")
    parser.add_argument("--noise-out", default="data/demo_noise")
    parser.add_argument("--speakers", type=int, default=160)
    parser.add_argument("--words", type=int, default=len(WORDS), help="first N of the 10 keywords")
    parser.add_argument("--noisy-per-clean", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--variety", choices=("broad", "classic"), default="broad",
                        help="broad: MORE_VARIANTS, MORE_NOISE_KINDS and Festival's speakers too; classic: the "
                             "first demo's set")
    parser.add_argument("--festival-speakers", type=int, default=FESTIVAL_SPEAKERS,
                        help="Festival speakers beside the espeak-ng ones (broad variety only)")
    args = parser.parse_args()
    broad = args.variety == "broad"
    counts = generate(args.out, args.noise_out, args.speakers, WORDS[:args.words],
                      args.noisy_per_clean, seed=args.seed,
                      variants=VARIANTS + MORE_VARIANTS if broad else VARIANTS,
                      noise_kinds=NOISE_KINDS + MORE_NOISE_KINDS if broad else NOISE_KINDS,
                      festival_speakers=args.festival_speakers if broad else 0)
    print(f"demo data: {counts['files']} files ({counts['clean']} clean, {counts['speakers']} speakers, "
          f"{counts['words']} words) in {args.out}; noise in {args.noise_out}")


if __name__ == "__main__":
    main()
