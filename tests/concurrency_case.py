"""The concurrency scenario of issue 17, shared by tests/test_concurrency.py and benchmarks/fuzz_report.py.

`ask` and `stats` run in a loop while compile-wiki, forget and two ingests of one new file run on the same
database, each on its own connection and thread, as separate commands would. Nothing may raise, no row
may be lost or stored twice, and `audit --strict` must pass afterwards. Threads rather than processes:
SQLite locks connections of one process against each other exactly as it locks processes, and the
threads share one embedding model.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from tracecli.cli import app
from tracecli.forget import forget
from tracecli.graph.build import build_graph
from tracecli.ingest import ingest_parsed, parse_file
from tracecli.query.ask import Asker
from tracecli.stats import collect_stats
from tracecli.store import open_store, read_store
from tracecli.wiki import compile_wiki

SMALL = Path(__file__).resolve().parent / "fixtures" / "native_sessions.json"  # trip-planning, 4 messages
LINES = [
    ("Lena", "I just moved to Leeds for the new job."), ("Omar", "Leeds! How is the flat?"),
    ("Lena", "Small, but my cat Pixel loves the window."), ("Omar", "I bought a Skoda Octavia last week."),
    ("Lena", "Nice. I started running with a club on Sundays."), ("Omar", "My sister Dana is visiting in May."),
    ("Lena", "Actually I'm moving again, to York, in June."), ("Omar", "Already? What happened?"),
    ("Lena", "The job moved offices, so York is closer."), ("Omar", "I sold the Octavia; I drive a Kia Niro now."),
    ("Lena", "Pixel hates the car, by the way."), ("Omar", "Dana moved her visit to July."),
    ("Lena", "The running club switched to Saturdays."), ("Omar", "I might join you for a run in York."),
]
QUESTIONS = ["Where does Lena live now?", "What car does Omar drive?", "When is Dana visiting?"]


def _messages_in(path: Path) -> int:
    return sum(len(s.messages) for c in parse_file(path) for s in c.sessions)


def run_concurrently(tmp_path: Path, embedder: Any) -> dict[str, int]:
    """One round of the scenario in `tmp_path`; AssertionError when it did not hold, else the reader rounds done."""
    db = tmp_path / "trace.db"
    chat = tmp_path / "lena-omar.json"
    chat.write_text(json.dumps({"conversation_id": "lena-omar", "messages": [
        {"id": f"m{i}", "speaker": who, "text": text, "timestamp": f"2024-0{1 + i // 4}-{1 + i:02d}T10:00:00Z"}
        for i, (who, text) in enumerate(LINES)]}))
    with open_store(db) as store:
        for path in (chat, SMALL):
            ingest_parsed(store, path, parse_file(path), embedder)
        build_graph(store, extractor="rules")
    newcomer = tmp_path / "newcomer.json"
    newcomer.write_text(json.dumps({"conversation_id": "newcomer", "messages": [
        {"id": f"n{i}", "speaker": ["Ada", "Ben"][i % 2], "text": f"Message {i}: Ada moved to Lyon in spring {i}.",
         "timestamp": f"2024-04-{i + 1:02d}T09:00:00Z"} for i in range(12)]}))
    forgotten = "trip-planning"
    with open_store(db, create=False) as store:
        target = store.execute("SELECT source_ref FROM messages WHERE conversation_id = ? AND source_ref IS NOT NULL "
                               "ORDER BY seq LIMIT 1", (forgotten,)).fetchone()[0]

    errors: list[tuple[str, BaseException]] = []
    writers_done = threading.Event()
    rounds = {"ask": 0, "stats": 0}

    def guarded(name: str, work: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                work()
            except BaseException as exc:  # noqa: BLE001 - every failure is the test's finding
                errors.append((name, exc))
        return run

    def ask_loop() -> None:
        with open_store(db, create=False, upgrade=False) as store:
            asker = Asker(store, embedder=embedder)
            while not writers_done.is_set() or rounds["ask"] < 3:
                asker.ask(QUESTIONS[rounds["ask"] % len(QUESTIONS)], conversation_id=[forgotten, "lena-omar"][rounds["ask"] % 2])
                rounds["ask"] += 1

    def stats_loop() -> None:
        while not writers_done.is_set() or rounds["stats"] < 3:
            with read_store(db) as store:
                st = collect_stats(store)
                assert st.tables["notes"] == st.tables["messages"], st.tables
            rounds["stats"] += 1

    def compile_all() -> None:
        with open_store(db, create=False) as store:
            compile_wiki(store, embedder=embedder)

    def forget_one() -> None:
        with open_store(db, create=False) as store:
            forget(store, "message", [target], namespace="default", conversation_id=forgotten,
                   recompile=lambda s, cids: [compile_wiki(s, c, embedder=embedder) for c in cids])

    def ingest_newcomer() -> None:
        with open_store(db, create=False) as store:
            ingest_parsed(store, newcomer, parse_file(newcomer), embedder)

    readers = [threading.Thread(target=guarded("ask", ask_loop)), threading.Thread(target=guarded("stats", stats_loop))]
    writers = [threading.Thread(target=guarded(name, work)) for name, work in
               (("compile-wiki", compile_all), ("forget", forget_one), ("ingest 1", ingest_newcomer),
                ("ingest 2", ingest_newcomer))]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join(300)
    writers_done.set()
    for t in readers:
        t.join(300)
    assert not any(t.is_alive() for t in readers + writers), "a command never finished"
    assert errors == [], errors
    assert rounds["ask"] >= 3 and rounds["stats"] >= 3

    expected = {"lena-omar": len(LINES), forgotten: _messages_in(SMALL) - 1, "newcomer": 12}
    with read_store(db) as store:
        per = dict(store.execute("SELECT conversation_id, COUNT(*) FROM messages GROUP BY conversation_id").fetchall())
        assert per == expected  # nothing lost, nothing stored twice
        distinct = store.execute("SELECT COUNT(DISTINCT conversation_id || content_hash) FROM messages").fetchone()[0]
        assert distinct == sum(expected.values())
        for table in ("notes", "notes_fts", "note_vectors"):
            assert store.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == sum(expected.values()), table
        assert store.execute("SELECT COUNT(*) FROM messages WHERE source_ref = ? AND conversation_id = ?",
                             (target, forgotten)).fetchone()[0] == 0
        assert store.execute("SELECT COUNT(*) FROM answers").fetchone()[0] >= 1
    # the newcomer joins the graph and the wiki like any conversation, and the file passes the strict audit
    with open_store(db, create=False) as store:
        build_graph(store, "newcomer", extractor="rules")
        compile_wiki(store, "newcomer", embedder=embedder)
    result = CliRunner().invoke(app, ["audit", "--strict", "--json", "--db", str(db)])
    assert result.exit_code == 0, [f for f in json.loads(result.stdout)["findings"] if f["severity"] == "error"]
    return dict(rounds)
