#!/usr/bin/env bash
# Install everything into .venv and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
python -m pytest "$@"
