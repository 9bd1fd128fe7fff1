"""Benchmark: the whole pipeline at two corpus sizes, per component: wall time, peak RSS
and disk, and the extrapolation to the reference project's 50,000 clips; then the
WAV ExampleGen's throughput with 1 and 2 DirectRunner workers on the same data, at
one or more corpus sizes, and with `--flink-clips` (`--spark-clips`) on Beam's FlinkRunner (SparkRunner)
at parallelism 1 and 2.

    .venv/bin/python -m benchmarks.scale [--clips 1000 5000] [--epochs 2] \
        [--workers-clips 1000 5000] [--flink-clips 1000 5000] [--spark-clips 1000] \
        [--work DIR] [--out benchmarks/RESULTS-scale.md]

Data: generated 10-s noisy/clean pairs at 16 kHz in the paired layout (a modulated tone
in noise; speed and memory do not depend on what is said), three labels, speakers by
file name (`data.group_regex`). With `--classifier-only` the whole-pipeline runs train
a log-mel CNN alone (no denoiser, so no references: noisy clips in label folders, as
benchmarks/input_pipeline.py writes them): the demo's BC-ResNet behind its DTLN trains
7 examples/s here, the CNN about 40, which keeps one epoch at 50,000 clips within an hour
on 2 cores. The demo's background mixing is off in every run (its
noise folder is the demo's data). Each run is `tfx-audio run` (LocalDagRunner, SQLite ML
Metadata, Beam's DirectRunner in multi-processing mode) on the demo config with 10-s
windows, in a process of its own; a sampler reads the RSS of that process and all its
children (Beam's workers) every 0.5 s, and each component's peak is the highest sum
while its ML Metadata execution ran (RSS sums count shared pages once per process, so
they overstate). Disk: each component's folder under the pipeline root. The run report
is off (it is not a pipeline component).
"""
import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import psutil
import soundfile

from benchmarks.input_pipeline import CLASSIFIER_ONLY, CLIP_S, RATE, clip, direct_flags, write_clips
from benchmarks.report import folder_mb, publish

PCM16_CLIP_BYTES = 44 + int(CLIP_S * RATE) * 2  # one WAV file
COMPONENTS = ("WavExampleGen", "StatisticsGen", "ExampleValidator", "Transform", "Trainer", "Evaluator", "Pusher")


def write_pairs(base: str, clips: int, seed: int = 0) -> None:
    """`clips` noisy/clean 10-s pairs, 4 clips per speaker, in the paired layout."""
    rng = np.random.default_rng(seed)
    for i in range(clips):
        label, clean, noisy = clip(i, rng)
        name = os.path.join(label, f"spk{i // 4:05d}_{i:06d}.wav")
        for folder, audio in (("clean", clean), ("noisy", noisy)):
            os.makedirs(os.path.join(base, folder, label), exist_ok=True)
            soundfile.write(os.path.join(base, folder, name), audio, RATE, subtype="PCM_16")


def corpus(work: str, clips: int, noisy_only: bool = False) -> str:
    """The folder of `clips` generated clips under `work`: noisy/clean pairs (`write_pairs`), or with
    `noisy_only` noisy clips in label folders (`write_clips`); written on first use and shared by every run
    of that size."""
    base = os.path.join(work, f"{'clips' if noisy_only else 'pairs'}{clips}")
    if not os.path.isdir(base):
        (write_clips if noisy_only else write_pairs)(base, clips)
    return base


def settings(base: str, out: str, name: str, epochs: int, beam_flags: list, classifier_only: bool = False) -> list:
    data = ([] if classifier_only else
            ["data.layout=paired", "data.file_pattern=noisy/*/*.wav", "data.group_regex=(spk[0-9]+)_"])
    return [f"data.input_base={base}", *data, "data.max_duration_s=60", "features.clip_seconds=10",
            f"output_dir={out}", f"name={name}", f"trainer.epochs={epochs}", "report.enabled=false",
            "trainer.background.probability=0",
            *([*CLASSIFIER_ONLY, "trainer.backbone=logmel_cnn"] if classifier_only else []),
            f"beam_args={json.dumps(beam_flags)}"]


