"""`tracecli build-graph` (on tracecli.cli.app) and `tracecli graph show|export` through Typer's CliRunner.

The `graph` group is registered on a fresh Typer app, so these tests never
change the shared `tracecli.cli.app`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from click.testing import Result
from test_graph_helpers import build_conversations, by_value, conversation, ingest_data
from typer.testing import CliRunner

from tracecli.cli import app as main_app
from tracecli.commands import graph
from tracecli.store.db import Store, open_store

runner = CliRunner()

BUILD_KEYS = [
    "conversation_id", "extractor", "sessions_processed", "sessions_total", "events_new", "events_total",
    "events_by_type", "edges_by_label", "updates", "contradicts", "outdated_events", "partial_events", "topics",
    "pairs_considered", "pairs_possible", "llm_calls", "llm_cache_hits", "llm_fallbacks", "elapsed_s",
]
SHOW_KEYS = ["event", "edges_out", "edges_in", "messages"]
EVENT_KEYS = [
    "id", "conversation_id", "session_id", "topic_id", "type", "subject", "speaker", "participants", "description",
    "quote", "facet", "value", "negated", "cue", "time_anchor", "event_time", "event_time_granularity", "validity",
    "validity_marker", "valid_until", "confidence", "provenance", "seq", "sentence_idx",
]
EDGE_KEYS = [
    "id", "direction", "label", "family", "other_id", "other_kind", "other_description", "other_validity",
    "other_validity_marker", "confidence", "justification", "invalidated_at",
]
MESSAGE_KEYS = ["id", "session_id", "speaker", "timestamp", "source_ref", "text"]

CONV = conversation(
    "ana-ben",
    [
        ("2024-03-01T10:00:00Z", [("Ana", "I live in Leeds."), ("Ana", "I work at Acme Bank."), ("Ben", "Nice.")]),
        ("2024-04-01T10:00:00Z", [("Ana", "Forget Leeds, it's Porto now."), ("Ana", "I got a promotion, so I bought a new bike."),
                                  ("Ben", "Wow!")]),
    ],
    participants=["Ana", "Ben"],
)


def make_app() -> typer.Typer:
    app = typer.Typer(pretty_exceptions_enable=False, pretty_exceptions_show_locals=False, add_completion=False)

    @app.callback()
    def main() -> None:
        """Test app."""

    graph.register(app)
    return app


APP = make_app()


def invoke(*args: Any, app: typer.Typer = APP) -> Result:
    return runner.invoke(app, [str(a) for a in args])


def one_line_error(result: Result, *needles: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.output)
    err = result.stderr.strip()
    assert err.startswith("error:") and "\n" not in err, err
    assert "Traceback" not in result.output
    assert result.stdout == ""
    for needle in needles:
        assert needle in err, err


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("graph_cli")
    store, _ = build_conversations(tmp, embedder, CONV)
    store.close()
    yield tmp / "graph.db"


@pytest.fixture
def empty_db(tmp_path: Path) -> Path:
    path = tmp_path / "empty.db"
    open_store(path).close()
    return path


# -- registration ----------------------------------------------------------------------------


def test_register_is_idempotent() -> None:
    app = make_app()
    graph.register(app)
    assert [g.name for g in app.registered_groups] == ["graph"]
    assert graph.is_registered(app)
    assert not graph.is_registered(typer.Typer())


def test_commands_have_help() -> None:
    result = invoke("graph", "--help")
    assert result.exit_code == 0 and "show" in result.stdout and "export" in result.stdout
    for name, first_words in (("show", "Show one event"), ("export", "Export the evidence graph")):
        res = invoke("graph", name, "--help")
        assert res.exit_code == 0, res.output
        assert first_words in " ".join(res.stdout.split())


# -- build-graph bad states ---------------------------------------------------------------------


def test_build_graph_unknown_conversation(empty_db: Path, tmp_path: Path, embedder: Any) -> None:
    store = open_store(empty_db)
    ingest_data(store, tmp_path / "c.json", conversation("real", [("2024-01-01", [("Ana", "Hello there.")])]), embedder)
    store.close()
    one_line_error(invoke("build-graph", "--conversation", "nope", "--db", empty_db, app=main_app),
                   "no conversation 'nope'", "tracecli ingest")


def test_build_graph_on_a_database_without_conversations(empty_db: Path) -> None:
    one_line_error(invoke("build-graph", "--db", empty_db, app=main_app), "holds no conversations")


def test_build_graph_missing_database(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    one_line_error(invoke("build-graph", "--db", missing, app=main_app), "no such database")
    assert not missing.exists()


def test_build_graph_llm_extractor_without_an_llm(empty_db: Path) -> None:
    one_line_error(invoke("build-graph", "--extractor", "llm", "--db", empty_db, app=main_app), "TRACECLI_LLM_URL")


def test_build_graph_unknown_extractor(empty_db: Path) -> None:
    one_line_error(invoke("build-graph", "--extractor", "magic", "--db", empty_db, app=main_app), "unknown extractor 'magic'")


def test_build_graph_json_shape(tmp_path: Path, embedder: Any) -> None:
    db = tmp_path / "t.db"
    store = open_store(db)
    ingest_data(store, tmp_path / "c.json", CONV, embedder)
    store.close()
    result = invoke("build-graph", "--db", db, "--json", "--extractor", "rules", app=main_app)
    assert result.exit_code == 0, result.output
    assert result.stdout.count("\n") == 1
    data = json.loads(result.stdout)
    assert list(data) == ["conversations"]
    (conv,) = data["conversations"]
    assert list(conv) == BUILD_KEYS
    assert conv["conversation_id"] == "ana-ben" and conv["extractor"] == "rules"
    assert conv["sessions_processed"] == conv["sessions_total"] == 2
    assert conv["events_new"] == conv["events_total"] > 0
    assert isinstance(conv["events_by_type"], dict) and isinstance(conv["edges_by_label"], dict)
    assert conv["edges_by_label"].get("updates", 0) == conv["updates"] >= 1
    assert conv["outdated_events"] >= 1
    assert 0 < conv["pairs_considered"] <= conv["pairs_possible"]
    # again: nothing new to build, same totals
    again = json.loads(invoke("build-graph", "--db", db, "--json", app=main_app).stdout)["conversations"][0]
    assert again["sessions_processed"] == 0 and again["events_total"] == conv["events_total"]


# -- graph show -----------------------------------------------------------------------------------


def _porto(db: Path) -> dict[str, Any]:
    store = open_store(db, create=False)
    try:
        return by_value(store, "Ana", "residence", "porto")
    finally:
        store.close()


def test_show_json(built: Path) -> None:
    porto = _porto(built)
    result = invoke("graph", "show", porto["id"], "--db", built, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert list(data) == SHOW_KEYS
    assert list(data["event"]) == EVENT_KEYS
    assert data["event"]["validity_marker"] == "valid" and data["event"]["value"] == "Porto"
    assert all(list(e) == EDGE_KEYS for e in data["edges_out"] + data["edges_in"])
    upd = [e for e in data["edges_out"] if e["label"] == "updates"]
    assert len(upd) == 1 and upd[0]["other_validity_marker"] == "outdated" and upd[0]["direction"] == "out"
    assert all(list(m) == MESSAGE_KEYS for m in data["messages"])
    assert [m["text"] for m in data["messages"]] == ["Forget Leeds, it's Porto now."]
    assert data["messages"][0]["source_ref"] == "s2-m1"


def test_show_text_goes_to_stderr(built: Path) -> None:
    porto = _porto(built)
    result = invoke("graph", "show", porto["id"], "--db", built)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    text = " ".join(result.stderr.split())
    for needle in (porto["id"], "moving", "updates", "outdated", "source messages", "s2-m1"):
        assert needle.split()[0] in text, needle


def test_show_unknown_event(built: Path) -> None:
    one_line_error(invoke("graph", "show", "ev_0000000000", "--db", built), "no event 'ev_0000000000'")


def test_show_missing_database(tmp_path: Path) -> None:
    one_line_error(invoke("graph", "show", "ev_x", "--db", tmp_path / "none.db"), "no such database")
    assert not (tmp_path / "none.db").exists()


# -- graph export -----------------------------------------------------------------------------------


def test_export_json_to_stdout(built: Path) -> None:
    result = invoke("graph", "export", "--format", "json", "--db", built)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert list(data) == ["nodes", "edges"]
    assert {n["kind"] for n in data["nodes"]} == {"event", "session", "topic"}
    assert {"updates", "before", "causes", "member_of"} <= {e["label"] for e in data["edges"]}
    assert all({"label", "family", "confidence", "valid", "invalidated_at"} <= set(e) for e in data["edges"])


def test_export_default_format_is_json(built: Path) -> None:
    assert json.loads(invoke("graph", "export", "--db", built).stdout) == json.loads(
        invoke("graph", "export", "--db", built, "--format", "json", "--conversation", "ana-ben").stdout)


@pytest.mark.parametrize(("fmt", "start"), [("graphml", "<?xml"), ("dot", 'digraph "tracecli" {'), ("json", "{")])
def test_export_to_a_file(built: Path, tmp_path: Path, fmt: str, start: str) -> None:
    out = tmp_path / f"g.{fmt}"
    result = invoke("graph", "export", "--format", fmt, "--out", out, "--db", built)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert out.read_text(encoding="utf-8").startswith(start)
    assert "wrote" in result.stderr and str(out.name) in result.stderr
    assert not list(tmp_path.glob("*.tmp"))
    # the same bytes as on stdout
    assert invoke("graph", "export", "--format", fmt, "--db", built).stdout == out.read_text(encoding="utf-8")


def test_export_unknown_format(built: Path) -> None:
    one_line_error(invoke("graph", "export", "--format", "gexf", "--db", built), "unknown export format 'gexf'")


def test_export_unknown_conversation(built: Path) -> None:
    one_line_error(invoke("graph", "export", "--conversation", "nope", "--db", built), "no conversation 'nope'")


def test_export_before_build_graph(tmp_path: Path, embedder: Any) -> None:
    db = tmp_path / "t.db"
    store: Store = open_store(db)
    ingest_data(store, tmp_path / "c.json", CONV, embedder)
    store.close()
    one_line_error(invoke("graph", "export", "--db", db), "tracecli build-graph")


def test_export_out_is_a_directory(built: Path, tmp_path: Path) -> None:
    result = invoke("graph", "export", "--out", tmp_path, "--db", built)
    assert result.exit_code == 2 and "Traceback" not in result.output
