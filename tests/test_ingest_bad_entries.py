"""One bad entry under the file pattern must not stop a run (issue 32): a dangling symbolic
link, a link loop, a name that is not UTF-8, a directory, FIFO or socket named like a
recording, a symbolic link to a folder (inside input_base or out of it), a second name of a
file (a symbolic or hard link to it). The driver's fingerprint takes each without raising;
the executor turns each into one reject with a plain reason and reads every other file once.
A FIFO is never opened."""
import contextlib
import errno
import os
import socket
import stat
import threading

import pytest
from tfx.components.example_gen import utils as example_gen_utils
from tfx.utils import io_utils

from components import features
from components.ingest import component, executor, listing
from components.ingest import report as ingest_report
from tests.audio_helpers import tone, write_wav
from tests.test_wav_example_gen import _exec_properties, _read_examples, _run_executor, _value


def _dangling(folder):
    os.symlink(folder / "nowhere.wav", folder / "dangling.wav")
    return {"yes/dangling.wav": "a symbolic link to nothing: its target does not exist; not read"}


def _loop(folder):
    os.symlink(folder / "loop_b.wav", folder / "loop_a.wav")
    os.symlink(folder / "loop_a.wav", folder / "loop_b.wav")
    reason = "a loop of symbolic links; not read"
    return {"yes/loop_a.wav": reason, "yes/loop_b.wav": reason}


def _not_utf8(folder):
    with open(os.path.join(os.fsencode(folder), b"bad\xff.wav"), "wb") as f:
        f.write((folder / "a.wav").read_bytes())  # a readable recording, but its name
    return {"yes/bad\\xff.wav": "its name is not UTF-8 (its bytes shown escaped); not read: rename it"}


def _directory(folder):
    (folder / "dir.wav").mkdir()
    write_wav(folder / "dir.wav" / "inside.wav", tone(0.3, 500))  # not matched by */*.wav
    return {"yes/dir.wav": "not a regular file (a directory); not read"}


def _fifo(folder):
    os.mkfifo(folder / "fifo.wav")
    return {"yes/fifo.wav": "not a regular file (a FIFO); not read"}


def _socket(folder):
    here = os.getcwd()
    os.chdir(folder)  # a socket's path is limited to ~100 bytes
    try:
        server = socket.socket(socket.AF_UNIX)
        server.bind("socket.wav")
    finally:
        os.chdir(here)
    return {"yes/socket.wav": "not a regular file (a socket); not read"}


def _folder_link_inside(folder):
    os.symlink(folder.parent / "no", folder.parent / "alias")  # its b.wav would be read twice if followed
    return {"alias": listing.FOLDER_LINK}


def _folder_link_outside(folder):
    elsewhere = folder.parent.parent / "elsewhere"
    write_wav(elsewhere / "c.wav", tone(0.5, 900))
    os.symlink(elsewhere, folder.parent / "outside")
    return {"outside": "outside input_base: outside leads out of it (an absolute path, '..' or a symbolic "
                       "link); not read"}


def _link_to_a_file(folder):
    os.symlink("a.wav", folder / "again.wav")
    return {"yes/again.wav": "another name of yes/a.wav (a symbolic or hard link to the same file); "
                             "read once, under that name"}


def _hard_link(folder):
    os.link(folder / "a.wav", folder / "hard.wav")
    return {"yes/hard.wav": "another name of yes/a.wav (a symbolic or hard link to the same file); "
                            "read once, under that name"}


BAD_ENTRIES = {"dangling_link": _dangling, "link_loop": _loop, "name_not_utf8": _not_utf8,
               "directory": _directory, "fifo": _fifo, "socket": _socket,
               "folder_link_inside": _folder_link_inside, "folder_link_outside": _folder_link_outside,
               "link_to_a_file": _link_to_a_file, "hard_link": _hard_link}


def _folder(base):
    write_wav(base / "yes" / "a.wav", tone(0.5, 300))
    write_wav(base / "no" / "b.wav", tone(0.5, 700))
    return base / "yes"


def _fingerprint(base, **options):
    properties = component.Driver(None).resolve_exec_properties(_exec_properties(base, **options), None, None)
    return properties[example_gen_utils.FINGERPRINT_PROPERTY_NAME]


@contextlib.contextmanager
def _fifo_guard(folder):
    """Fails the test if anything opens a FIFO under `folder` for reading (a reader waits
    forever for a writer): polls for a blocked reader, releases it and records it."""
    fifos = [folder / n for n in os.listdir(folder) if stat.S_ISFIFO(os.lstat(folder / n).st_mode)]
    opened, done = [], threading.Event()

    def poll():
        while not done.wait(0.05):
            for fifo in fifos:
                try:
                    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # succeeds only with a reader
                    opened.append(fifo.name)
                except OSError as e:
                    assert e.errno == errno.ENXIO, e
    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
    assert not opened, f"{opened} opened for reading"


