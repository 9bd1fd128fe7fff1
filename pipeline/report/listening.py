"""The report's listening section: a few test windows and one whole test recording
through the run's model (the pushed one, else the Trainer's), as noisy, enhanced
and clean audio with their spectrograms, and the recording's per-window labels: the
longest test recording, or, when every one is a short clip (a keyword corpus), test
recordings joined into one; with data.tracks=split, the longest call track by track
and every test call's figures against the generator's truth.

Memory and page size stay bounded: the test split is read as a stream and only
until the clips and `report.scan_examples` windows are seen, and the recording is
cut at `report.recording_max_s`."""
from __future__ import annotations

import collections
import csv
import io
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
from components.serving.recording import Aggregate, RecordingModel
from components.training import input_pipeline
from pipeline import predict, summary
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


def _pick(run: summary.RunSummary, cfg) -> Tuple[List[tf.train.Example], Optional[str], set]:
    """The first `report.clips` test windows (those with a clean reference first), the
    longest test recording that is a file (not a generated noisy copy) among the first
    `report.scan_examples` windows, and those recordings."""
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
    return (with_clean + without)[:cfg.clips], longest, set(seconds)


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


def _recording(config: PipelineConfig, recording: RecordingModel, source: str, tmp: str,
               path: Optional[str] = None) -> Tuple[List[Item], Sound]:
    """The recording `source` (or the file at `path`, named `source`) through the model."""
    base = config.data.input_base
    noisy, seconds, whole = _cut(path or FileSystems.join(base, source), config.report.recording_max_s,
                                 os.path.join(tmp, "noisy.wav"))
    result = recording.classify(noisy)
    rows = [{k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()} for row in result.rows()]
    wavs = {"noisy": _bytes(noisy)}
    if recording.denoises:
        enhanced = os.path.join(tmp, "enhanced.wav")
        recording.denoise(noisy, enhanced)
        wavs["enhanced"] = _bytes(enhanced)
    clean_source = source.replace(features.NOISY_DIR, features.CLEAN_DIR, 1) if config.data.layout == "paired" else None
    if path is None and clean_source and FileSystems.exists(FileSystems.join(base, clean_source)):
        wavs["clean"] = _bytes(_cut(FileSystems.join(base, clean_source), seconds, os.path.join(tmp, "clean.wav"))[0])
    cut = f"its first {seconds:.1f} of {whole:.1f} s (report.recording_max_s)" if whole > seconds else f"{whole:.1f} s"
    title = f"Recording {source}, {cut}: labelled {result.label}"
    timeline = Item("recording_windows", f"{title}: class probabilities per window", rows,
                    plots.timeline(rows, result.labels))
    return [timeline], _sound("recording", title, wavs)


_JOIN_GAP_S = 0.3  # silence between the test recordings joined into one (short clips: a keyword corpus)


def _seconds(config: PipelineConfig, source: str) -> float:
    with wav_io.AudioFile(FileSystems.join(config.data.input_base, source)) as audio:
        return audio.duration_s


def _joined(config: PipelineConfig, sources: List[str], into: str) -> Tuple[str, int]:
    """Test recordings one after another, _JOIN_GAP_S apart, up to report.recording_max_s, as one 16 kHz
    file: what a recording of several utterances looks like to the model when every test recording is
    a single short clip. Returns the file and how many recordings it holds."""
    budget = int(config.report.recording_max_s * features.SAMPLE_RATE)
    gap = np.zeros(int(_JOIN_GAP_S * features.SAMPLE_RATE), np.float32)
    count = 0
    with soundfile.SoundFile(into, "w", features.SAMPLE_RATE, 1, subtype="PCM_16", format="WAV") as out:
        for source in sources:
            with wav_io.AudioFile(FileSystems.join(config.data.input_base, source)) as audio:
                samples = audio.window(0.0, audio.duration_s, pad=True)  # a file truncated after its header
            if samples.size + gap.size > budget:
                break
            out.write(np.concatenate([np.clip(samples, -1.0, 1.0), gap]))
            budget -= samples.size + gap.size
            count += 1
    return into, count


