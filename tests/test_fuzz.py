"""Fuzzing with Hypothesis (issue 17): random JSON shapes and values for every ingest format, random bytes
for --db, hostile Unicode (Rich markup, control characters, lone surrogates) in every text field and
argument, timestamps and misbehaving LLM replies. No case may end in a traceback, an exit code other than
0/1/2, an error longer than one line, a refused input that changed the database, or a terminal control
character in what a command printed. The groups live in tests/fuzz_cases.py, shared with
benchmarks/fuzz_report.py, which prints tried/held per group.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

pytest.register_assert_rewrite("fuzz_cases")

from fuzz_cases import GROUPS, Group, Lab  # noqa: E402


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Lab]:
    # the session embedder is loaded first, so the CLI's get_embedder() reuses it
    yield Lab(tmp_path_factory.mktemp("fuzz"))


@pytest.mark.parametrize("group", GROUPS, ids=[g.name for g in GROUPS])
def test_fuzz_group_holds(group: Group, lab: Lab) -> None:
    @settings(max_examples=group.examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(group.strategy)
    def case(value: Any) -> None:
        group.check(lab, value)

    case()


def test_lab_database_is_built(lab: Lab) -> None:
    assert Path(lab.base_db).stat().st_size > 0 and lab.answer_id.startswith("ans_")
