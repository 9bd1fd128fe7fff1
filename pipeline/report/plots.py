"""The report's figures, drawn with matplotlib (Agg, no display) into PNG bytes.

Each function takes the rows it plots, so the page can write the same rows as CSV
beside the figure."""
from __future__ import annotations

import io
from typing import Dict, List, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
import numpy as np  # noqa: E402

from components import features  # noqa: E402

_DPI = 80


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=_DPI, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


def bars(rows: List[dict], category: str, series: Sequence[str], ylabel: str, title: str = "") -> bytes:
    """Grouped bars: one group per row's `category`, one bar per series column."""
    fig, ax = plt.subplots(figsize=(max(4.0, 0.6 * len(rows) * max(len(series), 1)), 3.0))
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(rows))
    for i, name in enumerate(series):
        values = [row.get(name) for row in rows]
        ax.bar(x + i * width, [np.nan if v is None else v for v in values], width, label=name)
    ax.set_xticks(x + width * (len(series) - 1) / 2)
    ax.set_xticklabels([str(row[category]) for row in rows], rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.axhline(0, color="black", linewidth=0.5)
    if len(series) > 1:
        ax.legend(fontsize="small")
    return _png(fig)


def histogram(rows: List[dict], xlabel: str) -> bytes:
    """Bars from rows of {series, low, high, count} (TFDV's histogram buckets)."""
    fig, ax = plt.subplots(figsize=(6.0, 3.0))
    for name in sorted({row["series"] for row in rows}):
        mine = [row for row in rows if row["series"] == name]
        ax.bar([row["low"] for row in mine], [row["count"] for row in mine],
               width=[max(row["high"] - row["low"], 1e-3) for row in mine], align="edge", alpha=0.5, label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("examples")
    ax.legend(fontsize="small")
    return _png(fig)


def curves(rows: List[dict]) -> bytes:
    """One panel per tag from rows of {tag, step, value} (the TensorBoard scalars)."""
    tags = sorted({row["tag"] for row in rows})
    columns = 3
    lines = -(-len(tags) // columns)
    fig, axes = plt.subplots(lines, columns, figsize=(4.0 * columns, 2.6 * lines), squeeze=False)
    for ax, tag in zip(axes.flat, tags):
        mine = sorted((row["step"], row["value"]) for row in rows if row["tag"] == tag)
        ax.plot([s for s, _ in mine], [v for _, v in mine], marker="." if len(mine) < 30 else None)
        ax.set_title(tag, fontsize="medium")
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(tags):]:
        ax.axis("off")
    fig.tight_layout()
    return _png(fig)


def confusion(matrix: np.ndarray, labels: Sequence[str]) -> bytes:
    """Rows: the true class; columns: the predicted one; counts in the cells."""
    side = min(1.0 + 0.6 * len(labels), 16.0)  # many classes: a fixed size, the counts in the CSV only
    fig, ax = plt.subplots(figsize=(side, side))
    ax.imshow(matrix, cmap="Blues")
    for (i, j), value in np.ndenumerate(matrix) if len(labels) <= 25 else ():
        ax.text(j, i, f"{value:g}", ha="center", va="center",
                color="white" if value > matrix.max() / 2 else "black", fontsize="small")
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    return _png(fig)


def spectrograms(signals: Dict[str, np.ndarray], rate: int = features.SAMPLE_RATE) -> bytes:
    """The named 16 kHz signals' spectrograms side by side, on one colour scale."""
    fig, axes = plt.subplots(1, len(signals), figsize=(3.6 * len(signals), 2.6), squeeze=False,
                             sharey=True)
    dither = np.random.default_rng(0)  # at -140 dB, the scale's floor: digital silence has no log
    for ax, (name, samples) in zip(axes[0], signals.items()):
        ax.specgram(samples + 1e-7 * dither.standard_normal(samples.size), NFFT=512, Fs=rate, noverlap=384,
                    cmap="magma", vmin=-140, vmax=-20)
        ax.set_title(name, fontsize="medium")
        ax.set_xlabel("s")
    axes[0][0].set_ylabel("Hz")
    fig.tight_layout()
    return _png(fig)


def timeline(rows: List[dict], labels: Sequence[str]) -> bytes:
    """Per-window class probabilities over a recording, from rows of {start_s, end_s, <label>...}."""
    fig, ax = plt.subplots(figsize=(9.0, 2.6))
    centers = [(row["start_s"] + row["end_s"]) / 2 for row in rows]
    for label in labels:
        ax.plot(centers, [row[label] for row in rows], marker=".", label=label)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("s")
    ax.set_ylabel("probability")
    ax.legend(fontsize="small", ncol=min(len(labels), 6), loc="upper right")
    ax.grid(alpha=0.3)
    return _png(fig)


def track_timelines(rows: List[dict], labels: Sequence[str], roles: Sequence[str]) -> bytes:
    """`timeline` per track of a call, one panel each, with the windows' speech share (dashed), from rows
    of {role, start_s, end_s, speech, <label>...}."""
    fig, axes = plt.subplots(len(roles), 1, figsize=(9.0, 2.2 * len(roles)), squeeze=False, sharex=True)
    for ax, role in zip(axes[:, 0], roles):
        mine = [row for row in rows if row["role"] == role]
        centers = [(row["start_s"] + row["end_s"]) / 2 for row in mine]
        for label in labels:
            ax.plot(centers, [row[label] for row in mine], marker=".", label=label)
        ax.plot(centers, [row["speech"] for row in mine], color="black", linestyle="--", label="speech")
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel(role)
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize="small", ncol=min(len(labels) + 1, 7), loc="upper right")
    axes[-1, 0].set_xlabel("s")
    fig.tight_layout()
    return _png(fig)

