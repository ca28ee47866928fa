"""A process killed in the middle of an ingest leaves the database exactly as it was."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pysqlite3.dbapi2 as sqlite3
import pytest

FIXTURES = Path(__file__).parent / "fixtures"

# Runs in a child process: a deterministic hash embedder (no model load), and with
# `pause`, `_write` runs for real, then signals the parent and sleeps inside the
# still-open write transaction.
CHILD = textwrap.dedent(
    """
    import hashlib, sys, time
    from pathlib import Path
    import numpy as np
    import tracecli.ingest.pipeline as pipeline
    from tracecli.store.db import open_store

    class HashEmbedder:
        id = "hash-test-384"
        dimension = 384
        def embed_batch(self, texts):
            rows = []
            for t in texts:
                raw = b"".join(hashlib.sha256(f"{t}|{i}".encode()).digest() for i in range(48))
                v = np.frombuffer(raw, dtype=np.uint8)[:384].astype(np.float32) - 127.5
                rows.append(v / np.linalg.norm(v))
            return np.asarray(rows, dtype=np.float32).reshape(len(texts), 384)

    mode, db, marker, *files = sys.argv[1:]
    if mode == "pause":
        original = pipeline._write
        def paused(store, *args, **kwargs):
            created = original(store, *args, **kwargs)
            assert store.conn.in_transaction
            Path(marker).write_text("inside the transaction")
            time.sleep(60)
            return created
        pipeline._write = paused
    store = open_store(db)
    for path, convs in pipeline.parse_inputs(files):
        pipeline.ingest_parsed(store, path, convs, HashEmbedder())
    store.close()
    print("done")
    """
)

TABLES = ("meta", "conversations", "sessions", "messages", "notes", "notes_fts", "note_vectors", "_sqlite_migrations")


def run_child(db: Path, *files: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, "plain", str(db), "-", *map(str, files)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "done"


def kill_inside_write(db: Path, tmp_path: Path, *files: Path) -> None:
    marker = tmp_path / "inside.marker"
    log = (tmp_path / "child.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, "pause", str(db), str(marker), *map(str, files)],
        stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            if proc.poll() is not None:
                pytest.fail(f"child exited early ({proc.returncode}): {(tmp_path / 'child.log').read_text()}")
            if time.monotonic() > deadline:
                pytest.fail("child never reached the write")
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


def snapshot(db: Path) -> dict:
    """Row counts of every table, every message, every meta row, the table list and the integrity check."""
    conn = sqlite3.connect(str(db))
    try:
        import sqlite_vec

        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return {
            "integrity": conn.execute("PRAGMA integrity_check").fetchall(),
            "tables": sorted(names),
            "counts": {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in TABLES if t in names},
            "messages": conn.execute("SELECT * FROM messages ORDER BY id").fetchall() if "messages" in names else None,
            "notes": conn.execute("SELECT rowid, * FROM notes ORDER BY rowid").fetchall() if "notes" in names else None,
            "meta": conn.execute("SELECT * FROM meta ORDER BY key").fetchall() if "meta" in names else None,
        }
    finally:
        conn.close()


def test_kill_during_an_append_leaves_the_earlier_ingest(tmp_path: Path) -> None:
    db = tmp_path / "trace.db"
    run_child(db, FIXTURES / "native_sessions.json")
    before = snapshot(db)
    assert before["counts"]["messages"] == 4 and before["integrity"] == [("ok",)]

    # New messages of the known conversation plus two new conversations.
    data = json.loads((FIXTURES / "native_sessions.json").read_text())
    data["sessions"].append({"id": "third", "messages": [{"speaker": "Alice", "text": "Landed in Porto.", "timestamp": "2024-06-01T12:00:00Z"}]})
    longer = tmp_path / "native_sessions.json"
    longer.write_text(json.dumps(data))
    kill_inside_write(db, tmp_path, longer)

    after = snapshot(db)
    assert after == before

    # The file still works: the same ingest now goes through, adding exactly the new message.
    run_child(db, longer)
    assert snapshot(db)["counts"]["messages"] == 5


def test_kill_during_a_multi_conversation_ingest(tmp_path: Path) -> None:
    db = tmp_path / "trace.db"
    run_child(db, FIXTURES / "native_flat.json")
    before = snapshot(db)
    # The pause comes after the first of the file's two conversations was written.
    kill_inside_write(db, tmp_path, FIXTURES / "longmemeval.json")
    assert snapshot(db) == before


def test_kill_during_the_first_ingest(tmp_path: Path) -> None:
    db = tmp_path / "trace.db"
    assert not db.exists()
    kill_inside_write(db, tmp_path, FIXTURES / "locomo.json")

    after = snapshot(db)
    assert after["integrity"] == [("ok",)]
    # Only the committed schema and the row that marks the file as tracecli's remain: no model binding, no
    # vector table.
    assert after["counts"] == {"meta": 1, "conversations": 0, "sessions": 0, "messages": 0, "notes": 0, "notes_fts": 0,
                               "_sqlite_migrations": after["counts"]["_sqlite_migrations"]}
    assert after["messages"] == [] and after["meta"] == [("application", "tracecli")]
    assert "note_vectors" not in after["tables"]

    run_child(db, FIXTURES / "locomo.json")
    assert snapshot(db)["counts"]["messages"] == 4
