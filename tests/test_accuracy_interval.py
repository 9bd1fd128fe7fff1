"""The held-out accuracy's interval from its sample of examples: Wilson's, as published tables give it."""
import pytest

from pipeline import summary


def test_the_wilson_interval_matches_the_published_formula_and_narrows_with_examples():
    # Wilson (1927) for 84 of 100 at 95 %: centre (p + z^2/2n) / (1 + z^2/n), half-width
    # z sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n), z = 1.95996
    z, n, p = 1.959964, 100, 0.84
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    low, high = summary.accuracy_interval(0.84, 100)
    assert (low, high) == pytest.approx((centre - half, centre + half), abs=1e-6)
    wide, narrow = summary.accuracy_interval(0.84, 100), summary.accuracy_interval(0.84, 800)
    assert narrow[0] > wide[0] and narrow[1] < wide[1]
    assert summary.accuracy_interval(1.0, 50)[1] == pytest.approx(1.0)


def test_the_summary_line_needs_the_example_count():
    assert summary.accuracy_interval_text({"sparse_categorical_accuracy": 0.9}) == ""
    line = summary.accuracy_interval_text({"sparse_categorical_accuracy": 0.844, "example_count": 800.0})
    assert "800 examples" in line and "0.817-0.867" in line
