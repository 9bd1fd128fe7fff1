"""The Trainer's input pipeline: the ExampleGen's records, featurized as the model trains.

The Transform does not materialize its output (TFX's non-materialized Transform): it
analyzes the training split (the log-mel statistics, the label vocabulary) and writes
only its graph. Here the Trainer reads the ExampleGen's serialized tf.Examples (PCM16
WAV bytes: the compact form) and featurizes them batch by batch with the Transform graph
(`transform_features_layer`, the layer the exported model uses) in a parallel map
(`num_parallel_calls=AUTOTUNE`). What stays in memory across epochs is decided by size
(`cache_choice`): the featurized examples when they fit `trainer.cache_budget_mb` (later
epochs only shuffle, batch and augment), else the same in files under the Trainer's run
directory when they fit `trainer.cache_disk_budget_mb`, else the serialized records when they
fit in memory, else nothing (every epoch reads and featurizes the files). Then a seeded shuffle per epoch in a
buffer capped in examples and in bytes (`shuffle_examples`), batches, SpecAugment on the
training stream, prefetch. Memory holds at most the budget, the shuffle buffer and a few
batches, not the corpus nor the clip length; disk holds a float copy only with the disk cache.

Epoch sizes and the cache decision come from the split sizes the WAV ExampleGen
records (`split_sizes`), not from a pass over the data.
"""
from __future__ import annotations

import os
from typing import Iterable, NamedTuple, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_transform as tft
from absl import logging

from components import features
from components.config import TrainerConfig
from components.ingest.report import split_sizes
from components.models.model import input_keys
from components.training import augment as augment_lib
from components.training import background as background_lib
from components.training import context as context_lib
from components.transform.preprocessing import spec_augment_batch

# Examples featurized per call of the Transform graph, and the threads each call's ops may use.
# One 10-s clip per call, its ops on one thread, calls in parallel (the map's AUTOTUNE) keep
# every core busy on cache-sized tensors: 2.3 ms of wall time a clip on 2 cores, against 3.8
# for 8 clips a call with the ops' own thread pools (848 clips, first epoch; batches of 32
# were slower still). tf.data's max_intra_op_parallelism applies to every map of the stream.
FEATURIZE_BATCH = 1
INTRA_OP_THREADS = 1


# The graph-level seed of each epoch's shuffle (training_stream); any fixed value but 0.
_SHUFFLE_GRAPH_SEED = 87654321


class SplitSize(NamedTuple):
    examples: int
    bytes: int  # serialized tf.Example bytes, uncompressed: what an in-memory cache holds


def _files(file_patterns: Iterable[str]) -> list:
    files = sorted(f for pattern in file_patterns for f in tf.io.gfile.glob(pattern))
    if not files:
        raise ValueError(f"no example files match {list(file_patterns)}")
    return files


def records(file_patterns: Iterable[str]) -> tf.data.Dataset:
    """The serialized records, in a fixed order (files read in parallel, interleaved
    deterministically by a count that depends on the files alone, not on the machine).
    Read with TFRecordDataset, not TFX's data accessor: the accessor yields parsed
    tensors, and the compact form to cache and shuffle is the serialized record."""
    files = _files(file_patterns)
    gzipped = {f.endswith(".gz") for f in files}  # as TFX's readers tell (data.example_compression)
    if len(gzipped) > 1:
        raise ValueError(f"{list(file_patterns)} match gzipped (.gz) and uncompressed files alike: "
                         f"one split's files are written by one ExampleGen run, with one compression")
    compression = "GZIP" if gzipped == {True} else ""
    return tf.data.TFRecordDataset(files, compression_type=compression, num_parallel_reads=min(len(files), 8))


