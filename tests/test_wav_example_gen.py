"""The WAV ExampleGen: what each example carries, what is rejected and why, and
that splits are decided by group, run through the real executor and Beam."""
import csv
import os

import apache_beam as beam
import numpy as np
import pytest
import soundfile
import tensorflow as tf
from tfx import v1 as tfx
from tfx.components.example_gen import utils as example_gen_utils
from tfx.types import standard_artifacts, standard_component_specs
from tfx.utils import proto_utils

from components import features
from components.audio import wav_io
from components.config import ConfigError, load_config
from components.ingest import WavExampleGen, component, segments, tables
from components.ingest import executor as wav_executor
from components.ingest import report as ingest_report
from components.training import input_pipeline
from tests.audio_helpers import tone, write_pair, write_wav


def _write_metadata(path, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(features.METADATA_COLUMNS))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: row.get(k, "") for k in features.METADATA_COLUMNS})


def _read_examples(uri):
    out = {}
    for split in sorted(os.listdir(uri)):
        if not split.startswith("Split-"):
            continue
        out[split[len("Split-"):]] = [tf.train.Example.FromString(r.numpy())
                                      for r in input_pipeline.records([os.path.join(uri, split, "*")])]
    return out


def _value(example, key):
    feature = example.features.feature[key]
    kind = feature.WhichOneof("kind")
    return getattr(feature, kind).value[0] if kind else None


def _exec_properties(input_base, split_buckets=None, **options):
    """The component's exec_properties as TFX hands them to its driver and executor."""
    component = WavExampleGen(
        input_base=str(input_base),
        output_config=tfx.proto.Output(split_config=tfx.proto.SplitConfig(
            splits=[tfx.proto.SplitConfig.Split(name=n, hash_buckets=b)
                    for n, b in (split_buckets or {"train": 2, "test": 1}).items()],
            partition_feature_name=features.GROUP)),
        **options)
    exec_properties = dict(component.exec_properties)
    for key in (standard_component_specs.INPUT_CONFIG_KEY, standard_component_specs.OUTPUT_CONFIG_KEY,
                standard_component_specs.CUSTOM_CONFIG_KEY):
        if not isinstance(exec_properties[key], str):
            exec_properties[key] = proto_utils.proto_to_json(exec_properties[key])
    return exec_properties


def _run_executor(input_base, output_dir, split_buckets=None, **options):
    """Runs the component's real executor (with its Beam pipeline) like TFX does."""
    exec_properties = _exec_properties(input_base, split_buckets, **options)
    examples = standard_artifacts.Examples()
    examples.uri = str(output_dir)
    wav_executor.Executor().Do({}, {standard_component_specs.EXAMPLES_KEY: [examples]}, exec_properties)
    assert_seconds_add_up(examples)
    return examples


def assert_seconds_add_up(examples):
    """Every second of input is accounted: seconds in = seconds under an example window
    + seconds dropped (by reason) + seconds of rejected files; and the seconds under
    windows are those of the examples actually written (noisy copies aside)."""
    seconds = ingest_report.read_seconds(os.path.join(examples.uri, ingest_report.REPORT_DIR))
    dropped = sum(seconds["dropped"].values())
    assert seconds["seconds_in"] == pytest.approx(
        seconds["seconds_in_examples"] + dropped + seconds["seconds_rejected"], abs=1e-6)
    _, rejects = ingest_report.read_report(os.path.join(examples.uri, ingest_report.REPORT_DIR))
    assert seconds["seconds_rejected"] == pytest.approx(sum(r["seconds"] or 0.0 for r in rejects), abs=1e-6)
    assert seconds["rejected_of_unknown_length"] == sum(r["seconds"] is None for r in rejects)
    written = _read_examples(examples.uri)
    # Each split's size as the Trainer reads it (examples, serialized bytes): that of the files.
    assert ingest_report.split_sizes(examples.uri) == {
        name: {"examples": len(split), "bytes": sum(e.ByteSize() for e in split)} for name, split in written.items()}
    windows = {}
    for split in written.values():
        for e in split:
            source = _value(e, features.SOURCE).decode()
            if "#noisy" not in source:
                start = _value(e, features.OFFSET_S)
                track = _value(e, features.TRACK) if features.TRACK in e.features.feature else None
                stream = (source, track)  # data.tracks=split: a stream per track
                windows.setdefault(stream, []).append((start, start + _value(e, features.DURATION_S)))
    covered = sum(segments.union_length(w) for w in windows.values())
    assert covered == pytest.approx(seconds["seconds_in_examples"], abs=1e-3 * (1 + len(windows)))
    proto = getattr(examples, "mlmd_artifact", examples)  # a TFX Artifact or the MLMD record of one
    recorded = proto.custom_properties["seconds_in"]
    assert getattr(recorded, recorded.WhichOneof("value")) == pytest.approx(seconds["seconds_in"], abs=1e-3)
    return seconds


