"""Property-based fuzzing of ingestion (hypothesis): random, mutated and hostile audio
files and names go through the WAV ExampleGen's reading DoFn. It never crashes, and
every file is accounted: either examples plus a seconds record that adds up, or one
reject with a plain reason."""
import io
import os
import struct

import apache_beam as beam
import numpy as np
import soundfile
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components import features
from components.audio import wav_io
from components.ingest import executor as wav_executor
from components.ingest import report as ingest_report
from components.ingest import windows

_SUBTYPES = ("PCM_16", "PCM_U8", "PCM_24", "FLOAT")
_HOSTILE = ("../outside.wav", "/dev/zero", "/etc/hostname", "yes/../../outside.wav", "missing/x.wav")


@st.composite
def wav_bytes(draw):
    rate = draw(st.sampled_from([8000, 11025, 16000, 44100]))
    channels = draw(st.integers(1, 3))
    frames = draw(st.integers(0, rate // 2))
    seed = draw(st.integers(0, 2 ** 16))
    amplitude = draw(st.sampled_from([0.0, 1e-4, 0.3, 1.0, 4.0]))  # 4.0: clipped when stored
    samples = amplitude * np.random.default_rng(seed).standard_normal((frames, channels))
    samples = np.clip(samples, -1, 1) if amplitude < 4 else samples
    subtype = draw(st.sampled_from(_SUBTYPES))
    if subtype == "FLOAT" and frames and draw(st.booleans()):  # a float file may hold NaN or inf
        samples[draw(st.integers(0, frames - 1)), 0] = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    buf = io.BytesIO()
    soundfile.write(buf, samples, rate, subtype=subtype, format="WAV")
    return buf.getvalue()


@st.composite
def mutated(draw, data):
    data = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["truncate", "overwrite", "header_size", "header_rate", "header_channels"]))
        if op == "truncate" and data:
            del data[draw(st.integers(0, len(data) - 1)):]
        elif op == "overwrite" and data:
            at = draw(st.integers(0, len(data) - 1))
            patch = draw(st.binary(min_size=1, max_size=16))
            data[at:at + len(patch)] = patch
        elif len(data) >= 44:  # fields of a canonical 44-byte WAV header
            offset, fmt = {"header_size": (40, "<I"), "header_rate": (24, "<I"), "header_channels": (22, "<H")}[op]
            value = draw(st.sampled_from([0, 1, 2 ** 16 - 1] + ([2 ** 32 - 1] if fmt == "<I" else [])))
            data[offset:offset + struct.calcsize(fmt)] = struct.pack(fmt, value)
    return bytes(data)


file_contents = st.one_of(
    wav_bytes(),
    wav_bytes().flatmap(mutated),
    st.binary(max_size=2048),
)
file_names = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="/\\\x00"),
                     min_size=1, max_size=20).map(lambda s: s.strip(". ") or "x")


def _write_readable_wav(path):
    soundfile.write(str(path), 0.3 * np.sin(np.arange(8000) / 5.0), 16000, subtype="PCM_16")


def _process(base, source, on_disk, meta, options):
    """Runs the DoFn on one recording as Beam would; returns (examples, rejects, seconds)."""
    do_fn = windows.ToExamples(str(base), options)  # pylint: disable=protected-access
    do_fn.setup()
    outputs = list(do_fn.process((source, {"file": [True] if on_disk else [], "meta": meta, "spans": []})))
    examples = [o for o in outputs if isinstance(o, tf.train.Example)]
    tagged = [o for o in outputs if isinstance(o, beam.pvalue.TaggedOutput)]
    rejects = [o.value for o in tagged if o.tag == ingest_report.REJECTS_TAG]
    seconds = [o.value for o in tagged if o.tag == ingest_report.SECONDS_TAG]
    assert len(examples) + len(tagged) == len(outputs), "the DoFn emitted something unexpected"
    return examples, rejects, seconds


# How many draws, and whether they are random, is the hypothesis profile's (tests/conftest.py):
# CI's is a fixed set of 120 (a pass or a failure repeats on every machine).
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(content=file_contents, name=file_names, listed=st.sampled_from([None, *_HOSTILE]))
def test_any_bytes_and_any_name_end_as_examples_or_one_reject(tmp_path_factory, content, name, listed):
    base = tmp_path_factory.mktemp("fuzz")
    _write_readable_wav(base.parent / "outside.wav")  # what "../outside.wav" would reach
    source = f"yes/{name}.wav"
    os.makedirs(base / "yes", exist_ok=True)
    (base / source).write_bytes(content)
    options = wav_executor.ingest_options({})  # DataConfig's defaults
    options.update(max_duration_s=60.0, segment_s=0.25, hop_s=0.25, min_segment_s=0.05)
    cases = [(source, True, [])]
    if listed:  # a hostile or missing name listed in metadata.csv, never globbed
        cases.append((listed, False, [{"file_name": listed, "label": "yes"}]))
    for name_, on_disk, meta in cases:
        examples, rejects, seconds = _process(base, name_, on_disk, meta, options)
        if rejects:
            assert not examples and not seconds and len(rejects) == 1, (name_, rejects)
            reason = rejects[0]["reason"]
            assert reason and "0x" not in reason and "Traceback" not in reason and str(base) not in reason
            assert rejects[0]["source"] == name_
        else:
            assert examples and len(seconds) == 1, name_
            for example in examples:  # what is written is usable: finite audio and statistics
                feats = example.features.feature
                audio = wav_io.decode_to_mono_16k(feats[features.AUDIO].bytes_list.value[0])
                assert audio.size and np.all(np.isfinite(audio))
                stats = {key: (feats[key].float_list.value or feats[key].int64_list.value)[0]
                         for key in features.AUDIO_STATS}
                assert all(np.isfinite(v) for v in stats.values()), stats
                assert 0 <= stats[features.CLIPPING_RATIO] <= 1 and 0 <= stats[features.SILENCE_FRACTION] <= 1
            record = seconds[0]
            accounted = record["seconds_in_examples"] + sum(record["dropped"].values())
            assert abs(record["seconds_in"] - accounted) < 1e-6, record
        if not on_disk:  # outside input_base (a readable WAV is there) or missing: refused
            expected = "does not exist" if name_.startswith("missing/") else "outside input_base"
            assert rejects and expected in rejects[0]["reason"], (name_, rejects)

