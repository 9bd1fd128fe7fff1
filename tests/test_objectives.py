"""The training objectives with the denoiser front end: classify, denoise, joint.
Loss values against a hand computation, which weights move, and config checks."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from components import features
from components.audio.snr import si_snr_db
from components.config import (
    ConfigError,
    ContextConfig,
    DenoiserConfig,
    FeatureConfig,
    PipelineConfig,
    TrainerConfig,
    load_config,
)
from components.models.denoiser import hybrid_loss, multi_resolution_stft_loss
from components.models.model import build_model, input_keys
from components.training import loop

FEATS = FeatureConfig(clip_seconds=0.215, num_mel_bins=16)
SMALL = DenoiserConfig(enabled=True, channels=16, gru_units=8)


def _cfg(objective, **kw):
    settings = dict(backbone="logmel_cnn", objective=objective, denoiser=SMALL, learning_rate=1e-2,
                    warmup_ratio=0.0, batch_size=3, grad_accum_steps=1)
    return TrainerConfig(**{**settings, **kw})


def _batch():
    rng = np.random.default_rng(0)
    n = FEATS.num_samples
    clean = rng.standard_normal((3, n)).astype(np.float32)
    noisy = clean + rng.standard_normal((3, n)).astype(np.float32)
    lengths = np.array([n, n - 1000, n], np.int64)
    for i, length in enumerate(lengths):
        noisy[i, length:] = clean[i, length:] = 0.0
    x = {features.WAVEFORM: tf.constant(noisy), features.NUM_SAMPLES: tf.constant(lengths)}
    y = {features.LABEL_ID: tf.constant([0, 1, 2], tf.int64), features.CLEAN_WAVEFORM: tf.constant(clean),
         features.HAS_CLEAN: tf.constant([1, 1, 0], tf.int64)}
    return x, y


@pytest.mark.parametrize("objective", ["classify", "denoise", "joint"])
def test_loss_is_cross_entropy_plus_weighted_negative_si_snr_on_referenced_examples(objective):
    tf.random.set_seed(0)
    cfg = _cfg(objective, denoise_weight=0.5)
    model = build_model(cfg, FEATS, 3)
    assert input_keys(cfg) == (features.WAVEFORM, features.NUM_SAMPLES)
    x, y = _batch()
    outputs = model(x, training=False)
    loss, _, stats = loop.make_loss(cfg)(outputs, x, y, 3.0, 2.0)
    si_snr_sum, with_clean = stats["si_snr_sum"], stats["with_clean"]
    logits = outputs[features.LOGITS].numpy()
    log_softmax = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    cross_entropy = -np.mean(log_softmax[np.arange(3), y[features.LABEL_ID].numpy()])
    enhanced = outputs[features.OUT_ENHANCED].numpy()
    lengths = x[features.NUM_SAMPLES].numpy()
    si_snrs = [si_snr_db(y[features.CLEAN_WAVEFORM].numpy()[i, :lengths[i]], enhanced[i, :lengths[i]])
               for i in (0, 1)]  # the third example has no reference
    # Cross-entropy over all 3 examples, SI-SNR over the 2 with a reference.
    expected = {"classify": cross_entropy, "denoise": -sum(si_snrs) / 2,
                "joint": cross_entropy + 0.5 * -sum(si_snrs) / 2}[objective]
    assert float(loss) == pytest.approx(expected, rel=1e-3, abs=1e-3)
    assert float(with_clean) == 2 and float(si_snr_sum) == pytest.approx(sum(si_snrs), abs=1e-2)


def test_the_stft_loss_weight_adds_the_multi_resolution_stft_loss_of_referenced_examples():
    tf.random.set_seed(0)
    cfg = _cfg("joint", denoise_weight=0.5)
    model = build_model(cfg, FEATS, 3)
    x, y = _batch()
    outputs = model(x, training=False)
    without = loop.make_loss(cfg)(outputs, x, y, 3.0, 2.0)[0]
    with_stft = loop.make_loss(dataclasses.replace(cfg, stft_loss_weight=2.0))(outputs, x, y, 3.0, 2.0)[0]
    valid = tf.sequence_mask(x[features.NUM_SAMPLES], FEATS.num_samples)
    stft = multi_resolution_stft_loss(y[features.CLEAN_WAVEFORM], outputs[features.OUT_ENHANCED], valid).numpy()
    assert stft[:2].min() > 0.1  # a term that moves the loss
    assert float(with_stft - without) == pytest.approx(0.5 * 2.0 * stft[:2].sum() / 2, rel=1e-4)


def test_the_hybrid_loss_replaces_negative_si_snr_on_referenced_examples():
    tf.random.set_seed(0)
    cfg = _cfg("denoise", denoise_loss="hybrid")
    model = build_model(cfg, FEATS, 3)
    x, y = _batch()
    outputs = model(x, training=False)
    loss = loop.make_loss(cfg)(outputs, x, y, 3.0, 2.0)[0]
    valid = tf.sequence_mask(x[features.NUM_SAMPLES], FEATS.num_samples)
    hybrid = hybrid_loss(y[features.CLEAN_WAVEFORM], outputs[features.OUT_ENHANCED], valid).numpy()
    assert float(loss) == pytest.approx(hybrid[:2].sum() / 2, rel=1e-4)


def test_multi_second_sequences_add_their_weighted_negative_si_snr_per_sequence():
    """trainer.context: the rows of CONTEXT_NOISY, 2 to a sequence, go through the denoiser
    joined; their term is weight x the mean -SI-SNR over the batch's sequences."""
    tf.random.set_seed(0)
    cfg = _cfg("joint", denoise_weight=0.5, batch_size=4,
               context=ContextConfig(clips=2, weight=3.0, noise_base="unused-here"))
    model = build_model(cfg, FEATS, 3)
    rng = np.random.default_rng(1)
    n = FEATS.num_samples
    clean = rng.standard_normal((4, n)).astype(np.float32)
    context_clean = rng.standard_normal((4, n)).astype(np.float32)
    context_noisy = context_clean + 0.5 * rng.standard_normal((4, n)).astype(np.float32)
    x = {features.WAVEFORM: tf.constant(clean + 1.0), features.NUM_SAMPLES: tf.constant([n] * 4, tf.int64),
         features.CONTEXT_NOISY: tf.constant(context_noisy)}
    y = {features.LABEL_ID: tf.constant([0, 1, 2, 0], tf.int64), features.CLEAN_WAVEFORM: tf.constant(clean),
         features.HAS_CLEAN: tf.constant([1, 1, 1, 1], tf.int64), features.CONTEXT_CLEAN: tf.constant(context_clean)}
    outputs = model(x, training=True)
    assert model(x, training=False).keys() == {features.LOGITS, features.OUT_ENHANCED}  # training only
    joined = outputs[features.OUT_CONTEXT_ENHANCED].numpy()
    assert joined.shape == (2, 2 * n)
    loss, _, stats = loop.make_loss(cfg)(outputs, x, y, 4.0, 4.0)
    without = {k: v for k, v in outputs.items() if k != features.OUT_CONTEXT_ENHANCED}
    base = loop.make_loss(cfg)(without, x, y, 4.0, 4.0)[0]
    si_snrs = [si_snr_db(context_clean[2 * g:2 * g + 2].reshape(-1), joined[g]) for g in (0, 1)]
    assert float(stats["context_count"]) == 2
    assert float(stats["context_si_snr_sum"]) == pytest.approx(sum(si_snrs), abs=1e-2)
    assert float(loss - base) == pytest.approx(0.5 * 3.0 * -sum(si_snrs) / 2, rel=1e-3, abs=1e-3)
    # The denoiser on the joined sequences, not on each row alone (its BiGRU carries across the join).
    np.testing.assert_allclose(model.denoiser(tf.reshape(context_noisy, [2, 2 * n]), training=True), joined,
                               atol=1e-5)
    rows = model.denoiser(tf.constant(context_noisy), training=True).numpy().reshape(2, 2 * n)
    assert np.abs(rows - joined).max() > 1e-3


