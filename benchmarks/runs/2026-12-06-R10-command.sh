# Run from the repository root.
# R10: R9 (the pushed model of benchmarks/runs/2026-12-05-R9-command.sh, on the machine that ran it:
# outputs/denoise-r7/serving/1796503945) trained on for 2 more epochs at R9's rate, a new seed. What changed:
# - the WAV ExampleGen now writes every example it makes (the Beam fix of 73b9923; R7 to R9 trained on about 90 % of
#   them), so it runs again (its output version is in the cache key) and the Trainer sees all 39,054;
# - the fresh 8-s mixes come from a bank with SuperTuxKart's and Unknown Horizons' recordings added (crowd 59 -> 64,
#   machinery 61 -> 70, traffic 32 -> 34 files): `python -m pipeline.datagen.real --out data/real` with them, then
#   `python -m pipeline.datagen.noise_bank --out data/noise_bank3`.
# The ExampleGen's fixed copies keep the first bank, data/noise_bank, as R7 to R9 did.
nice -n 10 .venv/bin/tfx-audio run --config pipeline/configs/denoise.yaml --set output_dir=outputs/denoise-r7 \
  --set enable_cache=true \
  --set data.noise_base=data/noise_bank --set trainer.context.noise_base=data/noise_bank3 \
  --set trainer.context.max_noise_mb=1024 --set trainer.context.second_noise_probability=0.3 \
  --set trainer.context.speech_level_db=6 --set trainer.epochs=2 --set trainer.learning_rate=2.5e-4 \
  --set trainer.seed=14 \
  --set trainer.denoiser.warm_start=outputs/denoise-r7/serving/1796503945
