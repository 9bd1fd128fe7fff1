#!/usr/bin/env bash
# Main job: set up, generate the demo data, run the full local pipeline
# (LocalDagRunner + SQLite ML Metadata) and print its summary.
# Extra arguments go to the runner, e.g. --set trainer.epochs=5
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Always regenerated (seeded, about 10 s): stale files of an older generator would be read too.
rm -rf data/demo data/demo_noise
.venv/bin/python -m pipeline.demo_data --out data/demo --noise-out data/demo_noise
exec .venv/bin/python -m pipeline.local_runner --config pipeline/configs/demo.yaml "$@"
