"""`tfx-audio predict` over folders holding what users' folders hold (issue 32): a FIFO named
like a recording, a name that is not UTF-8, a file too short to label, a missing file. Every
input ends as a row of predictions.csv or rejects.csv, each row on disk as soon as its file is
done, and one bad entry neither stops nor hangs the others.

The model is a tiny SavedModel with the signatures whole-recording inference reads
(`window_samples`, `label_names`, `serve_wav`): 'loud' when a window's RMS is high."""
import csv
import errno
import os
import threading

import numpy as np
import pytest
import tensorflow as tf

from components.serving import recording
from pipeline import cli, predict
from pipeline.outcome import ExitCode
from tests.audio_helpers import tone, write_wav

WINDOW = 8000  # 0.5 s at 16 kHz


class _Tiny(tf.Module):
    def __init__(self):
        super().__init__()
        self.label_names = tf.Variable(["quiet", "loud"], trainable=False)
        self.window_samples = tf.Variable(WINDOW, dtype=tf.int64, trainable=False)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serve_wav(self, wav):
        def rms(one):
            audio = tf.audio.decode_wav(one, desired_channels=1).audio[:, 0]
            return tf.sqrt(tf.reduce_mean(tf.square(audio)) + 1e-12)
        loud = tf.clip_by_value(tf.map_fn(rms, wav, fn_output_signature=tf.float32) * 2.0, 0.0, 1.0)
        probabilities = tf.stack([1.0 - loud, loud], axis=1)
        return {"probabilities": probabilities, "label": tf.gather(self.label_names, tf.argmax(probabilities, 1))}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("model") / "1")
    module = _Tiny()
    tf.saved_model.save(module, path, signatures={"serve_wav": module.serve_wav})
    return path


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _predict_cli(model_dir, inputs, out, *settings):
    return cli.main(["predict", "--model", model_dir, *map(str, inputs), "--out", str(out),
                     *[f"--set={s}" for s in settings]])


def test_a_fifo_named_like_a_recording_is_rejected_without_being_opened(model_dir, tmp_path):
    folder = tmp_path / "calls"
    write_wav(str(folder / "a.wav"), tone(1.0))
    fifo = folder / "b_stuck.wav"
    os.mkfifo(fifo)
    write_wav(str(folder / "c.wav"), tone(1.0, amplitude=0.01))
    done, hung = threading.Event(), []

    def watchdog():  # a reader blocked on the FIFO is let go (an empty write end), and the hang noted
        if done.wait(30):
            return
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            hung.append(True)
        except OSError:  # no reader: predict is slow, not blocked on the FIFO
            pass

    threading.Thread(target=watchdog, daemon=True).start()
    try:
        code = _predict_cli(model_dir, [folder], tmp_path / "out")
    finally:
        done.set()
    assert not hung, "predict opened the FIFO and waited for a writer"
    assert code == ExitCode.FAILED
    assert [os.path.basename(r["file"]) for r in _rows(tmp_path / "out" / "predictions.csv")] == ["a.wav", "c.wav"]
    rejects = _rows(tmp_path / "out" / "rejects.csv")
    assert [(os.path.basename(r["file"]), r["reason"]) for r in rejects] == [
        ("b_stuck.wav", "not a regular file (a FIFO); not read")]


def test_each_row_is_on_disk_as_soon_as_its_file_is_done(model_dir, tmp_path, monkeypatch):
    """A run stopped (killed, or stuck on a file) keeps the rows of the files before."""
    write_wav(str(tmp_path / "a.wav"), tone(1.0))
    write_wav(str(tmp_path / "c.wav"), tone(1.0))
    out = tmp_path / "out"
    seen = {}
    windows = recording.RecordingModel.windows

    def spying(self, path, *args, **kwargs):
        if path.endswith("c.wav"):  # what a reader of --out sees while c.wav is being labelled
            seen.update({name: _rows(out / name) for name in ("predictions.csv", "windows.csv", "rejects.csv")})
        return windows(self, path, *args, **kwargs)

    monkeypatch.setattr(recording.RecordingModel, "windows", spying)
    result = predict.predict(model_dir, [str(tmp_path / "a.wav"), str(tmp_path / "missing.wav"),
                                         str(tmp_path / "c.wav")], str(out), progress=False)
    assert (result.predicted, result.rejected) == (2, 1)
    assert [os.path.basename(r["file"]) for r in seen["predictions.csv"]] == ["a.wav"]
    assert [(os.path.basename(r["file"]), r["start_s"]) for r in seen["windows.csv"]] == [("a.wav", "0.0"),
                                                                                         ("a.wav", "0.5")]
    assert [os.path.basename(r["file"]) for r in seen["rejects.csv"]] == ["missing.wav"]


