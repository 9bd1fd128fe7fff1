"""Benchmark: peak memory and speed of a long recording against a short one, through
the WAV ExampleGen (its real executor on Beam's DirectRunner) and through
whole-recording inference (`components.serving.recording` on a pushed model: the classifier
over windows, the denoiser in overlap-added chunks), and `tfx-audio predict --tracks split` on a
stereo call (`predict_split`: each track classified and denoised, calls.csv).

    .venv/bin/python -m benchmarks.long_recordings --model outputs/calls/serving \
        [--minutes 1 60] [--paths examplegen dofn serve predict_split] [--out benchmarks/RESULTS-long_recordings.md]

Recordings are 8 kHz mono PCM16 (telephone rate: both paths resample to 16 kHz),
synthesized and written 10 s at a time: a speech-band signal with syllable-rate
modulation plus noise. The ExampleGen cuts them into 10-s windows (the reference
project's window, `production.yaml`). Paths: `examplegen`, the whole executor (TFX's
write step reshuffles, and the DirectRunner holds a shuffle in memory, so its peak
includes the recording's examples); `dofn`, the per-recording DoFn alone, its
examples passed on as a Beam worker streams them (the worker's memory); `serve`,
`components.serving.recording`. Each measurement runs in a fresh process; its peak RSS is
the kernel's figure for that process (wait4's ru_maxrss).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import soundfile

from benchmarks.report import publish

RATE = 8000


def write_recording(path: str, minutes: float, seed: int = 0, channels: int = 1) -> None:
    """A synthetic call of `minutes`, written block by block (memory: one block); with two channels
    the second side (another pitch) talks while the first pauses, 5 s each, overlapping by 1 s."""
    rng = np.random.default_rng(seed)
    with soundfile.SoundFile(path, "w", RATE, channels, subtype="PCM_16", format="WAV") as f:
        for start in range(0, int(minutes * 60 * RATE), 10 * RATE):
            t = (start + np.arange(min(10 * RATE, int(minutes * 60 * RATE) - start))) / RATE
            voiced = 0.1 * np.sin(2 * np.pi * 180 * t) * (0.5 + 0.5 * np.sin(2 * np.pi * 4 * t)) ** 2
            if channels == 1:
                f.write(voiced + 0.02 * rng.standard_normal(t.size))
                continue
            turn = (t % 10.0) < 6.0  # the first side's turn, then the second's from 5 s
            other = 0.1 * np.sin(2 * np.pi * 120 * t) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t)) ** 2
            f.write(np.stack([voiced * turn, other * ((t % 10.0) >= 5.0)], axis=1)
                    + 0.005 * rng.standard_normal((t.size, 2)))


def _child_examplegen(recording: str, work: str) -> dict:
    from tfx import v1 as tfx
    from tfx.types import standard_artifacts, standard_component_specs
    from tfx.utils import proto_utils

    from components.ingest import WavExampleGen
    from components.ingest import executor as wav_executor

    base = os.path.join(work, "input")
    os.makedirs(os.path.join(base, "call"), exist_ok=True)
    os.link(recording, os.path.join(base, "call", "recording.wav"))  # a hard link: a symlink leaves input_base
    component = WavExampleGen(input_base=base, output_config=tfx.proto.Output(
        split_config=tfx.proto.SplitConfig(splits=[tfx.proto.SplitConfig.Split(name="train", hash_buckets=1)])),
        segment_s=10.0, min_segment_s=1.0)
    props = dict(component.exec_properties)
    for key in (standard_component_specs.INPUT_CONFIG_KEY, standard_component_specs.OUTPUT_CONFIG_KEY,
                standard_component_specs.CUSTOM_CONFIG_KEY):
        if not isinstance(props[key], str):
            props[key] = proto_utils.proto_to_json(props[key])
    examples = standard_artifacts.Examples()
    examples.uri = os.path.join(work, "examples")
    start = time.time()
    wav_executor.Executor().Do({}, {standard_component_specs.EXAMPLES_KEY: [examples]}, props)
    return {"wall_s": time.time() - start, "examples": examples.get_int_custom_property("num_examples"),
            "seconds": examples.get_float_custom_property("seconds_in_examples")}


def _child_dofn(recording: str) -> dict:
    """The ExampleGen's per-recording DoFn alone, its examples passed on (and dropped) as a
    streaming Beam worker passes them downstream: the worker's share of the memory."""
    from components.config import INGEST_OPTIONS, DataConfig
    from components.ingest import report as ingest_report
    from components.ingest import windows

    options = {name: getattr(DataConfig(), name) for name in INGEST_OPTIONS}
    options.update(segment_s=10.0, hop_s=10.0, min_segment_s=1.0)
    dofn = windows.ToExamples(os.path.dirname(recording), options)
    dofn.setup()  # as Beam does before the first element
    start, count, rejected = time.time(), 0, []
    meta = [{"label": "call"}]
    for output in dofn.process((os.path.basename(recording), {"file": [True], "meta": meta, "spans": []})):
        count += not hasattr(output, "tag")
        if getattr(output, "tag", None) == ingest_report.REJECTS_TAG:
            rejected.append(output.value)
    if rejected or not count:
        raise RuntimeError(f"the DoFn made no example: {rejected}")
    return {"wall_s": time.time() - start, "examples": count}


