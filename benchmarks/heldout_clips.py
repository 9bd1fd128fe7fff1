"""Benchmark: denoising the generated held-out corpus' own keyword clips, as they are (about 0.4 s of speech in
files of up to 1 s, many through an AMR-NB mobile call), where a recurrent denoiser has the least time to adapt.

    .venv/bin/python -m pipeline.datagen.heldout --part validation        # once (bash scripts/demo.sh does it)
    .venv/bin/python -m benchmarks.heldout_clips --part validation \
        --front-end "served=pipeline/configs/demo.yaml" --attenuation-limit 24 --without-baselines

The same clips the demo's held-out Evaluator scores (`evaluator.heldout_base`), scored per clip as
benchmarks/whole_recordings.py scores recordings: every noisy clip with a clean reference, enhanced by each method,
against the reference as its channel delivered it. `--part` as the Evaluator: `validation` to tune on, `test` to
report once per configuration. With `--front-end` a denoiser setting is scored before a model is trained with it.
"""
import argparse
import csv
import os
import pathlib

import pipeline  # noqa: F401  (TF_USE_LEGACY_KERAS before TensorFlow)
from benchmarks import whole_recordings
from benchmarks.report import publish
from components.audio import wav_io
from pipeline.datagen import heldout as heldout_data

PARTS = ("validation", "test")


def mixtures(base: str):
    """(noise kind, SNR, channel, noisy, reference) of every clip with a reference in `base`/metadata.csv."""
    with open(os.path.join(base, "metadata.csv"), newline="") as f:
        rows = [row for row in csv.DictReader(f) if row["clean_file_name"]]
    if not rows:
        raise SystemExit(f"{base}/metadata.csv: no noisy clip with a clean reference")
    for row in rows:
        noisy = wav_io.decode_to_mono_16k(pathlib.Path(base, row["file_name"]).read_bytes())
        clean = wav_io.decode_to_mono_16k(pathlib.Path(base, row["clean_file_name"]).read_bytes())
        yield row["noise_kind"], float(row["snr_db"]), row["channel"], noisy, clean


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="data/demo_heldout", help="pipeline/datagen/heldout.py's output folder")
    parser.add_argument("--part", choices=PARTS, required=True,
                        help="validation: tune on it; test: report it once per configuration")
    whole_recordings.add_arguments(parser)
    args = parser.parse_args()
    methods, note = whole_recordings.methods_with(args.model, args.attenuation_limit, not args.without_baselines,
                                                  args.published_dtln, args.front_end)
    clips = list(mixtures(os.path.join(args.data, args.part)))
    scores, seconds, wall = whole_recordings.score(iter(clips), methods)
    kinds = sorted({c[0] for c in clips})
    snrs = sorted({c[1] for c in clips})
    channels = [ch for ch in heldout_data.CHANNELS if any(c[2] == ch for c in clips)]
    lines = [f"Part **{args.part}** of the generated held-out corpus ({args.data}): {len(clips)} noisy clips of "
             f"{seconds / len(clips):.2f} s on average, noise kinds {', '.join(kinds)} x SNRs "
             f"{', '.join(f'{s:g}' for s in snrs)} dB x channels {', '.join(channels)} "
             f"({seconds / 60:.1f} min of audio per method, {wall:.0f} s wall).{note}",
             "Mean change per clip, enhanced less noisy (SI-SNR and SNR in dB; STOI 0-1; PESQ wb on wideband, nb on "
             "the mobile channel; DNSMOS P.835 overall, reference-free, 1-5, wideband only).", ""]
    lines += whole_recordings.tables(scores, list(methods), kinds, channels, snrs)
    publish(f"Held-out keyword clips: denoising ({args.part} part)", "\n".join(lines), args.out)


if __name__ == "__main__":
    main()
