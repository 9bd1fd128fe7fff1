"""Transform: `preprocessing.preprocessing_fn` (the module TFX loads): WAV decode, normalization,
log-mel, per-bin statistics and the label vocabulary, in core TF ops only (TF Serving loads it)."""
