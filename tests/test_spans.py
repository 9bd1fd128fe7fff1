"""Spans: daily folders named with TFX's {SPAN}; each run reads the newest
`data.latest_spans`, found at run time, fingerprinted, labelled from inside the span."""
import json

import pytest
from google.protobuf import message
from tfx.components.example_gen import utils as example_gen_utils
from tfx.utils import proto_utils

from components import features
from components.config import load_config
from components.ingest import spans
from components.ingest.component import Driver, WavExampleGen
from pipeline import cli, local_runner, summary
from pipeline.outcome import ExitCode
from tests.audio_helpers import tone, write_wav
from tests.test_wav_example_gen import _read_examples, _value


def _day(root, day: int):
    for speaker in range(3):
        for word, freq in (("yes", 440.0), ("no", 660.0)):
            write_wav(str(root / f"day-{day:02d}" / word / f"d{day}_s{speaker}.wav"), tone(0.5, freq + 7 * day))


def test_span_folders_are_found_and_filled_as_tfx_fills_them(tmp_path):
    for day in (1, 2, 10):
        _day(tmp_path, day)
    (tmp_path / "day-xx").mkdir()  # not a span
    pattern = "day-{SPAN:2}/*/*.wav"
    assert spans.span_depth(pattern) == 1 and spans.span_depth("*/*.wav") is None
    assert spans.present(str(tmp_path), pattern) == [1, 2, 10]
    assert spans.with_span(pattern, 2) == "day-02/*/*.wav"
    assert spans.newest(str(tmp_path), pattern, 2, resolved=10) == [2, 10]
    assert spans.newest(str(tmp_path), pattern, 5, resolved=2) == [1, 2]  # none past the resolved one


def _sources(run):
    examples = run.artifacts["WavExampleGen"]["examples"][0]
    read = [e for split in _read_examples(examples.uri).values() for e in split]
    sources = {_value(e, features.SOURCE).decode() for e in read}
    return examples, sources, {_value(e, features.LABEL).decode() for e in read}


@pytest.mark.e2e
def test_each_run_reads_the_newest_spans_and_a_new_one_is_picked_up(tmp_path):
    data = tmp_path / "audio"
    for day in (1, 2, 3):
        _day(data, day)
    overrides = [f"data.input_base={data}", "data.file_pattern=day-{SPAN:2}/*/*.wav", "data.latest_spans=2",
                 f"output_dir={tmp_path / 'out'}", "data.split_buckets={train: 1}", "data.segment_s=0.5",
                 "beam_args=[--direct_num_workers=1]", "enable_cache=true"]
    code, first = local_runner.run(load_config(None, overrides), validate_only=True, verbose=True)
    assert code == ExitCode.OK
    examples, sources, labels = _sources(first)
    assert {s.split("/")[0] for s in sources} == {"day-02", "day-03"} and len(sources) == 12
    assert labels == {"yes", "no"}  # from the folder inside the span, not the span's name
    assert summary.prop(examples, "span") == 3 and first.input_files == 12

    _day(data, 4)  # tomorrow's folder: the same command, no new setting
    code, second = local_runner.run(load_config(None, overrides), validate_only=True, verbose=True)
    assert code == ExitCode.OK and second.node_states["WavExampleGen"] == "COMPLETE"  # not the cached run
    examples, sources, _ = _sources(second)
    assert {s.split("/")[0] for s in sources} == {"day-03", "day-04"}
    assert summary.prop(examples, "span") == 4


def test_a_compiled_kubeflow_run_resolves_spans_when_it_runs(tmp_path):
    out = tmp_path / "spec.json"
    assert cli.main(["compile", "--config", "pipeline/configs/kubeflow.yaml", "--image", "img:1",
                     "--output", str(out), "--set", "data.file_pattern=day-{SPAN}/*/*.wav",
                     "--set", "data.latest_spans=7"]) == 0
    spec = json.loads(out.read_text())["pipelineSpec"]
    params = {name: json.loads(value["runtimeValue"]["constantValue"]["stringValue"])
              for name, value in spec["root"]["dag"]["tasks"]["WavExampleGen"]["inputs"]["parameters"].items()
              if name in ("input_config", "custom_config")}
    # The pattern stays a pattern: the ExampleGen's driver resolves the newest spans at run time
    # (its pre-cache-check hook on Kubeflow), so a recurring run reads new folders without a recompile.
    assert params["input_config"]["splits"] == [{"name": "all", "pattern": "day-{SPAN}/*/*.wav"}]
    assert params["custom_config"]["custom_config"]["value"]["latest_spans"] == 7
    hooks = spec["deploymentSpec"]["executors"]["WavExampleGen_executor"]["container"]["lifecycle"]
    assert "preCacheCheck" in hooks


def _fingerprint(input_base) -> str:
    """The WAV ExampleGen driver's input fingerprint (its cache key) for 2 spans of day folders."""
    component = WavExampleGen(input_base=str(input_base), file_pattern="day-{SPAN:2}/*/*.wav", latest_spans=2)
    exec_properties = {k: proto_utils.proto_to_json(v) if isinstance(v, message.Message) else v
                       for k, v in component.exec_properties.items()}
    resolved = Driver(metadata_handle=None).resolve_exec_properties(exec_properties, None, None)
    return resolved[example_gen_utils.FINGERPRINT_PROPERTY_NAME]


def test_every_span_read_is_in_the_fingerprint(tmp_path):
    for day in (1, 2, 3):
        _day(tmp_path, day)
    before = _fingerprint(tmp_path)
    write_wav(str(tmp_path / "day-01" / "yes" / "extra.wav"), tone(0.5, 300.0))  # a span not read
    assert _fingerprint(tmp_path) == before
    write_wav(str(tmp_path / "day-02" / "yes" / "extra.wav"), tone(0.5, 300.0))  # the older span read
    assert _fingerprint(tmp_path) != before
