"""The Wav2Vec2 backbone: loaded from a save_pretrained directory, frozen as
configured, an attention mask only for layer-norm feature encoders, latent time
masking in training only, and trainable under mixed_float16 with a grouped
positional convolution (groups > 1)."""
import dataclasses

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras
import transformers

from components import features
from components.config import FeatureConfig, TrainerConfig, Wav2Vec2Config
from components.models.model import build_model
from components.training import loop

# A tiny Wav2Vec2 (docs/environment.md): trains on the CPU in seconds.
TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
            conv_dim=(32, 32, 32), conv_kernel=(8, 3, 3), conv_stride=(4, 2, 2),
            num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, vocab_size=8)
# Dropout off: in training the model is then random only through the latent time masks.
NO_DROPOUT = dict(hidden_dropout=0.0, activation_dropout=0.0, attention_dropout=0.0, feat_proj_dropout=0.0,
                  final_dropout=0.0)
SAMPLES = 4000
FEATS = FeatureConfig(clip_seconds=SAMPLES / features.SAMPLE_RATE)


def save_tiny_pretrained(path) -> str:
    """A tiny TFWav2Vec2Model written with save_pretrained, as a user would ship one."""
    base = transformers.TFWav2Vec2Model(transformers.Wav2Vec2Config(**TINY))
    base(tf.zeros([1, SAMPLES]))
    base.save_pretrained(str(path))
    return str(path)


def _cfg(**w2v):
    return TrainerConfig(backbone="wav2vec2", learning_rate=1e-3, batch_size=4, grad_accum_steps=1,
                         wav2vec2=dataclasses.replace(Wav2Vec2Config(config_overrides=TINY), **w2v))


def _batch(n=4):
    rng = np.random.default_rng(0)
    x = {features.WAVEFORM: tf.constant(rng.standard_normal((n, SAMPLES)), tf.float32),
         features.NUM_SAMPLES: tf.constant([SAMPLES, 3000, 2000, SAMPLES][:n], tf.int64)}
    return x, tf.constant([0, 1, 2, 0][:n], tf.int64)


@pytest.fixture(autouse=True)
def _float32_policy_after():
    yield
    keras.mixed_precision.set_global_policy("float32")


def test_loads_backbone_weights_from_a_save_pretrained_directory(tmp_path):
    path = save_tiny_pretrained(tmp_path / "tiny")
    saved = transformers.TFWav2Vec2Model.from_pretrained(path)
    model = build_model(_cfg(pretrained=path), FEATS, 3)
    hf = model.backbone.hf_model
    assert hf.config.layerdrop == 0.0 and hf.config.num_labels == 3
    for ours, theirs in ((hf.wav2vec2.feature_extractor, saved.wav2vec2.feature_extractor),
                         (hf.wav2vec2.encoder.layer[1], saved.wav2vec2.encoder.layer[1])):
        for a, b in zip(ours.weights, theirs.weights):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_feature_encoder_and_first_layers_are_frozen_as_configured():
    model = build_model(_cfg(freeze_feature_encoder=True, freeze_layers=1), FEATS, 3)
    trainable = {v.ref() for v in model.trainable_variables}
    hf = model.backbone.hf_model
    assert not any(v.ref() in trainable for v in hf.wav2vec2.feature_extractor.weights)
    assert not any(v.ref() in trainable for v in hf.wav2vec2.encoder.layer[0].weights)
    assert all(v.ref() in trainable for v in hf.wav2vec2.encoder.layer[1].weights)
    with pytest.raises(ValueError, match="freeze_layers=5 but the model has 2"):
        build_model(_cfg(freeze_layers=5), FEATS, 3)


@pytest.mark.parametrize("norm", ["group", "layer"])
def test_only_layer_norm_feature_encoders_get_the_attention_mask_and_padding_is_zeroed(norm):
    tf.random.set_seed(0)
    model = build_model(_cfg(config_overrides={**TINY, **NO_DROPOUT, "feat_extract_norm": norm}), FEATS, 3)
    hf = model.backbone.hf_model
    x, _ = _batch()  # noise past num_samples too: the model must zero it
    valid = tf.sequence_mask(x[features.NUM_SAMPLES], SAMPLES, dtype=tf.int32)
    zero_padded = x[features.WAVEFORM] * tf.cast(valid, tf.float32)
    ours = model(x, training=False)[features.LOGITS].numpy()
    unmasked = hf(zero_padded, training=False).logits.numpy()
    masked = hf(zero_padded, attention_mask=valid, training=False).logits.numpy()
    expected, other = (unmasked, masked) if norm == "group" else (masked, unmasked)
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)
    assert not np.allclose(ours, other, rtol=1e-3, atol=1e-4)  # the batch is padded: the mask matters


def test_latent_time_masking_is_on_in_training_only():
    tf.random.set_seed(1)
    x, _ = _batch()
    model = build_model(_cfg(config_overrides={**TINY, **NO_DROPOUT}, mask_time_prob=0.5, mask_time_length=2),
                        FEATS, 3)
    eval_a, eval_b = (model(x, training=False)[features.LOGITS] for _ in range(2))
    np.testing.assert_array_equal(eval_a.numpy(), eval_b.numpy())
    train_a, train_b = (model(x, training=True)[features.LOGITS] for _ in range(2))
    assert not np.allclose(train_a.numpy(), eval_a.numpy())
    assert not np.allclose(train_a.numpy(), train_b.numpy())
    # The control: without masking, training mode is deterministic and equals inference
    # (dropout is off), so the differences above are the masks'.
    unmasked = build_model(_cfg(config_overrides={**TINY, **NO_DROPOUT}, mask_time_prob=0.0), FEATS, 3)
    np.testing.assert_allclose(unmasked(x, training=True)[features.LOGITS].numpy(),
                               unmasked(x, training=False)[features.LOGITS].numpy(), rtol=1e-6, atol=1e-7)