def _cut_tracks(path: str, max_s: float, into: str) -> Tuple[str, float, float, int]:
    """`_cut`, keeping the channels apart; also returns their number."""
    with wav_io.AudioFile(path) as audio:
        end, whole, channels = min(audio.duration_s, max_s), audio.duration_s, audio.channels
        want = int(round(end * features.SAMPLE_RATE))
        with soundfile.SoundFile(into, "w", features.SAMPLE_RATE, channels, subtype="PCM_16", format="WAV") as out:
            for block in audio.blocks_16k(every_track=True):
                take = min(block.shape[0], want)
                out.write(np.clip(block[:take], -1.0, 1.0))
                want -= take
                if want <= 0:
                    break
    return into, end, whole, channels


def _track_wav(path: str, track: int) -> bytes:
    """One channel of a (cut, short) file as 16 kHz mono WAV bytes."""
    samples = soundfile.read(path, dtype="float32", always_2d=True)[0]
    return wav_io.encode_pcm16_wav(samples[:, track])


def _truth(config: PipelineConfig) -> Dict[str, dict]:
    """The generator's call truth beside the data (features.CALLS_TRUTH_FILE), by file name; {} without."""
    path = FileSystems.join(config.data.input_base, features.CALLS_TRUTH_FILE)
    if not FileSystems.exists(path):
        return {}
    with FileSystems.open(path) as f:
        return {row["file_name"]: row for row in csv.DictReader(io.StringIO(f.read().decode()))}


def _call(config: PipelineConfig, recording: RecordingModel, source: str, tmp: str) -> Tuple[List[Item], List[Sound]]:
    """data.tracks=split: the call's tracks side by side: noisy, enhanced and clean per track, the
    per-window labels and speech share per track, and the call figures (with the truth when known)."""
    base = config.data.input_base
    noisy, seconds, whole, channels = _cut_tracks(FileSystems.join(base, source), config.report.recording_max_s,
                                                  os.path.join(tmp, "noisy.wav"))
    roles = predict.roles_of(channels, config.data.track_roles)
    enhanced = os.path.join(tmp, "enhanced.wav")
    figures = None
    if channels <= 2:  # writes the enhanced tracks too
        figures = recording.call_figures(noisy, config.calls, enhanced)
    elif recording.denoises:
        recording.denoise_tracks(noisy, enhanced)
    clean_source = source.replace(features.NOISY_DIR, features.CLEAN_DIR, 1) if config.data.layout == "paired" else None
    clean = None
    if clean_source and FileSystems.exists(FileSystems.join(base, clean_source)):
        clean = _cut_tracks(FileSystems.join(base, clean_source), seconds, os.path.join(tmp, "clean.wav"))[0]
    cut = f"its first {seconds:.1f} of {whole:.1f} s (report.recording_max_s)" if whole > seconds else f"{whole:.1f} s"
    rows, sounds = [], []
    for track, role in enumerate(roles):
        result = recording.windows(noisy, track, vad_aggressiveness=config.calls.vad_aggressiveness,
                                   refuse_silent=False)
        rows += [{"track": track, "role": role, "start_s": round(w.start_s, 3), "end_s": round(w.end_s, 3),
                  "label": w.label, "speech": round(w.speech, 3),
                  **{name: round(float(p), 4) for name, p in zip(recording.labels, w.probabilities)}} for w in result]
        wavs = {"noisy": _track_wav(noisy, track)}
        if recording.denoises:
            wavs["enhanced"] = _track_wav(enhanced, track)
        if clean is not None:
            wavs["clean"] = _track_wav(clean, track)
        sounds.append(_sound(f"recording_{track}", f"Call {source}, {cut}: the {role}'s track", wavs))
    items = [Item("recording_windows", f"Call {source}, {cut}: class probabilities and speech share per window, "
                                       f"per track", rows, plots.track_timelines(rows, recording.labels, roles))]
    if figures is not None:
        truth = _truth(config).get(source) if whole <= seconds else None
        predicted = figures.row(roles)
        items.append(Item("call_figures", f"Call {source}, {cut}: call figures (`tfx-audio predict`'s calls.csv)"
                          + (" against the generator's truth" if truth else ""),
                          [{"figure": k, "predicted": v, **({"truth": float(truth[k])} if truth and k in truth else {})}
                           for k, v in predicted.items()]))
    return items, sounds


