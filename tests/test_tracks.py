"""Calls as call centers record them: each channel its own stream (data.tracks=split), the call
figures (talk time, overtalk, silence) swept in bounded memory, the stereo calls generator."""
import numpy as np
import pytest
import soundfile
from hypothesis import given, settings
from hypothesis import strategies as st

from components import features
from components.audio import vad, wav_io
from components.config import load_config
from components.ingest import executor as wav_executor
from components.ingest import segments, tables
from components.serving import calls
from pipeline.datagen import calls as demo_calls
from tests.audio_helpers import read_rows

FRAME = 0.01


def _frames(regions, duration):
    """Frame-grid activity of a region list (the brute-force reference)."""
    active = np.zeros(int(round(duration / FRAME)), bool)
    for s, e in regions:
        active[int(round(s / FRAME)):int(round(e / FRAME))] = True
    return active


def _runs(active):
    """Lengths of the runs of True."""
    padded = np.concatenate([[False], active, [False]]).astype(int)
    edges = np.flatnonzero(np.diff(padded))
    return edges[1::2] - edges[::2]


@st.composite
def track_regions(draw, slots=60):
    """Sorted, non-overlapping regions of one track on a 0.1-s grid of a 6-s call; some touch (a
    detector without a minimum gap gives those)."""
    regions, at = [], 0
    for gap, length in draw(st.lists(st.tuples(st.integers(0, 8), st.integers(1, 10)), max_size=10)):
        start, end = at + gap, min(at + gap + length, slots)
        if start >= end:
            break
        regions.append((start * 0.1, end * 0.1))
        at = end
    return regions


@settings(max_examples=200, deadline=None)
@given(agent=track_regions(), customer=track_regions())
def test_call_figures_equal_the_frame_by_frame_count(agent, customer):
    duration = 6.0
    figures = calls.figures_of([agent, customer], duration)
    a, c = _frames(agent, duration), _frames(customer, duration)
    assert figures.talk_s == pytest.approx([a.sum() * FRAME, c.sum() * FRAME], abs=1e-6)
    assert figures.overtalk_s == pytest.approx((a & c).sum() * FRAME, abs=1e-6)
    assert figures.overtalk_count == len(_runs(a & c))
    silence = ~(a | c)
    assert figures.silence_s == pytest.approx(silence.sum() * FRAME, abs=1e-6)
    assert figures.longest_silence_s == pytest.approx(max(_runs(silence), default=0) * FRAME, abs=1e-6)


@settings(max_examples=200, deadline=None)
@given(agent=track_regions(), customer=track_regions(), order=st.randoms(use_true_random=False))
def test_the_sweep_gives_the_same_figures_whichever_track_reports_first(agent, customer, order):
    """Regions arrive as each track's detector finishes them, with how far it has settled; the
    figures do not depend on the interleaving."""
    sweep = calls.CallSweep(2)
    queues = [list(agent), list(customer)]
    while any(queues):
        t = order.choice([i for i, q in enumerate(queues) if q])
        region = queues[t].pop(0)
        sweep.add(t, [region], region[0])  # settled to its start: nothing earlier is still to come
    assert sweep.finish(6.0) == calls.figures_of([agent, customer], 6.0)


@settings(max_examples=200, deadline=None)
@given(flags=st.lists(st.booleans(), max_size=200), cuts=st.lists(st.integers(0, 200), max_size=6),
       gap=st.sampled_from([0.0, 0.05, 0.3]), pad=st.sampled_from([0.0, 0.03, 0.1]))
def test_speech_regions_streamed_in_any_blocks_equal_those_of_the_whole(flags, cuts, gap, pad):
    duration = len(flags) * 0.03 + 0.01
    whole = segments.speech_regions(flags, 0.03, gap, pad, duration)
    stream, found, settled = segments.RegionStream(0.03, gap, pad), [], []
    bounds = [0, *sorted(c for c in cuts if c <= len(flags)), len(flags)]
    for a, b in zip(bounds, bounds[1:]):
        found += stream.push(flags[a:b])
        settled.append((len(found), stream.settled_s))
    found += stream.finish(duration)
    np.testing.assert_allclose(np.reshape(found, (-1, 2)), np.reshape(whole, (-1, 2)), atol=1e-9)
    for done, at in settled:  # no region given later starts before what the stream said had settled
        assert all(start >= at - 1e-9 for start, _ in found[done:])


@settings(max_examples=200, deadline=None)
@given(frames=st.lists(st.tuples(st.booleans(), st.sampled_from([-58.0, -55.0, -50.0, -45.0])), max_size=200),
       cuts=st.lists(st.integers(0, 200), max_size=6))
