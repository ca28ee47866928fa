#!/usr/bin/env bash
# Create .venv (if missing) and install tracecli with its test extra. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
# torch first and pinned: 2.13.0 is the CPU build; an unpinned torch pulls a multi-GB CUDA build.
python -m pip install --quiet "torch==2.13.0"
python -m pip install --quiet -e ".[test]"
