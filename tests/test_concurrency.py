"""Concurrent use of one database file (issue 17): the scenario of tests/concurrency_case.py, once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("concurrency_case")

from concurrency_case import run_concurrently  # noqa: E402


def test_readers_and_writers_share_one_file(tmp_path: Path, embedder: Any) -> None:
    rounds = run_concurrently(tmp_path, embedder)
    assert rounds["ask"] >= 3 and rounds["stats"] >= 3
