"""The Trainer: `trainer.run_fn` (the module TFX loads), the GradientTape loop (`loop`), the tf.data
input pipeline (`input_pipeline`), waveform and log-mel augmentation (`augment`, `vtlp`), multi-second
denoiser sequences (`context`), checkpoints and resume (`resume`)."""
