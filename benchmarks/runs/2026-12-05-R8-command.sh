# Run from the repository root.
# R8: R7 (the packaged pretrained) trained on 2 more epochs at half R7's rate (DTLN's recipe halves the rate when
# the validation loss stalls), fresh mixes from a new seed; upstream components cached.
nice -n 10 .venv/bin/tfx-audio run --config pipeline/configs/denoise.yaml --set output_dir=outputs/denoise-r7 \
  --set enable_cache=true \
  --set data.noise_base=data/noise_bank --set trainer.context.noise_base=data/noise_bank \
  --set trainer.context.max_noise_mb=1024 --set trainer.context.second_noise_probability=0.3 \
  --set trainer.context.speech_level_db=6 --set trainer.epochs=2 --set trainer.learning_rate=2.5e-4 --set trainer.seed=12