@pytest.fixture()
def mixed_folder(tmp_path):
    """Good files in several formats, plus one of each kind of bad input."""
    base = tmp_path / "audio"
    write_wav(base / "yes" / "a.wav", tone(0.5, 300))
    write_wav(base / "yes" / "stereo_44k.wav", tone(0.5, 300, rate=44100), rate=44100, channels=2)
    write_wav(base / "no" / "b.wav", tone(0.4, 600))
    write_wav(base / "no" / "b_noisy.wav", tone(0.4, 600) + 0.05 * np.random.default_rng(0).standard_normal(6400))
    (base / "no" / "broken.wav").write_bytes(b"RIFF....WAVEfmt garbage")
    write_wav(base / "no" / "empty.wav", np.zeros(0))
    write_wav(base / "no" / "too_long.wav", tone(3.0, 200))
    _write_metadata(base / "metadata.csv", [
        {"file_name": "no/b_noisy.wav", "label": "no", "group": "spk-b", "clean_file_name": "no/b.wav",
         "noise_kind": "pink", "snr_db": "7.5", "channel": "phone"},
        {"file_name": "no/b.wav", "label": "no", "group": "spk-b"},
        {"file_name": "no/listed_but_missing.wav", "label": "no"},
        {"file_name": "unlabelled.wav", "label": "yes", "group": "spk-c"},
    ])
    write_wav(base / "unlabelled.wav", tone(0.3, 900))  # outside the glob, labelled by metadata
    return base


def test_every_file_becomes_an_example_or_a_reject_with_its_reason(mixed_folder, tmp_path):
    examples = _run_executor(mixed_folder, tmp_path / "out", max_duration_s=2.0, max_reject_fraction=0.9)
    produced = [e for split in _read_examples(examples.uri).values() for e in split]
    sources = sorted(_value(e, features.SOURCE).decode() for e in produced)
    assert sources == ["no/b.wav", "no/b_noisy.wav", "unlabelled.wav", "yes/a.wav", "yes/stereo_44k.wav"]

    _, rejects = ingest_report.read_report(os.path.join(examples.uri, ingest_report.REPORT_DIR))
    reasons = {r["source"]: r["reason"] for r in rejects}
    assert set(reasons) == {"no/broken.wav", "no/empty.wav", "no/too_long.wav", "no/listed_but_missing.wav"}
    assert "not a readable audio file" in reasons["no/broken.wav"]
    assert "no samples" in reasons["no/empty.wav"]
    assert "over the 2.0 s limit" in reasons["no/too_long.wav"]
    assert "does not exist" in reasons["no/listed_but_missing.wav"]
    assert "0x" not in reasons["no/broken.wav"] and "<" not in reasons["no/broken.wav"]  # plain words
    assert examples.get_int_custom_property("num_input_files") == 9
    assert examples.get_int_custom_property("num_examples") == 5
    assert examples.get_int_custom_property("num_rejected") == 4


def test_examples_carry_16k_mono_pcm16_audio_and_metadata(mixed_folder, tmp_path):
    examples = _run_executor(mixed_folder, tmp_path / "out", max_duration_s=2.0, max_reject_fraction=0.9)
    by_source = {_value(e, features.SOURCE).decode(): e
                 for split in _read_examples(examples.uri).values() for e in split}
    stereo = by_source["yes/stereo_44k.wav"]
    info = soundfile.info(__import__("io").BytesIO(_value(stereo, features.AUDIO)))
    assert (info.samplerate, info.channels, info.subtype) == (16000, 1, "PCM_16")
    assert _value(stereo, features.DURATION_S) == pytest.approx(0.5, abs=1e-3)
    assert _value(stereo, features.LABEL) == b"yes"  # from its folder
    assert _value(stereo, features.GROUP) == b"yes/stereo_44k.wav"  # no group known: its own
    assert _value(stereo, features.CLEAN_AUDIO) is None
    # audio statistics of the file as it is (44.1 kHz stereo), not of its 16 kHz mono copy
    assert (_value(stereo, features.SOURCE_SAMPLE_RATE), _value(stereo, features.SOURCE_CHANNELS)) == (44100, 2)
    assert _value(stereo, features.RMS_DBFS) == pytest.approx(20 * np.log10(0.3 / np.sqrt(2)), abs=0.05)
    assert _value(stereo, features.CLIPPING_RATIO) == 0.0 and _value(stereo, features.SILENCE_FRACTION) == 0.0

    noisy = by_source["no/b_noisy.wav"]
    assert _value(noisy, features.GROUP) == b"spk-b"
    assert _value(noisy, features.NOISE_KIND) == b"pink"
    assert _value(noisy, features.SNR_DB) == pytest.approx(7.5)
    assert _value(noisy, features.CHANNEL) == b"phone" and _value(stereo, features.CHANNEL) is None
    clean = wav_io.decode_to_mono_16k(_value(noisy, features.CLEAN_AUDIO))
    np.testing.assert_allclose(clean, wav_io.decode_to_mono_16k(_value(by_source["no/b.wav"], features.AUDIO)))
    assert _value(by_source["unlabelled.wav"], features.LABEL) == b"yes"


