"""The WAV ExampleGen's listing of its input: every entry its file pattern matches, for the
driver's fingerprint and the executor's reading step, neither stopped by one entry it cannot
read (a dangling symbolic link, a link loop, a name that is not UTF-8, a directory, FIFO or
socket named like a recording, a symbolic link to a folder): each such entry is listed, and
rejected when read, with its reason.

TFX's glob and stat raise on such an entry, Beam's local match drops some of them silently;
here the pattern syntax is Beam's (`*` within a folder, `**` across) and so is the walk.
Symbolic links to folders are not followed: each one the pattern could reach into is one
reject (following them would give the files inside input_base a second name, and read
folders outside it). One identity per file (`listed`): names that reach one file (symbolic
or hard links to it) are read once, under one of them; the others are rejects naming it."""
from __future__ import annotations

import errno
import fnmatch
import os
import posixpath
import re
import stat
from typing import Iterable, List, Optional, Tuple, Union

from absl import logging
from apache_beam.io.filesystem import FileSystem
from apache_beam.io.filesystems import FileSystems
from tfx.dsl.io import fileio

NOT_UTF8 = "its name is not UTF-8 (its bytes shown escaped); not read: rename it"
FOLDER_LINK = ("a symbolic link to a folder; not followed: the files inside input_base are read under their "
               "own names only (copy or move a folder into input_base to read it)")
_NANO_PER_SEC = 10 ** 9


def relative(path: str, input_base: str) -> str:
    base = input_base.rstrip("/") + "/"
    return path[len(base):] if path.startswith(base) else path


def normalized(name: str, input_base: str) -> str:
    """The one spelling of a name under input_base, the key that joins the glob and the tables:
    relative to input_base (an absolute path or URL under it made relative), `.`, `..`, doubled
    and trailing slashes resolved as text (`./yes//x.wav` is `yes/x.wav`). A name that leaves
    input_base keeps its leading `..` or `/`: refused when read."""
    if "://" in name:
        name = relative(name, input_base)
        if "://" in name:  # a URL elsewhere: as written (normpath would fold its `//`)
            return name
    elif os.path.isabs(name) and "://" not in input_base:
        name = relative(os.path.normpath(name), os.path.abspath(input_base))
    return posixpath.normpath(name)


def leaves_base(name: str) -> bool:
    """Whether a `normalized` name is outside input_base (its leading `..` or `/` kept, or a URL elsewhere)."""
    return name == ".." or name.startswith(("/", "../")) or "://" in name


def entries(pattern: str) -> List[str]:
    """The paths `pattern` matches, sorted. Local: every entry, as Beam's local match walks
    and matches them but keeping what it drops (entries it cannot stat, directories); a name
    that is not UTF-8 keeps its bytes as surrogates (`os.fsdecode`). Elsewhere: Beam's match."""
    if "://" in pattern:
        return sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)
    pattern = pattern + "*" if pattern.endswith("/") else pattern
    prefix = re.match(r"^[^[*?]*", pattern).group(0)
    if prefix == pattern:
        return [pattern] if os.path.lexists(pattern) else []
    # (Beam's `*` is [^/\\]*, a Windows habit: on a POSIX filesystem a backslash is a character of a name)
    match = re.compile(FileSystem.translate_pattern(pattern).replace(r"[^/\\]", "[^/]")).match
    found = []
    for folder, dirs, files in os.walk(os.path.dirname(prefix)):
        found += [path for path in (os.path.join(folder, name) for name in dirs + files) if match(path)]
        found += [path for path in (os.path.join(folder, name) for name in dirs)  # (not walked into)
                  if os.path.islink(path) and not match(path) and _reaches_into(pattern, path)]
    return sorted(found)


def _reaches_into(pattern: str, folder: str) -> bool:
    """Whether `pattern` could match a path inside `folder` (folder by folder; `**` reaches anywhere)."""
    wanted, parts = pattern.split("/"), folder.split("/")
    for i, part in enumerate(parts):
        if i >= len(wanted) - 1:
            return "**" in wanted[-1]
        if "**" in wanted[i]:
            return True
        if not fnmatch.fnmatchcase(part, wanted[i]):
            return False
    return True


