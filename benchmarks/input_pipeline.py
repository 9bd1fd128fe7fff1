"""Benchmark: the Trainer's input pipeline against the reference project's table, on
generated 10-second clips, the same feature work (decode, normalize, log-mel,
SpecAugment) four ways in one run, each in a fresh process:

- `python loop`: soundfile + librosa + numpy over the WAV files, as the reference did;
- `tf.data basic`: the Trainer's own stream, Transform graph and SpecAugment, with a
  sequential map, no cache, no prefetch;
- `tf.data optimized`: `components.training.input_pipeline.make_dataset` as the Trainer runs it, with
  the cache the Trainer chooses (`cache_choice`: here the featurized examples, which fit
  the default budget), batches featurized in a parallel map (AUTOTUNE), prefetch;
- `read + parse`: the records read and parsed, no feature work: the ceiling.

    .venv/bin/python -m benchmarks.input_pipeline [--clips 300] [--epochs 3] [--repeats 3] \
        [--wav2vec2 tiny|base] [--out benchmarks/RESULTS-input_pipeline.md]

For each: examples per second, seconds for the epochs, this process's CPU use as a
share of all cores (first, uncached epoch and overall), peak RSS (the child's VmHWM),
and the ratio to the plain loop. Then the input-wait share of
the real training step (time blocked on the iterator / step time, the Trainer's
`input_wait_fraction` scalar) for both backbones, from real pipeline runs
(LocalDagRunner) on the same clips: logmel_cnn, then wav2vec2 (the data half from
the cache). The plain loop normalizes each clip's mel bins by the clip's own statistics
where the Transform uses the training split's: the same arithmetic per example.
"""
import argparse
import json
import math
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import soundfile

import pipeline  # noqa: F401  (TF_USE_LEGACY_KERAS before TensorFlow)
from benchmarks.report import folder_mb, publish

RATE, CLIP_S, LABELS = 16000, 10.0, ("alarm", "speech", "machine")
VARIANTS = ("python loop", "tf.data basic", "tf.data optimized", "read + parse")
# Small widths and depth, but wav2vec2-base's feature encoder strides (320 samples a frame:
# 500 frames for 10 s), so the transformer sees the sequence length the real model sees.
TINY = ("{hidden_size: 32, num_hidden_layers: 2, num_attention_heads: 2, intermediate_size: 64, "
        "conv_dim: [32, 32, 32, 32, 32, 32, 32], conv_kernel: [10, 3, 3, 3, 3, 2, 2], "
        "conv_stride: [5, 2, 2, 2, 2, 2, 2], num_conv_pos_embeddings: 16, num_conv_pos_embedding_groups: 2}")


def clip(i: int, rng: np.random.Generator):
    """The i-th generated clip: (label, clean 10-s signal, the same in noise). A modulated
    tone: speed and memory do not depend on what is said."""
    t = np.arange(int(CLIP_S * RATE)) / RATE
    pitch = 150 * (1 + i % len(LABELS)) * (1 + 0.1 * rng.random())
    clean = 0.2 * np.sin(2 * np.pi * pitch * t) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t)) ** 2
    return LABELS[i % len(LABELS)], clean, clean + 0.05 * rng.standard_normal(t.size)


def write_clips(base: str, clips: int, seed: int = 0) -> None:
    """`clips` 10-s 16 kHz PCM16 noisy clips in label folders."""
    rng = np.random.default_rng(seed)
    for i in range(clips):
        label, _, noisy = clip(i, rng)
        os.makedirs(os.path.join(base, label), exist_ok=True)
        soundfile.write(os.path.join(base, label, f"clip{i:06d}.wav"), noisy, RATE, subtype="PCM_16")


def direct_flags(workers: int = 0) -> list:
    """Beam's DirectRunner in multi-processing mode with `workers` processes (0: one a core)."""
    return ["--direct_running_mode=multi_processing", f"--direct_num_workers={workers}"]


# The demo's recipe without the denoiser: no pretrained weights to start, no background mixing (its noise
# folder is the demo's data), no SI-SNR gate.
CLASSIFIER_ONLY = ["trainer.objective=classify", "trainer.denoiser.enabled=false", 'trainer.denoiser.warm_start=""',
                   "trainer.background.probability=0", "evaluator.min_si_snr_improvement_db=null"]


