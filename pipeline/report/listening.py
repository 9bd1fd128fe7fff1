"""The report's listening section: a few test windows and one whole test recording
through the run's model (the pushed one, else the Trainer's), as noisy, enhanced
and clean audio with their spectrograms, and the recording's per-window labels.

Memory and page size stay bounded: the test split is read as a stream and only
until the clips and `report.scan_examples` windows are seen, and the recording is
cut at `report.recording_max_s`."""
from __future__ import annotations

import collections
import os
import tempfile
from typing import Dict, Iterator, List, Optional, Tuple

import numpy as np
import soundfile
import tensorflow as tf
from apache_beam.io.filesystems import FileSystems
from tfx.utils import path_utils

from components import features
from components.audio import wav_io
from components.audio.snr import si_snr_db
from components.config import PipelineConfig
from components.serving.recording import RecordingModel
from components.training import input_pipeline
from pipeline import summary
from pipeline.report import plots
from pipeline.report.model import Item, Section, Sound


def model_dir(run: summary.RunSummary) -> Optional[str]:
    """The pushed model, else the one the Trainer exported (a run that was not blessed)."""
    if run.pushed:
        return run.pushed_destination
    model = run.artifacts.get("Trainer", {}).get("model", [])
    return path_utils.serving_model_path(model[0].uri) if model else None


def _test_examples(run: summary.RunSummary) -> Iterator[tf.train.Example]:
    examples = run.artifacts["WavExampleGen"]["examples"][0].uri
    for record in input_pipeline.records([os.path.join(examples, "Split-test", "*")]):
        yield tf.train.Example.FromString(record.numpy())


def _value(example: tf.train.Example, key: str):
    feature = example.features.feature.get(key)
    if feature is None:
        return None
    kind = feature.WhichOneof("kind")
    values = getattr(feature, kind).value if kind else []
    return values[0] if values else None


def _signals(names_wavs: Dict[str, bytes]) -> Dict[str, np.ndarray]:
    return {name: wav_io.decode_to_mono_16k(wav) for name, wav in names_wavs.items()}


def _sound(name: str, title: str, wavs: Dict[str, bytes]) -> Sound:
    signals = _signals(wavs)
    clean = signals.get("clean")
    rows = [{"signal": key, "seconds": round(len(x) / features.SAMPLE_RATE, 3),
             "rms_dbfs": round(float(10 * np.log10(np.mean(np.square(x)) + 1e-12)), 2),
             "si_snr_db": (None if clean is None or key == "clean" else
                           _rounded(si_snr_db(clean[:len(x)], x[:len(clean)])))}
            for key, x in signals.items()]
    return Sound(title, wavs, Item(name, title, rows, plots.spectrograms(signals)))


def _rounded(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(value, 2)


def _clips(model: RecordingModel, examples: List[tf.train.Example]) -> Tuple[Item, List[Sound]]:
    rows, sounds = [], []
    for i, example in enumerate(examples):
        noisy = _value(example, features.AUDIO)
        out = model.serve_wav([noisy])
        wavs = {"noisy": noisy}
        if features.OUT_ENHANCED_WAV in out:
            wavs["enhanced"] = out[features.OUT_ENHANCED_WAV].numpy()[0]
        clean = _value(example, features.CLEAN_AUDIO)
        if clean is not None:
            wavs["clean"] = clean
        probabilities = out[features.OUT_PROBABILITIES].numpy()[0]
        source = _value(example, features.SOURCE).decode()
        rows.append({"clip": i, "source": source, "offset_s": round(float(_value(example, features.OFFSET_S) or 0), 3),
                     "noise_kind": (_value(example, features.NOISE_KIND) or b"").decode(),
                     "label": _value(example, features.LABEL).decode(),
                     "predicted": out[features.OUT_LABEL].numpy()[0].decode(),
                     "probability": round(float(probabilities.max()), 4)})
        sounds.append(_sound(f"clip_{i}", f"Test window {i}: {source} (label {rows[-1]['label']}, "
                                          f"predicted {rows[-1]['predicted']})", wavs))
    return Item("test_clips", "Test windows through the model", rows), sounds


def _pick(run: summary.RunSummary, cfg) -> Tuple[List[tf.train.Example], Optional[str]]:
    """The first `report.clips` test windows (those with a clean reference first) and the
    longest test recording that is a file (not a generated noisy copy) among the first
    `report.scan_examples` windows."""
    with_clean, without, seconds = [], [], collections.Counter()
    for n, example in enumerate(_test_examples(run)):
        if n >= cfg.scan_examples:
            break
        (with_clean if _value(example, features.CLEAN_AUDIO) is not None else without).append(example)
        del with_clean[cfg.clips:], without[cfg.clips:]
        source = _value(example, features.SOURCE).decode()
        if "#" not in source:
            seconds[source] += float(_value(example, features.DURATION_S) or 0.0)
    longest = seconds.most_common(1)[0][0] if seconds else None
    return (with_clean + without)[:cfg.clips], longest


def _cut(path: str, max_s: float, into: str) -> Tuple[str, float, float]:
    """The first max_s seconds of `path` as a 16 kHz WAV in `into` (the whole file if shorter);
    returns (into, seconds written, the file's duration)."""
    with wav_io.AudioFile(path) as audio:
        end = min(audio.duration_s, max_s)
        samples = audio.window(0.0, end, pad=True)
        whole = audio.duration_s
    soundfile.write(into, samples, features.SAMPLE_RATE, subtype="PCM_16")
    return into, end, whole


def _bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _recording(config: PipelineConfig, recording: RecordingModel, source: str, tmp: str) -> Tuple[List[Item], Sound]:
    base = config.data.input_base
    noisy, seconds, whole = _cut(FileSystems.join(base, source), config.report.recording_max_s,
                                 os.path.join(tmp, "noisy.wav"))
    result = recording.classify(noisy)
    rows = [{k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()} for row in result.rows()]
    wavs = {"noisy": _bytes(noisy)}
    if recording.denoises:
        enhanced = os.path.join(tmp, "enhanced.wav")
        recording.denoise(noisy, enhanced)
        wavs["enhanced"] = _bytes(enhanced)
    clean_source = source.replace(features.NOISY_DIR, features.CLEAN_DIR, 1) if config.data.layout == "paired" else None
    if clean_source and FileSystems.exists(FileSystems.join(base, clean_source)):
        wavs["clean"] = _bytes(_cut(FileSystems.join(base, clean_source), seconds, os.path.join(tmp, "clean.wav"))[0])
    cut = f"its first {seconds:.1f} of {whole:.1f} s (report.recording_max_s)" if whole > seconds else f"{whole:.1f} s"
    title = f"Recording {source}, {cut}: labelled {result.label}"
    timeline = Item("recording_windows", f"{title}: class probabilities per window", rows,
                    plots.timeline(rows, result.labels))
    return [timeline], _sound("recording", title, wavs)


def section(run: summary.RunSummary, config: PipelineConfig) -> Section:
    out = Section("Listening")
    path = model_dir(run)
    if not path or "WavExampleGen" not in run.artifacts:
        out.notes.append("No model was trained in this run: nothing to listen to.")
        return out
    examples, longest = _pick(run, config.report)
    model = RecordingModel(path)  # loaded once, for the clips and the recording
    clips, out.sounds = _clips(model, examples)
    out.items.append(clips)
    if longest is None:
        out.notes.append("No test recording read from a file (only generated noisy copies).")
        return out
    with tempfile.TemporaryDirectory() as tmp:
        items, sound = _recording(config, model, longest, tmp)
    out.items += items
    out.sounds.append(sound)
    return out
