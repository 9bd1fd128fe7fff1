"""A wider training noise bank for the pretrained denoiser: the recorded training noise of
`pipeline.datagen.real` plus generated stationary and tonal noises and babble made of real speech,
in the `<kind>/*.wav` layout that `data.noise_base` and `trainer.context.noise_base` read.

    python -m pipeline.datagen.noise_bank --real-noise data/real/noise_train \
        --speech data/real/speech_train --out data/noise_bank

The recorded part is small (36 min, 28 of them music), so a denoiser trained on it alone meets few
noise spectra. Training on many noise types is what makes a denoiser generalize (the DNS Challenge's
recipe, Reddy et al. 2020); the generated kinds (`pipeline.datagen.keywords`' generators, with seeds
of their own) add the broadband and humming noises of machine rooms, and babble of 6 overlapped real
talkers (Krishnamurthy & Hansen 2009 model babble as a few talkers summed) the crowds. Only training
material goes in: the generated-held-out kinds (fan, keyboard, music, alarm) and every test package
stay out. The same arguments always write the same files.
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil

import numpy as np
import soundfile

from components.audio import wav_io
from pipeline.datagen import keywords

GENERATED_KINDS = ("pink", "brown", "white", "hum", "machinery")
BABBLE_TALKERS = 6
SEED = 30_000  # apart from the demo's noise seeds (seed * 1000 + kind * 10 + i, seed 0)


def _talkers(speech: str, count: int, rng: np.random.Generator) -> list:
    """`count` utterances of real speech, from folders (speakers) drawn in turn."""
    folders = sorted(d for d in os.listdir(speech) if os.path.isdir(os.path.join(speech, d)))
    files = {d: sorted(glob.glob(os.path.join(speech, d, "*.wav"))) for d in folders}
    picked = []
    for i in range(count):
        folder = folders[i % len(folders)]
        with open(files[folder][int(rng.integers(len(files[folder])))], "rb") as f:
            picked.append(wav_io.decode_to_mono_16k(f.read()))
    return picked


def write(real_noise: str, speech: str, out: str, files: int, seconds: float) -> dict:
    """Writes the bank; returns {kind: files}."""
    counts = {}
    for kind in sorted(os.listdir(real_noise)):  # the recorded noise as it is
        shutil.copytree(os.path.join(real_noise, kind), os.path.join(out, kind))
        counts[kind] = len(os.listdir(os.path.join(out, kind)))
    rng = np.random.default_rng(SEED)
    talkers = _talkers(speech, 64, rng)
    # (keywords' babble is six talkers looped: here each file draws its six from 64 real utterances)
    kinds = [(f"gen_{k}", k) for k in GENERATED_KINDS] + [("babble", "babble")]
    for k, (name, kind) in enumerate(kinds):
        os.makedirs(os.path.join(out, name))
        for i in range(files):
            noise = keywords.make_noise(kind, SEED + k * 100 + i, seconds, talkers)
            soundfile.write(os.path.join(out, name, f"{name}_{i}.wav"), noise, keywords.SR, subtype="PCM_16")
        counts[name] = files
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--real-noise", default="data/real/noise_train", help="recorded noise, <kind>/*.wav")
    parser.add_argument("--speech", default="data/real/speech_train", help="real speech, <speaker>/*.wav (babble)")
    parser.add_argument("--out", default="data/noise_bank", help="where the bank is written (emptied first)")
    parser.add_argument("--files", type=int, default=12, help="files of each generated kind")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each generated file")
    args = parser.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    counts = write(args.real_noise, args.speech, args.out, args.files, args.seconds)
    print(f"{sum(counts.values())} files in {args.out}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
