"""Writes the report: one self-contained HTML page (figures and audio embedded as data
URIs, so it opens offline and as a CI artifact) and, beside it in data/, the rows
behind every figure and table as CSV and the audio as WAV files."""
from __future__ import annotations

import base64
import csv
import io
import os
from typing import List

import jinja2
import tensorflow as tf

from pipeline.report.model import Item, Section

_TEMPLATE = jinja2.Template("""<!DOCTYPE html>
{%- macro table(item) -%}
<table><tr>{% for column in columns(item) %}<th>{{ column }}</th>{% endfor %}</tr>
{% for row in item.rows %}<tr>{% for column in columns(item) %}{% set v = row.get(column) %}
<td{% if v is string %} class="text"{% endif %}>{{ "" if v is none else v }}</td>{% endfor %}</tr>{% endfor %}
</table>
{%- endmacro %}
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px; color: #222; }
h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
td, th { border: 1px solid #ddd; padding: 2px 8px; text-align: right; }
th { background: #f3f3f3; } td.text { text-align: left; }
figure { margin: 1em 0; } figcaption, .caption { color: #555; font-size: 0.9em; }
.sound { display: flex; gap: 1em; align-items: center; flex-wrap: wrap; }
.verdict { font-size: 1.2em; font-weight: bold; }
nav a { margin-right: 1em; }
</style></head><body>
<h1>{{ title }}</h1>
<p class="verdict">{{ verdict }}</p>
<nav>{% for s in sections %}<a href="#{{ s.title|lower }}">{{ s.title }}</a>{% endfor %}</nav>
{% for s in sections %}
<section id="{{ s.title|lower }}"><h2>{{ s.title }}</h2>
{% for note in s.notes %}<p class="caption">{{ note }}</p>{% endfor %}
{% for item in s.items %}
<figure class="item" data-name="{{ item.name }}" data-rows="{{ item.rows|length }}">
<h3>{{ item.title }}</h3>
{% if item.png %}<img class="plot" alt="{{ item.title }}" src="data:image/png;base64,{{ png(item) }}">{% endif %}
{% if not item.rows %}<p class="caption">none</p>
{% elif not item.png or item.rows|length <= 12 %}{{ table(item) }}{% endif %}
<figcaption>{{ item.caption }} <a href="data/{{ item.name }}.csv">data/{{ item.name }}.csv</a></figcaption>
</figure>
{% endfor %}
{% for sound in s.sounds %}{% set item = sound.spectrograms %}
<figure class="item" data-name="{{ item.name }}" data-rows="{{ item.rows|length }}">
<h3>{{ sound.title }}</h3>
<img class="plot" alt="spectrograms" src="data:image/png;base64,{{ png(item) }}">
{{ table(item) }}
<div class="sound">{% for name, wav in sound.wavs.items() %}
<span>{{ name }} <audio controls preload="auto" src="data:audio/wav;base64,{{ b64(wav) }}"></audio></span>
{% endfor %}</div>
<figcaption><a href="data/{{ item.name }}.csv">data/{{ item.name }}.csv</a>
{% for name in sound.wavs %} <a href="data/{{ item.name }}_{{ name }}.wav">{{ name }}.wav</a>{% endfor %}
</figcaption></figure>
{% endfor %}
</section>
{% endfor %}
</body></html>
""", autoescape=True)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _columns(item: Item) -> List[str]:
    seen = {}
    for row in item.rows:
        seen.update(dict.fromkeys(row))
    return list(seen)


def _write(path: str, data) -> None:
    """Writes str or bytes to a local path or a gs:// one (tf.io.gfile)."""
    with tf.io.gfile.GFile(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def _write_csv(path: str, item: Item) -> None:
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=_columns(item) or ["none"])
    writer.writeheader()
    writer.writerows(item.rows)
    _write(path, text.getvalue())


def write(out_dir: str, title: str, verdict: str, sections: List[Section]) -> str:
    """Writes <out_dir>/report.html and <out_dir>/data/; returns the page's path."""
    data = os.path.join(out_dir, "data")
    tf.io.gfile.makedirs(data)
    for section in sections:
        for item in section.items:
            _write_csv(os.path.join(data, f"{item.name}.csv"), item)
        for sound in section.sounds:
            _write_csv(os.path.join(data, f"{sound.spectrograms.name}.csv"), sound.spectrograms)
            for name, wav in sound.wavs.items():
                _write(os.path.join(data, f"{sound.spectrograms.name}_{name}.wav"), wav)
    page = os.path.join(out_dir, "report.html")
    _write(page, _TEMPLATE.render(title=title, verdict=verdict, sections=sections, columns=_columns,
                                  png=lambda item: _b64(item.png), b64=_b64))
    return page
