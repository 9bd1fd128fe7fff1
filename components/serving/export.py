"""The exported SavedModel: float32, with the Transform graph inside.

Signatures:
- `serving_default`: serialized tf.Examples -> `probabilities`, `label` (+ `enhanced`)
- `transform_features`: serialized tf.Examples -> transformed features (TFMA's
  preprocessing function, which gives it `label_id` and the clean reference)
- `serve_wav`: 16 kHz PCM16 WAV bytes -> `probabilities`, `label` (+ `enhanced_wav`)
- `denoise_wav` (denoiser on): one 16 kHz PCM16 WAV -> `enhanced_wav`, the whole
  recording enhanced in one call (memory grows with its length)
- `denoise_chunk` (denoiser on): float32 samples of one chunk, and the recording's
  `mean` and `std` -> `enhanced`, the chunk at the input's level; what
  `components.serving.recording` streams a recording of any length through
Variables `window_samples` (the model's window) and `label_names` (the classes, in
probability order) tell clients what the signatures take and give.
With the denoiser, `enhanced` is the enhanced waveform at the Transform's
normalized scale (with `trainer.denoiser.attenuation_limit_db`, mixed with the
noisy input at -limit dB in every signature), and `enhanced_wav` the enhanced audio at the input's level as
16 kHz mono PCM16 WAV bytes; in the first two signatures both cover the model's
window (`features.clip_seconds`), as the classifier does.
None of them applies SpecAugment or latent masking: the model runs with training=False.
"""
from __future__ import annotations

from typing import Optional, Sequence

import tensorflow as tf
import tensorflow_transform as tft
import tf_keras as keras

from components import features
from components.audio import mixing
from components.transform.preprocessing import decode_16k, normalize


class _ServingModule(tf.Module):
    def __init__(self, model: keras.Model, tf_transform_output: tft.TFTransformOutput,
                 input_keys: Sequence[str], window_samples: int, attenuation_limit_db: Optional[float] = None):
        super().__init__()
        self.model = model
        self._attenuation_limit_db = attenuation_limit_db
        self.tft_layer = tf_transform_output.transform_features_layer()
        self.labels = tf.constant(tf_transform_output.vocabulary_by_name(features.LABEL_VOCAB))
        self.label_names = tf.Variable(self.labels, trainable=False, name="label_names")
        self.window_samples = tf.Variable(window_samples, dtype=tf.int64, trainable=False, name="window_samples")
        self._raw_spec = tf_transform_output.raw_feature_spec()
        self._input_keys = tuple(input_keys)
        if getattr(model, "denoiser", None) is not None:  # only traced (and saved) when there is one
            self.denoise_wav = tf.function(
                self._denoise_wav, input_signature=[tf.TensorSpec([], tf.string, name="wav")])
            self.denoise_chunk = tf.function(self._denoise_chunk, input_signature=[
                tf.TensorSpec([None], tf.float32, name="waveform"), tf.TensorSpec([], tf.float32, name="mean"),
                tf.TensorSpec([], tf.float32, name="std")])

    def _predict(self, transformed):
        outputs = self.model({key: transformed[key] for key in self._input_keys}, training=False)
        probabilities = tf.nn.softmax(tf.cast(outputs[features.LOGITS], tf.float32))
        result = {features.OUT_PROBABILITIES: probabilities,
                  features.OUT_LABEL: tf.gather(self.labels, tf.argmax(probabilities, axis=-1))}
        if features.OUT_ENHANCED in outputs:
            result[features.OUT_ENHANCED] = self._limited(outputs[features.OUT_ENHANCED],
                                                          transformed[features.WAVEFORM])
        return result

    def _limited(self, enhanced, noisy):
        """The enhanced audio with the noisy input mixed back in (attenuation_limit_db; linear in the
        waveform, so any signature can apply it)."""
        if self._attenuation_limit_db is None:
            return enhanced
        return mixing.attenuation_limited(enhanced, noisy, self._attenuation_limit_db)

    @staticmethod
    def _to_wav(enhanced, transformed):
        """Enhanced waveforms back at the input's level, valid samples only, as PCM16 WAV."""
        audio = (enhanced * transformed[features.WAVEFORM_STD][:, None]
                 + transformed[features.WAVEFORM_MEAN][:, None])

        def one(args):
            samples, length = args
            return tf.audio.encode_wav(tf.clip_by_value(samples[:length], -1.0, 1.0)[:, None],
                                       features.SAMPLE_RATE)

        return tf.map_fn(one, (audio, transformed[features.NUM_SAMPLES]),
                         fn_output_signature=tf.TensorSpec([], tf.string))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
    def serve_examples(self, serialized):
        raw = tf.io.parse_example(serialized, {features.AUDIO: self._raw_spec[features.AUDIO]})
        return self._predict(self.tft_layer(raw))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
    def transform_features(self, serialized):
        return self.tft_layer(tf.io.parse_example(serialized, self._raw_spec))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="wav")])
    def serve_wav(self, wav):
        transformed = self.tft_layer({features.AUDIO: tf.reshape(wav, [-1, 1])})
        result = self._predict(transformed)
        if features.OUT_ENHANCED in result:
            result[features.OUT_ENHANCED_WAV] = self._to_wav(result.pop(features.OUT_ENHANCED), transformed)
        return result

    def _enhance(self, audio, mean, std):
        """The denoiser on [samples] at the input's level, normalized by (mean, std) as the
        Transform normalizes an utterance, and scaled back."""
        return self._limited(self.model.denoiser(((audio - mean) / std)[tf.newaxis], training=False)[0] * std + mean,
                             audio)

    def _denoise_wav(self, wav):
        """The denoiser over a whole recording, normalized as the Transform does."""
        audio = decode_16k(wav)
        _, mean, std = normalize(audio)
        return {features.OUT_ENHANCED_WAV: tf.audio.encode_wav(
            tf.clip_by_value(self._enhance(audio, mean, std), -1.0, 1.0)[:, tf.newaxis], features.SAMPLE_RATE)}

    def _denoise_chunk(self, waveform, mean, std):
        return {features.OUT_ENHANCED: self._enhance(waveform, mean, std)}


def export_saved_model(model: keras.Model, tf_transform_output: tft.TFTransformOutput,
                       input_keys: Sequence[str], window_samples: int, export_dir: str,
                       attenuation_limit_db: Optional[float] = None) -> None:
    """Writes the SavedModel with its signatures; `model` must be float32."""
    if model.dtype_policy.name != "float32":  # float16 serving is slow on CPUs and in TFMA
        raise ValueError(f"export needs a float32 model, got policy {model.dtype_policy.name}")
    module = _ServingModule(model, tf_transform_output, input_keys, window_samples, attenuation_limit_db)
    signatures = {"serving_default": module.serve_examples,
                  "transform_features": module.transform_features,
                  "serve_wav": module.serve_wav}
    if hasattr(module, "denoise_wav"):
        signatures.update(denoise_wav=module.denoise_wav, denoise_chunk=module.denoise_chunk)
    tf.saved_model.save(module, export_dir, signatures=signatures)