def test_examples_are_uncompressed_by_default_or_gzipped_and_tfx_readers_take_either(tmp_path):
    """data.example_compression: the file names say which; TFX's own reader (TFXIO, as
    StatisticsGen, Transform and the Evaluator read) and the Trainer's read both alike."""
    from tfx.components.util import tfxio_utils

    base = tmp_path / "audio"
    for i in range(4):
        write_wav(base / "yes" / f"s{i}.wav", tone(0.3, 300 + 40 * i))
    from apache_beam.testing.util import assert_that, equal_to

    for compression in ("none", "gzip"):
        out = tmp_path / compression
        examples = _run_executor(base, out, {"train": 1}, example_compression=compression)
        files = tf.io.gfile.glob(os.path.join(examples.uri, "Split-train", "*"))
        assert files and all(f.endswith(".gz") == (compression == "gzip") for f in files)
        tfxio = tfxio_utils.make_tfxio(os.path.join(examples.uri, "Split-train", "*"), telemetry_descriptors=[],
                                       payload_format=tfx.proto.PayloadFormat.FORMAT_TF_EXAMPLE)
        with beam.Pipeline() as pipeline:
            read = (pipeline | tfxio.BeamSource()
                    | beam.FlatMap(lambda batch: [s[0].decode() for s in batch.column(features.SOURCE).to_pylist()]))
            assert_that(read, equal_to([f"yes/s{i}.wav" for i in range(4)]))
        assert len(_read_examples(examples.uri)["train"]) == 4  # the Trainer's reader (input_pipeline.records)
    # The choices are the setting's type (pydantic checks it when the config loads), spelled once.
    with pytest.raises(ConfigError, match=r"data.example_compression: got 'zstd', expected 'none' or 'gzip'"):
        load_config(None, ["data.example_compression=zstd"])


def test_too_many_rejects_fail_with_the_file_and_reason(mixed_folder, tmp_path):
    with pytest.raises(ValueError, match=r"4 of 9 files .* rejected.*no/broken.wav: not a readable audio file"):
        _run_executor(mixed_folder, tmp_path / "out", max_duration_s=2.0, max_reject_fraction=0.1)


def test_metadata_without_label_column_is_a_clear_error(tmp_path):
    write_wav(tmp_path / "yes" / "a.wav", tone())
    (tmp_path / "metadata.csv").write_text("file_name,group\nyes/a.wav,g\n")
    with pytest.raises(ValueError, match=r"metadata.csv: header lacks required column\(s\) \['label'\]"):
        tables.read_metadata(str(tmp_path), "metadata.csv")


def test_splits_are_decided_by_group_so_no_group_spans_two_splits(tmp_path):
    base = tmp_path / "audio"
    rows = []
    for speaker in range(12):
        for word in ("up", "down"):
            for take in range(2):
                name = f"{word}/s{speaker}_{take}.wav"
                write_wav(base / name, tone(0.2, 200 + 50 * speaker + take))
                rows.append({"file_name": name, "label": word, "group": f"speaker{speaker}"})
    _write_metadata(base / "metadata.csv", rows)
    examples = _run_executor(base, tmp_path / "out", {"train": 3, "eval": 1, "test": 1})
    groups = {split: {_value(e, features.GROUP) for e in exs} for split, exs in _read_examples(examples.uri).items()}
    assert sum(len(_read_examples(examples.uri)[s]) for s in groups) == 48
    assert len(groups) == 3 and all(groups.values())
    assert not (groups["train"] & groups["eval"] or groups["train"] & groups["test"]
                or groups["eval"] & groups["test"])


