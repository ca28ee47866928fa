"""Helpers shared by the tests/test_graph_*.py files, plus checks of the helpers themselves.

Conversations are written inline in the native format, ingested through the
real pipeline (parse_file + ingest_parsed with the session-scoped MiniLM
`embedder` fixture) and built with the rule extractor. The sample
conversations are ingested and built once per test process (`sample_db`)
because embedding them is the slowest step of the whole graph suite; tests
that write to that database work on a copy (`copy_db`).

Other test modules import names from here (`from test_graph_helpers import …`,
the same way `llm_server` is imported); they must not import the tests.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tracecli.graph.build import BuildResult, build_graph
from tracecli.ingest import ingest_parsed, parse_file
from tracecli.store.db import Store, open_store

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_conversations"
SAMPLE_FILES = ("update_heavy", "causal_chains", "flat_messages")
UPDATE_HEAVY_ID = "alice-bob-plans"

Turn = tuple[str, str]  # (speaker, text)
Session = tuple[str, Sequence[Turn]]  # (start, turns); start is "2024-03-01T10:00:00Z" or "2024-03-01"


def conversation(cid: str, sessions: Sequence[Session], participants: Sequence[str] | None = None,
                 step_minutes: int = 2) -> dict[str, Any]:
    """A native-format conversation: one message every `step_minutes` from each session's start."""
    out_sessions = []
    speakers: dict[str, None] = {}
    for i, (start, turns) in enumerate(sessions, 1):
        t0 = dt.datetime.fromisoformat(start.replace("Z", "+00:00"))
        if t0.tzinfo is None:
            t0 = t0.replace(hour=t0.hour or 10, tzinfo=dt.timezone.utc)
        msgs = []
        for j, (speaker, text) in enumerate(turns):
            speakers.setdefault(speaker, None)
            when = (t0 + dt.timedelta(minutes=step_minutes * j)).astimezone(dt.timezone.utc)
            msgs.append({"id": f"s{i}-m{j + 1}", "speaker": speaker, "text": text,
                         "timestamp": when.isoformat().replace("+00:00", "Z")})
        out_sessions.append({"id": f"s{i}", "started_at": msgs[0]["timestamp"] if msgs else None, "messages": msgs})
    return {"conversation_id": cid, "participants": list(participants or speakers), "sessions": out_sessions}


def ingest_data(store: Store, path: Path, data: Any, embedder: Any) -> None:
    """Write `data` as JSON to `path` and ingest it through the real pipeline."""
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    ingest_parsed(store, path, parse_file(path), embedder)


def build_conversations(tmp_path: Path, embedder: Any, *convs: dict[str, Any], **build_kwargs: Any) -> tuple[Store, list[BuildResult]]:
    """A fresh database holding `convs`, with its graph built by the rule extractor."""
    store = open_store(tmp_path / "graph.db")
    for n, conv in enumerate(convs):
        ingest_data(store, tmp_path / f"conv{n}.json", conv, embedder)
    build_kwargs.setdefault("extractor", "rules")
    results = build_graph(store, **build_kwargs)
    return store, results


def events(store: Store, cid: str | None = None) -> list[dict[str, Any]]:
    """Event rows in conversation order."""
    sql = "SELECT * FROM events" + (" WHERE conversation_id = ?" if cid else "") + " ORDER BY seq, sentence_idx, id"
    return store.query(sql, (cid,) if cid else ())


def edges(store: Store, cid: str | None = None, labels: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Edge rows (optionally of some labels) in a total order."""
    where, params = [], []
    if cid:
        where.append("conversation_id = ?")
        params.append(cid)
    if labels:
        where.append(f"label IN ({','.join('?' * len(labels))})")
        params.extend(labels)
    sql = "SELECT * FROM edges" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY src, dst, label"
    return store.query(sql, params)


def faceted(store: Store, subject: str, facet: str, cid: str | None = None) -> list[dict[str, Any]]:
    """The (subject, facet) chain in conversation order."""
    return [e for e in events(store, cid) if e["subject"] == subject and e["facet"] == facet]


def by_value(store: Store, subject: str, facet: str, value: str) -> dict[str, Any]:
    """The single positive event holding `value` (normalised comparison) for the subject's facet."""
    want = value.lower()
    found = [e for e in faceted(store, subject, facet) if (e["value_norm"] or "") == want]
    assert len(found) == 1, f"expected one {subject}/{facet}={value!r}, got {[(e['value'], e['negated']) for e in faceted(store, subject, facet)]}"
    return found[0]


def edge_between(store: Store, src: str, dst: str, label: str) -> dict[str, Any] | None:
    rows = store.query("SELECT * FROM edges WHERE src = ? AND dst = ? AND label = ?", (src, dst, label))
    return rows[0] if rows else None


def graph_snapshot(store: Store, cid: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """What an incremental build must reproduce: events and edges, without build times."""
    evs = [
        (r["id"], r["session_id"], r["type"], r["subject"], r["facet"], r["value"], r["value_norm"], r["negated"],
         r["validity"], r["valid_until"], r["topic_id"], r["seq"], r["sentence_idx"])
        for r in store.query("SELECT * FROM events WHERE conversation_id = ? ORDER BY id", (cid,))
    ]
    eds = [
        (r["src"], r["dst"], r["label"], r["family"], round(r["confidence"], 6), r["invalidated_at"])
        for r in store.query("SELECT * FROM edges WHERE conversation_id = ? ORDER BY src, dst, label", (cid,))
    ]
    return evs, eds


# -- the sample conversations, ingested and built once per process -------------------------

_SAMPLE_DB: Path | None = None


def sample_db(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    """A database with every sample conversation ingested and its graph built (read it, or `copy_db` it)."""
    global _SAMPLE_DB
    if _SAMPLE_DB is None or not _SAMPLE_DB.exists():
        path = tmp_path_factory.mktemp("graph_samples") / "samples.db"
        store = open_store(path)
        try:
            for name in SAMPLE_FILES:
                src = SAMPLES / f"{name}.json"
                ingest_parsed(store, src, parse_file(src), embedder)
            build_graph(store, extractor="rules")
            store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            store.close()
        _SAMPLE_DB = path
    return _SAMPLE_DB


def copy_db(src: Path, dst_dir: Path) -> Path:
    """A private copy of a closed database file."""
    dst = dst_dir / src.name
    shutil.copyfile(src, dst)
    return dst


# -- checks of the helpers ----------------------------------------------------------------


def test_conversation_builder_round_trips_through_the_native_parser(tmp_path: Path) -> None:
    conv = conversation("c1", [("2024-03-01T10:00:00Z", [("Ana", "Hello there"), ("Ben", "Hi Ana")]),
                               ("2024-03-08", [("Ana", "Back again")])])
    path = tmp_path / "c.json"
    path.write_text(json.dumps(conv), encoding="utf-8")
    parsed = parse_file(path)
    assert [c.conversation_id for c in parsed] == ["c1"]
    assert parsed[0].participants == ["Ana", "Ben"]
    stamps = [m.timestamp for s in parsed[0].sessions for m in s.messages]
    assert stamps == ["2024-03-01T10:00:00Z", "2024-03-01T10:02:00Z", "2024-03-08T10:00:00Z"]
