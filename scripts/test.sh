#!/usr/bin/env bash
# Tests: set up, then run the whole suite, end-to-end pipeline runs included.
# Extra arguments go to pytest, e.g. -m "not e2e" for the fast tests only.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# System packages the tests need and the pipeline does not: a MariaDB server (ML Metadata on
# MySQL, tests/test_mysql_metadata.py) and Chromium (the run report opened in a real browser,
# tests/test_report.py). Installed with apt-get when missing.
missing=()
PATH="$PATH:/usr/sbin" command -v mariadbd >/dev/null 2>&1 || missing+=(mariadb-server)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "test: installing system packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# Two test processes (pytest-xdist), each test file kept in one (its module fixtures built
# once): one process leaves a 2-core machine half idle, most tests being single-threaded
# Python, Beam or start-up. TEST_WORKERS=0 runs everything in this process.
exec .venv/bin/python -m pytest -p no:cacheprovider -n "${TEST_WORKERS:-2}" --dist loadfile "$@"
