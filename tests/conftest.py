"""Shared fixtures: no provider environment, one embedding model per session, sample data paths."""

from __future__ import annotations

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