def test_noise_base_adds_deterministic_noisy_copies_at_the_drawn_snr(tmp_path):
    base, noise_base = tmp_path / "audio", tmp_path / "noise"
    rng = np.random.default_rng(5)
    for speaker in range(3):
        write_wav(base / "go" / f"s{speaker}.wav", tone(0.4, 300 + 100 * speaker))
    write_wav(noise_base / "pink" / "a.wav", 0.1 * rng.standard_normal(8000))
    write_wav(noise_base / "hum" / "a.wav", tone(2.0, 50, amplitude=0.2))
    options = dict(noise_base=str(noise_base), noisy_copies=2, snr_db_range=(5.0, 10.0), mix_seed=11)

    first = _run_executor(base, tmp_path / "out1", **options)
    again = _run_executor(base, tmp_path / "out2", **options)
    assert first.get_int_custom_property("num_input_files") == 3
    assert first.get_int_custom_property("num_noisy_copies") == 6
    assert first.get_int_custom_property("num_examples") == 9
    examples = {_value(e, features.SOURCE).decode(): e for s in _read_examples(first.uri).values() for e in s}
    repeat = {_value(e, features.SOURCE).decode(): e for s in _read_examples(again.uri).values() for e in s}
    assert examples.keys() == repeat.keys()
    for source, example in examples.items():
        assert example == repeat[source]  # same on a rerun (proto equality: map order may differ)
        if "#noisy" not in source:
            continue
        original = examples[source.split("#")[0]]
        assert features.CLEAN_AUDIO not in original.features.feature  # the clean input is left untouched
        assert _value(example, features.GROUP) == _value(original, features.GROUP)
        assert _value(example, features.NOISE_KIND) in (b"pink", b"hum")
        snr = _value(example, features.SNR_DB)
        assert 5.0 <= snr <= 10.0
        noisy = wav_io.decode_to_mono_16k(_value(example, features.AUDIO))
        clean = wav_io.decode_to_mono_16k(_value(example, features.CLEAN_AUDIO))
        measured = 10 * np.log10(np.sum(clean ** 2) / np.sum((noisy - clean) ** 2))
        assert measured == pytest.approx(snr, abs=0.2)  # PCM16 rounding


def test_noise_base_without_recordings_is_a_clear_error(tmp_path):
    write_wav(tmp_path / "audio" / "go" / "a.wav", tone())
    (tmp_path / "noise").mkdir()
    with pytest.raises(Exception, match=r"no noise recordings found; expected .*/<noise kind>/\*.wav"):
        _run_executor(tmp_path / "audio", tmp_path / "out", noise_base=str(tmp_path / "noise"), noisy_copies=1)


def test_paired_layout_reads_noisy_with_clean_references_and_measures_the_input_snr(tmp_path):
    """VoiceBank-DEMAND style noisy/ and clean/ folders with matching names."""
    base = tmp_path / "paired"
    rng = np.random.default_rng(4)
    for label, freq in (("yes", 300), ("no", 700)):
        for k in range(2):
            clean = tone(0.5, freq * (1 + 0.1 * k))
            noise = rng.standard_normal(clean.size)
            noise *= np.sqrt(np.mean(clean ** 2) / np.mean(noise ** 2) / 10 ** (6.0 / 10))  # 6 dB
            write_pair(base, f"{label}/u{k}.wav", clean, clean + noise)
    write_wav(base / "noisy" / "yes" / "orphan.wav", tone(0.5, 500))  # no clean counterpart
    examples = _run_executor(base, tmp_path / "out", file_pattern="noisy/*/*.wav",
                             layout="paired", max_reject_fraction=0.5, group_regex=r"/(u[0-9])\.wav$")
    got = [e for split in _read_examples(examples.uri).values() for e in split]
    assert sorted(_value(e, features.SOURCE).decode() for e in got) == [
        "noisy/no/u0.wav", "noisy/no/u1.wav", "noisy/yes/u0.wav", "noisy/yes/u1.wav"]
    for example in got:
        label = _value(example, features.LABEL).decode()
        assert _value(example, features.SOURCE).decode().startswith(f"noisy/{label}/")
        clean = wav_io.decode_to_mono_16k(_value(example, features.CLEAN_AUDIO))
        noisy = wav_io.decode_to_mono_16k(_value(example, features.AUDIO))
        assert _value(example, features.SNR_DB) == pytest.approx(6.0, abs=0.1)
        assert np.corrcoef(clean, noisy)[0, 1] > 0.8  # really the matching pair
    _, rejects = ingest_report.read_report(os.path.join(examples.uri, ingest_report.REPORT_DIR))
    assert rejects == [{"source": "noisy/yes/orphan.wav", "seconds": 0.5,
                        "reason": "paired layout: no clean reference clean/yes/orphan.wav"}]