def _train_step(model, cfg, total_steps=10):
    """The compiled training step of `model` under `cfg`, and `_batch()` to feed it."""
    optimizer = loop.build_optimizer(cfg, total_steps=total_steps)
    optimizer.build(model.trainable_variables)
    x, y = _batch()
    spec = tf.nest.map_structure(lambda t: tf.TensorSpec([None, *t.shape[1:]], t.dtype), (x, y))
    return loop.make_train_step(model, optimizer, tf.distribute.get_strategy(), spec, 3, 1, cfg), (x, y)


def test_denoise_objective_trains_the_denoiser_and_leaves_the_classifier():
    tf.random.set_seed(0)
    cfg = _cfg("denoise")
    model = build_model(cfg, FEATS, 3)
    step, batch = _train_step(model, cfg)
    classifier = [v.numpy().copy() for v in model.backbone.weights]
    denoiser = [v.numpy().copy() for v in model.denoiser.trainable_weights]
    for _ in range(3):
        step(batch)
    for before, var in zip(classifier, model.backbone.weights):
        np.testing.assert_array_equal(before, var.numpy())
    assert all(not np.array_equal(b, v.numpy()) for b, v in zip(denoiser, model.denoiser.trainable_weights))


def test_a_held_denoiser_keeps_its_warm_start_while_the_classifier_trains(tmp_path):
    """trainer.denoiser.trainable=false: the classifier learns on the output of the denoiser as
    warm_start gave it; the denoiser's weights do not move."""
    from components.models import denoiser_weights

    tf.random.set_seed(0)
    start = build_model(_cfg("classify"), FEATS, 3)
    denoiser_weights.save(start.denoiser, str(tmp_path))
    cfg = _cfg("classify", denoiser=dataclasses.replace(SMALL, warm_start=str(tmp_path), trainable=False))
    tf.random.set_seed(1)
    model = build_model(cfg, FEATS, 3)
    denoiser_weights.load(model.denoiser, cfg.denoiser.warm_start)
    assert model.denoiser.weights and not any(
        v.ref() in {w.ref() for w in model.trainable_variables} for v in model.denoiser.weights)
    step, batch = _train_step(model, cfg)
    classifier = [v.numpy().copy() for v in model.backbone.trainable_weights]
    for _ in range(3):
        step(batch)
    for saved, var in zip(start.denoiser.weights, model.denoiser.weights):
        np.testing.assert_array_equal(saved.numpy(), var.numpy())
    assert all(not np.array_equal(b, v.numpy()) for b, v in zip(classifier, model.backbone.trainable_weights))