def _sample(pid: int, samples: list, done: threading.Event) -> None:
    try:
        root = psutil.Process(pid)
        while not done.is_set():
            total = 0
            for proc in [root, *root.children(recursive=True)]:
                try:
                    total += proc.memory_info().rss
                except psutil.Error:
                    pass
            cpu = psutil.cpu_times()  # the whole machine's: Flink's JVM and the pool's workers are no children
            samples.append((time.time(), total, cpu.user + cpu.nice + cpu.system))
            time.sleep(0.5)
    except psutil.Error:
        pass


def run(verb: str, overrides: list) -> dict:
    """`tfx-audio VERB` in a process of its own, sampled; per component: wall, peak RSS, disk."""
    from components.config import load_config
    from pipeline import metadata, summary

    config = load_config("pipeline/configs/demo.yaml", overrides)
    args = [sys.executable, "-m", "pipeline.cli", verb, "--verbose", "--config", "pipeline/configs/demo.yaml",
            *[f"--set={o}" for o in overrides]]
    os.makedirs(config.output_dir, exist_ok=True)
    log = os.path.join(config.output_dir, f"{verb}.log")  # TFX's, Beam's and TensorFlow's logs, kept
    samples, done = [], threading.Event()
    start = time.time()
    with open(log, "w") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        sampler = threading.Thread(target=_sample, args=(proc.pid, samples, done))
        sampler.start()
        proc.wait()
    done.set()
    sampler.join()
    wall = time.time() - start
    chosen = None
    with open(log, errors="replace") as lines:
        for line in lines:
            chosen = re.search(r"Trainer cache: ([^(]+?) \(", line) or chosen
    if proc.returncode not in (0, 4):
        raise RuntimeError(f"tfx-audio {verb} failed ({proc.returncode}); its log: {log}")
    result = summary.latest_run(metadata.connection_config(config), config.name)
    components = {}
    for node, execution in result.executions.items():
        begin, end = execution.create_time_since_epoch / 1000, execution.last_update_time_since_epoch / 1000
        window = [(t, rss, busy) for t, rss, busy in samples if begin - 0.5 <= t <= end + 0.5]
        during = [rss for _, rss, _ in window]
        cores = ((window[-1][2] - window[0][2]) / (window[-1][0] - window[0][0])
                 if len(window) > 1 and window[-1][0] > window[0][0] else float("nan"))
        folder = os.path.join(config.pipeline_root, node)
        components[node] = {"wall_s": end - begin, "peak_rss_mb": max(during, default=0) / 2 ** 20,
                            "disk_mb": folder_mb(folder), "cores_busy": cores}
    examples = result.artifacts["WavExampleGen"]["examples"][0]
    cache = chosen.group(1) if chosen else "not logged"  # a finished Trainer removes a disk cache
    return {"cache": cache, "wall_s": wall, "peak_rss_mb": max((rss for _, rss, _ in samples), default=0) / 2 ** 20,
            "components": components, "examples": examples.custom_properties["num_examples"].int_value,
            "audio_s": examples.custom_properties["seconds_in_examples"].double_value}


