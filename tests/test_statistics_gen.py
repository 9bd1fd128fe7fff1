"""StatisticsGen: TFDV's options that keep its memory flat with the corpus, and statistics
that still carry what ExampleValidator checks, from TFX's real executor."""
import numpy as np
import tensorflow_data_validation as tfdv
from tensorflow_data_validation.statistics import stats_impl
from tensorflow_data_validation.statistics.generators import stats_generator
from tfx.components.statistics_gen import executor as stats_executor
from tfx.types import artifact_utils, standard_artifacts, standard_component_specs

from components import features
from components.config import load_config
from components.validation import schema
from pipeline.pipeline import statistics_options, validated_data
from tests.audio_helpers import tone, write_pair
from tests.test_wav_example_gen import _run_executor


def test_statistics_gen_counts_top_values_with_sketches_not_by_grouping_on_each_value():
    """TFDV's default top-k/uniques is a Beam transform keyed by every distinct string
    value: each example's WAV bytes were held in Beam's grouping buffers, so memory grew
    with the corpus. The sketch-based generator is a fixed-size combiner."""
    config = load_config(None, [])
    options = tfdv.StatsOptions.from_json(
        validated_data(config).statistics_gen.exec_properties[standard_component_specs.STATS_OPTIONS_JSON_KEY])
    assert options.use_sketch_based_topk_uniques
    generators = stats_impl.get_generators(options)
    assert not [g for g in generators if isinstance(g, stats_generator.TransformStatsGenerator)]


def test_statistics_validate_against_the_schema_with_audio_features_counted(tmp_path):
    base = tmp_path / "paired"
    rng = np.random.default_rng(0)
    for label, freq in (("yes", 300), ("no", 700)):
        for k in range(3):
            clean = tone(0.5, freq * (1 + 0.1 * k))
            write_pair(base, f"{label}/u{k}.wav", clean, clean + 0.05 * rng.standard_normal(clean.size))
    examples = _run_executor(base, tmp_path / "examples", {"train": 1}, file_pattern="noisy/*/*.wav",
                             layout="paired", group_regex=r"/(u[0-9])\.wav$", segment_s=0.5)
    statistics = standard_artifacts.ExampleStatistics()
    statistics.uri = str(tmp_path / "statistics")
    stats_executor.Executor().Do(
        {standard_component_specs.EXAMPLES_KEY: [examples]},
        {standard_component_specs.STATISTICS_KEY: [statistics]},
        {standard_component_specs.STATS_OPTIONS_JSON_KEY: statistics_options().to_json(),
         standard_component_specs.EXCLUDE_SPLITS_KEY: "[]"})
    assert artifact_utils.decode_split_names(statistics.split_names) == ["train"]
    stats = tfdv.load_stats_binary(str(tmp_path / "statistics" / "Split-train" / "FeatureStats.pb"))
    by_name = {f.path.step[0]: f for f in stats.datasets[0].features}
    assert stats.datasets[0].num_examples == 6
    config = load_config(None, ["data.segment_s=0.5"])
    curated = tfdv.load_schema_text("schemas/schema.pbtxt")
    bounded = schema.apply_bounds(curated, schema.bounds(config))
    absent = set(by_name) ^ {f.name for f in bounded.feature}
    # optional, and this corpus (mono, data.tracks mix) has none of them
    assert absent == {features.NOISE_KIND, features.CHANNEL, features.TRACK, features.ROLE}
    for key in (features.AUDIO, features.CLEAN_AUDIO):
        string_stats = by_name[key].string_stats
        assert string_stats.common_stats.num_non_missing == 6
        assert string_stats.common_stats.max_num_values == 1
        assert string_stats.unique == 6  # KMV's estimate: exact this far below its 16,384 buckets
        assert string_stats.avg_length > 16000  # 0.5 s of PCM16 at 16 kHz
    anomalies = tfdv.validate_statistics(stats, bounded)
    assert not anomalies.anomaly_info and not anomalies.HasField("dataset_anomaly_info")
