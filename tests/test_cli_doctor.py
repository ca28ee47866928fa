"""`tracecli doctor` and the LLM part of `tracecli stats` through Typer's CliRunner."""

from __future__ import annotations

import json
import random
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from click.testing import Result
from llm_server import LLMServer, chat_reply, error_reply, invalid_json_reply, json_reply, running_server
from typer.testing import CliRunner

from tracecli.cli import app as main_app
from tracecli.commands import doctor
from tracecli.providers.llm import LLMSettings, OpenAIChatModel
from tracecli.store import open_store

SECRET = "sk-test-SECRET-123"
runner = CliRunner()

TOP_KEYS = ["ok", "llm", "embedder", "sqlite", "database"]
LLM_KEYS = {"provider", "model", "url", "api_key_set", "configured", "latency_ms", "error", "ok"}
EMBEDDER_KEYS = {"name", "id", "dimension", "loaded", "error", "ok"}
SQLITE_KEYS = {"sqlite_version", "vec_version", "error", "ok"}
DATABASE_KEYS = {
    "path", "exists", "schema_version", "latest_schema_version", "pending_migrations", "unknown_migrations",
    "embedding_model", "embedding_dim", "error", "ok",
}
LEDGER_KEYS = {"stage", "calls", "tokens_in", "tokens_out", "cache_hits", "fallbacks", "failures", "mean_latency_ms"}


def make_app() -> typer.Typer:
    """A fresh app with only `doctor`, so these tests never change the shared `tracecli.cli.app`."""
    app = typer.Typer(pretty_exceptions_enable=False, pretty_exceptions_show_locals=False, add_completion=False)

    @app.callback()
    def main() -> None:
        """Test app."""

    doctor.register(app)
    return app


APP = make_app()


def invoke(*args: Any, env: dict[str, str] | None = None) -> Result:
    return runner.invoke(APP, [str(a) for a in args], env=env)


def one_json(result: Result) -> Any:
    assert result.stdout.endswith("\n") and result.stdout.count("\n") == 1, result.stdout
    return json.loads(result.stdout)


def dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def llm_server() -> Iterator[LLMServer]:
    with running_server() as server:
        yield server


def test_register_is_idempotent() -> None:
    app = make_app()
    doctor.register(app)
    assert [c.name for c in app.registered_commands] == ["doctor"]
    assert doctor.is_registered(app)


def test_offline_json_keys_pinned(tmp_path: Path) -> None:
    db = tmp_path / "trace.db"
    open_store(db).close()
    result = invoke("doctor", "--db", db, "--json")
    assert result.exit_code == 0, result.output
    report = one_json(result)
    assert list(report) == TOP_KEYS and report["ok"] is True
    assert set(report["llm"]) == LLM_KEYS and set(report["embedder"]) == EMBEDDER_KEYS
    assert set(report["sqlite"]) == SQLITE_KEYS and set(report["database"]) == DATABASE_KEYS
    assert report["llm"]["provider"] == "none" and report["llm"]["configured"] is False
    assert report["embedder"]["dimension"] == 384 and report["embedder"]["loaded"] is False
    assert report["database"]["exists"] is True
    assert report["database"]["schema_version"] == report["database"]["latest_schema_version"]
    assert result.stderr == ""


def test_missing_database_is_fine_and_not_created(tmp_path: Path) -> None:
    db = tmp_path / "none.db"
    result = invoke("doctor", "--db", db, "--json")
    assert result.exit_code == 0, result.output
    assert one_json(result)["database"]["exists"] is False
    assert not db.exists()


def test_db_from_environment(tmp_path: Path) -> None:
    db = tmp_path / "env.db"
    open_store(db).close()
    result = invoke("doctor", "--json", env={"TRACECLI_DB": str(db)})
    assert result.exit_code == 0, result.output
    assert one_json(result)["database"]["path"] == str(db)


def test_table_goes_to_stderr(tmp_path: Path) -> None:
    result = invoke("doctor", "--db", tmp_path / "trace.db")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    for word in ("doctor", "llm", "embedder", "sqlite", "database", "not configured"):
        assert word in result.stderr


def _llm_env(url: str) -> dict[str, str]:
    return {"TRACECLI_LLM_URL": url, "TRACECLI_LLM_MODEL": "test-model", "TRACECLI_LLM_API_KEY": SECRET}


