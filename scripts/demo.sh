#!/usr/bin/env bash
# Install everything into .venv and run the main job on the bundled sample conversations:
# update (ingest → build-graph → compile-wiki, one process) → ask → trace, into demo.db.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
export TRACECLI_DB="${TRACECLI_DB:-demo.db}"
rm -f "$TRACECLI_DB" "$TRACECLI_DB-wal" "$TRACECLI_DB-shm"
tracecli update sample_conversations/*.json
if tracecli ask --help >/dev/null 2>&1; then
  tracecli ask "Where is Alice moving?"
  tracecli ask "Where was Alice planning to move as of February 2024?"
  answer_id=$(tracecli ask "What is Alice's cat called now?" --json | python -c 'import json,sys; print(json.load(sys.stdin)["answer_id"])')
  tracecli trace "$answer_id"
fi
tracecli stats
