"""The trained model: an optional denoiser front end and a classifier backbone.

`build_model` returns an `AudioModel`, which takes the dict of transformed
features it needs (`input_keys`) and returns {LOGITS} or, with the denoiser on,
{LOGITS, OUT_ENHANCED}: the classifier then consumes the enhanced audio.
Backbones, picked by `trainer.backbone`:

- `wav2vec2`: transformers' TFWav2Vec2ForSequenceClassification (projector, mean
  pooling, classifier; the attention mask and pooling over valid frames only for
  layer-norm feature encoders), from a local save_pretrained directory, a hub id,
  or a config.
- `logmel_cnn`: a small CNN on normalized log-mel features, for CPU-only runs.
- `bc_resnet`: BC-ResNet (Kim et al., Interspeech 2021), a keyword-spotting design on
  the same log-mel: frequency-wise depthwise convolutions, broadcast temporal ones.
"""
from __future__ import annotations

from typing import Dict

import tensorflow as tf
import tf_keras as keras
import transformers

from components import features
from components.config import LOGMEL_BACKBONES, FeatureConfig, TrainerConfig, Wav2Vec2Config
from components.models.denoiser import build_denoiser
from components.training import context, vtlp
from components.transform.preprocessing import log_mel, normalize, spec_augment_batch

# Which transformed features each backbone reads (without the denoiser).
BACKBONE_INPUTS = {"logmel_cnn": (features.LOG_MEL,), "bc_resnet": (features.LOG_MEL,),
                   "wav2vec2": (features.WAVEFORM, features.NUM_SAMPLES)}
_DENOISER_INPUTS = (features.WAVEFORM, features.NUM_SAMPLES)


def input_keys(cfg: TrainerConfig):
    """The transformed features the configured model reads."""
    return _DENOISER_INPUTS if cfg.denoiser.enabled else BACKBONE_INPUTS[cfg.backbone]


def _logmel_cnn(num_frames: int, num_mel_bins: int, num_classes: int, dropout: float = 0.3) -> keras.Model:
    """[B, frames, bins] log-mel -> [B, num_classes] logits (about 230 k parameters)."""
    inputs = keras.Input(shape=(num_frames, num_mel_bins), name=features.LOG_MEL)
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
    logits = keras.layers.Dense(num_classes, name="logits", dtype="float32")(x)
    return keras.Model({features.LOG_MEL: inputs}, logits, name="logmel_cnn")


