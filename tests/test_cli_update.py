"""`tracecli update`: the whole pipeline in one command; `ask` warns about messages the graph or wiki has not seen."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli_proc import error_line, run_cli
from memory_scenario import CONVERSATION, NEW, OLD, QUESTION, REVISION_REF, TURNS
from tracecli.cli import app

runner = CliRunner()


def _chat(tmp_path: Path, name: str, turns: list[dict[str, str]], **extra: str) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"conversation_id": CONVERSATION, "messages": turns, **extra}))
    return path


def _run(*args: object) -> Any:
    return runner.invoke(app, [str(a) for a in args])


def _update_json(db: Path, *args: object) -> dict[str, Any]:
    result = _run("update", *args, "--db", db, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_update_runs_every_stage_once(tmp_path: Path, embedder: Any) -> None:
    db = tmp_path / "t.db"
    first = _chat(tmp_path, "first.json", TURNS[0] + TURNS[1])
    receipt = _update_json(db, first)
    [ingested] = receipt["ingest"]["files"][0]["conversations"]
    assert (ingested["new_messages"], ingested["new_sessions"]) == (4, 2)
    [built], [compiled] = receipt["build_graph"], receipt["compile_wiki"]
    assert (built["sessions_processed"], built["sessions_total"]) == (2, 2)
    assert (compiled["sessions_compiled"], compiled["sessions_awaiting_graph"]) == (2, 0)
    assert set(receipt["seconds"]) == {"ingest", "build_graph", "compile_wiki", "total"}

    # the same file again: nothing new anywhere
    again = _update_json(db, first)
    assert again["ingest"]["files"][0]["conversations"][0]["new_messages"] == 0
    assert again["build_graph"][0]["sessions_processed"] == 0
    assert again["compile_wiki"][0]["sessions_compiled"] == 0

    # a file with the revision: only the new session goes through the graph and the wiki
    second = _chat(tmp_path, "second.json", TURNS[0] + TURNS[1] + TURNS[2])
    receipt = _update_json(db, second)
    assert receipt["build_graph"][0]["sessions_processed"] == 1
    assert receipt["compile_wiki"][0]["sessions_compiled"] == 1
    asked = _run("ask", QUESTION, "--db", db, "--json")
    answer = json.loads(asked.stdout)
    assert NEW in answer["answer"] and REVISION_REF in answer["source_refs"], answer
    assert "warning" not in asked.stderr  # everything is in the graph and the wiki


def test_ask_warns_until_updated(tmp_path: Path, embedder: Any) -> None:
    db = tmp_path / "t.db"
    _update_json(db, _chat(tmp_path, "first.json", TURNS[0] + TURNS[1]))
    result = _run("ingest", _chat(tmp_path, "second.json", TURNS[2]), "--db", db, "--json")
    assert result.exit_code == 0, result.output

    stale = _run("ask", QUESTION, "--db", db, "--json")
    assert stale.exit_code == 0, stale.output
    warnings = [line for line in stale.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, stale.stderr
    assert f"{len(TURNS[2])} message(s) not in the graph" in warnings[0]
    assert "tracecli update" in warnings[0]
    assert OLD in json.loads(stale.stdout)["answer"]  # the graph has not seen the revision

    fresh = _run("ask", QUESTION, "--update", "--db", db, "--json")
    assert fresh.exit_code == 0, fresh.output
    assert "warning" not in fresh.stderr, fresh.stderr
    answer = json.loads(fresh.stdout)
    assert NEW in answer["answer"] and REVISION_REF in answer["source_refs"], answer
    # --update built and compiled the session: a plain update finds nothing left to do
    assert _update_json(db)["build_graph"][0]["sessions_processed"] == 0


def test_update_builds_the_namespace_the_file_went_to(tmp_path: Path, embedder: Any) -> None:
    db = tmp_path / "t.db"
    receipt = _update_json(db, _chat(tmp_path, "a.json", TURNS[0], namespace="alice"))
    assert receipt["build_graph"][0]["conversation_id"] == CONVERSATION
    answered = _run("ask", QUESTION, "--db", db, "--namespace", "alice", "--json")
    assert answered.exit_code == 0 and "warning" not in answered.stderr, answered.output


def test_update_without_files_needs_a_database(tmp_path: Path) -> None:
    db = tmp_path / "missing.db"
    line = error_line(run_cli("update", "--db", db), 2, str(db), "tracecli ingest")
    assert "no such database" in line
    assert not db.exists()


@pytest.mark.parametrize("content", ["{not json", json.dumps({"messages": "nope"})])
def test_a_bad_file_changes_nothing(tmp_path: Path, content: str) -> None:
    db = tmp_path / "t.db"
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    error_line(run_cli("update", bad, "--db", db), 2, "bad.json")
    assert not db.exists()