@pytest.mark.parametrize("kind", sorted(BAD_ENTRIES))
def test_the_fingerprint_takes_a_bad_entry_without_raising_and_counts_it(tmp_path, kind):
    base = tmp_path / "audio"
    folder = _folder(base)
    healthy = _fingerprint(base)
    BAD_ENTRIES[kind](folder)
    with _fifo_guard(folder):
        first = _fingerprint(base)
    assert _fingerprint(base) == first  # the same key while nothing changes: the cache works
    assert first != healthy  # the entry changes what the run reports, so it is in the key


def test_the_fingerprint_of_a_healthy_folder_is_tfx_own(tmp_path):
    """TFX's own fingerprint is the key's first line: where it worked, it is unchanged (the lines after it add
    what TFX's leaves out)."""
    base = tmp_path / "audio"
    _folder(base)
    tfx_own = io_utils.generate_fingerprint("all", os.path.join(str(base), "*/*.wav"))
    assert _fingerprint(base).split("\n")[0] == tfx_own


@pytest.mark.parametrize("kind", sorted(BAD_ENTRIES))
def test_a_bad_entry_is_one_reject_and_every_other_file_is_read(tmp_path, kind):
    base = tmp_path / "audio"
    folder = _folder(base)
    expected = BAD_ENTRIES[kind](folder)
    with _fifo_guard(folder):
        examples = _run_executor(base, tmp_path / "out", max_reject_fraction=1.0)
    read = {_value(e, features.SOURCE).decode() for split in _read_examples(examples.uri).values() for e in split}
    assert read == {"yes/a.wav", "no/b.wav"}
    _, rejects = ingest_report.read_report(os.path.join(examples.uri, ingest_report.REPORT_DIR))
    assert {r["source"]: r["reason"] for r in rejects} == expected
    assert len(rejects) == len(expected) and all(r["seconds"] is None for r in rejects)
    assert examples.get_int_custom_property("num_input_files") == 2 + len(expected)


def test_a_name_spelling_another_names_escape_is_read_and_the_other_rejected(tmp_path):
    """`bad\\xff.wav` (a backslash, UTF-8) and bad<0xff>.wav are shown alike: both accounted."""
    base = tmp_path / "audio"
    folder = _folder(base)
    write_wav(folder / "bad\\xff.wav", tone(0.5, 800))
    expected = _not_utf8(folder)
    examples = _run_executor(base, tmp_path / "out", max_reject_fraction=1.0)
    read = [_value(e, features.SOURCE).decode() for split in _read_examples(examples.uri).values() for e in split]
    assert sorted(read) == ["no/b.wav", "yes/a.wav", "yes/bad\\xff.wav"]
    _, rejects = ingest_report.read_report(os.path.join(examples.uri, ingest_report.REPORT_DIR))
    assert [(r["source"], r["reason"]) for r in rejects] == list(expected.items())
    assert examples.get_int_custom_property("num_input_files") == 4


def test_a_bad_name_in_a_span_folder_does_not_stop_span_resolution(tmp_path):
    for day in (1, 2):
        write_wav(tmp_path / f"day-{day}" / "yes" / "a.wav", tone(0.5, 300))
    _not_utf8(tmp_path / "day-2" / "yes")
    properties = component.Driver(None).resolve_exec_properties(
        _exec_properties(tmp_path, file_pattern="day-{SPAN}/*/*.wav"), None, None)
    assert properties[example_gen_utils.SPAN_PROPERTY_NAME] == 2
    assert "num_files:2" in properties[example_gen_utils.FINGERPRINT_PROPERTY_NAME]


def test_a_span_folder_whose_name_is_not_utf8_leaves_the_other_spans_found(tmp_path):
    from components.ingest import spans

    for day in (1, 2):
        write_wav(tmp_path / f"day-{day}" / "yes" / "a.wav", tone(0.5, 300))
    os.mkdir(os.path.join(os.fsencode(tmp_path), b"day-\xff"))
    assert spans.present(str(tmp_path), "day-{SPAN}/*/*.wav") == [1, 2]


def test_a_metadata_table_that_is_a_fifo_is_fingerprinted_without_being_opened(tmp_path):
    _folder(tmp_path)
    os.mkfifo(tmp_path / "metadata.csv")
    with _fifo_guard(tmp_path):
        assert "metadata.csv: sha256 not read, not a regular file (a FIFO)" in _fingerprint(tmp_path)


def test_the_fingerprint_changes_with_the_executors_output_version(tmp_path, monkeypatch):
    """A fix that changes what the executor writes raises `OUTPUT_VERSION`; a run cached by the old code is then
    not reused (its output may lack examples: the Beam fix of version 2)."""
    base = tmp_path / "audio"
    _folder(base)
    before = _fingerprint(base)
    assert f"executor output version: {executor.OUTPUT_VERSION}" in before
    monkeypatch.setattr(executor, "OUTPUT_VERSION", executor.OUTPUT_VERSION + 1)
    assert _fingerprint(base) != before
