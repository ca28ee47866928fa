"""`tracecli audit`: a clean file passes; each kind of corruption is reported as an error; --strict exits 1."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from tracecli.audit import AuditReport, _cycles, run_audit
from tracecli.commands import audit as audit_cmd
from tracecli.store import open_store

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_conversations" / "update_heavy.json"
runner = CliRunner()

REPORT_KEYS = {"db", "conversation_ids", "schema_version", "latest_schema_version", "ok", "errors", "warnings", "checks",
               "findings", "disagreements", "review", "counts", "namespace", "namespaces"}
CHECK_KEYS = {"name", "group", "status", "checked", "errors", "warnings", "detail"}
FINDING_KEYS = {"check", "severity", "message", "conversation_id", "refs"}


def make_app() -> typer.Typer:
    app = typer.Typer(pretty_exceptions_enable=False, pretty_exceptions_show_locals=False, add_completion=False)

    @app.callback()
    def main() -> None:
        """Test app."""

    audit_cmd.register(app)
    audit_cmd.register(app)  # a second registration is a no-op
    return app


APP = make_app()


def _build(path: Path, embedder: Any, *, wiki: bool = True, ask: bool = True) -> None:
    from tracecli.graph.build import build_graph
    from tracecli.ingest import ingest_parsed, parse_inputs

    store = open_store(path)
    try:
        for p, convs in parse_inputs([SAMPLE]):
            ingest_parsed(store, p, convs, embedder)
        build_graph(store)
        if wiki:
            from tracecli.wiki.compile import compile_wiki

            compile_wiki(store, embedder=embedder)
        if ask:
            from tracecli.query.ask import Asker

            asker = Asker(store, embedder=embedder)
            asker.ask("Where does Alice live now?")
            asker.ask("Which company does Alice work for now?")
    finally:
        store.close()


@pytest.fixture(scope="module")
def clean_db(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    path = tmp_path_factory.mktemp("audit") / "clean.db"
    _build(path, embedder)
    return path


def _copy(src: Path, dst_dir: Path) -> Path:
    dst = dst_dir / "copy.db"
    for suffix in ("", "-wal", "-shm"):
        s = Path(str(src) + suffix)
        if s.exists():
            shutil.copy(s, Path(str(dst) + suffix))
    return dst


def _corrupt(path: Path, *sql: str | tuple[str, tuple]) -> None:
    """Run raw SQL with foreign keys off (as a buggy writer or a hand edit would)."""
    store = open_store(path)
    try:
        store.execute("PRAGMA foreign_keys=OFF")
        for stmt in sql:
            if isinstance(stmt, tuple):
                store.execute(*stmt)
            else:
                store.execute(stmt)
    finally:
        store.close()


def _audit(path: Path, conversation: str | None = None) -> AuditReport:
    store = open_store(path)
    try:
        return run_audit(store, conversation)
    finally:
        store.close()


def _one(path: Path, sql: str) -> Any:
    store = open_store(path)
    try:
        row = store.execute(sql).fetchone()
        return row
    finally:
        store.close()


def _check(report: AuditReport, name: str) -> Any:
    return next(c for c in report.checks if c.name == name)


# -- the clean file ------------------------------------------------------------------------


def test_clean_file_passes(clean_db: Path) -> None:
    report = _audit(clean_db)
    assert report.ok, [f.message for f in report.findings if f.severity == "error"]
    assert report.errors == 0
    statuses = {c.name: c.status for c in report.checks}
    for name in ("storage.integrity", "storage.foreign_keys", "storage.schema", "storage.vectors", "storage.fts",
                 "graph.event_sources", "graph.time_anchors", "graph.before_order", "graph.validity",
                 "graph.update_cycles", "claims.quotes", "claims.deprecated", "claims.op_log", "wiki.citations",
                 "wiki.coverage", "answers.references"):
        assert statuses[name] in ("ok", "warning"), (name, statuses[name])
    assert _check(report, "storage.vectors").checked > 0
    assert _check(report, "claims.quotes").checked > 0
    assert report.counts["events"] > 0 and report.counts["claims"] > 0


def test_review_queue_has_both_quotes(clean_db: Path) -> None:
    report = _audit(clean_db)
    assert report.review, "update_heavy has implicit (low-confidence) updates to review"
    for item in report.review:
        assert item.kind in ("contradiction", "low_confidence_update")
        assert item.newer.quote and item.older.quote
        assert item.newer.source_refs and item.older.source_refs
        if item.kind == "low_confidence_update":
            assert item.confidence < 0.8


def test_cli_json_and_strict_on_clean_file(clean_db: Path) -> None:
    result = runner.invoke(APP, ["audit", "--db", str(clean_db), "--json", "--strict"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == REPORT_KEYS
    assert data["ok"] is True
    assert all(set(c) == CHECK_KEYS for c in data["checks"])
    assert all(set(f) == FINDING_KEYS for f in data["findings"])
    assert data["review"] and {"quote", "source_refs"} <= set(data["review"][0]["newer"])
    table = runner.invoke(APP, ["audit", "--db", str(clean_db)])
    assert table.exit_code == 0
    assert "review queue" in table.stderr and table.stdout == ""


def test_unknown_conversation_is_exit_2(clean_db: Path) -> None:
    result = runner.invoke(APP, ["audit", "--db", str(clean_db), "--conversation", "nope"])
    assert result.exit_code == 2
    assert "no conversation 'nope'" in result.stderr


def test_one_conversation(clean_db: Path) -> None:
    report = _audit(clean_db, "alice-bob-plans")
    assert report.ok and report.conversation_ids == ["alice-bob-plans"]


# -- corruptions -------------------------------------------------------------------------------


def _quote_gone(path: Path) -> None:
    mid = _one(path, "SELECT json_extract(source_message_ids, '$[0]') FROM claims ORDER BY idx LIMIT 1")[0]
    _corrupt(path, ("UPDATE messages SET text = 'this text was edited away' WHERE id = ?", (mid,)))


def _validity_flipped(path: Path) -> None:
    eid = _one(path, "SELECT id FROM events WHERE validity = 0 ORDER BY id LIMIT 1")[0]
    _corrupt(path, ("UPDATE events SET validity = 1.0 WHERE id = ?", (eid,)))


def _before_against_time(path: Path) -> None:
    row = _one(path, "SELECT e.id, e.src, e.dst FROM edges e JOIN events a ON a.id = e.src JOIN events b ON b.id = e.dst "
                     "WHERE e.label = 'before' AND a.time_anchor < b.time_anchor ORDER BY e.id LIMIT 1")
    assert row is not None
    _corrupt(path, ("UPDATE edges SET src = ?, dst = ? WHERE id = ?", (row[2], row[1], row[0])))


def _dangling_event_note(path: Path) -> None:
    eid = _one(path, "SELECT id FROM events ORDER BY id LIMIT 1")[0]
    _corrupt(path, ("INSERT INTO event_notes(event_id, note_id) VALUES (?, 'n_doesnotexist')", (eid,)))


def _fts_row_deleted(path: Path) -> None:
    _corrupt(path, "DELETE FROM notes_fts WHERE rowid = (SELECT MIN(rowid) FROM notes)")


def _op_deleted(path: Path) -> None:
    _corrupt(path, "DROP TRIGGER claim_ops_no_delete", "DELETE FROM claim_ops WHERE n = 3")


def _page_cites_nothing(path: Path) -> None:
    _corrupt(path, "UPDATE wiki_pages SET markdown = markdown || ' (claim cl_0123456789)' WHERE slug = 'index'")


def _update_cycle(path: Path) -> None:
    row = _one(path, "SELECT src, dst, conversation_id FROM edges WHERE label = 'updates' ORDER BY id LIMIT 1")
    _corrupt(path, ("INSERT INTO edges(id, conversation_id, src, dst, label, family, confidence, created_at) "
                    "VALUES ('ed_cycle00000', ?, ?, ?, 'updates', 'evolution', 0.9, '2024-01-01T00:00:00Z')",
                    (row[2], row[1], row[0])))


CORRUPTIONS: dict[str, tuple[Callable[[Path], None], str]] = {
    "quote no longer occurs": (_quote_gone, "claims.quotes"),
    "validity flipped": (_validity_flipped, "graph.validity"),
    "before edge against time": (_before_against_time, "graph.before_order"),
    "dangling event note": (_dangling_event_note, "graph.event_sources"),
    "FTS row deleted": (_fts_row_deleted, "storage.fts"),
    "op deleted from the log": (_op_deleted, "claims.op_log"),
    "page cites a missing claim": (_page_cites_nothing, "wiki.citations"),
    "cyclic update chain": (_update_cycle, "graph.update_cycles"),
}


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_corruption_is_an_error(case: str, clean_db: Path, tmp_path: Path) -> None:
    corrupt, check = CORRUPTIONS[case]
    path = _copy(clean_db, tmp_path)
    corrupt(path)
    report = _audit(path)
    assert not report.ok
    result = _check(report, check)
    assert result.status == "error", (case, result)
    assert any(f.check == check and f.severity == "error" for f in report.findings)
    strict = runner.invoke(APP, ["audit", "--db", str(path), "--strict"])
    assert strict.exit_code == 1, strict.output
    assert "error" in strict.stderr
    lenient = runner.invoke(APP, ["audit", "--db", str(path), "--json"])
    assert lenient.exit_code == 0
    assert json.loads(lenient.stdout)["ok"] is False


def test_dangling_note_is_also_a_foreign_key_error(clean_db: Path, tmp_path: Path) -> None:
    path = _copy(clean_db, tmp_path)
    _dangling_event_note(path)
    assert _check(_audit(path), "storage.foreign_keys").status == "error"


# -- without the wiki stage -----------------------------------------------------------------------


def test_wiki_checks_skip_without_wiki_tables(clean_db: Path, tmp_path: Path) -> None:
    path = _copy(clean_db, tmp_path)
    _corrupt(path, *(f"DROP TABLE {t}" for t in (
        "wiki_page_trajectories", "wiki_pages", "wiki_fts", "wiki_vectors", "wiki_sessions", "snapshot_claims",
        "claim_ops", "claims", "snapshots", "trajectories")))
    report = _audit(path)
    statuses = {c.name: c for c in report.checks}
    for name in ("claims.quotes", "claims.deprecated", "claims.op_log", "claims.graph_agreement", "wiki.citations",
                 "wiki.coverage"):
        assert statuses[name].status == "skipped", name
        assert "compile-wiki" in statuses[name].detail
    assert report.ok, [f.message for f in report.findings]


def test_empty_file_passes(tmp_path: Path) -> None:
    store = open_store(tmp_path / "empty.db")
    store.close()
    report = _audit(tmp_path / "empty.db")
    assert report.ok and report.conversation_ids == []
    assert {c.status for c in report.checks} <= {"ok", "skipped"}


# -- cycle detection against a brute-force reference ------------------------------------------------


def _has_cycle(graph: dict[str, list[str]]) -> bool:
    """Kahn: peel off vertices without outgoing edges; a cycle is what cannot be peeled."""
    nodes = set(graph) | {d for ds in graph.values() for d in ds}
    out = {n: set(graph.get(n, [])) for n in nodes}
    while True:
        sinks = {n for n, ds in out.items() if not ds}
        if not sinks:
            return bool(out)
        out = {n: ds - sinks for n, ds in out.items() if n not in sinks}


@given(st.lists(st.tuples(st.sampled_from("abcdef"), st.sampled_from("abcdef")), max_size=10))
def test_cycles_match_brute_force(edges: list[tuple[str, str]]) -> None:
    graph: dict[str, list[str]] = {}
    for a, b in edges:
        graph.setdefault(a, []).append(b)
    cycles = _cycles(graph)
    assert bool(cycles) == _has_cycle(graph)
    for cycle in cycles:
        for x, y in zip(cycle, cycle[1:] + cycle[:1]):
            assert y in graph[x]
