"""Perceptual speech-quality measures of an enhanced recording, beside the SNRs of components/audio/snr.py:

- PESQ (ITU-T P.862, the `pesq` package's reference C code): wideband (P.862.2) on 16 kHz audio, narrowband
  (P.862.1 MOS-LQO) at 8 kHz for audio that came through a telephone channel, which has no content over 4 kHz.
- STOI (Taal et al. 2011, `pystoi`): intelligibility, 0 to 1.
- DNSMOS P.835 (Reddy et al. 2022, the ONNX models of Microsoft's DNS challenge that the `speechmos` wheel
  ships, run with onnxruntime): a predicted listener score of speech (SIG), background (BAK) and the whole
  (OVRL), 1 to 5, that needs no clean reference, as a call center's recordings have none.

`pesq_score` is None where PESQ is undefined (it finds no utterance in a reference of silence).
"""
from __future__ import annotations

from typing import Dict, Optional

import numpy as np

SAMPLE_RATE = 16000
NARROWBAND_RATE = 8000


def pesq_score(reference: np.ndarray, degraded: np.ndarray, wideband: bool = True) -> Optional[float]:
    """PESQ of `degraded` against `reference`, both 16 kHz: wideband, or narrowband after resampling to 8 kHz."""
    from pesq import NoUtterancesError, pesq

    if wideband:
        rate, ref, deg = SAMPLE_RATE, reference, degraded
    else:
        import soxr
        rate = NARROWBAND_RATE
        ref, deg = (soxr.resample(x.astype(np.float32), SAMPLE_RATE, rate, quality="HQ") for x in (reference, degraded))
    try:
        return float(pesq(rate, ref.astype(np.float32), deg.astype(np.float32), "wb" if wideband else "nb"))
    except NoUtterancesError:
        return None


def stoi(reference: np.ndarray, degraded: np.ndarray) -> float:
    from pystoi import stoi as pystoi_stoi

    return float(pystoi_stoi(reference, degraded, SAMPLE_RATE))


def dnsmos(audio: np.ndarray) -> Dict[str, float]:
    """DNSMOS P.835 of a 16 kHz recording: {sig, bak, ovrl}, each the mean over its 9-s windows (1-s hop;
    a shorter recording is repeated to 9 s, as the challenge's script does)."""
    from speechmos import dnsmos as speechmos_dnsmos

    scores = speechmos_dnsmos.run(np.clip(audio.astype(np.float32), -1.0, 1.0), SAMPLE_RATE)
    return {"sig": float(scores["sig_mos"]), "bak": float(scores["bak_mos"]), "ovrl": float(scores["ovrl_mos"])}