def test_paired_layout_keeps_each_speaker_in_one_split_or_refuses_without_groups(tmp_path):
    """VoiceBank-DEMAND names (p232_001.wav): many pairs per speaker. Without a group the
    pairs of one speaker would be hashed into several splits."""
    base = tmp_path / "paired"
    for speaker in range(8):
        for k in range(3):
            clean = tone(0.3, 200 + 40 * speaker + 7 * k)
            write_pair(base, f"yes/p{speaker}_{k:03d}.wav", clean, clean + 0.01)
    options = dict(file_pattern="noisy/*/*.wav", layout="paired", max_reject_fraction=1.0)
    with pytest.raises(ValueError, match=r"no usable audio"):
        _run_executor(base, tmp_path / "none", **options)
    _, rejects = ingest_report.read_report(str(tmp_path / "none" / ingest_report.REPORT_DIR))
    assert len(rejects) == 24 and all("no speaker group" in r["reason"] for r in rejects)

    examples = _run_executor(base, tmp_path / "out", group_regex=r"(p[0-9]+)_", **options)
    split_of = {}
    for split, got in _read_examples(examples.uri).items():
        for example in got:
            speaker = _value(example, features.GROUP).decode()
            assert _value(example, features.SOURCE).decode().startswith(f"noisy/yes/{speaker}_")
            split_of.setdefault(speaker, set()).add(split)
    assert len(split_of) == 8 and all(len(splits) == 1 for splits in split_of.values())
    assert len({s for splits in split_of.values() for s in splits}) == 2  # both splits used

    with pytest.raises(ValueError, match=r"data.group_regex"):
        _run_executor(base, tmp_path / "bad", group_regex="(p[0-9]+", **options)


def test_the_cache_fingerprint_covers_metadata_and_segments_files(mixed_folder):
    """TFX fingerprints the globbed audio only; an edited label must not reuse a cached run."""
    def fingerprint():
        properties = component.Driver(None).resolve_exec_properties(
            _exec_properties(mixed_folder), None, None)
        return properties[example_gen_utils.FINGERPRINT_PROPERTY_NAME]

    before = fingerprint()
    assert fingerprint() == before  # nothing changed, same key: the cache works
    metadata = mixed_folder / "metadata.csv"
    metadata.write_text(metadata.read_text().replace("spk-c", "spk-d"))  # same size, new content
    after_metadata = fingerprint()
    assert after_metadata != before
    (mixed_folder / "segments.csv").write_text("file_name,start_s,end_s,label\nyes/a.wav,0,0.5,yes\n")
    assert fingerprint() != after_metadata
    # "" turns a file off: nothing to fingerprint (not the folder read as a file)
    properties = component.Driver(None).resolve_exec_properties(
        _exec_properties(mixed_folder, metadata_file="", segments_file=""), None, None)
    assert properties[example_gen_utils.FINGERPRINT_PROPERTY_NAME].endswith(": sha256 absent\n: sha256 absent")


def test_paths_leaving_input_base_are_rejected_not_read(tmp_path):
    outside = tmp_path / "elsewhere"
    write_wav(outside / "secret.wav", tone(0.5, 500))
    base = tmp_path / "audio"
    write_wav(base / "yes" / "ok.wav", tone(0.5, 300))
    write_wav(base / "no" / "fine.wav", tone(0.5, 700))
    os.symlink(outside / "secret.wav", base / "yes" / "link.wav")
    _write_metadata(base / "metadata.csv", [
        {"file_name": "../elsewhere/secret.wav", "label": "yes"},
        {"file_name": "/dev/zero", "label": "yes"},  # an endless read, were it opened
        {"file_name": "yes/ok.wav", "label": "yes", "clean_file_name": "../elsewhere/secret.wav"}])
    examples = _run_executor(base, tmp_path / "out", max_reject_fraction=1.0)
    _, rejects = ingest_report.read_report(os.path.join(examples.uri, ingest_report.REPORT_DIR))
    reasons = {r["source"]: r["reason"] for r in rejects}
    assert set(reasons) == {"yes/link.wav", "../elsewhere/secret.wav", "/dev/zero", "yes/ok.wav"}
    assert reasons["yes/link.wav"] == ("outside input_base: yes/link.wav leads out of it (an absolute path, "
                                       "'..' or a symbolic link); not read")
    assert reasons["/dev/zero"].startswith("outside input_base: /dev/zero leads out of it")
    assert reasons["yes/ok.wav"].startswith("clean reference ../elsewhere/secret.wav: outside input_base")
    assert str(tmp_path) not in " ".join(reasons.values())  # no host paths in the report
    seconds = ingest_report.read_seconds(os.path.join(examples.uri, ingest_report.REPORT_DIR))
    assert seconds["rejected_of_unknown_length"] == 3  # never opened; ok.wav's 0.5 s are known


