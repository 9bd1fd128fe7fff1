"""The exported SavedModel: float32, with the Transform graph inside.

Signatures:
- `serving_default`: serialized tf.Examples -> `probabilities`, `label`
- `transform_features`: serialized tf.Examples -> transformed features (TFMA's
  preprocessing function, which gives it `label_id`)
- `serve_wav`: 16 kHz PCM16 WAV bytes -> `probabilities`, `label`
None of them applies SpecAugment or latent masking: the model runs with training=False.
"""
from __future__ import annotations

from typing import Sequence

import tensorflow as tf
import tensorflow_transform as tft
import tf_keras as keras

from components import features


class _ServingModule(tf.Module):
    def __init__(self, model: keras.Model, tf_transform_output: tft.TFTransformOutput,
                 input_keys: Sequence[str]):
        super().__init__()
        self.model = model
        self.tft_layer = tf_transform_output.transform_features_layer()
        self.labels = tf.constant(tf_transform_output.vocabulary_by_name(features.LABEL_VOCAB))
        self._raw_spec = tf_transform_output.raw_feature_spec()
        self._input_keys = tuple(input_keys)

    def _predict(self, transformed):
        inputs = {key: transformed[key] for key in self._input_keys}
        probabilities = tf.nn.softmax(tf.cast(self.model(inputs, training=False), tf.float32))
        return {features.OUT_PROBABILITIES: probabilities,
                features.OUT_LABEL: tf.gather(self.labels, tf.argmax(probabilities, axis=-1))}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
    def serve_examples(self, serialized):
        raw = tf.io.parse_example(serialized, {features.AUDIO: self._raw_spec[features.AUDIO]})
        return self._predict(self.tft_layer(raw))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
    def transform_features(self, serialized):
        return self.tft_layer(tf.io.parse_example(serialized, self._raw_spec))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="wav")])
    def serve_wav(self, wav):
        return self._predict(self.tft_layer({features.AUDIO: tf.reshape(wav, [-1, 1])}))


def export_saved_model(model: keras.Model, tf_transform_output: tft.TFTransformOutput,
                       input_keys: Sequence[str], export_dir: str) -> None:
    """Writes the SavedModel with its three signatures; `model` must be float32."""
    if model.dtype_policy.name != "float32":  # float16 serving is slow on CPUs and in TFMA
        raise ValueError(f"export needs a float32 model, got policy {model.dtype_policy.name}")
    module = _ServingModule(model, tf_transform_output, input_keys)
    tf.saved_model.save(module, export_dir, signatures={
        "serving_default": module.serve_examples,
        "transform_features": module.transform_features,
        "serve_wav": module.serve_wav})
