"""`run_doctor`: LLM endpoint, embedder, SQLite + sqlite-vec and database checks."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_server import LLMServer, Scripted, chat_reply, error_reply, running_server

from tracecli.providers.doctor import check_database, check_embedder, run_doctor
from tracecli.providers.llm import LLMSettings
from tracecli.store import open_store

SECRET = "sk-test-SECRET-123"


@pytest.fixture(autouse=True)
def _clear_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("TRACECLI_") or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
def llm_server() -> Iterator[LLMServer]:
    with running_server() as server:
        yield server


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _openai(url: str, **kw: object) -> LLMSettings:
    return LLMSettings(provider="openai", url=url, model="test-model", api_key=SECRET, **kw)  # type: ignore[arg-type]


def test_no_llm_configured_is_ok() -> None:
    report = run_doctor(None, LLMSettings.from_env(), None)
    assert report.ok and report.problems() == []
    assert report.llm.provider == "none" and not report.llm.configured and report.llm.api_key_set is False
    assert (report.embedder.name, report.embedder.id, report.embedder.dimension) == ("minilm", "all-MiniLM-L6-v2", 384)
    assert report.embedder.loaded is False  # read from class attributes, not by loading the model
    assert report.database is None


def test_reports_sqlite_and_vec_versions() -> None:
    report = run_doctor(None, LLMSettings(), None)
    assert report.sqlite.ok
    assert report.sqlite.sqlite_version and report.sqlite.sqlite_version[0].isdigit()
    assert report.sqlite.vec_version and report.sqlite.vec_version.startswith("v")


def test_local_endpoint_answering_is_ok(llm_server: LLMServer) -> None:
    llm_server.queue(chat_reply("ok"))
    report = run_doctor(None, _openai(llm_server.url), None)
    assert report.ok, report.problems()
    assert report.llm.configured and report.llm.model == "test-model" and report.llm.url == llm_server.url
    assert report.llm.api_key_set is True and report.llm.latency_ms is not None
    [req] = llm_server.requests
    assert req.path == "/v1/chat/completions" and req.headers["authorization"] == f"Bearer {SECRET}"


def test_dead_endpoint_is_not_ok() -> None:
    report = run_doctor(None, _openai(_dead_url(), timeout=30), None, llm_timeout=0.5)
    assert not report.ok
    assert report.llm.error and "ConnectError" in report.llm.error
    assert report.problems() == [f"llm: {report.llm.error}"]
    assert SECRET not in json.dumps(report.to_dict())


def test_refused_key_is_not_ok(llm_server: LLMServer) -> None:
    llm_server.queue(error_reply(401, f"invalid key {SECRET}"))
    report = run_doctor(None, _openai(llm_server.url), None)
    assert not report.ok and report.llm.error == "LLM endpoint refused the API key"
    assert len(llm_server.requests) == 1  # the probe never retries
    assert SECRET not in json.dumps(report.to_dict()) and SECRET not in repr(report)


def test_unusable_reply_is_not_ok(llm_server: LLMServer) -> None:
    llm_server.queue(Scripted(body=b"<html>proxy</html>"), Scripted(body=b"<html>proxy</html>"))
    report = run_doctor(None, _openai(llm_server.url), None)
    assert not report.ok and "not a chat completion" in (report.llm.error or "")


def test_openai_provider_without_url_is_not_ok() -> None:
    report = run_doctor(None, LLMSettings(provider="openai", model="m"), None)
    assert not report.ok and "TRACECLI_LLM_URL" in (report.llm.error or "")


def test_unknown_embedder_is_not_ok() -> None:
    check = check_embedder("nope")
    assert not check.ok and "unknown embedder 'nope'" in (check.error or "")


def test_openai_embedder_without_env_is_not_ok() -> None:
    check = check_embedder("openai")
    assert not check.ok and "TRACECLI_EMBED_URL" in (check.error or "")


def test_database_checks(tmp_path: Path) -> None:
    missing = check_database(tmp_path / "none.db")
    assert missing.ok and not missing.exists and missing.schema_version is None
    assert not (tmp_path / "none.db").exists()  # the doctor never creates a file

    path = tmp_path / "trace.db"
    open_store(path).close()
    check = check_database(path)
    assert check.ok and check.exists
    assert check.schema_version == check.latest_schema_version >= 2
    assert check.pending_migrations == [] and check.unknown_migrations == []
    assert check.embedding_model is None

    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite at all" * 100)
    bad = check_database(junk)
    assert not bad.ok and "not a tracecli database" in (bad.error or "")


def test_database_embedding_model_reported_and_mismatch_flagged(tmp_path: Path) -> None:
    path = tmp_path / "trace.db"
    store = open_store(path)
    store.bind_embedding_model("openai:other", 8)
    store.close()
    report = run_doctor(path, LLMSettings(), "minilm")
    assert report.database is not None
    assert (report.database.embedding_model, report.database.embedding_dim) == ("openai:other", 8)
    assert not report.ok and "holds vectors of openai:other" in (report.database.error or "")

    good = tmp_path / "good.db"
    store = open_store(good)
    store.bind_embedding_model("all-MiniLM-L6-v2", 384)
    store.close()
    assert run_doctor(good, LLMSettings(), None).ok


def test_to_dict_keys_are_stable(tmp_path: Path) -> None:
    path = tmp_path / "trace.db"
    open_store(path).close()
    d = run_doctor(path, LLMSettings(), None).to_dict()
    json.dumps(d)
    assert list(d) == ["ok", "llm", "embedder", "sqlite", "database"]
    assert set(d["llm"]) == {"provider", "model", "url", "api_key_set", "configured", "latency_ms", "error", "ok"}
    assert set(d["embedder"]) == {"name", "id", "dimension", "loaded", "error", "ok"}
    assert set(d["sqlite"]) == {"sqlite_version", "vec_version", "error", "ok"}
    assert set(d["database"]) == {
        "path",
        "exists",
        "schema_version",
        "latest_schema_version",
        "pending_migrations",
        "unknown_migrations",
        "embedding_model",
        "embedding_dim",
        "error",
        "ok",
    }