def split_size(file_patterns: Sequence[str]) -> SplitSize:
    """Examples and bytes of the split under `file_patterns` (TFX's `<examples>/Split-<name>/*`),
    from what the WAV ExampleGen recorded; counted with a pass when it recorded nothing."""
    split_dir = os.path.dirname(file_patterns[0])
    recorded = split_sizes(os.path.dirname(split_dir)).get(os.path.basename(split_dir)[len("Split-"):])
    if len(file_patterns) == 1 and recorded is not None:
        return SplitSize(int(recorded["examples"]), int(recorded["bytes"]))
    logging.warning("No recorded size for %s (not written by the WAV ExampleGen): counting it", file_patterns)
    examples, size = records(file_patterns).reduce(
        (tf.constant(0, tf.int64), tf.constant(0, tf.int64)),
        lambda acc, record: (acc[0] + 1, acc[1] + tf.cast(tf.strings.length(record), tf.int64)))
    return SplitSize(int(examples), int(size))


def require_examples(file_patterns: Sequence[str], role: str) -> SplitSize:
    """The split's `split_size`, or a clear error when it is empty (the training stream
    would wait forever for a batch; the evaluation would have nothing to score)."""
    size = split_size(file_patterns)
    if size.examples == 0:
        raise ValueError(f"the Trainer's {role} split has no examples ({', '.join(file_patterns)}): its groups "
                         f"all hashed to other splits or its files were rejected; add data or change "
                         f"data.split_buckets")
    return size


def feature_bytes(tf_transform_output: tft.TFTransformOutput, cfg: TrainerConfig) -> int:
    """Bytes of one featurized example: the model's inputs and targets, as the cache holds them."""
    spec = tf_transform_output.transformed_feature_spec()
    return sum(int(np.prod(spec[k].shape, dtype=np.int64)) * spec[k].dtype.size for k in _keys(cfg))


def cache_choice(cfg: TrainerConfig, per_example_features: int, *sizes: SplitSize) -> str:
    """`trainer.cache`: what is kept across epochs. auto: the featurized examples (`per_example_features`
    bytes each) in memory when the splits fit `trainer.cache_budget_mb`, else on disk when they fit
    `trainer.cache_disk_budget_mb`, else their serialized records in memory when those fit the memory
    budget, else nothing."""
    budget = cfg.cache_budget_mb * 2 ** 20
    features_size = sum(s.examples for s in sizes) * per_example_features
    records_size = sum(s.bytes for s in sizes)
    choice = cfg.cache if cfg.cache != "auto" else (
        "features" if features_size <= budget else
        "disk" if features_size <= cfg.cache_disk_budget_mb * 2 ** 20 else
        "records" if records_size <= budget else "none")
    logging.info("Trainer cache: %s (trainer.cache=%s; featurized %.0f MB, records %.0f MB, budgets %d MB in "
                 "memory, %d MB on disk)",
                 {"features": "the featurized examples in memory", "disk": "the featurized examples on disk",
                  "records": "the serialized records",
                  "none": "nothing, every epoch reads and featurizes the files"}[choice], cfg.cache,
                 features_size / 2 ** 20, records_size / 2 ** 20, cfg.cache_budget_mb, cfg.cache_disk_budget_mb)
    return choice


def prepare_disk_cache(path: str) -> bool:
    """Readies `path` (a tf.data file cache's prefix) for this run; True when a whole cache is there to
    read. A cache is whole once its writer read its input to the end (tf.data then writes the index
    and drops the lock file); a run killed while writing leaves a lock file and data without an index,
    which tf.data would refuse ("a concurrent caching iterator"): they are deleted, and it is written anew."""
    folder = os.path.dirname(path)
    tf.io.gfile.makedirs(folder)
    entries = [os.path.join(folder, name) for name in tf.io.gfile.listdir(folder)
               if name.startswith(os.path.basename(path) + ".") or name.startswith(os.path.basename(path) + "_")]
    whole = any(p.endswith(".index") for p in entries) and not any(".lockfile" in p for p in entries)
    if not whole:
        for entry in entries:
            tf.io.gfile.remove(entry)
    return whole


def disk_cache(examples: tf.data.Dataset, path: str) -> tf.data.Dataset:
    """tf.data's file cache at `path`, each element first copied into buffers of its own. Fed the examples as
    unbatched from the featurized batches (slices of them), the file cache (TF 2.16) kept every one in memory
    too: the Trainer's RSS grew by what it wrote, 9.3 GB at 50,000 ten-second clips
    (benchmarks/RESULTS-input_pipeline.md). The copy costs one memcpy of each example."""
    return examples.map(lambda example: tf.nest.map_structure(lambda t: tf.raw_ops.DeepCopy(x=t), example)).cache(path)