def overrides(base: str, out: str, backbone: str, wav2vec2: str, max_steps: int = 0, beam_workers: int = 0) -> list:
    beam = f"beam_args={json.dumps(direct_flags(beam_workers) if beam_workers else [])}"
    settings = [f"data.input_base={base}", f"output_dir={out}", "name=bench-input", "features.clip_seconds=10",
                "data.max_duration_s=60", f"trainer.backbone={backbone}", *CLASSIFIER_ONLY,
                "trainer.epochs=2", "trainer.log_every_steps=1",
                f"trainer.max_steps={max_steps or 'null'}",
                "trainer.grad_accum_steps=1", "report.enabled=false",
                "enable_cache=true", beam]
    if backbone == "wav2vec2":
        settings += ["trainer.batch_size=8", "trainer.learning_rate=1e-4"]
        if wav2vec2 == "tiny":
            settings.append(f"trainer.wav2vec2.config_overrides={TINY}")
    return settings


def run_pipeline(settings: list) -> dict:
    """One real pipeline run; the Trainer's artifacts and its mean input-wait share."""
    import tensorflow as tf
    from tensorboard.backend.event_processing import event_accumulator

    from components.config import load_config
    from pipeline import local_runner

    config = load_config("pipeline/configs/demo.yaml", settings)
    start = time.time()
    code, run = local_runner.run(config)
    if run is None or "Trainer" not in run.artifacts:
        raise RuntimeError(f"the pipeline run failed (exit {code}): {run.text() if run else ''}")
    model_run = run.artifacts["Trainer"]["model_run"][0].uri
    events = event_accumulator.EventAccumulator(model_run, size_guidance={"tensors": 0})
    events.Reload()

    def scalars(tag):
        return [float(tf.make_ndarray(e.tensor_proto)) for e in events.Tensors(tag)]

    waits = scalars("input_wait_fraction")  # one per step; the first step includes tracing
    return {"wall_s": time.time() - start, "examples": run.artifacts["WavExampleGen"]["examples"][0].uri,
            "graph": run.artifacts["Transform"]["transform_graph"][0].uri,
            "input_wait": float(np.mean(waits)), "input_wait_later": float(np.mean(waits[1:] or waits)),
            "input_wait_max": float(np.max(waits)), "steps": len(waits),
            "examples_per_second": float(np.median(scalars("examples_per_second")))}


def _python_loop(wavs: list, feats, aug, batch: int, seed: int):
    """The reference's loop, per epoch: files shuffled, read, normalized, log-mel (librosa),
    per-bin normalized, SpecAugment masks drawn with numpy, stacked into batches (an
    iterator of batches, warmed up)."""
    import librosa

    rng = np.random.default_rng(seed)
    num_samples = feats.num_samples
    mel_basis = librosa.filters.mel(sr=RATE, n_fft=feats.fft_length, n_mels=feats.num_mel_bins,
                                    fmin=feats.lower_hz, fmax=feats.upper_hz)

    def one(path):
        audio, _ = soundfile.read(path, dtype="float32")
        audio = np.pad((audio - audio.mean()) / (audio.std() + 1e-4), (0, num_samples - audio.size))
        power = np.abs(librosa.stft(audio, n_fft=feats.fft_length, hop_length=feats.frame_step,
                                    win_length=feats.frame_length, center=False)) ** 2
        mel = np.log(mel_basis @ power + 1e-6).T  # [frames, bins]
        mel = (mel - mel.mean(axis=0)) / (mel.std(axis=0) + 1e-6)
        frames, bins = mel.shape
        for _ in range(aug.freq_masks):
            width = rng.integers(0, aug.freq_mask_width + 1)
            start = rng.integers(0, bins - width + 1)
            mel[:, start:start + width] = 0.0
        for _ in range(aug.time_masks):
            width = rng.integers(0, min(aug.time_mask_width, int(aug.time_mask_max_ratio * frames)) + 1)
            start = rng.integers(0, frames - width + 1)
            mel[start:start + width] = 0.0
        return mel

    def batches():
        while True:
            order = rng.permutation(len(wavs))
            for i in range(0, len(order), batch):
                yield np.stack([one(wavs[j]) for j in order[i:i + batch]])

    # librosa compiles its numba helpers on the first call (about 3 s here): done now, outside
    # the timed epochs, as the tf.data variants build and trace their pipelines in iter().
    one(wavs[0])
    return batches()


