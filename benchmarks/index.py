"""Writes benchmarks/README.md: each benchmark, what it measures, the command of its latest run and
that run's first table, read from its module and its results file:
`python -m benchmarks.index > benchmarks/README.md` (tests/test_docs.py checks it is current)."""
import ast
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))


def _summary(module: str) -> str:
    doc = ast.get_docstring(ast.parse(open(os.path.join(HERE, module + ".py")).read())) or ""
    first = " ".join(doc.split("\n\n")[0].split()).removeprefix("Benchmark: ")
    return first[:1].upper() + first[1:]


def _latest(results: str) -> str:
    text = open(os.path.join(HERE, results)).read()
    return text.split("\n## History\n", 1)[0]


def _first_table(text: str) -> str:
    found = re.search(r"((?:^\|.*\|\n)+)", text, re.M)
    return found.group(1).strip() if found else "(no table)"


def _command(text: str) -> str:
    found = re.search(r"^Command[^`]*`([^`]+)`", text, re.M)
    return found.group(1) if found else ""


_NOT_BENCHMARKS = {"__init__", "index", "report", "whole_recordings"}  # the helpers beside them


def benchmarks():
    """(module, results file) of every benchmark, whether or not it has written its results yet."""
    modules = sorted(f[:-3] for f in os.listdir(HERE) if f.endswith(".py") and f[:-3] not in _NOT_BENCHMARKS)
    return [(module, f"RESULTS-{module}.md") for module in modules]


def markdown() -> str:
    out = ["# Benchmarks", "",
           "Speed, memory and quality measured side by side in one run each (ratios, not timed tests).",
           "Each command writes its results file whole: the new run on top, the earlier ones kept under",
           "its History. This page is generated: `python -m benchmarks.index > benchmarks/README.md`.", ""]
    for module, results in benchmarks():
        if not os.path.exists(os.path.join(HERE, results)):
            out += [f"## {module}", "", _summary(module), "", f"Not run yet (its command writes {results}).", ""]
            continue
        latest = _latest(results)
        date = re.search(r"^## Latest run \(([^)]*)\)", latest, re.M)
        out += [f"## {module}", "", _summary(module), "",
                f"Results: [{results}]({results})" + (f", latest run {date.group(1)}" if date else "") + ".", ""]
        if _command(latest):
            out += ["```", _command(latest), "```", ""]
        out += [_first_table(latest), ""]
    return "\n".join(out)


if __name__ == "__main__":
    print(markdown(), end="")