def test_a_name_that_is_not_utf8_is_a_reject_shown_escaped_and_the_others_are_labelled(model_dir, tmp_path, capsys):
    folder = tmp_path / "calls"
    write_wav(str(folder / "a.wav"), tone(1.0))
    write_wav(str(folder / "z.wav"), tone(1.0))
    bad = os.path.join(os.fsencode(folder), b"caf\xe9.wav")  # Latin-1 bytes, as old recorders write them
    with open(bad, "wb") as f:
        f.write((folder / "a.wav").read_bytes())
    code = _predict_cli(model_dir, [folder], tmp_path / "out")
    assert code == ExitCode.FAILED, capsys.readouterr().err  # not 2, "bad configuration"
    assert [os.path.basename(r["file"]) for r in _rows(tmp_path / "out" / "predictions.csv")] == ["a.wav", "z.wav"]
    rejects = _rows(tmp_path / "out" / "rejects.csv")
    assert [os.path.basename(r["file"]) for r in rejects] == ["caf\\xe9.wav"]
    assert "not UTF-8" in rejects[0]["reason"]


def test_a_recording_shorter_than_data_min_segment_s_is_refused_with_the_setting_named(model_dir, tmp_path):
    write_wav(str(tmp_path / "one_sample.wav"), np.full(1, 0.3))
    write_wav(str(tmp_path / "tenth.wav"), tone(0.1))
    write_wav(str(tmp_path / "short_window.wav"), tone(0.3))  # under one 0.5-s window, over min_segment_s
    files = [tmp_path / name for name in ("one_sample.wav", "tenth.wav", "short_window.wav")]
    assert _predict_cli(model_dir, files, tmp_path / "out") == ExitCode.FAILED
    assert [os.path.basename(r["file"]) for r in _rows(tmp_path / "out" / "predictions.csv")] == ["short_window.wav"]
    rejects = {os.path.basename(r["file"]): r["reason"] for r in _rows(tmp_path / "out" / "rejects.csv")}
    assert set(rejects) == {"one_sample.wav", "tenth.wav"}
    assert rejects["tenth.wav"] == "0.100 s long, shorter than data.min_segment_s (0.2 s): too short to label"
    # The ExampleGen's own setting: lowered, the tenth of a second is labelled.
    assert _predict_cli(model_dir, files, tmp_path / "out2", "data.min_segment_s=0.05") == ExitCode.FAILED
    assert [os.path.basename(r["file"]) for r in _rows(tmp_path / "out2" / "predictions.csv")] == [
        "tenth.wav", "short_window.wav"]


def test_a_digitally_silent_recording_is_refused_as_the_example_gen_refuses_it(model_dir, tmp_path):
    write_wav(str(tmp_path / "zeros.wav"), np.zeros(16000 * 3))
    write_wav(str(tmp_path / "pause.wav"), np.concatenate([np.zeros(16000 * 2), tone(0.5)]))  # heard at the end
    files = [tmp_path / "zeros.wav", tmp_path / "pause.wav"]
    assert _predict_cli(model_dir, files, tmp_path / "out") == ExitCode.FAILED
    assert [os.path.basename(r["file"]) for r in _rows(tmp_path / "out" / "predictions.csv")] == ["pause.wav"]
    assert [(os.path.basename(r["file"]), r["reason"]) for r in _rows(tmp_path / "out" / "rejects.csv")] == [
        ("zeros.wav", "digitally silent (every sample zero)")]