def test_the_double_threshold_keeps_runs_over_the_low_margin_that_reach_the_high_one(frames, cuts):
    """Floor -60 dB (a long quiet lead holds it), margins 12 and 3 dB: a run of detector frames over
    -57 dB is speech when one of its frames is over -48 dB, whatever blocks the stream comes in."""
    gate = vad.NoiseFloorGate(12.0, 20.0, 3600.0, low_margin_db=3.0)
    assert gate([False] * 1000, np.full(1000, -60.0)) == [False] * 1000
    flags = [f for f, _ in frames]
    levels = np.array([lvl for _, lvl in frames])
    low = [f and lvl > -57.0 for f, lvl in frames]
    want = [False] * len(frames)
    i = 0
    while i < len(low):  # each run of low frames, whole
        j = i
        while j < len(low) and low[j]:
            j += 1
        if any(levels[k] > -48.0 for k in range(i, j)):
            want[i:j] = [True] * (j - i)
        i = max(j, i + 1)
    bounds = [0, *sorted(c for c in cuts if c <= len(frames)), len(frames)]
    got = []
    for a, b in zip(bounds, bounds[1:]):
        got += gate(flags[a:b], levels[a:b])
    got += gate.finish()
    assert got == want


def test_a_lower_margin_above_the_higher_is_refused():
    with pytest.raises(ValueError, match="floor_low_margin_db"):
        load_config("pipeline/configs/calls_stereo.yaml", ["calls.floor_margin_db=12", "calls.floor_low_margin_db=15"])


def test_a_track_reads_one_channel_and_every_track_blocks_keep_them_apart(tmp_path):
    path = str(tmp_path / "call.wav")
    left = 0.3 * np.sin(np.arange(24000) / 7.0)
    right = 0.1 * np.sin(np.arange(24000) / 3.0)
    soundfile.write(path, np.stack([left, right], axis=1), 8000, subtype="PCM_16")
    with wav_io.AudioFile(path, track=1) as audio:
        assert audio.channels == 2
        one = np.concatenate(list(audio.blocks_16k()))
        window, stats = audio.window_and_stats(0.5, 1.0)
        assert stats[features.SOURCE_CHANNELS] == 2  # the file's channels, not the track's
    with wav_io.AudioFile(path) as audio:
        both = np.concatenate(list(audio.blocks_16k(every_track=True)))
        mixed = np.concatenate(list(audio.blocks_16k()))
    assert both.shape == (48000, 2)
    np.testing.assert_allclose(one, both[:, 1], atol=1e-6)
    np.testing.assert_allclose(mixed, both.mean(axis=1), atol=1e-6)
    assert np.sqrt(np.mean(window ** 2)) == pytest.approx(0.1 / np.sqrt(2), rel=0.05)  # the right channel
    with pytest.raises(wav_io.AudioError, match="track 2 does not exist"):
        wav_io.AudioFile(path, track=2)


def _stereo(path, left, right, rate=16000):
    soundfile.write(path, np.stack([left, right], axis=1).astype(np.float32), rate, subtype="PCM_16")


def _tone(seconds, freq, level=0.3):
    return level * np.sin(2 * np.pi * freq * np.arange(int(seconds * 16000)) / 16000)


def _options(**extra):
    options = wav_executor.ingest_options({})
    options.update(segment_s=1.0, hop_s=1.0, min_segment_s=0.2, **extra)
    return options


def test_split_makes_a_stream_per_track_with_its_role_and_its_spans(tmp_path):
    (tmp_path / "calls").mkdir()
    _stereo(str(tmp_path / "calls" / "c.wav"), _tone(3.0, 300), _tone(3.0, 500))
    spans = [(0.0, 2.0, "agent", 0), (1.0, 3.0, "fault", 1)]  # they overlap, on different tracks
    examples, rejects, seconds = _process_spans(tmp_path, "calls/c.wav", spans,
                                                _options(tracks="split", track_roles=["agent", "customer"]))
    assert rejects == []
    got = sorted((_int(e, features.TRACK), _text(e, features.ROLE), _text(e, features.LABEL),
                  _float(e, features.OFFSET_S)) for e in examples)
    assert got == [(0, "agent", "agent", 0.0), (0, "agent", "agent", 1.0),
                   (1, "customer", "fault", 1.0), (1, "customer", "fault", 2.0)]
    assert len(seconds) == 1 and seconds[0]["tracks"] == 2
    assert seconds[0]["seconds_in"] == pytest.approx(6.0)  # both tracks' seconds
    assert seconds[0]["seconds_in_examples"] == pytest.approx(4.0)
    assert sum(seconds[0]["dropped"].values()) == pytest.approx(2.0)  # each track's unlabelled second
    # A track's audio is that channel alone: 300 Hz on the agent's, 500 Hz on the customer's.
    for e in examples:
        audio = wav_io.decode_to_mono_16k(e.features.feature[features.AUDIO].bytes_list.value[0])
        peak = np.argmax(np.abs(np.fft.rfft(audio))) * 16000 / len(audio)
        assert peak == pytest.approx(300 if _int(e, features.TRACK) == 0 else 500, abs=5)


