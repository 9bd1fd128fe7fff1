#!/usr/bin/env bash
# Main job: set up, generate the demo data, run the full local pipeline
# (LocalDagRunner + SQLite ML Metadata) and print its summary.
#   bash scripts/demo.sh            the 1-second keyword demo (pipeline/configs/demo.yaml)
#   bash scripts/demo.sh calls      the calls demo: 40 calls of 10-120 s, intents as spans
#                                   (pipeline/configs/calls.yaml)
#   bash scripts/demo.sh calls-stereo  the same calls in stereo: agent and customer on their own tracks
#                                   (pipeline/configs/calls_stereo.yaml)
# Further arguments go to the runner, e.g. --set trainer.epochs=5
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
demo=keywords
if [ "${1:-}" = "calls" ] || [ "${1:-}" = "calls-stereo" ]; then demo=$1; shift; fi
# Always regenerated (seeded): stale files of an older generator would be read too.
if [ "$demo" = calls ]; then
  rm -rf data/calls data/calls_noise
  .venv/bin/python -m pipeline.datagen.calls --out data/calls --noise-out data/calls_noise
  exec .venv/bin/tfx-audio run --config pipeline/configs/calls.yaml "$@"
fi
if [ "$demo" = calls-stereo ]; then
  rm -rf data/calls_stereo data/calls_stereo_noise
  # three calls per customer voice, one of each intent: the voice does not give the intent away
  .venv/bin/python -m pipeline.datagen.calls --stereo --calls 60 --calls-per-voice 3 --out data/calls_stereo \
    --noise-out data/calls_stereo_noise
  exec .venv/bin/tfx-audio run --config pipeline/configs/calls_stereo.yaml "$@"
fi
rm -rf data/demo data/demo_noise data/demo_heldout
.venv/bin/python -m pipeline.datagen.keywords --out data/demo --noise-out data/demo_noise
# Voices, noises and a channel never trained on, in two parts with no voice in common: validation is
# scored beside the test split on every run; the test part is read once per reported configuration
# (--set evaluator.heldout_base=data/demo_heldout/test; docs/generalization.md).
.venv/bin/python -m pipeline.datagen.heldout --part validation
.venv/bin/python -m pipeline.datagen.heldout --part test
exec .venv/bin/tfx-audio run --config pipeline/configs/demo.yaml --set evaluator.heldout_base=data/demo_heldout/validation "$@"
