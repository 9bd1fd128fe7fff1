"""The WAV ExampleGen's identity of a file and its strict tables (issue 32, items 2 and 3).

One identity per file: a file named in metadata.csv or segments.csv under another spelling
(`./yes/x.wav`, `yes//x.wav`, ...) than the glob's is one file, read once with the table's
label, its seconds counted once; two metadata rows naming one file are refused; a table row
naming a link to a listed file is a reject naming that file.
Strict tables: a table that is broken (not UTF-8, an unbalanced quote, a huge field, a link
out of input_base, a name outside it, over the size limit, an snr_db that is not a finite
number, a file its own clean reference) refuses the run, naming the file and the line."""
import os

import pytest

from components import features
from components.ingest import listing, tables
from components.ingest import report as ingest_report
from tests.audio_helpers import tone, write_wav
from tests.test_wav_example_gen import _read_examples, _run_executor, _value, _write_metadata

_SPELLINGS = ["./yes/x.wav", "yes//x.wav", "yes/./x.wav", "no/../yes/x.wav", "yes/x.wav/", "<absolute>"]


def _spelled(spelling, base):
    return str(base / "yes" / "x.wav") if spelling == "<absolute>" else spelling


def _examples(examples):
    return [e for split in _read_examples(examples.uri).values() for e in split]


def _seconds(examples):
    return ingest_report.read_seconds(os.path.join(examples.uri, ingest_report.REPORT_DIR))


@pytest.fixture()
def two_files(tmp_path):
    base = tmp_path / "audio"
    write_wav(base / "yes" / "x.wav", tone(0.5, 300))
    write_wav(base / "no" / "y.wav", tone(0.4, 600))
    return base


# -- one identity per file --------------------------------------------------------------

@pytest.mark.parametrize("spelling", _SPELLINGS)
def test_a_globbed_file_named_in_metadata_under_another_spelling_is_one_file_with_the_tables_label(
        two_files, tmp_path, spelling):
    _write_metadata(two_files / "metadata.csv",
                    [{"file_name": _spelled(spelling, two_files), "label": "no", "group": "spk-x"}])
    examples = _run_executor(two_files, tmp_path / "out")
    got = {_value(e, features.SOURCE).decode(): e for e in _examples(examples)}
    assert sorted(got) == ["no/y.wav", "yes/x.wav"]
    assert _value(got["yes/x.wav"], features.LABEL) == b"no"  # the table's label wins over the folder's
    assert _value(got["yes/x.wav"], features.GROUP) == b"spk-x"
    assert examples.get_int_custom_property("num_input_files") == 2
    assert _seconds(examples)["seconds_in"] == pytest.approx(0.9)  # each file once


def test_a_globbed_file_spanned_in_segments_under_another_spelling_is_one_file(two_files, tmp_path):
    (two_files / "segments.csv").write_text("file_name,start_s,end_s,label\n./yes/x.wav,0,0.5,maybe\n")
    examples = _run_executor(two_files, tmp_path / "out")
    labels = sorted((_value(e, features.SOURCE).decode(), _value(e, features.LABEL).decode())
                    for e in _examples(examples))
    assert labels == [("no/y.wav", "no"), ("yes/x.wav", "maybe")]
    assert _seconds(examples)["seconds_in"] == pytest.approx(0.9)


def test_glob_names_are_normalized_too():
    assert listing.keyed("/data/audio/./yes//x.wav", "/data/audio") == ("yes/x.wav", True)
    assert listing.keyed("/data/audio/yes/x.wav", "/data/audio/") == ("yes/x.wav", True)


def test_two_metadata_rows_naming_one_file_under_any_spelling_are_refused_naming_both_lines(tmp_path):
    _write_metadata(tmp_path / "metadata.csv", [{"file_name": "yes/x.wav", "label": "yes"},
                                                {"file_name": "no/y.wav", "label": "no"},
                                                {"file_name": "./yes//x.wav", "label": "no"}])
    with pytest.raises(ValueError, match=r"metadata.csv:4: \./yes//x\.wav \(that is yes/x\.wav\) is listed twice, "
                                         r"also on line 2"):
        tables.read_metadata(str(tmp_path), "metadata.csv")