def test_a_silent_track_is_dropped_with_its_reason_and_the_call_kept(tmp_path):
    (tmp_path / "calls").mkdir()
    _stereo(str(tmp_path / "calls" / "c.wav"), _tone(2.0, 300), np.zeros(32000))
    examples, rejects, seconds = _process_spans(tmp_path, "calls/c.wav", [(0.0, 2.0, "agent", None)],
                                                _options(tracks="split"))
    assert rejects == [] and {_int(e, features.TRACK) for e in examples} == {0}
    assert {_text(e, features.ROLE) for e in examples} == {"track0"}  # no track_roles: track<i>
    assert seconds[0]["seconds_in"] == pytest.approx(4.0)
    assert seconds[0]["dropped"] == {f"a track without an example: {segments.SILENT}": pytest.approx(2.0)}


def test_overlapping_spans_of_two_tracks_cannot_be_mixed_into_one_stream(tmp_path):
    (tmp_path / "calls").mkdir()
    _stereo(str(tmp_path / "calls" / "c.wav"), _tone(3.0, 300), _tone(3.0, 500))
    examples, rejects, _ = _process_spans(tmp_path, "calls/c.wav", [(0.0, 2.0, "agent", 0), (1.0, 3.0, "fault", 1)],
                                          _options())
    assert examples == [] and len(rejects) == 1 and "set data.tracks=split" in rejects[0]["reason"]


def test_segments_csv_checks_overlap_per_track(tmp_path):
    table = tmp_path / "segments.csv"
    table.write_text("file_name,start_s,end_s,label,track\nc.wav,0,2,agent,0\nc.wav,1,3,fault,1\n")
    assert tables.read_segments(str(tmp_path), "segments.csv") == {
        "c.wav": [(0.0, 2.0, "agent", 0), (1.0, 3.0, "fault", 1)]}
    table.write_text("file_name,start_s,end_s,label,track\nc.wav,0,2,agent,0\nc.wav,1,3,agent,0\n")
    with pytest.raises(ValueError, match=r"segments.csv:3: span of c.wav overlaps the one on line 2 on track 0"):
        tables.read_segments(str(tmp_path), "segments.csv")
    table.write_text("file_name,start_s,end_s,label,track\nc.wav,0,2,agent,\nc.wav,1,3,fault,1\n")
    with pytest.raises(ValueError, match=r"segments.csv:3: span of c.wav overlaps the one on line 2"):
        tables.read_segments(str(tmp_path), "segments.csv")  # a span of every track
    table.write_text("file_name,start_s,end_s,label,track\nc.wav,0,2,agent,left\n")
    with pytest.raises(ValueError, match=r"segments.csv:2: track 'left' is not a channel index"):
        tables.read_segments(str(tmp_path), "segments.csv")


def test_a_call_kept_as_two_files_gives_each_its_track_from_metadata(tmp_path):
    """One file per side, matched by the call's group: each file's examples carry the track (and role)
    metadata.csv gives it, and the call's group keeps both in one split."""
    (tmp_path / "calls").mkdir()
    roles = dict(tracks="split", track_roles=["agent", "customer"])
    got = {}
    for name, track, freq in (("c1_agent.wav", "0", 300), ("c1_customer.wav", "1", 500)):
        soundfile.write(str(tmp_path / "calls" / name), _tone(2.0, freq), 16000, subtype="PCM_16")
        meta = {features.LABEL: "x", features.GROUP: "c1", features.TRACK: track}
        examples, rejects, seconds = _process_spans(tmp_path, f"calls/{name}", [(0.0, 2.0, "x", int(track))],
                                                    _options(**roles), [meta])
        assert rejects == [] and seconds[0]["seconds_in"] == pytest.approx(2.0)
        got[name] = {(_int(e, features.TRACK), _text(e, features.ROLE), _text(e, features.GROUP)) for e in examples}
    assert got == {"c1_agent.wav": {(0, "agent", "c1")}, "c1_customer.wav": {(1, "customer", "c1")}}
    # A stereo file holds its own tracks: a track in metadata.csv is refused, naming the problem.
    _stereo(str(tmp_path / "calls" / "s.wav"), _tone(2.0, 300), _tone(2.0, 500))
    _, rejects, _ = _process_spans(tmp_path, "calls/s.wav", None, _options(**roles),
                                   [{features.LABEL: "x", features.TRACK: "1"}])
    assert len(rejects) == 1 and "only a one-channel file" in rejects[0]["reason"]


