"""TFMA metrics of perceived quality for the denoiser, beside tfma_snr's SNRs: the PESQ (wideband,
ITU-T P.862.2) and STOI improvement, enhanced versus noisy, both against the clean reference, averaged
over the examples where both are defined (components/audio/quality.py). Same inputs, counts and
rules as tfma_snr (a model without a denoiser scores 0; a slice with no scored example gets no value).
Computed by the Evaluator only, never in the serving graph.
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np
from tensorflow_model_analysis.metrics import metric_types

from components.audio import quality
from components.evaluation.tfma_snr import Improvements

PESQ_IMPROVEMENT = "pesq_improvement"
STOI_IMPROVEMENT = "stoi_improvement"
SCORED = "quality_scored_examples"
NO_REFERENCE = "quality_no_reference_examples"
UNDEFINED = "quality_undefined_examples"


def score_example(noisy: np.ndarray, clean: np.ndarray, enhanced: np.ndarray) -> Tuple[Optional[float], ...]:
    """(PESQ wb improvement, STOI improvement) of one example, None where undefined (PESQ finds no
    utterance in the reference)."""
    noisy, clean, enhanced = (np.asarray(a, np.float32) for a in (noisy, clean, enhanced))
    before, after = quality.pesq_score(clean, noisy), quality.pesq_score(clean, enhanced)
    pesq_change = None if before is None or after is None else after - before
    return pesq_change, quality.stoi(clean, enhanced) - quality.stoi(clean, noisy)


QUALITY_FAMILY = Improvements((PESQ_IMPROVEMENT, STOI_IMPROVEMENT), (SCORED, NO_REFERENCE, UNDEFINED), score_example)


class PesqImprovement(metric_types.Metric):
    """Mean wideband PESQ improvement (MOS-LQO) over scored examples; also reports the counts."""

    def __init__(self, name: str = PESQ_IMPROVEMENT):
        super().__init__(QUALITY_FAMILY.computations, name=name)


class StoiImprovement(metric_types.Metric):
    """Mean STOI improvement (0-1) over scored examples; also reports the counts."""

    def __init__(self, name: str = STOI_IMPROVEMENT):
        super().__init__(QUALITY_FAMILY.computations, name=name)
