"""Classifier backbones. `logmel_cnn`: a small CNN on normalized log-mel features,
the CPU-friendly backbone of the demo configuration."""
from __future__ import annotations

import tf_keras as keras


def build_logmel_cnn(num_frames: int, num_mel_bins: int, num_classes: int,
                     dropout: float = 0.3) -> keras.Model:
    """[B, frames, bins] log-mel -> [B, num_classes] logits (about 230 k parameters)."""
    inputs = keras.Input(shape=(num_frames, num_mel_bins), name="log_mel")
    x = keras.layers.Reshape((num_frames, num_mel_bins, 1))(inputs)
    for filters in (32, 64, 128):
        x = keras.layers.Conv2D(filters, 3, padding="same", use_bias=False)(x)
        x = keras.layers.BatchNormalization(momentum=0.9)(x)  # few steps per epoch
        x = keras.layers.ReLU()(x)
        x = keras.layers.MaxPool2D(2)(x)
    # Pool over time only: where energy sits in frequency is what tells words apart.
    x = keras.layers.Reshape((x.shape[1], x.shape[2] * x.shape[3]))(x)
    x = keras.layers.Dropout(dropout)(x)
    x = keras.layers.Dense(128, activation="relu")(x)
    x = keras.layers.GlobalMaxPooling1D()(x)
    x = keras.layers.Dropout(dropout)(x)
    logits = keras.layers.Dense(num_classes, name="logits")(x)
    return keras.Model(inputs, logits, name="logmel_cnn")
