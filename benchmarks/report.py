"""Prints a benchmark's markdown table and, with --out, writes it beside the command that made it."""
import sys
from typing import Optional


def publish(title: str, table: str, out: Optional[str]) -> None:
    print(table)
    if out:
        command = " ".join([".venv/bin/python -m", sys.modules["__main__"].__spec__.name, *sys.argv[1:]])
        with open(out, "w") as f:
            f.write(f"# {title}\n\nCommand: `{command}`\n\n{table}\n")