def _sub_spectral_norm(x, sub_bands: int):
    """SubSpectral Normalization (Chang et al. 2021, BC-ResNet's): batch norm with statistics per channel and per
    band of frequencies ([B, freq, time, ch]; a plain batch norm where the bins do not split into `sub_bands`)."""
    freq, time, channels = x.shape[1], x.shape[2], x.shape[3]
    if freq % sub_bands:
        return keras.layers.BatchNormalization(momentum=0.9)(x)
    x = keras.layers.Reshape((sub_bands, freq // sub_bands, time, channels))(x)
    x = keras.layers.BatchNormalization(axis=[1, 4], momentum=0.9)(x)
    return keras.layers.Reshape((freq, time, channels))(x)


def _bc_res_block(x, channels: int, freq_stride: int, dilation: int, dropout: float):
    """BC-ResBlock (Kim et al. 2021; Qualcomm-AI-research/bcresnet's BCResBlock): f2, a frequency-wise depthwise
    convolution; f1, a temporal depthwise one on its frequency average, broadcast back over frequency. A
    transition block (new channels) first maps them with a 1x1 convolution and keeps no identity path."""
    transition = x.shape[-1] != channels
    shortcut = x
    if transition:
        x = keras.layers.Conv2D(channels, 1, use_bias=False)(x)
        x = keras.layers.BatchNormalization(momentum=0.9)(x)
        x = keras.layers.ReLU()(x)
    x = keras.layers.DepthwiseConv2D((3, 1), strides=(freq_stride, 1), padding="same", use_bias=False)(x)
    two_d = _sub_spectral_norm(x, 4)
    x = keras.layers.Lambda(lambda t: tf.reduce_mean(t, axis=1, keepdims=True))(two_d)  # [B, 1, time, ch]
    x = keras.layers.DepthwiseConv2D((1, 3), dilation_rate=(1, dilation), padding="same", use_bias=False)(x)
    x = keras.layers.BatchNormalization(momentum=0.9)(x)
    x = keras.layers.Activation("swish")(x)
    x = keras.layers.Conv2D(channels, 1, use_bias=False)(x)
    x = keras.layers.SpatialDropout2D(dropout)(x)
    x = keras.layers.Add()([two_d, x])  # (broadcast over frequency)
    if not transition:
        x = keras.layers.Add()([x, shortcut])
    return keras.layers.ReLU()(x)


def _bc_resnet(num_frames: int, num_mel_bins: int, num_classes: int, width: int, dropout: float = 0.1) -> keras.Model:
    """BC-ResNet-`width` (Kim et al., "Broadcasted Residual Learning for Efficient Keyword Spotting",
    Interspeech 2021), as the authors' reference code builds it: a 5x5 head halving frequency, four stages
    of 2, 2, 4, 4 blocks (frequency halved entering stages 2 and 3, temporal dilation 1, 2, 4, 8), a depthwise
    5x5 and 1x1 classifier, average pooled. [B, frames, bins] log-mel -> [B, num_classes] logits."""
    base = 8 * width
    stage_channels = (base, int(base * 1.5), base * 2, int(base * 2.5))
    inputs = keras.Input(shape=(num_frames, num_mel_bins), name=features.LOG_MEL)
    x = keras.layers.Permute((2, 1))(inputs)  # frequency first, as the paper's [freq, time]
    x = keras.layers.Reshape((num_mel_bins, num_frames, 1))(x)
    x = keras.layers.Conv2D(base * 2, 5, strides=(2, 1), padding="same", use_bias=False)(x)
    x = keras.layers.BatchNormalization(momentum=0.9)(x)
    x = keras.layers.ReLU()(x)
    for stage, (blocks, channels) in enumerate(zip((2, 2, 4, 4), stage_channels)):
        for block in range(blocks):
            x = _bc_res_block(x, channels, 2 if stage in (1, 2) and block == 0 else 1, 2 ** stage, dropout)
    x = keras.layers.DepthwiseConv2D((min(5, x.shape[1]), 5), padding="valid", use_bias=False)(
        keras.layers.ZeroPadding2D(((0, 0), (2, 2)))(x))  # the reference pads time only
    x = keras.layers.Conv2D(base * 4, 1, use_bias=False)(x)
    x = keras.layers.BatchNormalization(momentum=0.9)(x)
    x = keras.layers.ReLU()(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    logits = keras.layers.Dense(num_classes, name="logits", dtype="float32")(x)
    return keras.Model({features.LOG_MEL: inputs}, logits, name="bc_resnet")


class Wav2Vec2Classifier(keras.Model):
    """transformers' Wav2Vec2 sequence classifier on {waveform, num_samples}."""

    def __init__(self, hf_model: transformers.TFWav2Vec2ForSequenceClassification, **kwargs):
        super().__init__(name="wav2vec2_classifier", **kwargs)
        self.hf_model = hf_model

    def call(self, inputs: Dict[str, tf.Tensor], training: bool = False) -> tf.Tensor:
        waveform = inputs[features.WAVEFORM]
        mask = tf.sequence_mask(inputs[features.NUM_SAMPLES], tf.shape(waveform)[1], dtype=tf.int32)
        waveform = waveform * tf.cast(mask, waveform.dtype)  # zero padding, whatever the caller sent
        # As transformers documents for Wav2Vec2: only feature encoders with layer norm
        # (feat_extract_norm="layer", e.g. wav2vec2-large-lv60) were trained with an
        # attention_mask (padding unattended, pooled over valid frames). Group-norm ones
        # (wav2vec2-base) were not: they take the zero-padded batch and no mask.
        if self.hf_model.config.feat_extract_norm == "layer":
            return self.hf_model(waveform, attention_mask=mask, training=training).logits
        return self.hf_model(waveform, training=training).logits


def _wav2vec2(cfg: Wav2Vec2Config, num_classes: int, num_samples: int) -> Wav2Vec2Classifier:
    settings = dict(
        num_labels=num_classes,
        layerdrop=0.0,  # its Python-side draw would freeze at tracing time (docs/environment.md)
        mask_time_prob=cfg.mask_time_prob, mask_time_length=cfg.mask_time_length,
        mask_feature_prob=0.0,  # the TF feature-axis masking is suspect; kept off
        classifier_proj_size=cfg.classifier_proj_size)
    if cfg.pretrained:
        hf = transformers.TFWav2Vec2ForSequenceClassification.from_pretrained(cfg.pretrained, **settings)
    else:
        config = transformers.Wav2Vec2Config(**{**cfg.config_overrides, **settings})
        hf = transformers.TFWav2Vec2ForSequenceClassification(config)
    # transformers' weight-normalized positional conv multiplies a raw float32
    # tf.Variable by an autocast weight: under a mixed policy that one layer must
    # compute in float32 (the next layer casts back to the compute dtype).
    conv = hf.wav2vec2.encoder.pos_conv_embed.conv
    conv._set_dtype_policy("float32")
    # tf_keras runs every grouped convolution through a nested XLA function (base_conv's
    # `_jit_compiled_convolution_op`, a workaround for TensorFlow's CPU kernels of old, TODO b/213173659);
    # XLA:CPU computes the 16 groups one after another, about 50x slower than TF 2.16's own kernel for this
    # layer, and made wav2vec2-base's compiled step slower than its eager one (benchmarks/RESULTS-train_step.md).
    # TensorFlow's native grouped convolution runs in graphs, forward and backward, on the CPU and the GPU.
    conv._jit_compiled_convolution_op = conv.convolution_op
    if cfg.freeze_feature_encoder:
        hf.freeze_feature_encoder()
    if cfg.freeze_layers > len(hf.wav2vec2.encoder.layer):
        raise ValueError(f"trainer.wav2vec2.freeze_layers={cfg.freeze_layers} but the model has "
                         f"{len(hf.wav2vec2.encoder.layer)} transformer layers")
    for layer in hf.wav2vec2.encoder.layer[:cfg.freeze_layers]:
        layer.trainable = False
    model = Wav2Vec2Classifier(hf)
    model({features.WAVEFORM: tf.zeros([1, num_samples]),
           features.NUM_SAMPLES: tf.constant([num_samples], tf.int64)})  # build the weights
    return model


def _without_utterance_mean(mel: tf.Tensor, lengths: tf.Tensor, cfg: FeatureConfig) -> tf.Tensor:
    """[B, frames, bins] log-mel less each clip's per-bin mean over its valid frames (those
    whose window lies inside its `lengths` samples; at least one): cepstral mean normalization."""
    valid_frames = tf.maximum(1 + (lengths - cfg.frame_length) // cfg.frame_step, 1)
    valid = tf.sequence_mask(valid_frames, tf.shape(mel)[1], dtype=mel.dtype)[..., tf.newaxis]
    mean = tf.reduce_sum(mel * valid, axis=1, keepdims=True) / tf.reduce_sum(valid, axis=1, keepdims=True)
    return mel - mean


class AudioModel(keras.Model):
    """[denoiser ->] backbone. With the denoiser, the enhanced waveform (valid samples
    only) feeds the backbone: as log-mel computed here (VTLP when training, each clip's
    mean removed with `trainer.mel_norm=utterance`, batch-normalized per bin in place of
    the Transform's normalization of the noisy audio; SpecAugment when training), or
    re-normalized per utterance for wav2vec2."""

    def __init__(self, backbone: keras.Model, backbone_name: str, denoiser: keras.Model | None = None,
                 feature_cfg: FeatureConfig | None = None, trainer_cfg: TrainerConfig | None = None, **kwargs):
        super().__init__(name="audio_model", **kwargs)
        self.backbone = backbone
        self.backbone_name = backbone_name
        self.denoiser = denoiser
        self.feature_cfg = feature_cfg
        self.trainer_cfg = trainer_cfg
        if denoiser is not None and backbone_name in LOGMEL_BACKBONES:
            self.mel_norm = keras.layers.BatchNormalization(axis=-1, momentum=0.9, name="mel_norm")

    def call(self, inputs: Dict[str, tf.Tensor], training: bool = False) -> Dict[str, tf.Tensor]:
        if self.denoiser is None:
            backbone_inputs = {k: inputs[k] for k in BACKBONE_INPUTS[self.backbone_name]}
            if training and features.LOG_MEL in backbone_inputs:  # the Transform's normalized log-mel
                backbone_inputs[features.LOG_MEL] = vtlp.augment(
                    backbone_inputs[features.LOG_MEL], self.trainer_cfg.vtlp, self.feature_cfg)
            return {features.LOGITS: self.backbone(backbone_inputs, training=training)}
        waveform, lengths = inputs[features.WAVEFORM], inputs[features.NUM_SAMPLES]
        valid = tf.sequence_mask(lengths, tf.shape(waveform)[1], dtype=tf.float32)
        enhanced = self.denoiser(waveform, training=training) * valid
        if self.backbone_name in LOGMEL_BACKBONES:
            mel = log_mel(enhanced, self.feature_cfg)
            if training:
                mel = vtlp.augment(mel, self.trainer_cfg.vtlp, self.feature_cfg)
            if self.trainer_cfg.mel_norm == "utterance":
                mel = _without_utterance_mean(mel, lengths, self.feature_cfg)
            mel = self.mel_norm(mel, training=training)
            augment = self.trainer_cfg.spec_augment
            if training and augment.enabled:
                mel = spec_augment_batch(mel, augment)
            logits = self.backbone({features.LOG_MEL: mel}, training=training)
        else:
            renormalized = normalize(enhanced, valid)[0]
            logits = self.backbone({features.WAVEFORM: renormalized, features.NUM_SAMPLES: lengths},
                                   training=training)
        outputs = {features.LOGITS: logits, features.OUT_ENHANCED: enhanced}
        if training and features.CONTEXT_NOISY in inputs:  # the multi-second sequences (components/training/context.py)
            outputs[features.OUT_CONTEXT_ENHANCED] = self.denoiser(
                context.join(inputs[features.CONTEXT_NOISY], self.trainer_cfg.context.clips), training=True)
        return outputs


def build_model(cfg: TrainerConfig, feature_cfg: FeatureConfig, num_classes: int) -> AudioModel:
    """The configured model, built (weights created) under the current dtype policy."""
    if cfg.backbone == "logmel_cnn":
        backbone = _logmel_cnn(feature_cfg.num_frames, feature_cfg.num_mel_bins, num_classes)
    elif cfg.backbone == "bc_resnet":
        backbone = _bc_resnet(feature_cfg.num_frames, feature_cfg.num_mel_bins, num_classes, cfg.bc_resnet_width)
    else:
        backbone = _wav2vec2(cfg.wav2vec2, num_classes, feature_cfg.num_samples)
    denoiser = build_denoiser(cfg.denoiser) if cfg.denoiser.enabled else None
    model = AudioModel(backbone, cfg.backbone, denoiser, feature_cfg, cfg)
    n = feature_cfg.num_samples
    model({features.WAVEFORM: tf.zeros([1, n]), features.NUM_SAMPLES: tf.constant([n], tf.int64),
           features.LOG_MEL: tf.zeros([1, feature_cfg.num_frames, feature_cfg.num_mel_bins])})
    if denoiser is not None and not cfg.denoiser.trainable:  # the warm-started denoiser is kept as it is
        denoiser.trainable = False
    if cfg.objective == "denoise":  # the classifier is left as it is
        backbone.trainable = False
        if hasattr(model, "mel_norm"):
            model.mel_norm.trainable = False
    return model
