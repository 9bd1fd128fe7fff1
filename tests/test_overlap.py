"""The shared-recording check for new real-audio packages: a copy is found at any offset and gain, unrelated
noise is not."""
import numpy as np

from pipeline.datagen import overlap
from tests.audio_helpers import write_wav

RATE = 2000


def _noise(seed, seconds):
    rng = np.random.default_rng(seed)
    return (0.2 * np.convolve(rng.standard_normal(int(seconds * RATE)), np.ones(4) / 4, "same")).astype(np.float32)


def test_a_copy_scores_one_at_any_offset_and_gain_and_unrelated_noise_scores_low():
    a = _noise(1, 6.0)
    longer = np.concatenate([_noise(2, 2.3), -0.3 * a[1000:9000], _noise(3, 1.0)])  # a cut, quieter, flipped
    assert overlap.score(a, longer, RATE) > 0.99
    assert overlap.score(longer, a, RATE) > 0.99  # the order does not matter
    assert overlap.score(a, _noise(4, 8.0), RATE) < 0.1


def test_digital_silence_matches_nothing():
    assert overlap.sliding_ncc(_noise(1, 1.0), np.zeros(4 * RATE, np.float32)) == 0.0


def test_check_reads_the_real_audio_layout_and_ranks_pairs(tmp_path):
    shared, other = _noise(5, 4.0), _noise(6, 4.0)
    write_wav(tmp_path / "train" / "crowd" / "pkg__a.wav", np.concatenate([_noise(7, 1.0), shared]), RATE)
    write_wav(tmp_path / "train" / "music" / "pkg__m.wav", other, RATE)
    write_wav(tmp_path / "test" / "crowd" / "t__b.wav", shared[:6000], RATE)
    train = overlap.files(str(tmp_path / "train"), ("pkg",), ("music",))
    test = overlap.files(str(tmp_path / "test"))
    assert [p.rsplit("/", 1)[1] for p in train] == ["pkg__a.wav"]
    rows = overlap.check(train, test, RATE)
    assert len(rows) == 1 and rows[0][0] > 0.95


def test_a_shared_stretch_in_the_middle_of_long_files_is_found():
    """20 s shared by a 60-s and a 75-s file, away from both files' ends: excerpts cover the shorter file whole."""
    shared = _noise(8, 20.0)
    a = np.concatenate([_noise(9, 25.0), shared, _noise(10, 15.0)])
    b = np.concatenate([_noise(11, 40.0), 0.5 * shared, _noise(12, 15.0)])
    assert overlap.score(a, b, RATE) > 0.99


def test_a_dc_offset_on_the_copy_does_not_hide_it():
    """The copy sits on a DC offset the rest of the longer file lacks: each stretch's own mean is removed."""
    a = _noise(13, 4.0)
    longer = np.concatenate([_noise(14, 1.0), a + 0.5, _noise(15, 1.0)])
    assert overlap.score(a, longer, RATE) > 0.99
