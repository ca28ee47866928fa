"""Incremental compile equals full compile: half the sessions, then the rest, vs. one run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_wiki_common import UPDATE_HEAVY, build_sample_db, half_file, ingest, snapshot_of_state

from tracecli.errors import BadInput, NotFound
from tracecli.graph.build import build_graph
from tracecli.store import open_store
from tracecli.wiki import compile_wiki

CID = "alice-bob-plans"


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    return build_sample_db(tmp_path_factory, embedder)


def test_incremental_equals_full(sample_db: Path, tmp_path: Path, embedder: Any) -> None:
    inc = open_store(tmp_path / "inc.db")
    try:
        ingest(inc, [half_file(UPDATE_HEAVY, tmp_path / "update_heavy.json", 5)], embedder)
        build_graph(inc, CID)
        first = compile_wiki(inc, CID, embedder=embedder)[0]
        assert first.sessions_compiled == 5 and first.claims_total > 0
        mid_ops = inc.query("SELECT id, n, op, claim_id, target_id FROM claim_ops ORDER BY n")
        ingest(inc, [UPDATE_HEAVY], embedder)
        # new sessions without a graph are left for later, in order
        waiting = compile_wiki(inc, CID, embedder=embedder)[0]
        assert waiting.sessions_compiled == 0 and waiting.sessions_awaiting_graph == 5
        build_graph(inc, CID)
        second = compile_wiki(inc, CID, embedder=embedder)[0]
        assert second.sessions_compiled == 5 and second.ops_new.get("REVISE", 0) > 0
        got = snapshot_of_state(inc, CID)
        assert [(o["id"], o["n"], o["op"], o["claim_id"], o["target_id"]) for o in got["ops"][: len(mid_ops)]] == [
            (o["id"], o["n"], o["op"], o["claim_id"], o["target_id"]) for o in mid_ops]
    finally:
        inc.close()
    full = open_store(sample_db, create=False)
    try:
        want = snapshot_of_state(full, CID)
    finally:
        full.close()
    for key in ("claims", "ops", "snapshots", "trajectories", "pages", "page_links"):
        assert got[key] == want[key], key


def test_compile_needs_the_graph(tmp_path: Path, embedder: Any) -> None:
    store = open_store(tmp_path / "nograph.db")
    try:
        ingest(store, [half_file(UPDATE_HEAVY, tmp_path / "two.json", 2)], embedder)
        with pytest.raises(BadInput, match="build-graph"):
            compile_wiki(store, CID, embedder=embedder)
        with pytest.raises(NotFound):
            compile_wiki(store, "nobody", embedder=embedder)
        assert store.execute("SELECT COUNT(*) FROM claims").fetchone()[0] == 0
    finally:
        store.close()


def test_sessions_embedded_together_give_the_same_wiki(tmp_path: Path, embedder: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """compile-wiki embeds several sessions' snapshot texts in one go (each session's batch kept apart);
    compiling with one session per embedding call instead gives the same wiki, snapshot vectors bit for bit."""
    import shutil

    from tracecli.wiki import compile as C

    graphed = tmp_path / "graphed.db"
    store = open_store(graphed)
    try:
        ingest(store, [UPDATE_HEAVY], embedder)
        build_graph(store, CID)
        store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        store.close()
    states = []
    for ahead in (C.SNAPSHOT_TEXTS_AHEAD, 1):  # all ten sessions' texts in one go, then one session at a time
        path = tmp_path / f"ahead{ahead}.db"
        shutil.copyfile(graphed, path)
        monkeypatch.setattr(C, "SNAPSHOT_TEXTS_AHEAD", ahead)
        store = open_store(path, create=False)
        try:
            (done,) = compile_wiki(store, CID, embedder=embedder)
            assert done.sessions_compiled == 10
            states.append((snapshot_of_state(store, CID), [tuple(r) for r in store.execute(
                "SELECT id, vector FROM snapshots WHERE conversation_id = ? ORDER BY idx", (CID,))]))
        finally:
            store.close()
    (together, vectors), (alone, alone_vectors) = states
    assert sum(v is not None for _, v in vectors) > 50
    for key in ("claims", "ops", "snapshots", "trajectories", "pages", "page_links"):
        assert together[key] == alone[key], key
    assert vectors == alone_vectors