def _process_spans(base, source, spans, options, meta=()):
    """windows.ToExamples on one recording with its spans (as the executor's join gives them)."""
    import apache_beam as beam
    import tensorflow as tf

    from components.ingest import report as ingest_report
    from components.ingest import windows
    do_fn = windows.ToExamples(str(base), options)
    do_fn.setup()
    outputs = list(do_fn.process((source, {"file": [True], "meta": list(meta),
                                           "spans": [] if spans is None else [spans]})))
    tagged = [o for o in outputs if isinstance(o, beam.pvalue.TaggedOutput)]
    return ([o for o in outputs if isinstance(o, tf.train.Example)],
            [o.value for o in tagged if o.tag == ingest_report.REJECTS_TAG],
            [o.value for o in tagged if o.tag == ingest_report.SECONDS_TAG])


def _int(e, key):
    return e.features.feature[key].int64_list.value[0]


def _float(e, key):
    return round(e.features.feature[key].float_list.value[0], 3)


def _text(e, key):
    return e.features.feature[key].bytes_list.value[0].decode()


@pytest.fixture(scope="module")
def stereo_calls(tmp_path_factory):
    root = tmp_path_factory.mktemp("stereo")
    demo_calls.generate(str(root / "audio"), str(root / "noise"), num_calls=4, min_seconds=15.0, max_seconds=30.0,
                        seed=3, stereo=True)
    return root / "audio"


def test_stereo_calls_put_each_side_on_its_track_with_its_truth(stereo_calls):
    truth = {r["file_name"]: r for r in read_rows(stereo_calls / demo_calls.TRUTH_FILE)}
    spans = read_rows(stereo_calls / "segments.csv")
    assert list(spans[0]) == ["file_name", "start_s", "end_s", "label", "track"]
    overtalk = 0.0
    for name, row in truth.items():
        noisy, clean = (soundfile.read(str(stereo_calls / d / name.split("/")[1]))[0] for d in ("noisy", "clean"))
        assert noisy.shape == clean.shape and noisy.shape[1] == 2
        mine = [s for s in spans if s["file_name"] == name]
        assert {s["label"] for s in mine if s["track"] == "0"} == {"agent"}
        assert {s["label"] for s in mine if s["track"] == "1"} == {row["customer_label"]}
        for track, role in enumerate(demo_calls.LABELS):
            own = [(float(s["start_s"]), float(s["end_s"])) for s in mine if s["track"] == str(track)]
            assert float(row[f"{role}_talk_s"]) == pytest.approx(sum(e - s for s, e in own), abs=0.02)
            # the clean track holds this side's speech only: silent outside its turns
            outside = np.ones(len(clean), bool)
            for s, e in own:  # (segments.csv keeps milliseconds)
                outside[int((s - 0.002) * 16000):int((e + 0.002) * 16000)] = False
            assert np.abs(clean[outside, track]).max() == 0.0
        overtalk += float(row["overtalk_s"])
    assert overtalk > 0  # some turns start before the other side has finished


def test_calls_per_voice_gives_each_customer_voice_every_intent(tmp_path):
    """With calls_per_voice=3 a customer voice (the split's group) makes three calls, one of each intent,
    so that the voice does not give the intent away; with the default each call has a voice of its own."""
    per_voice = {}
    for k in (1, 3):
        out = tmp_path / f"k{k}"
        demo_calls.generate(str(out / "audio"), str(out / "noise"), num_calls=3, min_seconds=8.0, max_seconds=12.0,
                            seed=3, stereo=True, calls_per_voice=k)
        groups = {r["file_name"]: r["group"] for r in read_rows(out / "audio" / "metadata.csv")}
        intents = {r["file_name"]: r["customer_label"] for r in read_rows(out / "audio" / demo_calls.TRUTH_FILE)}
        per_voice[k] = {g: sorted(intents[n] for n in groups if groups[n] == g) for g in set(groups.values())}
    assert len(per_voice[1]) == 3
    assert list(per_voice[3].values()) == [sorted(demo_calls.INTENTS)]
    with pytest.raises(ValueError, match="calls_per_voice"):
        demo_calls.generate(str(tmp_path / "bad"), str(tmp_path / "bad_noise"), num_calls=1, stereo=True,
                            calls_per_voice=0)
