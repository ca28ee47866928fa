"""export / import: conversations in the native input format, plus the derived layers, as one JSON or JSONL file.

An export holds a format marker and version, the embedding model the file was
built with, the conversations (sessions and messages, in the native input
shape), and with `derived=True` the rows of the derived tables (events, edges,
topics, claims and their op log, trajectories, snapshots, wiki pages, ...) as
JSON objects with sorted keys, blobs in base64, each table sorted by its
primary key. Conversations come in the order they were first ingested (so an
import gives their notes the same relative order), messages session by
session in message order: the same database always gives the same bytes.
Vectors and full-text indexes are not exported: import rebuilds them with
the embedder. Nor are the LLM cache and ledger, answers or the forget log.

Two shapes of the same content:

* `json` — one document `{"format", "version", "derived", "embedding_model",
  "conversations": [...], "tables": {...}}`. Its `conversations` list is a
  native-format bundle, so an export of conversations alone is also a file
  `tracecli ingest` reads (the extra keys `message_id`, `seq`, `turn`, `idx`
  are ignored there).
* `jsonl` — one record per line, each with a `record` key: `header`, then
  `conversation`, `session` and `message` records, then `row` records
  (`{"table", "row"}`). Read by `tracecli import`; its message lines carry the
  JSONL ingest keys (`conversation_id`, `session_id`, `id`, `speaker`, `text`,
  `timestamp`).

Modules: `model` (the shapes and tables), `export`, `reader` (parse and
validate a file), `importer`.

Import feeds the conversations through the ingest path (same ids: message ids
hash the content, session ids the conversation and session source id), checks
that every message id came back the same, restores order columns and
conversation metadata, inserts the derived rows verbatim and rebuilds the wiki
pages' `wiki_fts` rows and `wiki_vectors`. The file is validated whole before
anything is written, and the write is one transaction. A conversation already
in the database is skipped when its content is identical (with its derived
rows: the database keeps what it has) and refused otherwise.
"""

from tracecli.transfer.export import collect, export_data, serialize
from tracecli.transfer.importer import import_data
from tracecli.transfer.model import (
    DERIVED_TABLES, EXPORT_FORMAT, EXPORT_VERSION, FORMATS, ConversationImport, ExportConversation, ExportData,
    ExportMessage, ExportResult, ExportSession, ImportResult, TableCount,
)
from tracecli.transfer.reader import read_export

__all__ = [
    "DERIVED_TABLES", "EXPORT_FORMAT", "EXPORT_VERSION", "FORMATS", "ConversationImport", "ExportConversation",
    "ExportData", "ExportMessage", "ExportResult", "ExportSession", "ImportResult", "TableCount", "collect",
    "export_data", "import_data", "read_export", "serialize",
]
