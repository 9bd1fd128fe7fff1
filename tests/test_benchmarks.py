"""The benchmarks still run against the code they measure (a changed signature once broke one
unseen): each input-pipeline variant for one epoch on a small Transform output."""
import json

import pytest

from benchmarks import input_pipeline
from components.config import load_config
from tests import tfx_executors


@pytest.fixture(scope="module")
def small_transform(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench")
    config = load_config(None, ["features.clip_seconds=0.3"])
    input_dict = tfx_executors.make_transformed(root, config, speakers=6)
    examples, graph = input_dict["examples"][0].uri, input_dict["transform_graph"][0].uri
    wavs = root / "wavs.json"
    wavs.write_text(json.dumps(input_pipeline._train_sources(examples, str(root / "audio"))))
    return examples, graph, str(wavs)


@pytest.mark.parametrize("variant", input_pipeline.VARIANTS)
def test_every_input_pipeline_variant_runs_its_epochs_over_the_training_split(small_transform, variant):
    examples, graph, wavs = small_transform
    result = input_pipeline._child(variant, examples, graph, wavs, 2, 4)
    assert result["examples"] == len(json.loads(open(wavs).read())) > 0
    assert len(result["epochs"]) == 2 and all(e["wall_s"] > 0 for e in result["epochs"])
    assert result["peak_rss_mb"] > 100


def test_the_offsets_benchmark_puts_the_clip_at_its_offset_with_silence_before_and_cuts_it_at_the_window_end():
    import numpy as np

    from benchmarks.keyword_offsets import placed

    clip = np.arange(1, 12001, dtype=np.float32)  # 0.75 s
    window = placed(clip, 0.3)
    assert len(window) == 16000 and not window[:4800].any()
    np.testing.assert_array_equal(window[4800:], clip[:11200])  # its last 0.05 s past the window: cut
    np.testing.assert_array_equal(placed(clip, 0.0)[:12000], clip)


def test_the_clips_benchmark_pairs_each_noisy_clip_with_its_reference_and_skips_the_clean_ones(tmp_path):
    import numpy as np

    from benchmarks.heldout_clips import mixtures
    from components.audio import wav_io

    clean, noisy = np.full(800, 0.1, np.float32), np.full(800, -0.2, np.float32)
    (tmp_path / "yes").mkdir()
    (tmp_path / "yes" / "a_clean.wav").write_bytes(wav_io.encode_pcm16_wav(clean))
    (tmp_path / "yes" / "a_fan.wav").write_bytes(wav_io.encode_pcm16_wav(noisy))
    (tmp_path / "metadata.csv").write_text(
        "file_name,label,group,clean_file_name,noise_kind,snr_db,channel\n"
        "yes/a_clean.wav,yes,v,,,,wideband\n"
        "yes/a_fan.wav,yes,v,yes/a_clean.wav,fan,5.00,mobile\n")
    (kind, snr, channel, x, ref), = list(mixtures(str(tmp_path)))
    assert (kind, snr, channel) == ("fan", 5.0, "mobile")
    np.testing.assert_allclose(x, noisy, atol=1e-4)
    np.testing.assert_allclose(ref, clean, atol=1e-4)
