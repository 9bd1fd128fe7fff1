"""A smaller copy of a folders-layout corpus: at most N files of each `<folder>/*.wav`, evenly spaced
through its sorted names (deterministic), copied to another folder. For training runs that must fit
a budget (docs/generalization.md names the ones that used it):

    python -m pipeline.datagen.sample --src data/real/speech_train --out data/real/speech_train_sample --per-folder 120
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil

import numpy as np


def sample(src: str, out: str, per_folder: int) -> int:
    """Copies the sample; returns how many files it holds."""
    copied = 0
    for folder in sorted(os.listdir(src)):
        files = sorted(glob.glob(os.path.join(src, folder, "*.wav")))
        if not files:
            continue
        picked = [files[i] for i in np.unique(np.linspace(0, len(files) - 1, min(per_folder, len(files))).round()
                                              .astype(int))]
        os.makedirs(os.path.join(out, folder), exist_ok=True)
        for path in picked:
            shutil.copyfile(path, os.path.join(out, folder, os.path.basename(path)))
        copied += len(picked)
    return copied


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--src", required=True, help="a folder of <folder>/*.wav")
    parser.add_argument("--out", required=True, help="where the sample is written (emptied first)")
    parser.add_argument("--per-folder", type=int, required=True, help="files kept of each folder")
    args = parser.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    print(f"{sample(args.src, args.out, args.per_folder)} files in {args.out}")


if __name__ == "__main__":
    main()
