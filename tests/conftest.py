"""Shared fixtures: every test builds its own small data; none reads another's leftovers."""
import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # before TensorFlow is first imported

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

# Property-based tests: "ci" (the default) draws a fixed set of examples, the same on every
# run, so CI cannot flake; "explore" draws new ones, e.g.
#   .venv/bin/python -m pytest tests/test_ingest_fuzz.py --hypothesis-profile=explore --hypothesis-seed=7
settings.register_profile("ci", max_examples=120, derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", max_examples=2000, deadline=None, print_blob=True)
settings.load_profile("ci")


@pytest.fixture(scope="session")
def small_demo(tmp_path_factory):
    """A small generated keyword set: 4 words x 24 speakers, one noisy copy each."""
    from pipeline.datagen import keywords

    root = tmp_path_factory.mktemp("demo")
    keywords.generate(str(root / "audio"), str(root / "noise"), num_speakers=24,
                       words=keywords.WORDS[:4], noisy_per_clean=1, seed=3)
    return root / "audio"
