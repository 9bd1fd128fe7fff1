# Run from the repository root.
# R9: R8 (the pushed model of benchmarks/runs/2026-12-05-R8-command.sh, on the machine that ran it:
# outputs/denoise-r7/serving/1796494486) trained on for 2 more epochs at R8's rate, a new seed, with the fresh
# 8-s mixes drawn from a bank with Eat the Whistle's stadium crowds added (crowd: 39 -> 59 of 310 recordings;
# `python -m pipeline.datagen.noise_bank --out data/noise_bank2` after `pipeline.datagen.real` with etw-data).
# The ExampleGen's fixed copies keep the old bank, so the upstream components are cached.
# Why: crowd is the one noise kind where R7 and R8 trail RNNoise on the test part (R8 3.95 dB, RNNoise 4.13).
nice -n 10 .venv/bin/tfx-audio run --config pipeline/configs/denoise.yaml --set output_dir=outputs/denoise-r7 \
  --set enable_cache=true \
  --set data.noise_base=data/noise_bank --set trainer.context.noise_base=data/noise_bank2 \
  --set trainer.context.max_noise_mb=1024 --set trainer.context.second_noise_probability=0.3 \
  --set trainer.context.speech_level_db=6 --set trainer.epochs=2 --set trainer.learning_rate=2.5e-4 --set trainer.seed=13 \
  --set trainer.denoiser.warm_start=outputs/denoise-r7/serving/1796494486
