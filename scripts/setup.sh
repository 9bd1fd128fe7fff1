#!/usr/bin/env bash
# Sets up everything the pipeline and the tests need on a fresh Debian 12/13 machine:
# system tools (espeak-ng, sox, flite, festival) with apt-get, then a Python 3.10 venv in .venv
# installed from requirements.lock without resolving (scripts/install.sh, which the Dockerfile
# runs with requirements-runtime.lock). Re-running is cheap: the venv
# is rebuilt only when the lock file changes.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v espeak-ng >/dev/null 2>&1 || need_apt+=(espeak-ng)
command -v sox >/dev/null 2>&1 || need_apt+=(sox)
command -v flite >/dev/null 2>&1 || need_apt+=(flite)  # the held-out voices (pipeline/datagen/heldout.py)
# Festival's ked diphone voice: the demo's second training speech engine (pipeline/datagen/keywords.py)
[ -d /usr/share/festival/voices/english/ked_diphone ] || need_apt+=(festival festvox-kdlpc16k)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing system packages: ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

stamp=.venv/.lock-sha256
want=$(sha256sum requirements.lock setup.py scripts/install.sh | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
echo "setup: building .venv from requirements.lock (no dependency resolution)"
bash scripts/install.sh .venv requirements.lock editable
echo "$want" > "$stamp"
echo "setup: done"