def test_files_over_the_size_limit_are_rejected_before_reading(tmp_path):
    base = tmp_path / "audio"
    write_wav(base / "yes" / "small.wav", tone(0.2, 300))  # 6.4 kB
    write_wav(base / "yes" / "big.wav", tone(2.0, 300))  # 64 kB
    examples = _run_executor(base, tmp_path / "out", max_file_mb=0.03, max_reject_fraction=1.0)
    _, rejects = ingest_report.read_report(os.path.join(examples.uri, ingest_report.REPORT_DIR))
    assert rejects == [{"source": "yes/big.wav", "reason": "0.06 MB, over the 0.03 MB limit (data.max_file_mb)",
                        "seconds": None}]


def test_digital_silence_is_rejected_or_dropped_and_counted(tmp_path):
    base = tmp_path / "audio"
    write_wav(base / "yes" / "silent.wav", np.zeros(16000))
    write_wav(base / "yes" / "gap.wav", np.concatenate([tone(1.0, 300), np.zeros(2 * 16000), tone(1.0, 300)]))
    examples = _run_executor(base, tmp_path / "out", max_reject_fraction=1.0)
    _, rejects = ingest_report.read_report(os.path.join(examples.uri, ingest_report.REPORT_DIR))
    assert rejects == [{"source": "yes/silent.wav", "reason": segments.SILENT, "seconds": 1.0}]
    gap = [e for split in _read_examples(examples.uri).values() for e in split]
    assert sorted(_value(e, features.OFFSET_S) for e in gap) == [0.0, 3.0]
    seconds = ingest_report.read_seconds(os.path.join(examples.uri, ingest_report.REPORT_DIR))
    assert seconds["dropped"] == {segments.SILENT: pytest.approx(2.0)}


def test_broken_files_odd_names_and_short_references_do_not_stop_the_run(tmp_path):
    base = tmp_path / "audio"
    write_wav(base / "yes" / "call [1].wav", tone(0.5, 300))  # glob characters in a real name
    flac = base / "yes" / "cut.flac"
    soundfile.write(str(flac), np.random.default_rng(0).uniform(-0.5, 0.5, 48000), 16000, format="FLAC")
    flac.write_bytes(flac.read_bytes()[:len(flac.read_bytes()) // 2])  # the decoder loses sync midway
    write_wav(base / "no" / "clean.wav", tone(2.0, 400)[:-80])  # 5 ms shorter than its noisy file
    write_wav(base / "no" / "noisy.wav", tone(2.0, 400) + 0.01)
    _write_metadata(base / "metadata.csv", [{"file_name": "no/noisy.wav", "label": "no",
                                             "clean_file_name": "no/clean.wav"}])
    examples = _run_executor(base, tmp_path / "out", file_pattern="*/*.*", segment_s=1.0,
                             max_reject_fraction=1.0)
    by_source = {}
    for split in _read_examples(examples.uri).values():
        for e in split:
            by_source.setdefault(_value(e, features.SOURCE).decode(), []).append(e)
    assert "yes/call [1].wav" in by_source
    assert len(by_source["no/noisy.wav"]) == 2  # the reference's missing 5 ms are zeros
    _, rejects = ingest_report.read_report(os.path.join(examples.uri, ingest_report.REPORT_DIR))
    reasons = {r["source"]: r["reason"] for r in rejects}
    # The window before the break is kept; the 2 s after it are dropped and counted.
    assert [_value(e, features.OFFSET_S) for e in by_source["yes/cut.flac"]] == [0.0]
    seconds = ingest_report.read_seconds(os.path.join(examples.uri, ingest_report.REPORT_DIR))
    assert seconds["dropped"] == {"unreadable at 1.00 s: Error : flac decoder lost sync.":
                                  pytest.approx(2.0)}
    assert not reasons
