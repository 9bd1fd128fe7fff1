"""The docs say what the code does: generated pages are current, the exit codes and verbs are the
code's, and every Markdown link and #anchor resolves."""
import os
import re

import pytest

from benchmarks import index
from components.config import describe
from pipeline import cli, outcome

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _read(*parts) -> str:
    with open(os.path.join(REPO, *parts)) as f:
        return f.read()


def _markdown_files():
    out = ["README.md"]
    for folder in ("docs", "benchmarks"):
        out += sorted(os.path.join(folder, f) for f in os.listdir(os.path.join(REPO, folder)) if f.endswith(".md"))
    return out


def _slugs(text: str) -> set:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces to hyphens, repeats -1, -2."""
    seen, out = {}, set()
    for heading in re.findall(r"^#{1,6} +(.+?) *$", re.sub(r"^```.*?^```", "", text, flags=re.M | re.S), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def test_settings_page_is_generated_from_the_config():
    assert _read("docs", "settings.md") == describe.markdown(), \
        "docs/settings.md is stale: python -m components.config.describe > docs/settings.md"


def test_every_setting_explains_itself():
    unexplained = [s.name for s in describe.walk() if isinstance(s, describe.Setting) and not s.help]
    assert not unexplained


def test_benchmarks_page_is_generated_from_the_results():
    assert _read("benchmarks", "README.md") == index.markdown(), \
        "benchmarks/README.md is stale: python -m benchmarks.index > benchmarks/README.md"


@pytest.mark.parametrize("path", ["README.md", ".github/workflows/retrain.yml"])
def test_exit_codes_shown_are_the_enums(path):
    text = _read(path)
    if path.endswith(".yml"):  # comment lines
        text = "\n".join(line.lstrip("# ").rstrip() for line in text.splitlines())
    assert outcome.describe() in text


def test_readme_names_every_verb_as_its_help_says():
    assert cli.verb_table() in _read("README.md"), "README's command table: paste pipeline.cli.verb_table()"


@pytest.mark.parametrize("page", _markdown_files())
def test_every_link_and_anchor_resolves(page):
    text = _read(page)
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    broken = []
    for target in re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", prose):
        if re.match(r"[a-z]+://|mailto:", target):
            continue
        path, _, anchor = target.partition("#")
        file = os.path.normpath(os.path.join(REPO, os.path.dirname(page), path)) if path else os.path.join(REPO, page)
        if not os.path.exists(file):
            broken.append(f"{target}: no such file")
        elif anchor and file.endswith(".md") and anchor not in _slugs(open(file).read()):
            broken.append(f"{target}: no heading #{anchor}")
    assert not broken, broken
