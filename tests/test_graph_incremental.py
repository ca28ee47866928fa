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


#: four sessions whose revisions are found by every layer: a facet (employer), constructions ("I quit X and
#: joined Y", "forget X"), 'it's … now' (anaphora) and restated keys (implicit); the last session's "forget
#: Octopus Go" ends an event that an earlier session's implicit edge ('Agile' replaces 'Octopus Go') pointed
#: at, so that edge must go
LAYERED = [
    ("2024-01-05T10:00:00Z", [("Ana", "yeah, club night is Tuesdays, half 6 on the river by the old mill."),
                              ("Ben", "Nice, how is work?"), ("Ana", "I work at Acme Bank as a teller."),
                              ("Ana", "I'm on the late shift all month, 2 till 10."), ("Ana", "I live in Leeds."),
                              ("Ana", "we're on Octopus Go so at least overnight is cheap")]),
    ("2024-02-10T10:00:00Z", [("Ana", "ok update. club night is Thursdays now, they lost the Tuesday slot to the rowers"),
                              ("Ben", "Big change!"),
                              ("Ana", "the director wants me to audition for the cathedral choir in january."),
                              ("Ana", "I'm on Agile now btw, prices change every half hour")]),
    ("2024-03-01T10:00:00Z", [("Ana", "club night moved AGAIN btw. it's Wednesdays now, the new coach can't do Thursdays"),
                              ("Ben", "Oh no."), ("Ana", "I quit Acme Bank and joined Globex."),
                              ("Ana", "so they've switched me off lates, I'm on the early rota now, 7am starts.")]),
    ("2024-04-02T10:00:00Z", [("Ana", "I'm leaving St Mary's and joining the cathedral choir from february"),
                              ("Ana", "forget Octopus Go, we are not on Octopus Go anymore."), ("Ben", "Good call.")]),
]


def _evolution(store: Any, cid: str) -> list[tuple[Any, ...]]:
    return [(r["src"], r["dst"], r["label"], round(r["confidence"], 6), r["justification"], r["invalidated_at"])
            for r in store.query("SELECT * FROM edges WHERE conversation_id = ? AND family = 'evolution' "
                                 "ORDER BY src, dst, label", (cid,))]


def test_session_by_session_equals_one_build(tmp_path: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch,
                                            any_db: str) -> None:
    """Each new session's relink reads the earlier frames' construction and implicit edges back from the store
    (`build._drawn_before`) instead of computing them again; built one session at a time (in SQLite or
    PostgreSQL), the conversation ends in the graph one build of all four sessions gives: the same events,
    validity and edges, justifications included."""
    from test_graph_helpers import conversation

    from tracecli.graph import build
    from tracecli.store import open_store as open_any  # an SQLite path or a PostgreSQL URL

    drawn: list[bool] = []
    real = build._drawn_before

    def spy(*args: Any) -> Any:
        found = real(*args)
        drawn.append(found is not None)
        return found

    monkeypatch.setattr(build, "_drawn_before", spy)
    whole = open_store(tmp_path / "whole.db")
    steps = open_any(any_db)
    try:
        ingest_data(whole, tmp_path / "whole.json", conversation("ana", LAYERED), embedder)
        build_graph(whole, "ana", extractor="rules")
        assert drawn == [False]  # a first build has nothing to read back
        kinds = {why.rsplit("(found by ", 1)[-1].split(":")[0].rstrip(")") for *_, why, _ in _evolution(whole, "ana")}
        assert kinds == {"facet", "construction", "anaphora", "implicit"}
        agile = [e for e in _evolution(whole, "ana") if "'Agile' replaces 'Octopus Go'" in e[4]]
        assert agile == []  # ended by the last session's construction

        for n in range(1, len(LAYERED) + 1):
            ingest_data(steps, tmp_path / f"first{n}.json", conversation("ana", LAYERED[:n]), embedder)
            build_graph(steps, "ana", extractor="rules")
            if n == 3:  # drawn by the second session, still there before the fourth
                assert [e for e in _evolution(steps, "ana") if "'Agile' replaces 'Octopus Go'" in e[4]]
        assert drawn == [False, False, True, True, True]
        assert graph_snapshot(steps, "ana") == graph_snapshot(whole, "ana")
        assert _evolution(steps, "ana") == _evolution(whole, "ana")
    finally:
        whole.close()
        steps.close()