def test_trains_under_mixed_float16_with_grouped_positional_conv_and_every_gradient():
    keras.mixed_precision.set_global_policy("mixed_float16")
    tf.random.set_seed(0)
    cfg = _cfg(freeze_feature_encoder=False)
    model = build_model(cfg, FEATS, 3)
    assert model.backbone.hf_model.config.num_conv_pos_embedding_groups == 2
    optimizer = loop.build_optimizer(cfg, total_steps=20)
    optimizer.build(model.trainable_variables)  # as run_fn does: no variables created inside the step
    batch = _batch()
    spec = (({k: tf.TensorSpec([None, *v.shape[1:]], v.dtype) for k, v in batch[0].items()}),
            tf.TensorSpec([None], tf.int64))
    step = loop.make_train_step(model, optimizer, tf.distribute.get_strategy(), spec, 4, 1)
    with tf.GradientTape() as tape:  # every trainable variable gets a gradient
        loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
            batch[1], tf.cast(model(batch[0], training=True)[features.LOGITS], tf.float32), from_logits=True))
    missing = [v.name for v, g in zip(model.trainable_variables, tape.gradient(loss, model.trainable_variables))
               if g is None and "masked_spec_embed" not in v.name]
    assert not missing
    losses = [float(step(batch)["loss"]) for _ in range(8)]
    assert np.all(np.isfinite(losses))
    assert step.experimental_get_tracing_count() == 1


def _xla_compiled_functions(fn, *args):
    """The functions that a tf.function's graph of fn(*args) hands to XLA (jit_compile=True)."""
    library = tf.function(fn).get_concrete_function(*args).graph.as_graph_def().library
    return [f.signature.name for f in library.function if f.attr["_XlaMustCompile"].b]


def test_the_grouped_positional_conv_runs_tensorflows_kernel_in_graphs_with_xlas_results():
    from tf_keras.src.layers.convolutional.base_conv import Conv

    tf.random.set_seed(0)
    model = build_model(_cfg(freeze_feature_encoder=False), FEATS, 3)
    conv = model.backbone.hf_model.wav2vec2.encoder.pos_conv_embed.conv
    assert conv.groups == 2
    x = tf.random.normal([2, 12, 32])
    assert not _xla_compiled_functions(conv, x)  # tf_keras's nested XLA function is not in the graph

    def output_and_gradients():
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.square(conv(x)))
        return [y, *tape.gradient(y, [x, *conv.trainable_variables])]

    ours = output_and_gradients()
    conv._jit_compiled_convolution_op = Conv._jit_compiled_convolution_op.__get__(conv, Conv)  # tf_keras's XLA path
    assert _xla_compiled_functions(conv, x)  # (the check sees it when it is there)
    for a, b in zip(ours, output_and_gradients()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)


def _loss(model, batch):
    logits = tf.cast(model(batch[0], training=False)[features.LOGITS], tf.float32)
    return float(tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(batch[1], logits, from_logits=True)))


def test_a_mixed_float16_step_lowers_the_loss_of_its_batch():
    """Deterministic: dropout and masking off, so the step's forward pass is the inference one."""
    keras.mixed_precision.set_global_policy("mixed_float16")
    tf.random.set_seed(0)
    cfg = _cfg(config_overrides={**TINY, **NO_DROPOUT}, mask_time_prob=0.0, freeze_feature_encoder=False)
    model = build_model(cfg, FEATS, 3)
    optimizer = loop.build_optimizer(cfg, total_steps=200)  # lr above 0 from step 1 to 199
    optimizer.build(model.trainable_variables)
    batch = _batch()
    spec = (({k: tf.TensorSpec([None, *v.shape[1:]], v.dtype) for k, v in batch[0].items()}),
            tf.TensorSpec([None], tf.int64))
    step = loop.make_train_step(model, optimizer, tf.distribute.get_strategy(), spec, 4, 1)
    before = _loss(model, batch)
    first = step(batch)  # the warmup's first step has learning rate 0: the weights do not move
    assert float(first["loss"]) == pytest.approx(before, rel=1e-3)  # the step's loss is the batch's
    assert _loss(model, batch) == pytest.approx(before, rel=1e-6)
    # Until two steps with a learning rate above 0 are applied. The dynamic loss scale
    # starts at 2**15; a float16 overflow skips the step (the weights stay) and halves the
    # scale, while the iteration (and so the learning rate) still advances.
    applied = 0
    for _ in range(40):
        scale, lr_above_0 = float(optimizer.loss_scale), int(optimizer.iterations) >= 1
        step(batch)
        applied += lr_above_0 and float(optimizer.loss_scale) >= scale
        if applied == 2:
            break
    assert applied == 2, "the steps kept being skipped: the gradients never became finite"
    assert _loss(model, batch) < before