def test_a_held_denoiser_needs_weights_to_hold_and_no_denoising_objective():
    with pytest.raises(ValueError, match="trainable=false holds the denoiser's weights: set .*warm_start"):
        _cfg("classify", denoiser=dataclasses.replace(SMALL, trainable=False))
    with pytest.raises(ValueError, match="objective=joint trains the denoiser, which .*trainable=false holds"):
        _cfg("joint", denoiser=dataclasses.replace(SMALL, trainable=False, warm_start="pretrained"))


def test_objectives_that_train_the_denoiser_need_it_enabled():
    with pytest.raises(ValueError, match="trainer.objective=joint trains the denoiser"):
        TrainerConfig(objective="joint")
    with pytest.raises(ConfigError, match="trainer.objective: got 'both', expected 'classify', 'denoise' or 'joint'"):
        load_config(None, ["trainer.objective=both", "trainer.denoiser.enabled=true"])
    with pytest.raises(ValueError, match="min_si_snr_improvement_db gates the denoiser"):
        PipelineConfig.from_dict({"evaluator": {"min_si_snr_improvement_db": 3.0}})
    assert PipelineConfig.from_dict({"evaluator": {"min_si_snr_improvement_db": 3.0},
                                     "trainer": {"denoiser": {"enabled": True}}})


