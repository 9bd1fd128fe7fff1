"""Prints a benchmark's markdown table and, with --out, writes its results file whole: the new run
(date, command, table) on top, and under "History" every earlier run of that file, newest first,
moved there as it was written (its headings one level down), never edited."""
import datetime
import os
import re
import sys
from typing import Optional

HISTORY = "## History"
_LATEST = re.compile(r"^## Latest run \((?P<date>[^)]*)\)\n", re.M)


def _demoted(block: str) -> str:
    return re.sub(r"^(#+) ", r"#\1 ", block, flags=re.M)


def _earlier(path: str) -> str:
    """The runs an existing results file holds: its latest as a history entry, then its history."""
    if not os.path.exists(path):
        return ""
    text = open(path).read()
    head, _, history = text.partition("\n" + HISTORY + "\n")
    history = history.split("\n", 2)[2] if history.startswith("\nEarlier runs") else history
    found = _LATEST.search(head)
    if found:
        entry = f"### Run of {found.group('date')}\n\n" + _demoted(head[found.end():].strip())
    else:  # a file from before runs were dated: all of it below its title
        entry = "### An undated run\n\n" + _demoted(head.split("\n", 1)[1].strip())
    return entry + ("\n\n" + history.strip() if history.strip() else "")


def folder_mb(folder: str) -> float:
    """The size of the files under `folder`, MB."""
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(folder) for f in files) / 2 ** 20


def publish(title: str, table: str, out: Optional[str]) -> None:
    print(table)
    if not out:
        return
    command = " ".join([".venv/bin/python -m", sys.modules["__main__"].__spec__.name, *sys.argv[1:]])
    earlier = _earlier(out)
    text = (f"# {title}\n\n## Latest run ({datetime.date.today().isoformat()})\n\n"
            f"Command: `{command}`\n\n{table.strip()}\n")
    if earlier:
        text += f"\n{HISTORY}\n\nEarlier runs, newest first, each as its command wrote it.\n\n{earlier}\n"
    with open(out, "w") as f:
        f.write(text)