def test_spans_of_one_file_under_two_spellings_are_checked_together(tmp_path):
    (tmp_path / "segments.csv").write_text(
        "file_name,start_s,end_s,label\nyes/x.wav,0,0.3,yes\n./yes/x.wav,0.2,0.5,no\n")
    with pytest.raises(ValueError, match=r"segments.csv:3: span of yes/x.wav overlaps the one on line 2"):
        tables.read_segments(str(tmp_path), "segments.csv")
    (tmp_path / "segments.csv").write_text(
        "file_name,start_s,end_s,label\nyes/x.wav,0,0.3,yes\n./yes/x.wav,0.3,0.5,no\n")
    assert tables.read_segments(str(tmp_path), "segments.csv") == {"yes/x.wav": [(0.0, 0.3, "yes", None),
                                                                                 (0.3, 0.5, "no", None)]}


def test_names_leaving_input_base_stay_refused_after_normalizing(two_files, tmp_path):
    _write_metadata(two_files / "metadata.csv", [{"file_name": "yes/../../elsewhere.wav", "label": "yes"}])
    write_wav(tmp_path / "elsewhere.wav", tone(0.5, 500))
    examples = _run_executor(two_files, tmp_path / "out", max_reject_fraction=1.0)
    _, rejects = ingest_report.read_report(os.path.join(examples.uri, ingest_report.REPORT_DIR))
    assert [r["source"] for r in rejects] == ["../elsewhere.wav"]
    assert rejects[0]["reason"].startswith("outside input_base")


# -- strict tables ------------------------------------------------------------------------

_TABLES = {"metadata.csv": (tables.read_metadata, "file_name,label\n", "yes/{},yes\n"),
           "segments.csv": (tables.read_segments, "file_name,start_s,end_s,label\n", "yes/{},0,1,yes\n")}


def _table(base, name, body: bytes):
    _, header, _ = _TABLES[name]
    (base / name).write_bytes(header.encode() + body)


def _rows(name, *files):
    return "".join(_TABLES[name][2].format(f) for f in files).encode()


@pytest.mark.parametrize("name", sorted(_TABLES))
def test_a_table_linked_from_outside_input_base_is_refused_not_followed(tmp_path, name):
    base = tmp_path / "audio"
    base.mkdir()
    _table(tmp_path, name, _rows(name, "a.wav"))
    os.symlink(tmp_path / name, base / name)
    with pytest.raises(ValueError, match=rf"audio/{name}: a symbolic link out of input_base; not read"):
        _TABLES[name][0](str(base), name)


@pytest.mark.parametrize("name", sorted(_TABLES))
@pytest.mark.parametrize("where", ["../{}", "<absolute>"])
def test_a_table_named_outside_input_base_is_refused(tmp_path, name, where):
    base = tmp_path / "audio"
    base.mkdir()
    _table(tmp_path, name, _rows(name, "a.wav"))
    given = str(tmp_path / name) if where == "<absolute>" else where.format(name)
    with pytest.raises(ValueError, match=r": outside input_base .*; not read: a table lives in input_base"):
        _TABLES[name][0](str(base), given)


@pytest.mark.parametrize("name", sorted(_TABLES))
def test_a_table_over_the_size_limit_is_refused_before_it_is_read(tmp_path, name, monkeypatch):
    _table(tmp_path, name, _rows(name, "a.wav") * 1000)
    monkeypatch.setattr(tables, "MAX_TABLE_MB", 0.01)
    with pytest.raises(ValueError, match=rf"{name}: 0 MB, over the 0.01 MB a table may be"):
        _TABLES[name][0](str(tmp_path), name)


def test_a_metadata_row_naming_a_link_to_a_globbed_file_is_a_reject_naming_the_file(two_files, tmp_path):
    os.symlink("yes/x.wav", two_files / "alias.wav")  # not matched by */*.wav: only the table names it
    _write_metadata(two_files / "metadata.csv", [{"file_name": "alias.wav", "label": "maybe"}])
    examples = _run_executor(two_files, tmp_path / "out", max_reject_fraction=1.0)
    got = {_value(e, features.SOURCE).decode(): _value(e, features.LABEL) for e in _examples(examples)}
    assert got == {"yes/x.wav": b"yes", "no/y.wav": b"no"}  # read once, under its own name and label
    _, rejects = ingest_report.read_report(os.path.join(examples.uri, ingest_report.REPORT_DIR))
    assert [(r["source"], r["reason"]) for r in rejects] == [
        ("alias.wav", "another name of yes/x.wav (a symbolic or hard link to the same file); read once, "
                      "under that name")]
    assert _seconds(examples)["seconds_in"] == pytest.approx(0.9)