def shuffle_examples(cfg: TrainerConfig, size: SplitSize) -> int:
    """Examples the training shuffle buffer holds: `trainer.shuffle_buffer`, and no more than
    `trainer.shuffle_buffer_mb` of the split's records at their mean size, so its memory does
    not grow with the clip length. A function of the split alone (not of the cache), so every
    cache choice and a resumed run shuffle alike."""
    mean_record = max(1, size.bytes // max(1, size.examples))
    return max(1, min(cfg.shuffle_buffer, cfg.shuffle_buffer_mb * 2 ** 20 // mean_record))


# The caches that hold featurized examples: the stream is featurized before the cache, not after it.
FEATURIZED_CACHES = ("features", "disk")


def make_dataset(file_patterns: Sequence[str], tf_transform_output: tft.TFTransformOutput, batch_size: int,
                 cfg: TrainerConfig, training: bool, start_step: int = 0, split: SplitSize | None = None,
                 cache: str = "none", cache_path: str = "") -> tf.data.Dataset:
    """(features dict, targets dict) batches; SpecAugment (log-mel) on the training stream only.
    Targets: LABEL_ID, plus CLEAN_WAVEFORM and HAS_CLEAN when the denoiser is on.

    `cache` (`cache_choice`): "features" featurizes the split once, in file order, batch by
    batch in a parallel map, and keeps the featurized examples in memory, so later epochs
    only shuffle, batch and augment; "disk" does the same with the featurized examples in the files
    `cache_path`.* (tf.data's file cache, `prepare_disk_cache`); "records" keeps the serialized records and featurizes
    every batch of every epoch; "none" reads the files every epoch too. The batches hold
    the same examples in the same order under the same masks whatever is cached (the
    featurized floats may round apart between modes, by about 1e-5).

    The training stream repeats forever, its batches running across epoch boundaries,
    and is a function of `cfg.seed` alone: epoch e is shuffled with a seed drawn from
    (seed, e), and the i-th example of epoch e gets SpecAugment masks drawn from
    (seed, e, i). `start_step` (a resumed run's optimizer step) starts it at the batch
    an uninterrupted run reads at that step: same order, same masks. `split` (the split's
    examples per epoch, which place that batch, and its bytes, which size the shuffle buffer:
    `shuffle_examples`) is `split_size` when not given."""
    if cache not in (*FEATURIZED_CACHES, "records", "none"):
        raise ValueError(f"cache {cache!r}: expected features, disk, records or none")
    if cache == "disk" and not cache_path:
        raise ValueError("cache 'disk' needs a cache_path")
    transform = transformer(tf_transform_output, cfg)

    def featurize(stream: tf.data.Dataset, fn) -> tf.data.Dataset:
        """`fn` (the Transform graph on a batch) over FEATURIZE_BATCH elements at a time in a
        parallel map, then one element at a time again."""
        return stream.batch(FEATURIZE_BATCH).map(fn, num_parallel_calls=tf.data.AUTOTUNE).unbatch()

    examples = records(file_patterns)
    if cache in FEATURIZED_CACHES:
        examples = featurize(examples, transform)
    if cache == "disk":
        prepare_disk_cache(cache_path)
        examples = disk_cache(examples, cache_path)
    elif cache != "none":
        examples = examples.cache()
    if training:
        split = split or split_size(file_patterns)
        first_epoch, offset = divmod(start_step * batch_size, split.examples) if start_step else (0, 0)
        if start_step:
            logging.info("Training data resumes at step %d: epoch %d, example %d of %d",
                         start_step, first_epoch, offset, split.examples)
        buffer = shuffle_examples(cfg, split)
        logging.info("Training shuffle buffer: %d examples (trainer.shuffle_buffer=%d, shuffle_buffer_mb=%d; "
                     "%d examples of %.0f kB on average)", buffer, cfg.shuffle_buffer, cfg.shuffle_buffer_mb,
                     split.examples, split.bytes / max(1, split.examples) / 1e3)
        stream = training_stream(examples, buffer, cfg.seed, first_epoch, offset)
    else:
        stream = examples.map(lambda example: (tf.constant(0, tf.int64), tf.constant(0, tf.int64), example))
    if cache not in FEATURIZED_CACHES:  # (epoch, index, record) -> (epoch, index, features)
        stream = featurize(stream, lambda epochs, indices, batch: (epochs, indices, transform(batch)))
    row_samples = tf_transform_output.transformed_feature_spec()[features.WAVEFORM].shape[0] if (
        training and (cfg.context.clips or cfg.background.probability)) else None
    augment = augmenter(cfg, row_samples) if training else None

    def finish(epochs, indices, batch):
        return model_io(cfg, augment(epochs, indices, batch) if augment else batch)

    options = tf.data.Options()
    options.threading.max_intra_op_parallelism = INTRA_OP_THREADS
    # The training stream starts on iterator creation, not on the first batch asked for: the
    # Trainer traces its step meanwhile (`trainer._train`), so the featurizing functions'
    # one-thread start-up and the shuffle buffer's fill overlap the trace. Not the eval
    # stream: it would take cores from the training's start for batches read an epoch later.
    options.experimental_warm_start = training
    return (stream.batch(batch_size).map(finish, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
            .with_options(options))


def training_stream(serialized: tf.data.Dataset, buffer: int, seed: int, first_epoch: int,
                    offset: int) -> tf.data.Dataset:
    """(epoch, index in epoch, record): the records of `serialized` (one epoch), epoch after
    epoch from `first_epoch`, its first `offset` examples skipped; each epoch shuffled in a
    buffer of `buffer` examples with a seed drawn from (`seed`, epoch) and from nothing else."""
    seed = tf.constant(seed, tf.int64)

    def epoch(e):
        # The graph-level seed of this function's graph alone, fixed: the shuffle's seed pair is
        # (it, the draw below), whatever the process's global seed. (Under a global seed of 0,
        # TensorFlow's get_seed compares a tensor op seed with 0 as a Python bool, and fails.)
        tf.random.set_seed(_SHUFFLE_GRAPH_SEED)
        shuffle_seed = tf.random.stateless_uniform([], tf.stack([seed, e]), 0, 2 ** 31 - 1, tf.int64)
        shuffled = serialized.shuffle(buffer, seed=shuffle_seed, reshuffle_each_iteration=False)
        return shuffled.enumerate().map(lambda i, record: (e, i, record))

    return tf.data.Dataset.range(first_epoch, 2 ** 62).flat_map(epoch).skip(offset)


def _keys(cfg: TrainerConfig) -> tuple:
    """The transformed features the model reads, then its targets."""
    targets = (features.LABEL_ID,) + ((features.CLEAN_WAVEFORM, features.HAS_CLEAN) if cfg.denoiser.enabled else
                                      (features.HAS_CLEAN,) if cfg.background.probability else ())  # (which to mix)
    return tuple(input_keys(cfg)) + targets


def transformer(tf_transform_output: tft.TFTransformOutput, cfg: TrainerConfig):
    """[B] serialized records -> {key: [B, ...]}: parsed, run through the Transform graph (the
    layer the exported model uses), the model's inputs and targets picked (`_keys`)."""
    raw_spec = tf_transform_output.raw_feature_spec()
    shapes = {k: spec.shape for k, spec in tf_transform_output.transformed_feature_spec().items()}
    tft_layer = tf_transform_output.transform_features_layer()
    keys = _keys(cfg)

    def transform(records):
        transformed = tft_layer(tf.io.parse_example(records, raw_spec))
        return {k: tf.ensure_shape(transformed[k], [None, *shapes[k]]) for k in keys}

    return transform


def augmenter(cfg: TrainerConfig, row_samples: int | None = None):
    """(epochs [B], indices [B], featurized batch) -> the batch with SpecAugment on its log-mel
    (when on and the model reads log-mel) and speed, rooms and calls on its waveforms (`trainer.augment`,
    when the model reads the waveform: components/training/augment.py), plus the denoiser's multi-second
    sequences (`trainer.context`, components/training/context.py: `row_samples` is a waveform's length);
    example i of epoch e under the draws of seed (seed, e, i)."""
    seed = tf.constant(cfg.seed, tf.int64)
    keys = input_keys(cfg)
    masks = cfg.spec_augment.enabled and features.LOG_MEL in keys
    waves = features.WAVEFORM in keys and (cfg.augment.reverb_probability > 0 or cfg.augment.phone_probability > 0
                                           or cfg.augment.speed_probability > 0
                                           or cfg.augment.placement_probability > 0 or cfg.background.probability > 0)
    rirs = (tf.constant(augment_lib.room_impulse_responses(cfg.augment, cfg.seed))
            if waves and cfg.augment.reverb_probability > 0 else None)
    sequences = (context_lib.make_sequences(cfg, context_lib.noise_bank(
        cfg.context.noise_base, cfg.context.clips * row_samples, cfg.context.max_noise_mb), rirs)
        if cfg.context.clips else None)
    mix_background = (background_lib.make_mixer(cfg.background, context_lib.noise_bank(
        cfg.background.noise_base, row_samples, cfg.background.max_noise_mb))
        if waves and cfg.background.probability > 0 else None)

    def augment(epochs, indices, batch):
        if not (masks or waves or sequences):
            return batch
        seeds = tf.map_fn(lambda e_i: tf.random.experimental.stateless_fold_in(tf.stack([seed, e_i[0]]), e_i[1]),
                          (epochs, indices), fn_output_signature=tf.TensorSpec([2], tf.int64))
        out = dict(batch)
        if sequences:  # from the clean references as they came, before this batch's own augmentation
            out.update(sequences(seeds, batch))
        if masks:
            out[features.LOG_MEL] = spec_augment_batch(batch[features.LOG_MEL], cfg.spec_augment, seeds)
        if waves:
            noisy, lengths = batch[features.WAVEFORM], batch[features.NUM_SAMPLES]
            clean = batch.get(features.CLEAN_WAVEFORM, tf.zeros_like(noisy))
            if mix_background:  # (the speech's power over its own samples, before placement adds silence)
                valid = tf.sequence_mask(lengths, tf.shape(noisy)[1], dtype=noisy.dtype)
                speech_power = tf.reduce_sum(tf.square(noisy) * valid, 1) / tf.maximum(tf.reduce_sum(valid, 1), 1.0)
            if cfg.augment.placement_probability > 0:
                noisy, clean, lengths = augment_lib.place(noisy, clean, lengths, seeds,
                                                          cfg.augment.placement_probability)
            if mix_background:
                has_clean = tf.not_equal(batch[features.HAS_CLEAN], 0)
                mixed_noisy, mixed = mix_background(seeds, noisy, lengths, speech_power, has_clean)
                clean = tf.where(mixed[:, tf.newaxis], noisy, clean)  # the clean recording is the reference
                noisy = mixed_noisy
                out[features.HAS_CLEAN] = tf.cast(mixed | has_clean, batch[features.HAS_CLEAN].dtype)
            noisy, clean, lengths = augment_lib.augment_waveforms(noisy, clean, lengths, seeds, cfg.augment, rirs)
            out[features.WAVEFORM] = noisy
            out[features.NUM_SAMPLES] = tf.cast(lengths, batch[features.NUM_SAMPLES].dtype)
            if features.CLEAN_WAVEFORM in batch:
                out[features.CLEAN_WAVEFORM] = clean
        return out

    return augment


def model_io(cfg: TrainerConfig, batch: dict):
    """A featurized batch -> (inputs, targets) as the model and the loss take them; the
    denoiser's multi-second sequences, where the batch has them, go in with the inputs (noisy)
    and the targets (clean)."""
    x = {k: batch[k] for k in input_keys(cfg)}
    y = {k: batch[k] if k == features.CLEAN_WAVEFORM else tf.reshape(batch[k], [-1])
         for k in _keys(cfg) if k not in x}
    if features.CONTEXT_NOISY in batch:
        x[features.CONTEXT_NOISY], y[features.CONTEXT_CLEAN] = (
            batch[features.CONTEXT_NOISY], batch[features.CONTEXT_CLEAN])
    return x, y
