"""Benchmark: how close `tfx-audio predict`'s call figures (calls.csv: talk time per role, overtalk)
come to the truth, on generated stereo calls the model never saw.

    .venv/bin/python -m benchmarks.call_figures --model outputs/calls_stereo/serving \
        [--part validation|test] [--calls 20] [--set calls.floor_margin_db=9 ...] \
        [--out benchmarks/RESULTS-call_figures.md]

The calls come from `pipeline.datagen.calls --stereo` with a seed of their own per part (validation:
1, test: 2; the demo's calls use 0), 20-60 s each, written to a temporary folder; the noisy calls go
through `pipeline.predict.predict(..., tracks="split")` with the `calls` settings given (tune on
`--part validation`, report `--part test` once per configuration), and so do their clean tracks (the
detector's own error, without noise). Per figure: the mean absolute error and the share of calls
within 0.5 s; the customer's label against the call's intent.
"""
import argparse
import csv
import os
import tempfile

import numpy as np

from benchmarks.report import publish

SEEDS = {"validation": 1, "test": 2}
FIGURES = ("agent_talk_s", "customer_talk_s", "overtalk_s")
ROLES = ["agent", "customer"]


def _rows(path: str) -> list:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def score(model: str, data: str, folder: str, out: str, calls_cfg) -> dict:
    """predict over data/<folder>/*.wav; its calls.csv against the truth: errors per figure."""
    from pipeline import predict

    files = sorted(os.path.join(data, folder, n) for n in os.listdir(os.path.join(data, folder)))
    predict.predict(model, files, out, progress=False, tracks="split", track_roles=ROLES, calls=calls_cfg)
    truth = {os.path.basename(r["file_name"]): r for r in _rows(os.path.join(data, "calls_truth.csv"))}
    got = {os.path.basename(r["file"]): r for r in _rows(os.path.join(out, "calls.csv"))}
    errors = {k: np.array([abs(float(got[n][k]) - float(truth[n][k])) for n in sorted(truth)]) for k in FIGURES}
    result = {"calls": len(truth), "all_within": float(np.mean(np.all(np.stack(list(errors.values())) <= 0.5, 0)))}
    for key, error in errors.items():
        result[key] = (float(error.mean()), float(np.mean(error <= 0.5)))
    result["count_exact"] = float(np.mean([int(got[n]["overtalk_count"]) == int(truth[n]["overtalk_count"])
                                           for n in truth]))
    result["label"] = float(np.mean([got[n]["customer_label"] == truth[n]["customer_label"] for n in truth]))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="pushed SavedModel (or the Pusher's base directory)")
    parser.add_argument("--part", choices=sorted(SEEDS), default="validation")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--set", action="append", default=[], metavar="calls.KEY=VALUE",
                        help="a call-figure setting (components.config.CallsConfig)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    from components.config import load_config
    from pipeline.datagen import calls as demo_calls

    model = args.model
    if not os.path.exists(os.path.join(model, "saved_model.pb")):
        model = os.path.join(model, max(os.listdir(model), key=int))  # the newest pushed version
    calls_cfg = load_config("pipeline/configs/calls_stereo.yaml", args.set).calls
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "calls")
        demo_calls.generate(data, os.path.join(tmp, "noise"), num_calls=args.calls, min_seconds=20.0,
                            max_seconds=60.0, seed=SEEDS[args.part], stereo=True)
        for folder in ("noisy", "clean"):
            r = score(model, data, folder, os.path.join(tmp, f"out-{folder}"), calls_cfg)
            lines.append(f"| {folder} | {r['calls']} | " + " | ".join(
                f"{r[k][0]:.2f} s, {r[k][1]:.0%}" for k in FIGURES)
                + f" | {r['all_within']:.0%} | {r['count_exact']:.0%} | {r['label']:.0%} |")
    table = (f"Part: {args.part} (generated stereo calls, seed {SEEDS[args.part]}, 20-60 s). Model: {model}. "
             f"Settings: {calls_cfg}.\n\n"
             "| tracks | calls | agent talk: mean abs error, within 0.5 s | customer talk | overtalk | "
             "every figure within 0.5 s | overtalk count exact | customer's label right |\n"
             "| --- | --- | --- | --- | --- | --- | --- | --- |\n" + "\n".join(lines))
    publish("Call figures against the truth", table, args.out)


if __name__ == "__main__":
    main()
