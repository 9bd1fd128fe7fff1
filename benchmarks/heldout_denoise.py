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
the SI-SNR (and SNR) improvement over the whole recording, against the clean reference.
"""
import argparse
import collections
import io
import time

import numpy as np
import soundfile
import tensorflow as tf

import pipeline  # noqa: F401  (TF_USE_LEGACY_KERAS before TensorFlow)
from benchmarks.denoise_baselines import METHODS, PROJECT, pushed_model
from benchmarks.report import publish
from components import features
from components.audio import channel, mixing
from components.audio import wav_io as audio_io
from components.audio.snr import improvement_db, si_snr_db, snr_db
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


def denoise_wav(model_dir: str):
    """The pushed model's whole-recording signature, as a method."""
    model_dir = pushed_model(model_dir)
    signature = tf.saved_model.load(model_dir).signatures["denoise_wav"]

    def enhance(noisy: np.ndarray, sr: int) -> np.ndarray:
        out = signature(wav=tf.constant(audio_io.encode_pcm16_wav(noisy)))
        enhanced, rate = soundfile.read(io.BytesIO(out[features.OUT_ENHANCED_WAV].numpy()), dtype="float32")
        assert rate == sr and len(enhanced) == len(noisy)
        return enhanced

    return model_dir, enhance


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", action="append", default=[], metavar="[NAME=]DIR",
                        help="a pushed model (or the Pusher's base directory); repeat to compare several")
    parser.add_argument("--voices", type=int, default=0, help="first N held-out voices (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    methods, notes = dict(METHODS), []
    for given in args.model:
        name, _, path = given.rpartition("=")
        name = name or (PROJECT if len(args.model) == 1 else path)
        model_dir, methods[name] = denoise_wav(path)
        notes.append(f"{name}: {model_dir}")
    note = f" Models (`denoise_wav`): {'; '.join(notes)}." if notes else ""
    rng = np.random.default_rng(args.seed + 1)
    clean_recordings = recordings(args.seed, args.voices)
    scores = collections.defaultdict(list)  # (method, metric, channel, kind, snr) -> values
    seconds = 0.0
    started = time.time()
    for group, clean in clean_recordings.items():
        for kind in heldout_data.HELDOUT_NOISE_KINDS:
            for snr in SNRS_DB:
                noise = heldout_data.make_noise(kind, int(rng.integers(2 ** 31)), len(clean) / features.SAMPLE_RATE + 1)
                noisy, reference = mixing.mix_at_snr(clean, noise, snr, rng)
                for ch in heldout_data.CHANNELS:
                    mode = int(rng.integers(len(channel.AMR_NB_KBPS)))
                    x, ref = heldout_data.carry(noisy, ch, mode), heldout_data.carry(reference, ch, mode)
                    seconds += len(x) / features.SAMPLE_RATE
                    for method, enhance in methods.items():
                        enhanced = enhance(x, features.SAMPLE_RATE).astype(np.float32)
                        for name, metric in (("SI-SNRi", si_snr_db), ("SNRi", snr_db)):
                            value = improvement_db(metric, ref, x, enhanced)
                            if value is not None:
                                scores[(method, name, ch, kind, snr)].append(value)
    kinds = heldout_data.HELDOUT_NOISE_KINDS
    lines = [f"{len(clean_recordings)} held-out voices x {len(kinds)} held-out noise kinds x SNRs "
             f"{', '.join(f'{s:g}' for s in SNRS_DB)} dB x channels {', '.join(heldout_data.CHANNELS)}: "
             f"{sum(len(v) for k, v in scores.items() if k[:2] == (next(iter(methods)), 'SI-SNRi'))} whole "
             f"recordings of {np.mean([len(c) for c in clean_recordings.values()]) / features.SAMPLE_RATE:.1f} s "
             f"on average ({seconds / 60:.1f} min of audio per method, {time.time() - started:.0f} s wall).{note}",
             "Mean improvement in dB over the whole recording, averaged over the three SNRs.", ""]

    def mean(method, name, chans, kind=None, snr=None):
        values = [v for (m, n, c, k, s), vs in scores.items() for v in vs
                  if m == method and n == name and c in chans and kind in (None, k) and snr in (None, s)]
        return f"{np.mean(values):.2f}" if values else "-"
    lines += ["**SI-SNR improvement, a row per method** (both channels per noise kind; each channel; all)", "",
              "| method | " + " | ".join(kinds) + " | " + " | ".join(heldout_data.CHANNELS) + " | all |",
              "| --- | " + " | ".join("---" for _ in (*kinds, *heldout_data.CHANNELS)) + " | --- |"]
    for method in methods:
        by_kind = (mean(method, "SI-SNRi", heldout_data.CHANNELS, kind=k) for k in kinds)
        lines.append(f"| {method} | " + " | ".join(by_kind)
                     + " | " + " | ".join(mean(method, "SI-SNRi", (c,)) for c in heldout_data.CHANNELS)
                     + f" | {mean(method, 'SI-SNRi', heldout_data.CHANNELS)} |")
    lines.append("")
    for ch in heldout_data.CHANNELS + ("both",):
        chans = heldout_data.CHANNELS if ch == "both" else (ch,)
        lines += [f"**{ch}**", "", "| method | metric | " + " | ".join(kinds) + " | 0 dB | 5 dB | 10 dB | all |",
                  "| --- | --- | " + " | ".join("---" for _ in kinds) + " | --- | --- | --- | --- |"]
        for method in methods:
            for name in ("SI-SNRi", "SNRi"):
                lines.append(f"| {method} | {name} | " + " | ".join(mean(method, name, chans, kind=k) for k in kinds)
                             + " | " + " | ".join(mean(method, name, chans, snr=s) for s in SNRS_DB)
                             + f" | {mean(method, name, chans)} |")
        lines.append("")
    publish("Held-out denoising on whole recordings", "\n".join(lines), args.out)


if __name__ == "__main__":
    main()