def _child(variant: str, examples: str, graph: str, wavs_json: str, epochs: int, batch: int) -> dict:
    import psutil
    import tensorflow as tf
    import tensorflow_transform as tft

    from components.config import FeatureConfig, TrainerConfig
    from components.training import input_pipeline as train_data

    feats = FeatureConfig(clip_seconds=CLIP_S)
    cfg = TrainerConfig(backbone="logmel_cnn", batch_size=batch, grad_accum_steps=1)
    pattern = [os.path.join(examples, "Split-train", "*")]
    with open(wavs_json) as f:
        wavs = json.load(f)
    n = len(wavs)
    tto = tft.TFTransformOutput(graph)
    if variant == "python loop":
        batches = _python_loop(wavs, feats, cfg.spec_augment.resolved(), batch, cfg.seed)
    elif variant == "tf.data basic":
        transform, augment = train_data.transformer(tto, cfg), train_data.augmenter(cfg)
        buffer = train_data.shuffle_examples(cfg, train_data.split_size(pattern))
        stream = train_data.training_stream(train_data.records(pattern), buffer, cfg.seed, 0, 0).batch(batch)
        batches = iter(stream.map(lambda e, i, records: train_data.model_io(cfg, augment(e, i, transform(records)))))
    elif variant == "tf.data optimized":
        sizes = [train_data.split_size([os.path.join(examples, f"Split-{split}", "*")]) for split in ("train", "eval")]
        cache = train_data.cache_choice(cfg, train_data.feature_bytes(tto, cfg), *sizes)  # as run_fn chooses
        cache_dir = os.path.join(os.path.dirname(wavs_json), "optimized-cache")  # `disk`: as the Trainer's, in work
        shutil.rmtree(cache_dir, ignore_errors=True)
        batches = iter(train_data.make_dataset(pattern, tto, batch, cfg, training=True, cache=cache,
                                               cache_path=os.path.join(cache_dir, "train")))
    else:
        spec = tto.raw_feature_spec()
        batches = iter(train_data.records(pattern).repeat().batch(batch)
                       .map(lambda records: tf.io.parse_example(records, spec)))
    per_epoch = math.ceil(n / batch)
    cores = os.cpu_count()
    epochs_out = []
    psutil.cpu_percent(percpu=True)
    for _ in range(epochs):
        usage, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        for _ in range(per_epoch):
            next(batches)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_SELF)
        cpu = after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime
        epochs_out.append({"wall_s": wall, "cpu_share": cpu / (wall * cores),
                           "cores_busy": psutil.cpu_percent(percpu=True)})
    result = {"examples": n, "epochs": epochs_out, "peak_rss_mb": _peak_rss_mb()}
    if variant == "tf.data optimized":
        result["cache"] = cache
        if cache == "disk":
            result["cache_mb"] = folder_mb(cache_dir)
            shutil.rmtree(cache_dir, ignore_errors=True)
    return result


def _total_s(result: dict) -> float:
    return sum(e["wall_s"] for e in result["epochs"])