def _size_rows(runs: dict, files_per_clip: int) -> list:
    """The per-component table of the whole-pipeline runs, and the disk per clip."""
    small, large = min(runs), max(runs)
    rows = ["| component | " + " | ".join(f"{c} clips: s, peak RSS MB, disk MB" for c in runs)
            + f" | RSS {large}/{small} | s at 50,000 (a line through both sizes) |",
            "| --- |" + " --- |" * (len(runs) + 2)]

    def at_50k(small_s, large_s):  # no line through one size
        return large_s + (large_s - small_s) / (large - small) * (50000 - large) if large > small else float("nan")

    for node in COMPONENTS:
        cells = [runs[c]["components"].get(node) for c in runs]
        if not all(cells):
            continue
        ratio = runs[large]["components"][node]["peak_rss_mb"] / max(runs[small]["components"][node]["peak_rss_mb"], 1)
        rows.append(f"| {node} | " + " | ".join(f"{c['wall_s']:.0f}, {c['peak_rss_mb']:.0f}, {c['disk_mb']:.0f}"
                                                for c in cells)
                    + f" | {ratio:.2f}x | {at_50k(cells[0]['wall_s'], cells[-1]['wall_s']):.0f} |")
    rows.append("| whole run | " + " | ".join(f"{r['wall_s']:.0f}, {r['peak_rss_mb']:.0f}, "
                                             f"{sum(c['disk_mb'] for c in r['components'].values()):.0f}"
                                             for r in runs.values())
                + f" | {runs[large]['peak_rss_mb'] / max(runs[small]['peak_rss_mb'], 1):.2f}x | "
                  f"{at_50k(runs[small]['wall_s'], runs[large]['wall_s']):.0f} |")
    rows.append("")
    pcm16 = files_per_clip * PCM16_CLIP_BYTES
    what = "the pair's" if files_per_clip == 2 else "the clip's"
    for clips, r in runs.items():
        data_mb = sum(r["components"][n]["disk_mb"] for n in ("WavExampleGen", "Transform"))
        rows.append(f"- {clips} clips ({r['examples']} examples, {r['audio_s'] / 3600:.1f} h of noisy audio): "
                    f"ExampleGen + Transform disk {data_mb * 2 ** 20 / clips / 1e3:.0f} kB per clip, "
                    f"{data_mb * 2 ** 20 / clips / pcm16:.2f}x {what} PCM16 size "
                    f"({pcm16 / 1e3:.0f} kB); at 50,000 clips "
                    f"{data_mb / clips * 50000 / 1024:.1f} GB; the Trainer's feature cache "
                    f"{r['cache']}.")
    return rows


def _workers_rows(work: str, sizes: list, epochs: int, runner: str = "direct", sdk_workers: int = 0) -> list:
    """The WAV ExampleGen (of `tfx-audio validate`) with 1 and then 2 workers on the same data, per
    corpus size: DirectRunner processes, or with `runner` flink or spark Beam's FlinkRunner or SparkRunner (its
    job server and an embedded Flink, or Spark's local[n], at parallelism 1 and 2, Python SDK workers from
    `pipeline.job_servers`' pool). Its
    throughput, and with two sizes the marginal rate (the clips between the sizes over the seconds
    between them), which leaves out what a run costs whatever its size (starting the workers and the
    job server, planning the stages, finalizing). On Flink and Spark the peak RSS leaves out the pool's
    workers (not children of the run)."""
    import contextlib

    from pipeline import job_servers

    label = {"direct": "DirectRunner worker(s)", "flink": "Flink parallelism", "spark": "Spark local"}[runner]
    if sdk_workers:
        label = f"{label} ({sdk_workers} Python workers)"
    rows, walls = [], {}
    with contextlib.ExitStack() as stack:
        if runner != "direct":
            jar = job_servers.fetch(runner)
            port = stack.enter_context(job_servers.worker_pool(tempfile.mkdtemp(dir=work)))
        for clips in sizes:
            base = corpus(work, clips)
            rates = {}
            for workers in (1, 2):
                flags = direct_flags(workers) if runner == "direct" else job_servers.beam_args(
                    runner, jar, port, parallelism=workers, sdk_workers=sdk_workers or None)
                r = run("validate", settings(base, os.path.join(work, f"{runner}{workers}-{clips}"),
                                             f"{runner}{workers}", epochs, flags))
                eg = r["components"]["WavExampleGen"]
                walls[clips, workers] = eg["wall_s"]
                rates[workers] = r["audio_s"] / eg["wall_s"]
                rows.append(f"- WAV ExampleGen, {label} {workers}, {clips} clips: "
                            f"{eg['wall_s']:.0f} s, {rates[workers]:.0f} audio hours per hour, peak RSS "
                            f"{eg['peak_rss_mb']:.0f} MB, the machine's cores busy {eg['cores_busy']:.2f} of "
                            f"{os.cpu_count()}")
            rows.append(f"- {clips} clips: 2 against 1: {rates[2] / rates[1]:.2f}x")
    if len(sizes) > 1:
        small, large = min(sizes), max(sizes)
        marginal = {w: (large - small) / max(walls[large, w] - walls[small, w], 1e-9) for w in (1, 2)}
        fixed = {w: walls[small, w] - small / marginal[w] for w in (1, 2)}
        rows.append(f"- Marginal rate from {small} to {large} clips: {label} 1 {marginal[1]:.1f} clips/s, "
                    f"2 {marginal[2]:.1f} clips/s: {marginal[2] / marginal[1]:.2f}x; "
                    f"the size-independent part of a run (the line's intercept): {fixed[1]:.0f} s at 1, "
                    f"{fixed[2]:.0f} s at 2")
    return rows