@pytest.mark.parametrize("name", sorted(_TABLES))
@pytest.mark.parametrize("body, line", [
    (b"yes/a.wav,yes\nyes/caf\xe9.wav,yes\n", 3),  # cp1252
    ("yes/a.wav,yes\n".encode("utf-16"), 2),  # UTF-16 with its byte-order mark
    ("yes/a.wav,yes\n".encode("utf-16-le"), 2),  # without it: NUL bytes
])
def test_a_table_that_is_not_utf8_is_refused_naming_the_line(tmp_path, name, body, line):
    _table(tmp_path, name, body)
    with pytest.raises(ValueError, match=rf"{name}:{line}: not UTF-8 text.*save it as UTF-8"):
        _TABLES[name][0](str(tmp_path), name)


@pytest.mark.parametrize("name", sorted(_TABLES))
def test_a_utf8_bom_is_allowed(tmp_path, name):
    (tmp_path / name).write_bytes(b"\xef\xbb\xbf" + _TABLES[name][1].encode() + _rows(name, "caf\xe9.wav"))
    assert list(_TABLES[name][0](str(tmp_path), name)) == ["yes/caf\xe9.wav"]


@pytest.mark.parametrize("name", sorted(_TABLES))
def test_a_field_over_the_limit_is_refused_naming_the_line(tmp_path, name):
    _table(tmp_path, name, _rows(name, "a.wav", "b" * 140_000 + ".wav", "c.wav"))
    with pytest.raises(ValueError, match=rf"{name}:3: a field longer than 131072 characters"):
        _TABLES[name][0](str(tmp_path), name)


@pytest.mark.parametrize("name", sorted(_TABLES))
@pytest.mark.parametrize("tail", [b"", b"b" * 140_000 + b"\n"])  # the swallowed rest under or over the limit
def test_an_unbalanced_quote_is_refused_naming_the_line_where_it_opened(tmp_path, name, tail):
    body = _rows(name, "a.wav") + _rows(name, "b.wav").replace(b"yes/b", b'"yes/b') + _rows(name, "c.wav") + tail
    _table(tmp_path, name, body)
    with pytest.raises(ValueError, match=rf"{name}:3: a quoted field runs on over several lines"):
        _TABLES[name][0](str(tmp_path), name)


@pytest.mark.parametrize("snr", ["nan", "inf", "-inf", "NaN", "loud"])
def test_an_snr_db_that_is_not_a_finite_number_is_refused_naming_the_line(tmp_path, snr):
    _write_metadata(tmp_path / "metadata.csv", [{"file_name": "yes/a.wav", "label": "yes", "snr_db": "7"},
                                                {"file_name": "yes/b.wav", "label": "yes", "snr_db": snr}])
    with pytest.raises(ValueError, match=rf"metadata.csv:3: snr_db {snr!r} is not a finite number"):
        tables.read_metadata(str(tmp_path), "metadata.csv")


@pytest.mark.parametrize("clean", ["yes/a.wav", "./yes/a.wav"])
def test_a_file_named_its_own_clean_reference_is_refused(tmp_path, clean):
    _write_metadata(tmp_path / "metadata.csv", [{"file_name": "yes/a.wav", "label": "yes", "clean_file_name": clean}])
    with pytest.raises(ValueError, match=r"metadata.csv:2: clean_file_name names the file itself"):
        tables.read_metadata(str(tmp_path), "metadata.csv")


def test_a_broken_table_refuses_the_run(two_files, tmp_path):
    (two_files / "metadata.csv").write_bytes(b"file_name,label\nyes/x.wav,\"no\nno/y.wav,yes\n")
    with pytest.raises(ValueError, match=r"metadata.csv:2: a quoted field runs on"):
        _run_executor(two_files, tmp_path / "out")


def test_text_after_a_closing_quote_is_refused_not_dropped(tmp_path):
    """`"my file".wav` was read as `my file.wav` (its quotes silently dropped)."""
    (tmp_path / "metadata.csv").write_text('file_name,label\nyes/a.wav,yes\n"yes/my file".wav,yes\n')
    with pytest.raises(ValueError, match=r"metadata.csv:3: not a CSV row \(',' expected after '\"'\)"):
        tables.read_metadata(str(tmp_path), "metadata.csv")


def test_a_span_end_that_is_not_finite_is_refused(tmp_path):
    (tmp_path / "segments.csv").write_text("file_name,start_s,end_s,label\nyes/a.wav,0,inf,yes\n")
    with pytest.raises(ValueError, match=r"segments.csv:2: a span needs 0 <= start_s < end_s"):
        tables.read_segments(str(tmp_path), "segments.csv")
