"""Perceptual speech-quality measures of an enhanced recording, beside the SNRs of components/audio/snr.py:

- PESQ (ITU-T P.862, the `pesq` package's reference C code): wideband (P.862.2) on 16 kHz audio, narrowband
  (P.862.1 MOS-LQO) at 8 kHz for audio that came through a telephone channel, which has no content over 4 kHz.
- STOI (Taal et al. 2011, `pystoi`): intelligibility, 0 to 1.
- DNSMOS P.835 (Reddy et al. 2022, the ONNX models of Microsoft's DNS challenge that the `speechmos` wheel
  ships, run with onnxruntime): a predicted listener score of speech (SIG), background (BAK) and the whole
  (OVRL), 1 to 5, that needs no clean reference, as a call center's recordings have none. It models
  wideband speech: the benchmarks score it on the wideband channel only.

`pesq_score` is None where PESQ is undefined: it finds no utterance in a reference of silence, or the audio
is under a quarter of a second.
"""
from __future__ import annotations

from typing import Dict, Optional

import numpy as np

SAMPLE_RATE = 16000
NARROWBAND_RATE = 8000


def pesq_score(reference: np.ndarray, degraded: np.ndarray, wideband: bool = True) -> Optional[float]:
    """PESQ of `degraded` against `reference`, both 16 kHz: wideband, or narrowband after resampling to 8 kHz."""
    from pesq import BufferTooShortError, NoUtterancesError, pesq

    if wideband:
        rate, ref, deg = SAMPLE_RATE, reference, degraded
    else:
        import soxr
        rate = NARROWBAND_RATE
        ref, deg = (soxr.resample(x.astype(np.float32), SAMPLE_RATE, rate, quality="HQ") for x in (reference, degraded))
    try:
        return float(pesq(rate, ref.astype(np.float32), deg.astype(np.float32), "wb" if wideband else "nb"))
    except (NoUtterancesError, BufferTooShortError):  # silence, or under 1/4 s
        return None


def stoi(reference: np.ndarray, degraded: np.ndarray) -> float:
    from pystoi import stoi as pystoi_stoi

    return float(pystoi_stoi(reference, degraded, SAMPLE_RATE))


_DNSMOS = None  # speechmos' DNSMOS, its ONNX sessions made once per process
DNSMOS_WINDOW_S = 9.01  # the P.835 model's input length


def dnsmos(audio: np.ndarray) -> Dict[str, float]:
    """DNSMOS P.835 of a 16 kHz recording's middle 9.01 s: {sig, bak, ovrl}; a shorter recording is
    repeated to 9.01 s, as the challenge's script does. speechmos' model and polynomial mapping, but not
    its `run`, which scores every 1-s hop and runs the P.808 model too: a tenth of the cost here."""
    global _DNSMOS
    import os

    from speechmos import dnsmos as speechmos_dnsmos

    if _DNSMOS is None:
        models = os.path.join(os.path.dirname(speechmos_dnsmos.__file__), "dnsmos_models")
        _DNSMOS = speechmos_dnsmos.DNSMOS(os.path.join(models, "sig_bak_ovr.onnx"),
                                          os.path.join(models, "model_v8.onnx"))
    window = int(DNSMOS_WINDOW_S * SAMPLE_RATE)
    audio = np.clip(np.asarray(audio, np.float32), -1.0, 1.0)
    if len(audio) < window:
        audio = np.resize(audio, window)
    start = (len(audio) - window) // 2
    raw = _DNSMOS.onnx_sess.run(None, {"input_1": audio[np.newaxis, start:start + window]})[0][0]
    sig, bak, ovrl = _DNSMOS.get_polyfit_val(*raw, is_personalized_MOS=False)
    return {"sig": float(sig), "bak": float(bak), "ovrl": float(ovrl)}
