# Run from the repository root.
# R11: the published DTLN (Westhausen & Meyer's 500-h DNS-Challenge weights, components/models/published.py) fine-tuned
# on the project's real training speech and recorded noise: R10's data and recipe (every example of the ExampleGen,
# fresh 8-s mixes from data/noise_bank3), its first stage reading the magnitude as the authors' model does, 2 epochs
# at a tenth of the configuration's rate (1e-4: a fine-tune, not a retraining), seed 15.
# Why: the published weights as they are score 4.37 dB SI-SNRi on the real-audio validation part (4.61 with the 12-dB
# limit), where R9, the project's own after nine rounds, scores 1.91.
.venv/bin/python -m components.models.published --out data/published/dtln_dns500h.weights.h5
nice -n 10 .venv/bin/tfx-audio run --config pipeline/configs/denoise.yaml --set output_dir=outputs/denoise-r7 \
  --set enable_cache=true \
  --set data.noise_base=data/noise_bank --set trainer.context.noise_base=data/noise_bank3 \
  --set trainer.context.max_noise_mb=1024 --set trainer.context.second_noise_probability=0.3 \
  --set trainer.context.speech_level_db=6 --set trainer.epochs=2 --set trainer.learning_rate=1e-4 \
  --set trainer.seed=15 --set trainer.denoiser.dtln_input=magnitude \
  --set trainer.denoiser.warm_start=data/published/dtln_dns500h.weights.h5
