#!/usr/bin/env bash
# Installs one lock file exactly (every package pinned and hash-checked, nothing resolved)
# and this project into a Python 3.10 venv. Shared by scripts/setup.sh (the full lock, an
# editable install into .venv) and the Dockerfile (the runtime lock, a package install).
#   bash scripts/install.sh VENV_DIR LOCK_FILE [editable|package]
set -euo pipefail
venv=$1 lock=$2 mode=${3:-editable}
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 10))' 2>/dev/null; then
  for cand in python3.10 "$HOME/.pyenv/versions/3.10.13/bin/python"; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 10))'; then PY=$cand; break; fi
  done
fi
"$PY" -c 'import sys; assert sys.version_info[:2] == (3, 10), "tfx-audio needs Python 3.10 (TFX 1.16 wheels stop at 3.10); set PYTHON=/path/to/python3.10"'

rm -rf "$venv"
"$PY" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check 'uv==0.13.9'
# uv pip sync installs exactly the pinned, hash-checked set and nothing else. --compile-bytecode
# writes every module's .pyc now: where Python may not write them later (PYTHONDONTWRITEBYTECODE=1,
# or a venv the running user cannot write, as in the image) every process, each Beam worker
# included, would otherwise compile TensorFlow's and TFX's sources anew (40 s of CPU a worker).
# Packages the index has only as a source distribution (pesq) are built in a second step, without
# build isolation, against the Cython and numpy the lock has just installed: an isolated build would
# resolve its build requirements from the index, which a pinned install must not do.
sdist_only="pesq"
main_part=$(mktemp) sdist_part=$(mktemp)
trap 'rm -f "$main_part" "$sdist_part"' EXIT
awk -v names="$sdist_only" -v main="$main_part" -v sdist="$sdist_part" '
  BEGIN { n = split(names, list, " "); for (i = 1; i <= n; i++) wanted[list[i]] = 1 }
  /^[^ #]/ { split($0, parts, "=="); take = (parts[1] in wanted) }
  { print > (take ? sdist : main) }' "$lock"
"$venv/bin/uv" pip sync -q --compile-bytecode --python "$venv/bin/python" --require-hashes "$main_part"
if [ -s "$sdist_part" ]; then
  "$venv/bin/uv" pip install -q --compile-bytecode --python "$venv/bin/python" --require-hashes --no-deps \
    --no-build-isolation -r "$sdist_part"
fi
if [ "$mode" = editable ]; then
  "$venv/bin/uv" pip install -q --compile-bytecode --python "$venv/bin/python" --no-deps -e .
else
  "$venv/bin/uv" pip install -q --compile-bytecode --python "$venv/bin/python" --no-deps .
fi
