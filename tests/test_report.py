"""The run report: the page renders in a real browser (headless Chromium, driven by
playwright) with every image and audio element loaded and every figure backed by
data, and the browser check fails on a broken page. The report of a real run is
checked by the end-to-end tests with `assert_report_renders`."""
import csv
import os
import shutil
import time

import numpy as np
import pytest
import tensorflow as tf

from components import features
from components.audio import wav_io
from pipeline import report, summary
from pipeline.report import evaluation, page, plots, training
from pipeline.report.model import Item, Section, Sound

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARTIFACTS = os.environ.get("TFX_AUDIO_TEST_ARTIFACTS", os.path.join(REPO, "test-artifacts"))


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        if os.environ.get("CI"):
            pytest.fail("Debian's chromium is not installed: scripts/test.sh installs it")
        pytest.skip("Debian's chromium is not installed (scripts/test.sh installs it with apt-get)")
    return found


# Run in the page: what loaded and what did not.
_INSPECT = """() => ({
  images: [...document.images].map(i => ({alt: i.alt, ok: i.complete && i.naturalWidth > 0})),
  audio: [...document.querySelectorAll('audio')].map(a => ({ok: a.readyState >= 1 && a.duration > 0,
                                                            error: a.error ? a.error.code : null})),
  items: [...document.querySelectorAll('figure.item')].map(f => ({name: f.dataset.name, rows: +f.dataset.rows,
                                                                  plot: !!f.querySelector('img.plot')})),
})"""


def assert_report_renders(path: str, screenshot: str) -> dict:
    """Opens the report in headless Chromium: no console errors or failed loads, every image
    decoded, every audio element playable, every figure with rows and its CSV beside the page.
    Saves a full-page screenshot; returns the page's items by name (rows, plot)."""
    from playwright.sync_api import sync_playwright
    errors = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
        try:
            tab = browser.new_page(viewport={"width": 1280, "height": 900})
            tab.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
            tab.on("pageerror", lambda e: errors.append(str(e)))
            tab.on("requestfailed", lambda r: errors.append(f"failed to load {r.url[:80]}"))
            tab.goto("file://" + os.path.abspath(path), wait_until="load")
            deadline = time.time() + 120  # audio metadata arrives after the load event (a busy CI machine)
            state = tab.evaluate(_INSPECT)
            while not all(a["ok"] or a["error"] for a in state["audio"]) and time.time() < deadline:
                time.sleep(0.2)
                state = tab.evaluate(_INSPECT)
            os.makedirs(os.path.dirname(screenshot), exist_ok=True)
            tab.screenshot(path=screenshot, full_page=True)
        finally:
            browser.close()
    assert not errors, errors
    assert state["images"] and all(i["ok"] for i in state["images"]), [i for i in state["images"] if not i["ok"]]
    assert all(a["ok"] for a in state["audio"]), state["audio"]
    items = {item["name"]: item for item in state["items"]}
    for name, item in items.items():
        if item["plot"]:
            assert item["rows"] > 0, f"figure {name} has no data"
        with open(os.path.join(os.path.dirname(path), "data", f"{name}.csv")) as f:
            assert len(list(csv.DictReader(f))) == item["rows"], name
    return items


def _sections(png: bytes = None, wav: bytes = None) -> list:
    rows = [{"label": "yes", "train": 3, "test": 1}, {"label": "no", "train": 2, "test": 2}]
    tone = 0.3 * np.sin(2 * np.pi * 440 * np.arange(features.SAMPLE_RATE) / features.SAMPLE_RATE)
    signals = {"noisy": tone + 0.05, "clean": tone}
    wavs = {name: wav or wav_io.encode_pcm16_wav(x) for name, x in signals.items()}
    return [Section("Data", [Item("labels", "Labels", rows, png or plots.bars(rows, "label", ["train", "test"], "n")),
                             Item("rejects", "Rejects", [])]),
            Section("Listening", sounds=[Sound("A tone", wavs, Item(
                "tone", "tone", [{"signal": "noisy"}, {"signal": "clean"}], plots.spectrograms(signals)))])]


