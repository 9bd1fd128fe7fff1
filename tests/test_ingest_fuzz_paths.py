"""Property-based fuzzing of ingestion's paths (hypothesis; issue 32, item 5): a random tree
under input_base of `<label>/*.wav` entries: good short recordings, dangling symbolic links,
link loops, links to good files inside input_base, FIFOs, directories named like a recording,
symbolic links to folders inside input_base and out of it, names that are not UTF-8 or hold
spaces, quotes, commas or `*?[]`; and a metadata.csv naming some entries once each under another
spelling (`./a/x.wav`, `a//x.wav`). The driver's fingerprint takes the tree without raising and
counts every entry; the executor finishes, and every entry the pattern matches (or could reach
into) is accounted exactly once: as the examples of its `source` or as one reject of its
`source` (bytes that are not UTF-8 shown escaped), and nothing else appears. A file reached by
several names is read once. Nothing opens a FIFO."""
import collections
import contextlib
import io
import os

import numpy as np
import soundfile
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components import features
from components.ingest import listing
from components.ingest import report as ingest_report
from tests.audio_helpers import tone
from tests.test_ingest_bad_entries import _fifo_guard, _fingerprint
from tests.test_wav_example_gen import _read_examples, _run_executor, _value, _write_metadata

# Label folders and name pieces as bytes: b"\xff" and a lone b"\xe9" are not UTF-8. A backslash is a
# piece too, but no "x" or "f": a name spelling an escape (`\xff`) literally would be shown as a name that
# is not UTF-8 is, and the two would collide (a known limit of the escaped names).
_LABELS = [b"yes", b"no", b"a b", b"[x]", b"caf\xc3\xa9", b"bad\xff"]
_PIECES = [b"a", b"b", b"Z", b"0", b" ", b"[", b"]", b"*", b"?", b"-", b",", b'"', b"'",
           b"\xc3\xa9", b"\xff", b"\xe9", b"\\"]
_KINDS = ("good", "link", "dangling", "loop", "fifo", "directory", "folder_link")
_SPELLINGS = (None, "./{label}/{stem}.wav", "{label}//{stem}.wav", "{label}/./{stem}.wav", "<absolute>")
_REASONS = {"dangling": "a symbolic link to nothing: its target does not exist; not read",
            "loop": "a loop of symbolic links; not read",
            "fifo": "not a regular file (a FIFO); not read",
            "directory": "not a regular file (a directory); not read"}
_AGAIN = "another name of {} (a symbolic or hard link to the same file); read once, under that name"
_ANCHOR = (b"yes", b"anchor")  # always there and good, so the run has examples (no piece spells it)


def _utf8(raw: bytes):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


@st.composite
def trees(draw):
    """[(label, stem, kind, extra)], unique by (label, stem); extra: a link's target (an index
    into the good files) and whether it is relative, a loop's form, a metadata spelling."""
    drawn = draw(st.lists(
        st.tuples(st.sampled_from(_LABELS), st.lists(st.sampled_from(_PIECES), min_size=1, max_size=5).map(b"".join),
                  st.sampled_from(_KINDS)),
        min_size=1, max_size=8, unique_by=lambda entry: entry[:2]))
    tree = [(*_ANCHOR, "good", {"listed": draw(st.sampled_from(_SPELLINGS))})]
    for label, stem, kind in drawn:
        extra = {"listed": draw(st.sampled_from(_SPELLINGS)), "target": draw(st.integers(0, 20)),
                 "relative": draw(st.booleans()), "self_loop": draw(st.booleans())}
        tree.append((label, stem, kind, extra))
    return tree


def _wav_bytes(freq):
    buf = io.BytesIO()
    soundfile.write(buf, tone(0.5, freq), features.SAMPLE_RATE, subtype="PCM_16", format="WAV")
    return buf.getvalue()


