#!/usr/bin/env bash
# Tests: set up, then run the whole suite, end-to-end pipeline runs included.
# Extra arguments go to pytest, e.g. -m "not e2e" for the fast tests only.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest -p no:cacheprovider "$@"
