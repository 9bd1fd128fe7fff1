"""Benchmark: denoising whole recordings of the held-out conditions, the project's denoiser
against RNNoise and noisereduce.

    .venv/bin/python -m benchmarks.heldout_denoise --model outputs/demo/serving \
        [--model NAME=DIR ...] [--out benchmarks/RESULTS-heldout_denoise.md]

Several models (`--model NAME=DIR`, repeated) are scored in one run on the same mixtures, so the
first table holds one row per model beside the baselines.

Each held-out voice (pipeline/datagen/heldout.py: flite, and espeak-ng variants the training
never uses) speaks a few call-center sentences in one recording of several seconds; each
recording is mixed with each held-out noise kind (fan, keyboard, music, alarm: fresh
realizations) at 0, 5 and 10 dB, on the wideband channel and through a mobile call
(AMR-NB; its reference is the call of the clean speech). Every method enhances the whole
recording: the model through its `denoise_wav` signature (any length, chunked), RNNoise
(pyrnnoise, 48 kHz, its 20-ms delay removed) and noisereduce (spectral gating). The score is
the SI-SNR, SNR, STOI, PESQ and DNSMOS change over the whole recording, against the clean
reference (benchmarks/whole_recordings.py).
"""
import argparse

import numpy as np

import pipeline  # noqa: F401  (TF_USE_LEGACY_KERAS before TensorFlow)
from benchmarks import whole_recordings
from benchmarks.report import publish
from components import features
from components.audio import channel, mixing
from pipeline.datagen import heldout as heldout_data

SENTENCES = (
    "thank you for calling, how can I help you today",
    "the order number is four seven two nine",
    "please stop the line while we check the valve",
    "can you go left at the second door and then right",
    "yes, the delivery arrives on monday morning",
    "no, I did not receive the invoice yet",
)
SNRS_DB = heldout_data.SNRS_DB


def recordings(seed: int, voice_count: int = 0):
    """{voice group: clean 16 kHz recording}: each voice says three sentences, 0.4 s apart."""
    rng = np.random.default_rng(seed)
    out = {}
    for voice in heldout_data.voices(seed)[:voice_count or None]:
        picked = rng.choice(len(SENTENCES), 3, replace=False)
        pause = np.zeros(int(0.4 * features.SAMPLE_RATE), np.float32)
        parts = [np.concatenate([heldout_data.speak(SENTENCES[i], voice), pause]) for i in picked]
        out[voice[0]] = np.concatenate(parts)
    return out


def mixtures(clean_recordings, seed: int):
    """(noise kind, SNR, channel, noisy, reference) of every held-out condition, seeded."""
    rng = np.random.default_rng(seed + 1)
    for clean in clean_recordings.values():
        for kind in heldout_data.HELDOUT_NOISE_KINDS:
            for snr in SNRS_DB:
                noise = heldout_data.make_noise(kind, int(rng.integers(2 ** 31)), len(clean) / features.SAMPLE_RATE + 1)
                noisy, reference = mixing.mix_at_snr(clean, noise, snr, rng)
                for ch in heldout_data.CHANNELS:
                    mode = int(rng.integers(len(channel.AMR_NB_KBPS)))
                    yield kind, snr, ch, heldout_data.carry(noisy, ch, mode), heldout_data.carry(reference, ch, mode)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--voices", type=int, default=0, help="first N held-out voices (0: all)")
    whole_recordings.add_arguments(parser)
    args = parser.parse_args()
    methods, note = whole_recordings.methods_with(args.model, args.attenuation_limit,
                                                  not args.without_baselines, args.published_dtln,
                                                  args.front_end)
    clean_recordings = recordings(args.seed, args.voices)
    scores, seconds, wall = whole_recordings.score(mixtures(clean_recordings, args.seed), methods)
    kinds = heldout_data.HELDOUT_NOISE_KINDS
    count = sum(len(v) for k, v in scores.items() if k[:2] == (next(iter(methods)), "SI-SNRi"))
    lines = [f"{len(clean_recordings)} held-out voices x {len(kinds)} held-out noise kinds x SNRs "
             f"{', '.join(f'{s:g}' for s in SNRS_DB)} dB x channels {', '.join(heldout_data.CHANNELS)}: "
             f"{count} whole recordings of "
             f"{np.mean([len(c) for c in clean_recordings.values()]) / features.SAMPLE_RATE:.1f} s "
             f"on average ({seconds / 60:.1f} min of audio per method, {wall:.0f} s wall).{note}",
             "Mean change over the whole recording, enhanced less noisy (SI-SNR and SNR in dB; STOI 0-1; PESQ wb on "
             "wideband, nb on narrowband channels; DNSMOS P.835 overall, reference-free, 1-5, wideband only), averaged "
             "over the three SNRs.", ""]
    lines += whole_recordings.tables(scores, list(methods), kinds, heldout_data.CHANNELS, SNRS_DB)
    publish("Held-out denoising on whole recordings", "\n".join(lines), args.out)


if __name__ == "__main__":
    main()