def calls_against_truth(config: PipelineConfig, recording: RecordingModel, sources: List[str],
                        tmp: str) -> Tuple[Optional[Item], Dict[str, float]]:
    """The call figures of each test call with a truth row, whole, against it: a row per call, and
    the summary's figures (calls, how many within 0.5 s, mean absolute errors, the customer's
    label per call)."""
    truth = _truth(config)
    rows = []
    for source in sorted(s for s in sources if s in truth):
        path = FileSystems.join(config.data.input_base, source)
        with wav_io.AudioFile(path) as audio:
            channels = audio.channels
        if channels != 2:
            continue
        roles = predict.roles_of(2, config.data.track_roles)
        figures = recording.call_figures(path, config.calls, os.path.join(tmp, "call.wav")).row(roles)
        want = truth[source]
        row = {"call": source}
        for key in (f"{roles[0]}_talk_s", f"{roles[1]}_talk_s", "overtalk_s", "overtalk_count"):
            if key in want:  # the truth's columns name its roles; data.track_roles may name them otherwise
                row[key], row[key + "_truth"] = figures[key], float(want[key])
        if "customer_label" in want and "customer" in roles:  # as predict labels a track
            aggregate = Aggregate()
            for window in recording.windows(path, roles.index("customer"), refuse_silent=False,
                                            vad_aggressiveness=config.calls.vad_aggressiveness):
                aggregate.add(window)
            label = aggregate.label(recording.labels, ruled_out=[r for r in roles if r != "customer"])
            row["customer_label"], row["customer_label_truth"] = label, want["customer_label"]
        rows.append(row)
    if not rows:
        return None, {}
    errors = {key: np.abs([r[key] - r[key + "_truth"] for r in rows])
              for key in rows[0] if key.endswith("_s") and key + "_truth" in rows[0]}
    if not errors:  # a truth of other roles than data.track_roles names
        return None, {}
    figures = {"calls": float(len(rows))}
    for key, error in errors.items():
        figures[f"{key}_mean_abs_error"] = float(error.mean())
        figures[f"{key}_within_0.5s"] = float(np.mean(error <= 0.5))
    figures["within_0.5s_all"] = float(np.mean(np.all(np.stack(list(errors.values())) <= 0.5, axis=0)))
    if "customer_label" in rows[0]:
        figures["customer_label_accuracy"] = float(np.mean([r["customer_label"] == r["customer_label_truth"]
                                                            for r in rows]))
    return Item("calls_against_truth", "Test calls: call figures against the generator's truth", rows), figures


def section(run: summary.RunSummary, config: PipelineConfig) -> Section:
    out = Section("Listening")
    path = model_dir(run)
    if not path or "WavExampleGen" not in run.artifacts:
        out.notes.append("No model was trained in this run: nothing to listen to.")
        return out
    examples, longest, sources = _pick(run, config.report)
    model = RecordingModel(path)  # loaded once, for the clips and the recording
    clips, out.sounds = _clips(model, examples)
    out.items.append(clips)
    if longest is None:
        out.notes.append("No test recording read from a file (only generated noisy copies).")
        return out
    with tempfile.TemporaryDirectory() as tmp:
        if config.data.tracks == "split":
            items, sounds = _call(config, model, longest, tmp)
            against, run.calls = calls_against_truth(config, model, sorted(sources), tmp)
            items += [against] if against is not None else []
        elif _seconds(config, longest) < 3 * model.window_samples / features.SAMPLE_RATE and len(sources) > 1:
            path, count = _joined(config, sorted(sources), os.path.join(tmp, "joined.wav"))
            items, sound = _recording(config, model, f"{count} test recordings joined, {_JOIN_GAP_S} s apart", tmp,
                                      path)
            sounds = [sound]
        else:
            items, sound = _recording(config, model, longest, tmp)
            sounds = [sound]
    out.items += items
    out.sounds += sounds
    return out
