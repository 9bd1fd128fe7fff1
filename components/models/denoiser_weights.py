"""The denoiser's weights on their own, the way a site fine-tunes from the project's pretrained
denoiser (`trainer.denoiser.warm_start`): every pushed model with a denoiser carries them as
`assets/denoiser.weights.h5` (Keras' HDF5 weights of the denoiser alone). `pretrained` names the
project's own, shipped in the package (components/models/pretrained/, its model card beside it)."""
from __future__ import annotations

import os

import tensorflow as tf
import tf_keras as keras
from absl import logging

FILE = os.path.join("assets", "denoiser.weights.h5")
PRETRAINED_NAME = "pretrained"  # the warm_start value that names the packaged weights
PRETRAINED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pretrained", "dtln.weights.h5")


def save(denoiser: keras.Model, model_dir: str) -> str:
    """Writes the denoiser's weights into a SavedModel directory; returns the file."""
    path = os.path.join(model_dir, FILE)
    tf.io.gfile.makedirs(os.path.dirname(path))
    denoiser.save_weights(path)
    return path


def load(denoiser: keras.Model, path: str) -> None:
    """Sets the (built) denoiser's weights from `path`: a weights file, or a model directory holding
    one, or `pretrained` (PRETRAINED); a clear error when it is missing or was written by another design
    or size."""
    if path == PRETRAINED_NAME:
        path = PRETRAINED
    if tf.io.gfile.isdir(path):
        path = os.path.join(path, FILE)
    if not tf.io.gfile.exists(path):
        raise ValueError(f"trainer.denoiser.warm_start={path}: no such file (a pushed model's {FILE})")
    try:
        denoiser.load_weights(path)
    except (ValueError, KeyError) as e:
        raise ValueError(f"trainer.denoiser.warm_start={path}: its weights do not fit this denoiser "
                         f"(trainer.denoiser.design and sizes must be the ones it was trained with): {e}") from None
    logging.info("Denoiser warm-started from %s", path)