def _peak_rss_mb() -> float:
    """This process's peak RSS since its exec (VmHWM; wait4's ru_maxrss would include the
    parent's pages the child held between fork and exec)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024


def _measure(variant: str, *args) -> dict:
    """Runs `_child` in a fresh process."""
    proc = subprocess.run([sys.executable, "-m", "benchmarks.input_pipeline", "--child", variant,
                           *map(str, args)], stdout=subprocess.PIPE, text=True)
    if proc.returncode:
        raise RuntimeError(f"{variant}: the child failed ({proc.returncode})")
    return json.loads(proc.stdout.rsplit("RESULT", 1)[1])


def _train_sources(examples: str, base: str) -> list:
    """The WAV files behind the train split, for the plain loop."""
    import tensorflow as tf

    from components import features
    from components.training import input_pipeline as train_data

    sources = []
    for record in train_data.records([os.path.join(examples, "Split-train", "*")]):
        example = tf.train.Example.FromString(record.numpy())
        sources.append(os.path.join(base, example.features.feature[features.SOURCE].bytes_list.value[0].decode()))
    return sorted(sources)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clips", type=int, default=300)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of each variant (interleaved); the median is reported")
    parser.add_argument("--wav2vec2", choices=("tiny", "base"), default="tiny",
                        help="the wav2vec2 shape for the input-wait run (random weights)")
    parser.add_argument("--train-steps", type=int, default=0,
                        help="the pipeline runs' Trainer stops after this many steps (trainer.max_steps; 0: its 2 "
                             "epochs): at 50,000 clips 2 epochs of the real step take hours here, and the input wait "
                             "is read per step")
    parser.add_argument("--beam-workers", type=int, default=0,
                        help="the pipeline runs' Beam steps on this many DirectRunner processes (0: in this process)")
    parser.add_argument("--work", help="working folder (default: a temporary one)")
    parser.add_argument("--out")
    parser.add_argument("--child", nargs=6, metavar=("VARIANT", "EXAMPLES", "GRAPH", "WAVS", "EPOCHS", "BATCH"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        variant, examples, graph, wavs, epochs, batch = args.child
        print("RESULT" + json.dumps(_child(variant, examples, graph, wavs, int(epochs), int(batch))))
        return
    work = args.work or tempfile.mkdtemp(prefix="bench_input_")
    base, out = os.path.join(work, "clips"), os.path.join(work, "out")
    if not os.path.isdir(base):
        write_clips(base, args.clips)
    runs = {"logmel_cnn": run_pipeline(overrides(base, out, "logmel_cnn", args.wav2vec2, args.train_steps,
                                                         args.beam_workers))}
    wavs = os.path.join(work, "train_wavs.json")
    with open(wavs, "w") as f:
        json.dump(_train_sources(runs["logmel_cnn"]["examples"], base), f)
    # Each variant `--repeats` times, the rounds interleaved (loop, basic, optimized, read, loop, ...)
    # so a slow spell of the machine falls on all of them; each variant's median run is reported.
    trials = {v: [] for v in VARIANTS}
    for _ in range(args.repeats):
        for v in VARIANTS:
            trials[v].append(_measure(v, runs["logmel_cnn"]["examples"], runs["logmel_cnn"]["graph"], wavs,
                                      args.epochs, args.batch))
    results = {v: sorted(ts, key=_total_s)[len(ts) // 2] for v, ts in trials.items()}
    runs[f"wav2vec2 ({args.wav2vec2})"] = run_pipeline(overrides(base, out, "wav2vec2", args.wav2vec2,
                                                                  args.train_steps, args.beam_workers))

    n = results[VARIANTS[0]]["examples"]
    loop_s = _total_s(results["python loop"])
    rows = ["| variant | examples/s | s for %d epochs (median; all runs) | ratio to the loop | CPU share, epoch 1 | "
            "CPU share, all | cores busy, epoch 1 (system, %%) | peak RSS MB |" % args.epochs,
            "| --- |" + " --- |" * 7]
    for variant, r in results.items():
        total = _total_s(r)
        cpu_all = sum(e["cpu_share"] * e["wall_s"] for e in r["epochs"]) / total
        every = ", ".join(f"{_total_s(t):.2f}" for t in trials[variant])
        rows.append(f"| {variant} | {n * args.epochs / total:.1f} | {total:.2f} ({every}) | {loop_s / total:.2f}x | "
                    f"{r['epochs'][0]['cpu_share']:.0%} | {cpu_all:.0%} | "
                    f"{', '.join(f'{c:.0f}' for c in r['epochs'][0]['cores_busy'])} | {r['peak_rss_mb']:.0f} |")
    optimized = results["tf.data optimized"]
    rows += ["", f"The optimized variant's cache (`cache_choice`, as the Trainer chooses): {optimized.get('cache')}"
             + (f", {optimized['cache_mb']:.0f} MB on disk after the epochs" if "cache_mb" in optimized else "")]
    per_epoch = {v: " / ".join(f"{e['wall_s']:.2f}" for e in r["epochs"]) for v, r in results.items()}
    rows += ["", "Per epoch, s (the median runs): " + "; ".join(f"{v} {s}" for v, s in per_epoch.items())]
    read = f"the first {args.train_steps} steps (trainer.max_steps)" if args.train_steps else "2 epochs"
    rows += ["", "Input wait of the real training step (the Trainer's `input_wait_fraction`: time blocked on "
             f"the iterator / step time, per step; {read} in a pipeline run):", "",
             "| backbone | mean | mean after the first step | max | steps | examples/s (median) | pipeline run s |",
             "| --- |" + " --- |" * 6]
    for name, r in runs.items():
        rows.append(f"| {name} | {r['input_wait']:.1%} | {r['input_wait_later']:.1%} | {r['input_wait_max']:.1%} | "
                    f"{r['steps']} | "
                    f"{r['examples_per_second']:.1f} | {r['wall_s']:.0f} |")
    rows += ["", f"{n} train examples of {CLIP_S:g} s ({args.clips} clips, 70 % in the train split), batch "
             f"{args.batch}; {os.cpu_count()} cores, {platform.processor() or platform.machine()}. CPU share: "
             f"the process's CPU time / (wall time x cores)."]
    publish("Input pipeline: plain loop, basic and optimized tf.data, read + parse", "\n".join(rows), args.out)


if __name__ == "__main__":
    main()
