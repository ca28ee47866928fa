"""An incremental build ends in the same graph as a full rebuild.

The first half of update_heavy.json's sessions is ingested and built; then
the whole file is ingested (only the new sessions are appended) and built
again. Events (ids, facets, values, validity, valid_until, topics) and edges
(src, dst, label, confidence, invalidation) must equal those of a fresh full
build of the whole file, and `--rebuild` must give that graph once more.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_graph_helpers import SAMPLES, UPDATE_HEAVY_ID, graph_snapshot, ingest_data, sample_db

from tracecli.graph.build import build_graph
from tracecli.ingest import ingest_parsed, parse_file
from tracecli.store.db import open_store


@pytest.fixture(scope="module")
def full_snapshot(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> tuple[list[Any], list[Any]]:
    store = open_store(sample_db(tmp_path_factory, embedder), create=False)
    try:
        return graph_snapshot(store, UPDATE_HEAVY_ID)
    finally:
        store.close()


def test_incremental_build_equals_full_rebuild(tmp_path: Path, embedder: Any, full_snapshot: Any) -> None:
    source = SAMPLES / "update_heavy.json"
    data = json.loads(source.read_text(encoding="utf-8"))
    half = len(data["sessions"]) // 2
    store = open_store(tmp_path / "inc.db")
    try:
        ingest_data(store, tmp_path / "update_heavy_first_half.json", {**data, "sessions": data["sessions"][:half]}, embedder)
        (first,) = build_graph(store, UPDATE_HEAVY_ID, extractor="rules")
        assert (first.sessions_processed, first.sessions_total) == (half, half)
        partial_events = first.events_total

        result = ingest_parsed(store, source, parse_file(source), embedder)
        (conv,) = result.conversations
        assert not conv.created and conv.new_sessions == len(data["sessions"]) - half

        (second,) = build_graph(store, UPDATE_HEAVY_ID, extractor="rules")
        assert second.sessions_processed == len(data["sessions"]) - half
        assert second.sessions_total == len(data["sessions"])
        assert second.events_new == second.events_total - partial_events
        # the gate only compared the new events with their predecessors
        assert 0 < second.pairs_considered < second.pairs_possible

        events, edges = graph_snapshot(store, UPDATE_HEAVY_ID)
        full_events, full_edges = full_snapshot
        assert [e[0] for e in events] == [e[0] for e in full_events]  # same event ids
        assert events == full_events
        assert edges == full_edges

        # nothing left to do: a second run changes nothing
        (again,) = build_graph(store, UPDATE_HEAVY_ID, extractor="rules")
        assert again.sessions_processed == 0 and again.events_new == 0
        assert graph_snapshot(store, UPDATE_HEAVY_ID) == full_snapshot

        (rebuilt,) = build_graph(store, UPDATE_HEAVY_ID, extractor="rules", rebuild=True)
        assert rebuilt.sessions_processed == len(data["sessions"])
        assert graph_snapshot(store, UPDATE_HEAVY_ID) == full_snapshot
    finally:
        store.close()


def test_messages_appended_to_a_built_session_are_distilled(tmp_path: Path, embedder: Any) -> None:
    from test_graph_helpers import conversation, events

    turns = [("Ana", "I live in Leeds."), ("Ben", "Nice."), ("Ana", "I work at Acme Bank."), ("Ana", "I'm vegetarian these days.")]
    short = conversation("grow", [("2024-03-01T10:00:00Z", turns[:2])])
    full = conversation("grow", [("2024-03-01T10:00:00Z", turns)])
    store = open_store(tmp_path / "grow.db")
    try:
        ingest_data(store, tmp_path / "short.json", short, embedder)
        build_graph(store, extractor="rules")
        ingest_data(store, tmp_path / "full.json", full, embedder)
        build_graph(store, extractor="rules")
        incremental = {(e["facet"], e["value"]) for e in events(store, "grow")}
        build_graph(store, extractor="rules", rebuild=True)
        assert incremental == {(e["facet"], e["value"]) for e in events(store, "grow")}
    finally:
        store.close()
