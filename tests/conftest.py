"""Shared fixtures: no provider environment, one embedding model per session, sample data paths."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_conversations"
LOCOMO_DEV = ROOT.parent / "shared" / "data" / "locomo_dev.json"

_PROVIDER_VARS = (
    "TRACECLI_LLM_URL", "TRACECLI_LLM_MODEL", "TRACECLI_LLM_API_KEY", "OPENAI_API_KEY",
    "TRACECLI_EMBED_URL", "TRACECLI_EMBED_MODEL", "TRACECLI_EMBED_API_KEY", "TRACECLI_EMBEDDER",
    "TRACECLI_DB", "TRACECLI_NAMESPACE",
)


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may reach a network: clear every provider variable."""
    for var in _PROVIDER_VARS:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="session")
def embedder():
    """The real MiniLM embedder, loaded once per test session."""
    from tracecli.providers.embeddings import get_embedder

    emb = get_embedder("minilm")
    emb.embed_batch(["warm up"])
    return emb


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "trace.db"


@pytest.fixture(scope="session")
def locomo_dev() -> Path:
    if not LOCOMO_DEV.exists():
        pytest.skip(f"{LOCOMO_DEV} is not present")
    return LOCOMO_DEV


# -- PostgreSQL -----------------------------------------------------------------------------
# pgserver (a test dependency) ships PostgreSQL with pgvector as a wheel: one server per test session,
# in a temporary directory, run as this user; each test that asks for one gets a database of its own.
@pytest.fixture(scope="session")
def pg_server():
    import tempfile

    import pgserver

    from tracecli.store.pg import close_pools

    # not under pytest's basetemp: a later pytest session prunes old basetemps, server data and socket included
    server = pgserver.get_server(tempfile.mkdtemp(prefix="tracecli-pg-"), cleanup_mode="delete")
    yield server
    close_pools()
    server.cleanup()  # stops the server and deletes its directory


@pytest.fixture
def pg_url(pg_server, request: pytest.FixtureRequest) -> str:
    """A URL of a new, empty database on the session's server."""
    import re

    import psycopg

    base = pg_server.get_uri()
    name = f"t{next(_PG_DBS)}_" + re.sub(r"\W", "_", request.node.name)[:40].lower()
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return base.replace("/postgres?", f"/{name}?", 1)


_PG_DBS = itertools.count()


@pytest.fixture(params=["sqlite", "postgresql"])
def any_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The same test on both backends: an SQLite file path, or a PostgreSQL URL."""
    if request.param == "sqlite":
        return str(tmp_path / "trace.db")
    return request.getfixturevalue("pg_url")