def problem(path: str) -> Optional[str]:
    """Why a local entry is not read as a recording, in plain words; None for a regular
    file (or a link to one). Never opens it: a FIFO opened for reading waits for a writer."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        if e.errno == errno.ELOOP:
            return "a loop of symbolic links; not read"
        if os.path.islink(path):
            return "a symbolic link to nothing: its target does not exist; not read"
        return "does not exist" if e.errno == errno.ENOENT else f"cannot be read: {e.strerror}"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode) and os.path.islink(path):
        return FOLDER_LINK
    kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a device or other special file")
    return f"not a regular file ({kind}); not read"


def shown(name: str) -> str:
    """A listed name as reports and logs show it: the bytes that are not UTF-8 escaped (`\\xff`)."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def keyed(path: str, input_base: str) -> Tuple[str, Union[bool, str]]:
    """(name under input_base, True) of a listed entry, for the reading step. Beam carries
    names as UTF-8, so a name that is not is (`shown(name)`, NOT_UTF8): a reject."""
    name = normalized(relative(path, input_base), input_base)
    return (shown(name), NOT_UTF8) if not_utf8(name) else (name, True)


def listed(patterns: Iterable[str], input_base: str,
           table_names: Iterable[str] = ()) -> List[Tuple[str, Union[bool, str]]]:
    """`keyed` entries of every pattern, one identity per file: listed names and names the tables
    give (`table_names`, normalized) that reach the same local file (the same device and inode:
    through a symbolic or a hard link) are read once, under the name that goes through no
    symbolic link (else the first); each other name is a reject naming it (a table's name
    that is no listed entry is added as one)."""
    paths = sorted({path for pattern in patterns for path in entries(pattern)})
    out = [keyed(path, input_base) for path in paths]
    if "://" in input_base:  # (object stores have no links)
        return out
    keys = {name for name, _ in out}
    names = [name for name, ok in out if ok is True] + sorted(
        name for name in set(table_names) - keys if not leaves_base(name))  # (refused when read)
    by_file = {}
    for name in names:
        try:
            found = os.stat(os.path.join(input_base, name))
        except OSError:
            continue
        if stat.S_ISREG(found.st_mode):
            by_file.setdefault((found.st_dev, found.st_ino), []).append(name)
    again = {}
    for same in by_file.values():
        if len(same) > 1:
            direct = [name for name in same if os.path.realpath(os.path.join(input_base, name))
                      == os.path.abspath(os.path.join(input_base, name))]
            kept = min(direct or same)
            again.update({name: f"another name of {kept} (a symbolic or hard link to the same file); "
                                f"read once, under that name" for name in same if name != kept})
    return [(name, again.get(name, ok)) for name, ok in out] + sorted(
        (name, reason) for name, reason in again.items() if name not in keys)


def not_utf8(name: str) -> bool:
    """Whether a listed name (`os.fsdecode`'s, its stray bytes as surrogates) is not UTF-8."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _size_and_mtime(path: str) -> Optional[Tuple[int, int]]:
    """(bytes, mtime in ns) of the entry, of a link's own when its target cannot be stat'ed
    (dangling, a loop); None when it is gone."""
    if "://" in path:
        try:
            found = fileio.stat(path)
            return found.length, found.mtime_nsec
        except Exception as e:  # pylint: disable=broad-except  (each filesystem has its own errors)
            logging.warning("Fingerprint: %s left out, its stat failed: %s", path, e)
            return None
    for stat_fn in (os.stat, os.lstat):
        try:
            found = stat_fn(path)
            return found.st_size, found.st_mtime_ns
        except OSError:
            pass
    logging.warning("Fingerprint: %s left out, it is gone", shown(path))
    return None


def fingerprint(split_name: str, pattern: str) -> str:
    """TFX's `io_utils.generate_fingerprint` (count, bytes and whole-second mtimes of the
    matched files) over `entries`, the same string where TFX's worked. An entry whose target
    cannot be stat'ed counts by the link itself: it becomes a reject, so it is part of the
    run's input, and adding, removing or repairing it changes the key."""
    count = total_bytes = xor_checksum = sum_checksum = 0
    for path in entries(pattern):
        found = _size_and_mtime(path)
        if found is None:
            continue
        mtime = found[1] // _NANO_PER_SEC
        count, total_bytes = count + 1, total_bytes + found[0]
        xor_checksum, sum_checksum = xor_checksum ^ mtime, sum_checksum + mtime
    return (f"split:{split_name},num_files:{count},total_bytes:{total_bytes},"
            f"xor_checksum:{xor_checksum},sum_checksum:{sum_checksum}")
