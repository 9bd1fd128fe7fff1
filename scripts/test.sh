#!/usr/bin/env bash
# Tests: set up, then run the whole suite, end-to-end pipeline runs included.
# Extra arguments go to pytest, e.g. -m "not e2e" for the fast tests only.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The tests also start a MariaDB server (ML Metadata on MySQL, tests/test_mysql_metadata.py);
# the pipeline itself does not need one.
if ! PATH="$PATH:/usr/sbin" command -v mariadbd >/dev/null 2>&1; then
  echo "test: installing system package: mariadb-server"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq mariadb-server >/dev/null
fi
exec .venv/bin/python -m pytest -p no:cacheprovider "$@"
