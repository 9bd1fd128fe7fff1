"""Benchmark: TFX's StatisticsGen executor alone on an ExampleGen output, as TFX runs it
(`Executor().Do` with real artifacts and the pipeline's Beam flags), in a process of its
own; a sampler sums the RSS of that process and its children (Beam's workers) every 0.5 s.

    .venv/bin/python -m benchmarks.statistics_gen --examples DIR [DIR ...] --out OUT \
        [--mode multi_processing|in_memory] [--workers 0] [--options pipeline|none]

`--examples`: one or more ExampleGen output folders (holding Split-*/); several are joined
into one artifact by symlinking their files. `--options pipeline` passes the StatsOptions
that pipeline/pipeline.py gives StatisticsGen; `none` runs TFX's defaults (no stats_options).
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

import psutil


def _join(dirs, out):
    """An examples folder whose Split-*/ hold symlinks to every file of `dirs`' splits."""
    splits = sorted(d for d in os.listdir(dirs[0]) if d.startswith("Split-"))
    for split in splits:
        os.makedirs(os.path.join(out, split), exist_ok=True)
        for i, base in enumerate(dirs):
            for name in sorted(os.listdir(os.path.join(base, split))):
                link = os.path.join(out, split, f"{i}-{name}")
                if not os.path.exists(link):
                    os.symlink(os.path.join(base, split, name), link)
    return [s[len("Split-"):] for s in splits]


def child(examples_uri, out, mode, workers, options):
    from absl import logging
    from tfx.components.statistics_gen import executor as stats_executor
    from tfx.dsl.components.base import base_beam_executor
    from tfx.types import artifact_utils, standard_artifacts, standard_component_specs

    import pipeline  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TF loads)

    logging.set_verbosity(logging.INFO)
    splits = sorted(d[len("Split-"):] for d in os.listdir(examples_uri) if d.startswith("Split-"))
    examples = standard_artifacts.Examples()
    examples.uri = examples_uri
    examples.split_names = artifact_utils.encode_split_names(splits)
    statistics = standard_artifacts.ExampleStatistics()
    statistics.uri = out
    exec_properties = {standard_component_specs.EXCLUDE_SPLITS_KEY: json.dumps([])}
    if options == "pipeline":
        from pipeline.pipeline import statistics_options
        exec_properties[standard_component_specs.STATS_OPTIONS_JSON_KEY] = statistics_options().to_json()
    args = [f"--direct_running_mode={mode}", f"--direct_num_workers={workers}"]
    context = base_beam_executor.BaseBeamExecutor.Context(beam_pipeline_args=args, tmp_dir=out + ".tmp")
    stats_executor.Executor(context).Do({standard_component_specs.EXAMPLES_KEY: [examples]},
                                        {standard_component_specs.STATISTICS_KEY: [statistics]},
                                        exec_properties)


def _sample(pid, samples, done):
    try:
        root = psutil.Process(pid)
        while not done.is_set():
            total, procs = 0, [root, *root.children(recursive=True)]
            per = []
            for proc in procs:
                try:
                    rss = proc.memory_info().rss
                    total += rss
                    per.append(rss)
                except psutil.Error:
                    pass
            samples.append((time.time(), total, per))
            time.sleep(0.5)
    except psutil.Error:
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", nargs="+", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--mode", default="multi_processing")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--options", choices=("pipeline", "none"), default="pipeline")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.child:
        child(a.examples[0], a.out, a.mode, a.workers, a.options)
        return
    examples = a.examples[0]
    if len(a.examples) > 1:
        examples = a.out + ".examples"
        _join(a.examples, examples)
    cmd = [sys.executable, "-m", "benchmarks.statistics_gen", "--child", "--examples", examples,
           "--out", a.out, "--mode", a.mode, "--workers", str(a.workers), "--options", a.options]
    samples, done = [], threading.Event()
    start = time.time()
    with open(a.out + ".log", "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        sampler = threading.Thread(target=_sample, args=(proc.pid, samples, done))
        sampler.start()
        proc.wait()
    done.set()
    sampler.join()
    wall = time.time() - start
    peak = max(samples, key=lambda s: s[1]) if samples else (0, 0, [])
    result = {"examples": a.examples, "mode": a.mode, "workers": a.workers, "options": a.options,
              "returncode": proc.returncode, "wall_s": round(wall, 1),
              "peak_rss_mb": round(peak[1] / 2 ** 20), "procs_at_peak_mb": [round(r / 2 ** 20) for r in peak[2]],
              "max_procs": max((len(s[2]) for s in samples), default=0)}
    with open(a.out + ".samples.json", "w") as f:
        json.dump([(round(t - start, 1), round(r / 2 ** 20), [round(x / 2 ** 20) for x in per])
                   for t, r, per in samples], f)
    print(json.dumps(result))
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