@pytest.fixture(autouse=True)
def _float32_policy_after():
    yield
    keras.mixed_precision.set_global_policy("float32")


def test_joint_model_trains_under_mixed_float16():
    keras.mixed_precision.set_global_policy("mixed_float16")
    tf.random.set_seed(0)
    cfg = _cfg("joint", learning_rate=3e-3)
    model = build_model(cfg, FEATS, 3)
    assert model.denoiser.conv.compute_dtype == "float16"
    _fits_one_batch(model, cfg)


def _fits_one_batch(model, cfg, steps=20):
    """Trains on one fixed batch; the loss, measured without training-time randomness
    (SpecAugment, latent masking) before and after, must drop, every step finite."""
    x, y = _batch()
    loss_fn = loop.make_loss(cfg)
    before = float(loss_fn(model(x, training=False), x, y, 3.0, 2.0)[0])
    step, _ = _train_step(model, cfg, total_steps=steps)
    losses = [float(step((x, y))["loss"]) for _ in range(steps)]
    after = float(loss_fn(model(x, training=False), x, y, 3.0, 2.0)[0])
    assert np.all(np.isfinite(losses)) and after < before, (before, after, losses)


def test_wav2vec2_backbone_consumes_the_enhanced_audio_renormalized():
    from components.config import Wav2Vec2Config
    from tests.test_wav2vec2 import TINY

    tf.random.set_seed(0)
    cfg = dataclasses.replace(_cfg("joint"), backbone="wav2vec2", learning_rate=1e-3,
                              wav2vec2=Wav2Vec2Config(config_overrides=TINY))
    model = build_model(cfg, FEATS, 3)
    x, y = _batch()
    seen = {}
    original = model.backbone.call

    def spy(inputs, training=False):
        seen.update(inputs)
        return original(inputs, training=training)

    model.backbone.call = spy
    # A fixed low-pass mask, whatever the other initial weights (they depend on test order):
    # the enhanced audio then differs from the noisy audio by a known, large margin.
    mask = model.denoiser.to_mask
    bins = mask.bias.shape[0]
    mask.kernel.assign(tf.zeros_like(mask.kernel))
    mask.bias.assign(tf.where(tf.range(bins) < bins // 8, 4.0, -4.0))
    outputs = model(x, training=False)
    waveform, lengths = seen[features.WAVEFORM].numpy(), x[features.NUM_SAMPLES].numpy()
    for i, n in enumerate(lengths):  # zero mean, unit variance over the valid samples, zeros after
        assert waveform[i, :n].mean() == pytest.approx(0.0, abs=1e-3)
        assert waveform[i, :n].std() == pytest.approx(1.0, abs=1e-2)
        assert not np.any(waveform[i, n:])
        enhanced = outputs[features.OUT_ENHANCED].numpy()[i, :n]
        noisy = x[features.WAVEFORM].numpy()[i, :n]
        np.testing.assert_allclose(waveform[i, :n], (enhanced - enhanced.mean()) / enhanced.std(), atol=1e-3)
        difference = np.abs(waveform[i, :n] - (noisy - noisy.mean()) / noisy.std()).mean()
        assert difference > 0.1  # not the noisy audio
    model.backbone.call = original
    _fits_one_batch(model, cfg)


def test_micro_batch_losses_add_up_to_the_whole_batch_loss():
    """What gradient accumulation and replicas rely on: each term is normalized by the
    global counts, so the parts' losses sum to the whole batch's."""
    tf.random.set_seed(0)
    cfg = _cfg("joint", denoise_weight=0.7)
    model = build_model(cfg, FEATS, 3)
    x, y = _batch()
    loss_fn = loop.make_loss(cfg)
    whole = float(loss_fn(model(x), x, y, 3.0, 2.0)[0])
    parts = 0.0
    for part in (slice(0, 1), slice(1, 3)):
        px, py = tf.nest.map_structure(lambda t: t[part], (x, y))
        parts += float(loss_fn(model(px), px, py, 3.0, 2.0)[0])
    assert parts == pytest.approx(whole, rel=1e-4)