def _child_serve(recording: str, work: str, model: str) -> dict:
    from components.serving.recording import RecordingModel

    loaded = RecordingModel(model)
    start = time.time()
    result = loaded.classify(recording)
    classify_s = time.time() - start
    start = time.time()
    seconds = loaded.denoise(recording, os.path.join(work, "enhanced.wav"))
    return {"wall_s": classify_s + time.time() - start, "classify_s": classify_s,
            "denoise_s": time.time() - start, "windows": len(result.starts_s), "seconds": seconds}


def _child_predict_split(recording: str, work: str, model: str) -> dict:
    """`tfx-audio predict --tracks split` on a stereo call: per-track windows, the stereo enhanced file
    and calls.csv."""
    import csv

    from pipeline import predict

    start = time.time()
    out = os.path.join(work, "predicted")
    predict.predict(model, [recording], out, progress=False, tracks="split", track_roles=["agent", "customer"])
    with open(os.path.join(out, "windows.csv"), newline="") as f:
        windows = sum(1 for _ in csv.DictReader(f))
    with open(os.path.join(out, "calls.csv"), newline="") as f:
        call = next(csv.DictReader(f))
    return {"wall_s": time.time() - start, "windows": windows, "seconds": float(call["duration_s"]),
            "agent_talk_s": float(call["agent_talk_s"]), "customer_talk_s": float(call["customer_talk_s"])}


def _child_oneshot(recording: str, work: str, model: str) -> dict:
    """Chunked against one-shot enhancement on the trained model: `denoise_wav` over the
    whole recording at once against `components.serving.recording`'s chunks (short recordings only)."""
    import io

    import tensorflow as tf

    from components.audio import wav_io
    from components.serving.recording import RecordingModel

    loaded = RecordingModel(model)
    loaded.denoise(recording, os.path.join(work, "chunked.wav"))
    chunked = soundfile.read(os.path.join(work, "chunked.wav"), dtype="float32")[0]
    with wav_io.AudioFile(recording) as audio:
        whole = np.concatenate(list(audio.blocks_16k()))
    wav = loaded._model.signatures["denoise_wav"](wav=tf.constant(wav_io.encode_pcm16_wav(whole)))
    one_shot = soundfile.read(io.BytesIO(wav["enhanced_wav"].numpy()), dtype="float32")[0]
    error = np.mean((chunked - one_shot) ** 2)
    return {"chunked_vs_one_shot_db": float(10 * np.log10(np.mean(one_shot ** 2) / error))}