def test_the_page_renders_in_chromium_and_the_check_fails_on_a_broken_image_or_audio(tmp_path):
    path = page.write(str(tmp_path / "good"), "a run", "blessed", _sections())
    items = assert_report_renders(path, os.path.join(ARTIFACTS, "report-synthetic.png"))
    assert items["labels"] == {"name": "labels", "rows": 2, "plot": True} and items["tone"]["rows"] == 2
    with open(os.path.join(tmp_path / "good", "data", "tone_noisy.wav"), "rb") as f:
        assert wav_io.decode_to_mono_16k(f.read()).size == features.SAMPLE_RATE  # the audio beside the page
    for broken in (_sections(png=b"not a png"), _sections(wav=b"RIFF not a wav")):
        with pytest.raises(AssertionError):
            assert_report_renders(page.write(str(tmp_path / "broken"), "a run", "-", broken),
                                  str(tmp_path / "broken.png"))


def test_training_curves_keep_the_last_value_written_for_a_step_after_a_resume(tmp_path):
    """A resumed Trainer writes steps past its checkpoint again, into a second event file."""
    for values in ({1: 0.9, 2: 0.8, 3: 0.7}, {3: 0.5, 4: 0.4}):
        writer = tf.summary.create_file_writer(str(tmp_path))
        with writer.as_default():
            for step, value in values.items():
                tf.summary.scalar("loss", value, step=step)
                tf.summary.scalar("learning_rate", 0.1 * step, step=step)
        writer.close()
        time.sleep(1.1)  # event files are named by the second they were opened
    rows = training.scalars(str(tmp_path))
    loss = [(row["step"], round(row["value"], 6)) for row in rows if row["tag"] == "loss"]
    assert loss == [(1, 0.9), (2, 0.8), (3, 0.5), (4, 0.4)]
    assert [row["step"] for row in rows if row["tag"] == "learning_rate"] == [1, 2, 3, 4]


def _run(node_states, **fields) -> summary.RunSummary:
    values = dict(run_id="r", node_states=node_states, artifacts={}, inputs={}, split_counts={}, input_files=0,
                  rejected=0, rejects_file="", seconds={}, dropped_by_reason={}, rejected_unknown=0, metrics={},
                  slice_metrics={}, anomalies={}, failed_checks=[], blessed=False, pushed=False,
                  pushed_destination=None)
    return summary.RunSummary(**{**values, **fields})


def test_the_headline_says_how_the_run_ended():
    gate = _run({"ExampleValidator": "COMPLETE", "AnomaliesGate": "FAILED"},
                anomalies={"train": ["clipping_ratio: out of range"]})
    assert report.verdict(gate) == "stopped: AnomaliesGate failed (anomalies in train: clipping_ratio: out of range)"
    assert report.verdict(_run({"AnomaliesGate": "COMPLETE"})) == "data validated; no model trained in this run"
    assert report.verdict(_run({"Evaluator": "COMPLETE"}, blessed=True, pushed=True)) == "blessed and pushed"
    assert report.verdict(_run({"Evaluator": "COMPLETE"}, failed_checks=["accuracy: value 0.2"])) == \
        "not blessed: accuracy: value 0.2"


def test_slices_are_read_whole_and_snr_buckets_ordered_by_their_edges():
    assert evaluation._columns("has_clean=1,noise_kind=street, busy") == {"has_clean": "1",
                                                                          "noise_kind": "street, busy"}
    names = ["10-20", "<-5", ">=20", "0-5", "-5-0", "5-10", "no_reference"]
    assert sorted(names, key=evaluation._order) == ["<-5", "-5-0", "0-5", "5-10", "10-20", ">=20", "no_reference"]
