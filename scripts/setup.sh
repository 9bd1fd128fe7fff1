#!/usr/bin/env bash
# Sets up everything the pipeline and the tests need on a fresh Debian 12/13 machine:
# system tools (espeak-ng, sox) with apt-get, then a Python 3.10 venv in .venv
# installed from requirements.lock without resolving. Re-running is cheap: the venv
# is rebuilt only when the lock file changes.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v espeak-ng >/dev/null 2>&1 || need_apt+=(espeak-ng)
command -v sox >/dev/null 2>&1 || need_apt+=(sox)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing system packages: ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 10))' 2>/dev/null; then
  for cand in python3.10 "$HOME/.pyenv/versions/3.10.13/bin/python"; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 10))'; then PY=$cand; break; fi
  done
fi
"$PY" -c 'import sys; assert sys.version_info[:2] == (3, 10), "tfx-audio needs Python 3.10 (TFX 1.16 wheels stop at 3.10); set PYTHON=/path/to/python3.10"'

stamp=.venv/.lock-sha256
want=$(sha256sum requirements.lock setup.py | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
echo "setup: building .venv from requirements.lock (no dependency resolution)"
rm -rf .venv
"$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check 'uv==0.13.9'
# uv pip sync installs exactly the pinned, hash-checked set and nothing else.
.venv/bin/uv pip sync -q --python .venv/bin/python --require-hashes requirements.lock
.venv/bin/uv pip install -q --python .venv/bin/python --no-deps -e .
echo "$want" > "$stamp"
echo "setup: done"