def recipe(classifier_only: bool) -> str:
    """What the whole-pipeline runs train, read from the config they load."""
    from components.config import load_config

    trainer = load_config("pipeline/configs/demo.yaml", settings("x", "x", "x", 1, [], classifier_only)).trainer
    denoiser = trainer.denoiser
    front = ("no denoiser" if not denoiser.enabled else
             f"the {denoiser.design} denoiser {'trained' if denoiser.trainable else 'held'} in front")
    data = "noisy clips only" if classifier_only else "noisy/clean pairs"
    return f"{trainer.backbone}, {front}, objective {trainer.objective}, no background mixing, {data}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clips", type=int, nargs="*", default=[1000, 5000],
                        help="corpus sizes for the whole pipeline (none: only the Beam workers comparison)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--classifier-only", action="store_true",
                        help="the whole-pipeline runs train the classifier alone, on noisy clips only")
    parser.add_argument("--workers-clips", type=int, nargs="*", default=[1000, 5000],
                        help="corpus sizes for the 1-against-2 Beam workers comparison (none: skip it)")
    parser.add_argument("--flink-clips", type=int, nargs="*", default=[],
                        help="corpus sizes for the ExampleGen on Flink at parallelism 1 against 2 (none: skip it)")
    parser.add_argument("--spark-clips", type=int, nargs="*", default=[],
                        help="corpus sizes for the ExampleGen on Spark local[1] against local[2] (none: skip it)")
    parser.add_argument("--sdk-workers", type=int, default=0,
                        help="Flink/Spark: Python worker processes per node (default: the parallelism)")
    parser.add_argument("--work", help="working folder (default: a temporary one)")
    parser.add_argument("--out")
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="bench_scale_")
    os.makedirs(work, exist_ok=True)
    runs = {}
    for clips in args.clips:
        base = corpus(work, clips, args.classifier_only)
        runs[clips] = run("run", settings(base, os.path.join(work, f"out{clips}"), f"scale{clips}", args.epochs,
                                          direct_flags(), args.classifier_only))
        print(f"{clips} clips: {json.dumps(runs[clips])}", flush=True)
    rows = _size_rows(runs, 1 if args.classifier_only else 2) if runs else []
    if args.workers_clips:
        rows += _workers_rows(work, args.workers_clips, args.epochs)
    if args.flink_clips:
        rows += _workers_rows(work, args.flink_clips, args.epochs, "flink", args.sdk_workers)
    if args.spark_clips:
        rows += _workers_rows(work, args.spark_clips, args.epochs, "spark", args.sdk_workers)
    rows.append(f"\n{args.epochs} epochs, the demo config otherwise ({recipe(args.classifier_only)}); "
                f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
                f"{psutil.virtual_memory().total / 2 ** 30:.0f} GiB.")
    publish("The whole pipeline at scale", "\n".join(rows), args.out)


if __name__ == "__main__":
    main()