def _measure(kind: str, recording: str, model: str) -> dict:
    """Runs one measurement in a fresh process; returns its output and peak RSS."""
    with tempfile.TemporaryDirectory() as work:
        out_path = os.path.join(work, "result.json")
        with open(out_path, "w"):
            proc = subprocess.Popen([sys.executable, "-m", "benchmarks.long_recordings", "--child", kind,
                                     "--recording", recording, "--work", work, "--model", model or "",
                                     "--result", out_path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            err = proc.stderr.read()
            _, status, usage = os.wait4(proc.pid, 0)
        if status != 0:
            raise RuntimeError(f"{kind} on {recording} failed:\n{err.decode()[-3000:]}")
        with open(out_path) as f:
            result = json.load(f)
    result["peak_rss_mb"] = usage.ru_maxrss / 1024
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="", help="pushed SavedModel (or the Pusher's base directory)")
    parser.add_argument("--minutes", type=float, nargs="+", default=[1.0, 60.0])
    parser.add_argument("--out", default=None)
    parser.add_argument("--paths", nargs="+", default=["examplegen", "dofn", "serve", "predict_split"],
                        choices=["examplegen", "dofn", "serve", "predict_split"], help="what to measure (default all)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--recording", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--work", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--result", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    model = args.model
    if model and not os.path.exists(os.path.join(model, "saved_model.pb")):
        model = os.path.join(model, max(os.listdir(model), key=int))  # the newest pushed version
    if args.child:
        os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
        result = {"examplegen": lambda: _child_examplegen(args.recording, args.work),
                  "dofn": lambda: _child_dofn(args.recording),
                  "serve": lambda: _child_serve(args.recording, args.work, model),
                  "predict_split": lambda: _child_predict_split(args.recording, args.work, model),
                  "oneshot": lambda: _child_oneshot(args.recording, args.work, model)}[args.child]()
        with open(args.result, "w") as f:
            json.dump(result, f)
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        kinds = [k for k in args.paths if model or k in ("examplegen", "dofn")]
        for minutes in args.minutes:
            for channels in {2 if k == "predict_split" else 1 for k in kinds}:
                paths[minutes, channels] = os.path.join(tmp, f"call_{minutes:g}min_{channels}ch.wav")
                write_recording(paths[minutes, channels], minutes, channels=channels)
        results = {(k, m): _measure(k, paths[m, 2 if k == "predict_split" else 1], model)
                   for k in kinds for m in args.minutes}
        oneshot = _measure("oneshot", paths[min(args.minutes), 1], model) if "serve" in kinds else None
    shortest = min(args.minutes)
    for (kind, minutes), r in results.items():
        ratio = r["peak_rss_mb"] / results[(kind, shortest)]["peak_rss_mb"]
        what = (f"{r['examples']} examples" if kind in ("examplegen", "dofn")
                else f"{r['windows']} windows classified, {r['seconds']:.0f} s enhanced")
        if kind == "predict_split":
            what += f" (2 tracks; talk {r['agent_talk_s']:.0f} + {r['customer_talk_s']:.0f} s)"
        rows.append(f"| {kind} | {minutes:g} min | {what} | {r['wall_s']:.1f} | "
                    f"{minutes * 60 / r['wall_s']:.1f}x | {r['peak_rss_mb']:.0f} | {ratio:.2f}x |")
    table = ("Machine: 2 CPUs, x86_64. Recordings: 8 kHz PCM16, synthetic; mono, stereo for predict_split. "
             "ExampleGen: 10-s windows, Beam DirectRunner in-process. Serving: "
             + (model or "not run (no --model)") + ".\n\n"
             "| path | recording | output | wall s | faster than real time | peak RSS MB | RSS vs shortest |\n"
             "| --- | --- | --- | --- | --- | --- | --- |\n" + "\n".join(rows))
    if oneshot:
        table += (f"\n\nChunked (10-s chunks, 1-s overlap-add) against one-shot (`denoise_wav`) enhancement of the "
                  f"{min(args.minutes):g}-min recording by this model: the difference is "
                  f"{oneshot['chunked_vs_one_shot_db']:.1f} dB below the signal.")
    publish("Long recordings: peak memory and speed, short against long", table, args.out)


if __name__ == "__main__":
    main()
