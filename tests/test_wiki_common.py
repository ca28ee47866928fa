"""Shared helpers for the compile-wiki tests: one compiled copy of the sample conversations per test session.

Building the sample database (ingest → build-graph → compile-wiki) is the
slow part, so it happens once per pytest session (cached here, whichever
test module asks first); tests that write copy the file first.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tracecli.graph.build import build_graph
from tracecli.ingest import ingest_parsed, parse_inputs
from tracecli.store import Store, open_store
from tracecli.wiki import compile_wiki

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_conversations"
SAMPLE_FILES = sorted(SAMPLES.glob("*.json"))
UPDATE_HEAVY = SAMPLES / "update_heavy.json"

_CACHE: dict[str, Path] = {}


def ingest(store: Store, paths: list[Path], embedder: Any) -> None:
    """Ingest files into an open store."""
    for path, convs in parse_inputs(paths):
        ingest_parsed(store, path, convs, embedder)


def build_sample_db(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    """The three sample conversations, ingested, graphed and compiled (built once per session)."""
    if "samples" not in _CACHE:
        path = tmp_path_factory.mktemp("wiki_samples") / "samples.db"
        store = open_store(path)
        try:
            ingest(store, SAMPLE_FILES, embedder)
            build_graph(store)
            compile_wiki(store, embedder=embedder)
            store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            store.close()
        _CACHE["samples"] = path
    return _CACHE["samples"]


def copy_db(src: Path, dst_dir: Path) -> Path:
    """A private copy of a (checkpointed) database file."""
    dst = dst_dir / src.name
    shutil.copy(src, dst)
    for suffix in ("-wal", "-shm"):
        side = Path(str(src) + suffix)
        if side.exists():
            shutil.copy(side, Path(str(dst) + suffix))
    return dst


def half_file(src: Path, dst: Path, sessions: int) -> Path:
    """A copy of a native sessions file holding only its first `sessions` sessions."""
    data = json.loads(src.read_text(encoding="utf-8"))
    data["sessions"] = data["sessions"][:sessions]
    dst.write_text(json.dumps(data), encoding="utf-8")
    return dst


def snapshot_of_state(store: Store, cid: str) -> dict[str, Any]:
    """Claims, ops, trajectories, snapshots and pages of a conversation, without wall-clock columns."""
    def rows(sql: str) -> list[dict[str, Any]]:
        out = store.query(sql, (cid,))
        for r in out:
            for k in ("created_at", "updated_at", "rowid"):
                r.pop(k, None)
        return out

    pages = rows("SELECT * FROM wiki_pages WHERE conversation_id = ? ORDER BY slug")
    links = {p["id"]: [r[0] for r in store.execute(
        "SELECT trajectory_id FROM wiki_page_trajectories WHERE page_id = ? ORDER BY trajectory_id", (p["id"],))] for p in pages}
    return {
        "claims": rows("SELECT * FROM claims WHERE conversation_id = ? ORDER BY idx"),
        "ops": rows("SELECT * FROM claim_ops WHERE conversation_id = ? ORDER BY n"),
        "snapshots": rows("SELECT id, idx, trajectory_id, position, message_ids, match_score, match_reason "
                          "FROM snapshots WHERE conversation_id = ? ORDER BY idx"),
        "trajectories": rows("SELECT id, idx, first_snapshot_id, latest_snapshot_id, n_snapshots, keywords, entities, "
                             "terms, facets, sum_vector FROM trajectories WHERE conversation_id = ? ORDER BY idx"),
        "pages": pages,
        "page_links": links,
    }
