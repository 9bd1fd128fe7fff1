"""The Trainer's input pipeline: the ExampleGen's records, featurized as the model trains.

The Transform does not materialize its output (TFX's non-materialized Transform): it
analyzes the training split (the log-mel statistics, the label vocabulary) and writes
only its graph. Here the Trainer reads the ExampleGen's serialized tf.Examples (PCM16
WAV bytes: the compact form), caches them in memory when they fit
`trainer.cache_budget_mb`, shuffles them per epoch, batches them, and only then parses
and featurizes each batch with the Transform graph (`transform_features_layer`, the
layer the exported model uses) in a parallel map (`num_parallel_calls=AUTOTUNE`),
SpecAugment on the training stream, and prefetches. Memory holds the shuffle buffer
and a few batches, not the corpus, and disk holds no float copy of the audio.

Epoch sizes and the cache decision come from the split sizes the WAV ExampleGen
records (`split_sizes`), not from a pass over the data.
"""
from __future__ import annotations

import os
from typing import Iterable, NamedTuple, Sequence

import tensorflow as tf
import tensorflow_transform as tft
from absl import logging

from components import features
from components.config import TrainerConfig
from components.model import input_keys
from components.transform import spec_augment
from components.wav_example_gen.executor import split_sizes


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
    compression = "GZIP" if all(f.endswith(".gz") for f in files) else ""
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


def cache_in_memory(cfg: TrainerConfig, *sizes: SplitSize) -> bool:
    """`trainer.cache`: memory, none, or auto (memory when the splits' serialized records
    fit `trainer.cache_budget_mb`; else every epoch reads the files again)."""
    total_mb = sum(s.bytes for s in sizes) / 2 ** 20
    chosen = cfg.cache == "memory" or (cfg.cache == "auto" and total_mb <= cfg.cache_budget_mb)
    logging.info("Trainer cache: %s (trainer.cache=%s, %.0f MB of records, budget %d MB)",
                 "in memory" if chosen else "none, the files are read every epoch", cfg.cache, total_mb,
                 cfg.cache_budget_mb)
    return chosen


def make_dataset(file_patterns: Sequence[str], tf_transform_output: tft.TFTransformOutput, batch_size: int,
                 cfg: TrainerConfig, training: bool, start_step: int = 0, num_examples: int | None = None,
                 cache: bool = False) -> tf.data.Dataset:
    """(features dict, targets dict) batches; SpecAugment (log-mel) on the training stream only.
    Targets: LABEL_ID, plus CLEAN_WAVEFORM and HAS_CLEAN when the denoiser is on.

    The training stream repeats forever, its batches running across epoch boundaries,
    and is a function of `cfg.seed` alone: epoch e is shuffled with a seed drawn from
    (seed, e), and the i-th example of epoch e gets SpecAugment masks drawn from
    (seed, e, i). `start_step` (a resumed run's optimizer step) starts it at the batch
    an uninterrupted run reads at that step: same order, same masks. `num_examples`,
    the examples per epoch, places that batch (`split_size` when not given)."""
    serialized = records(file_patterns)
    if cache:
        serialized = serialized.cache()
    if training:
        if start_step and num_examples is None:
            num_examples = split_size(file_patterns).examples
        first_epoch, offset = divmod(start_step * batch_size, num_examples) if start_step else (0, 0)
        if start_step:
            logging.info("Training data resumes at step %d: epoch %d, example %d of %d",
                         start_step, first_epoch, offset, num_examples)
        stream = training_stream(serialized, cfg, first_epoch, offset)
    else:
        stream = serialized.map(lambda record: (tf.constant(0, tf.int64), tf.constant(0, tf.int64), record))
    featurize = featurizer(tf_transform_output, cfg, augment=training)
    return stream.batch(batch_size).map(featurize, num_parallel_calls=tf.data.AUTOTUNE) \
        .prefetch(tf.data.AUTOTUNE)


def training_stream(serialized: tf.data.Dataset, cfg: TrainerConfig, first_epoch: int,
                    offset: int) -> tf.data.Dataset:
    """(epoch, index in epoch, record): the records of `serialized` (one epoch), epoch after
    epoch from `first_epoch`, its first `offset` examples skipped; each epoch shuffled."""
    seed = tf.constant(cfg.seed, tf.int64)

    def epoch(e):
        shuffle_seed = tf.random.stateless_uniform([], tf.stack([seed, e]), 0, 2 ** 31 - 1, tf.int64)
        shuffled = serialized.shuffle(cfg.shuffle_buffer, seed=shuffle_seed, reshuffle_each_iteration=False)
        return shuffled.enumerate().map(lambda i, record: (e, i, record))

    return tf.data.Dataset.range(first_epoch, 2 ** 62).flat_map(epoch).skip(offset)


def featurizer(tf_transform_output: tft.TFTransformOutput, cfg: TrainerConfig, augment: bool):
    """A batch of (epochs, indices, serialized records) -> (features, targets): parsed, run
    through the Transform graph, the model's keys picked, SpecAugment applied if `augment`."""
    keys = input_keys(cfg)
    targets = (features.LABEL_ID,) + ((features.CLEAN_WAVEFORM, features.HAS_CLEAN) if cfg.denoiser.enabled else ())
    raw_spec = tf_transform_output.raw_feature_spec()
    shapes = {k: spec.shape for k, spec in tf_transform_output.transformed_feature_spec().items()}
    tft_layer = tf_transform_output.transform_features_layer()
    seed = tf.constant(cfg.seed, tf.int64)
    masks = augment and cfg.spec_augment.enabled and features.LOG_MEL in keys

    def featurize(epochs, indices, records):
        transformed = tft_layer(tf.io.parse_example(records, raw_spec))
        transformed = {k: tf.ensure_shape(transformed[k], [None, *shapes[k]]) for k in keys + targets}
        x = {k: transformed[k] for k in keys}
        y = {k: tf.reshape(transformed[k], [-1]) if k != features.CLEAN_WAVEFORM else transformed[k]
             for k in targets}
        if masks:  # example i of epoch e gets the masks of seed (seed, e, i)
            x[features.LOG_MEL] = tf.map_fn(
                lambda mel_e_i: spec_augment(mel_e_i[0], cfg.spec_augment, tf.random.experimental.stateless_fold_in(
                    tf.stack([seed, mel_e_i[1]]), mel_e_i[2])),
                (x[features.LOG_MEL], epochs, indices), fn_output_signature=x[features.LOG_MEL].dtype)
        return x, y

    return featurize
