"""The Evaluator: the `tfma.EvalConfig` with its gates (`evaluator`) and the TFMA metrics it adds:
per-recording accuracy (`tfma_recording`), SNR and SI-SNR improvement (`tfma_snr`)."""