def test_dead_endpoint_exits_1_without_the_key(tmp_path: Path) -> None:
    env = _llm_env(dead_url())
    result = invoke("doctor", "--db", tmp_path / "trace.db", "--json", env=env)
    assert result.exit_code == 1, result.output
    report = one_json(result)
    assert report["ok"] is False and report["llm"]["ok"] is False and report["llm"]["api_key_set"] is True
    assert "ConnectError" in report["llm"]["error"]
    assert result.stderr.startswith("error: llm: ") and result.stderr.count("\n") == 1
    assert "Traceback" not in result.output
    assert SECRET not in result.stdout and SECRET not in result.stderr

    table = invoke("doctor", "--db", tmp_path / "trace.db", env=env)
    assert table.exit_code == 1 and table.stdout == ""
    assert "FAILED" in table.stderr and "ConnectError" in table.stderr
    assert SECRET not in table.stderr


def test_refused_key_is_reported_without_the_key(tmp_path: Path, llm_server: LLMServer) -> None:
    llm_server.queue(error_reply(401, f"bad key {SECRET}"))
    result = invoke("doctor", "--db", tmp_path / "trace.db", "--json", env=_llm_env(llm_server.url))
    assert result.exit_code == 1, result.output
    assert one_json(result)["llm"]["error"] == "LLM endpoint refused the API key"
    assert SECRET not in result.stdout and SECRET not in result.stderr


def test_local_endpoint_answering_exits_0(tmp_path: Path, llm_server: LLMServer) -> None:
    llm_server.queue(chat_reply("ok"))
    result = invoke("doctor", "--db", tmp_path / "trace.db", "--json", env=_llm_env(llm_server.url))
    assert result.exit_code == 0, result.output
    report = one_json(result)
    assert report["llm"]["configured"] is True and report["llm"]["url"] == llm_server.url
    assert report["llm"]["latency_ms"] is not None
    assert len(llm_server.requests) == 1
    assert SECRET not in result.stdout


def test_broken_database_exits_1(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all " * 200)
    result = invoke("doctor", "--db", junk, "--json")
    assert result.exit_code == 1, result.output
    report = one_json(result)
    assert report["database"]["ok"] is False and "not a tracecli database" in report["database"]["error"]
    assert result.stderr.startswith("error: database: ")


# -- stats shows the ledger ------------------------------------------------------------------
def test_stats_json_shows_ledger_totals_per_stage(tmp_path: Path, llm_server: LLMServer) -> None:
    db = tmp_path / "trace.db"
    store = open_store(db)
    settings = LLMSettings(provider="openai", url=llm_server.url, model="test-model", api_key=SECRET, timeout=2.0,
                           max_retries=0)
    model = OpenAIChatModel(settings, store, sleep=lambda s: None, rng=random.Random(3))
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    msgs = [{"role": "user", "content": "count"}]
    llm_server.queue(
        json_reply({"n": 1}, prompt_tokens=10, completion_tokens=3),
        invalid_json_reply(),
        invalid_json_reply(),
    )
    assert model.complete(msgs, schema, stage="build-graph").ok
    assert model.complete(msgs, schema, stage="build-graph").cache_hit
    assert model.complete([{"role": "user", "content": "other"}], schema, stage="compile-wiki").fallback
    store.close()

    result = runner.invoke(main_app, ["stats", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    stats = one_json(result)
    assert stats["tables"]["llm_ledger"] == 3 and stats["tables"]["llm_cache"] == 1
    llm = stats["llm"]
    assert [row["stage"] for row in llm] == ["build-graph", "compile-wiki"]
    assert all(set(row) == LEDGER_KEYS for row in llm)
    build, wiki = llm
    assert (build["calls"], build["tokens_in"], build["tokens_out"], build["cache_hits"], build["fallbacks"]) == (
        2, 10, 3, 1, 0
    )
    assert (wiki["calls"], wiki["fallbacks"], wiki["failures"], wiki["cache_hits"]) == (1, 1, 0, 0)
    assert isinstance(build["mean_latency_ms"], float)
    assert SECRET not in result.stdout

    table = runner.invoke(main_app, ["stats", "--db", str(db)])
    assert table.exit_code == 0 and table.stdout == ""
    assert "LLM calls per stage" in " ".join(table.stderr.split())  # rich may wrap the title