def test_a_recording_over_data_max_duration_s_is_refused_as_the_example_gen_refuses_it(model_dir, tmp_path):
    write_wav(str(tmp_path / "long.wav"), tone(2.0))
    write_wav(str(tmp_path / "short.wav"), tone(0.5))
    files = [tmp_path / "long.wav", tmp_path / "short.wav"]
    assert _predict_cli(model_dir, files, tmp_path / "out", "data.max_duration_s=1.0") == ExitCode.FAILED
    assert [os.path.basename(r["file"]) for r in _rows(tmp_path / "out" / "predictions.csv")] == ["short.wav"]
    assert [(os.path.basename(r["file"]), r["reason"]) for r in _rows(tmp_path / "out" / "rejects.csv")] == [
        ("long.wav", "2.0 s long, over the 1.0 s limit (data.max_duration_s)")]


def test_reject_reasons_are_plain_words(model_dir, tmp_path):
    os.symlink(tmp_path / "gone.wav", tmp_path / "dangling.wav")
    os.symlink(tmp_path / "loop.wav", tmp_path / "loop.wav")
    (tmp_path / "broken.wav").write_bytes(b"RIFF\x24\x00\x00\x00WAVEfmt not a wav at all")
    names = ["missing.wav", "dangling.wav", "loop.wav", "broken.wav"]
    result = predict.predict(model_dir, [str(tmp_path / n) for n in names], str(tmp_path / "out"), progress=False)
    assert (result.predicted, result.rejected) == (0, 4)
    reasons = {os.path.basename(r["file"]): r["reason"] for r in _rows(tmp_path / "out" / "rejects.csv")}
    assert reasons["missing.wav"] == "does not exist"
    assert reasons["loop.wav"] == "a loop of symbolic links; not read"
    assert reasons["dangling.wav"] == "a symbolic link to nothing: its target does not exist; not read"
    assert reasons["broken.wav"].startswith("not a readable audio file")
    for reason in reasons.values():
        assert "Errno" not in reason and str(tmp_path) not in reason and "Error:" not in reason, reason
    assert predict.plain_reason(PermissionError(errno.EACCES, "Permission denied", "/x/a.wav")) == "permission denied"
    assert predict.plain_reason(FileNotFoundError(errno.ENOENT, "No such file", "/x/a.wav")) == "does not exist"
    assert predict.plain_reason(OSError(errno.EIO, "Input/output error", "/x/a.wav")) == \
        "cannot be read: input/output error"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_an_unreadable_file_is_rejected_as_permission_denied(model_dir, tmp_path):
    write_wav(str(tmp_path / "locked.wav"), tone(1.0))
    os.chmod(tmp_path / "locked.wav", 0)
    result = predict.predict(model_dir, [str(tmp_path / "locked.wav")], str(tmp_path / "out"), progress=False)
    assert result.rejected == 1
    assert _rows(tmp_path / "out" / "rejects.csv")[0]["reason"] == "permission denied"



def test_split_tracks_without_roles_keep_a_muted_side_and_write_the_call_row(model_dir, tmp_path):
    """data.track_roles unset: the tracks are track0, track1; a side silent throughout (muted) is kept
    (its rows, no talk) and the call has its calls.csv row, in neither file twice."""
    import soundfile
    path = str(tmp_path / "call.wav")
    soundfile.write(path, np.stack([tone(3.0), np.zeros(48000)], axis=1), 16000, subtype="PCM_16")
    write_wav(str(tmp_path / "silent.wav"), np.zeros(16000), channels=2)
    out = tmp_path / "out"
    result = predict.predict(model_dir, [path, str(tmp_path / "silent.wav")], str(out), progress=False,
                             tracks="split")
    assert (result.predicted, result.rejected) == (1, 1)
    assert [(r["track"], r["role"]) for r in _rows(out / "predictions.csv")] == [("0", "track0"), ("1", "track1")]
    calls = _rows(out / "calls.csv")
    assert len(calls) == 1 and float(calls[0]["track1_talk_s"]) == 0.0 and calls[0]["tracks"] == "2"
    assert [os.path.basename(r["file"]) for r in _rows(out / "rejects.csv")] == ["silent.wav"]
    assert _rows(out / "rejects.csv")[0]["reason"] == "digitally silent (every sample zero)"