def _build(base, tree):
    """Makes the tree under `base`; returns ({shown source: label}, {shown source: reason}, rows)."""
    root = os.fsencode(base)
    good = [(label, stem) for label, stem, kind, _ in tree if kind == "good"]
    accepted, rejected, rows, links = {}, {}, [], collections.defaultdict(list)
    for i, (label, stem, kind, extra) in enumerate(tree):
        folder = os.path.join(root, label)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, stem + b".wav")
        if kind == "folder_link":  # at the top, where */*.wav could reach into it
            name = b"to-" + label + b"-" + stem
            if extra["relative"]:
                os.symlink(b"yes", os.path.join(root, name))
            else:
                elsewhere = os.path.join(os.path.dirname(root), b"elsewhere")
                os.makedirs(elsewhere, exist_ok=True)
                with open(os.path.join(elsewhere, b"c.wav"), "wb") as f:
                    f.write(_wav_bytes(950))
                os.symlink(elsewhere, os.path.join(root, name))
            shown = listing.shown(os.fsdecode(name))
            rejected[shown] = (listing.NOT_UTF8 if _utf8(name) is None else listing.FOLDER_LINK if extra["relative"]
                               else f"outside input_base: {shown} leads out of it (an absolute path, '..' or a "
                                    f"symbolic link); not read")
            continue
        if kind == "good":
            with open(path, "wb") as f:
                f.write(_wav_bytes(200 + 50 * i))
        elif kind == "link":
            target = good[extra["target"] % len(good)]
            target_path = os.path.join(root, *target) + b".wav"
            os.symlink(os.path.relpath(target_path, folder) if extra["relative"] else target_path, path)
        elif kind == "dangling":
            os.symlink(os.path.join(folder, b"nowhere-%d" % i), path)
        elif kind == "loop":
            partner = path + b".lnk"  # not matched by */*.wav
            os.symlink(path if extra["self_loop"] else partner, path)
            if not extra["self_loop"]:
                os.symlink(path, partner)
        elif kind == "fifo":
            os.mkfifo(path)
        else:
            os.mkdir(path)
            with open(os.path.join(path, b"inside.wav"), "wb") as f:  # */*.wav does not reach it
                f.write(_wav_bytes(900))
        source = listing.shown(os.fsdecode(label + b"/" + stem + b".wav"))
        name_label, name_stem = _utf8(label), _utf8(stem)
        table_label = None
        if name_label is not None and name_stem is not None and extra["listed"]:
            spelled = (str(base / name_label / f"{name_stem}.wav") if extra["listed"] == "<absolute>"
                       else extra["listed"].format(label=name_label, stem=name_stem))
            table_label = f"meta{i}"
            rows.append({"file_name": spelled, "label": table_label})
        if name_label is None or name_stem is None:
            rejected[source] = listing.NOT_UTF8
        elif kind == "good":
            accepted[source] = table_label or name_label
        elif kind == "link":
            links[target].append((source, table_label or name_label))
        else:
            rejected[source] = _REASONS[kind]
    for (label, stem), names in links.items():  # one identity per file: the target's name, else the first link's
        target = os.fsdecode(label + b"/" + stem + b".wav")
        kept = target if _utf8(label) is not None and _utf8(stem) is not None else min(names)[0]
        for source, label_read in sorted(names):
            if source == kept:
                accepted[source] = label_read
            else:
                rejected[source] = _AGAIN.format(kept)
    return accepted, rejected, rows


def _assert_accounted_once_each(base, tree):
    """Builds `tree` under `base`, fingerprints and ingests it: every entry accounted once."""
    accepted, rejected, rows = _build(base, tree)
    if rows:
        _write_metadata(base / "metadata.csv", rows)
    assert len(accepted) + len(rejected) == len(tree), "two entries shown under one name"
    with contextlib.ExitStack() as guards:
        for label in {label for label, _, _, _ in tree}:
            guards.enter_context(_fifo_guard(base / os.fsdecode(label)))
        fingerprint = _fingerprint(base)
        examples = _run_executor(base, base.parent / "out", max_reject_fraction=1.0)
    assert f"num_files:{len(tree)}," in fingerprint, fingerprint  # every entry counted, none dropped

    written = [e for split in _read_examples(examples.uri).values() for e in split]
    sources = collections.Counter(_value(e, features.SOURCE).decode() for e in written)
    assert dict(sources) == {source: 1 for source in accepted}  # a 0.5 s tone is one window
    labels = {_value(e, features.SOURCE).decode(): _value(e, features.LABEL).decode() for e in written}
    assert labels == accepted  # metadata.csv's label, under whatever spelling, else the folder's

    _, rejects = ingest_report.read_report(os.path.join(examples.uri, ingest_report.REPORT_DIR))
    assert sorted(r["source"] for r in rejects) == sorted(rejected)  # each once, nothing else
    assert {r["source"]: r["reason"] for r in rejects} == rejected
    assert all(r["seconds"] is None for r in rejects)
    assert examples.get_int_custom_property("num_input_files") == len(tree)
    assert examples.get_int_custom_property("num_examples") == len(accepted)
    assert np.isclose(examples.get_float_custom_property("seconds_in"), 0.5 * len(accepted), atol=1e-3)


# Each draw runs the real executor (a Beam pipeline, ~2 s): a small fixed set, as CI's profile.
@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(tree=trees())
def test_any_tree_of_entries_is_accounted_once_each(tmp_path_factory, tree):
    _assert_accounted_once_each(tmp_path_factory.mktemp("paths") / "audio", tree)


def test_a_name_holding_a_backslash_is_accounted(tmp_path):
    _assert_accounted_once_each(tmp_path / "audio", [(*_ANCHOR, "good", {"listed": None}),
                                                     (b"yes", b"\\", "good", {"listed": None})])
