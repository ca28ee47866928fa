"""CLI: compile-wiki, wiki list/show/export, claims history — exit codes and JSON shapes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from test_wiki_common import UPDATE_HEAVY, build_sample_db, copy_db, half_file, ingest
from typer.testing import CliRunner

from tracecli.commands import wiki as wiki_commands
from tracecli.store import open_store

runner = CliRunner()
CID = "alice-bob-plans"


def _app() -> typer.Typer:
    app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False)

    @app.callback()
    def main() -> None:
        """tracecli (test harness)."""

    wiki_commands.register(app)
    return app


APP = _app()


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    return build_sample_db(tmp_path_factory, embedder)


@pytest.fixture
def db(sample_db: Path, tmp_path: Path) -> Path:
    return copy_db(sample_db, tmp_path)


def _json(args: list[str], code: int = 0) -> Any:
    result = runner.invoke(APP, args)
    assert result.exit_code == code, (result.stdout, result.stderr if hasattr(result, "stderr") else "")
    return json.loads(result.stdout)


def test_compile_wiki_json_shape(db: Path) -> None:
    out = _json(["compile-wiki", "--db", str(db), "--json"])
    assert [c["conversation_id"] for c in out["conversations"]] == ["alice-bob-plans", "lena-omar-flat", "maya-sam-project"]
    c = out["conversations"][0]
    for key in ("mode", "sessions_compiled", "snapshots_total", "claims_total", "claims_by_status", "ops_new", "ops_total",
                "revisions", "deprecations", "ungrounded_dropped", "trajectories_total", "pages_total", "pages_by_type",
                "pages_written", "pages_unchanged", "index_only_trajectories", "elapsed_s"):
        assert key in c, key
    assert c["mode"] == "rules" and c["claims_new"] == 0 and c["revisions"] >= 12 and c["index_only_trajectories"] == 0


def test_compile_wiki_errors(tmp_path: Path, embedder: Any) -> None:
    path = tmp_path / "nograph.db"
    store = open_store(path)
    try:
        ingest(store, [half_file(UPDATE_HEAVY, tmp_path / "one.json", 1)], embedder)
    finally:
        store.close()
    result = runner.invoke(APP, ["compile-wiki", "--db", str(path)])
    assert result.exit_code == 2 and "build-graph" in result.output and "Traceback" not in result.output
    result = runner.invoke(APP, ["compile-wiki", "--db", str(path), "--conversation", "nobody"])
    assert result.exit_code == 2 and "nobody" in result.output
    result = runner.invoke(APP, ["compile-wiki", "--db", str(tmp_path / "missing.db")])
    assert result.exit_code == 2


def test_wiki_list_show_export(db: Path, tmp_path: Path) -> None:
    pages = _json(["wiki", "list", "--db", str(db), "--conversation", CID, "--json"])["pages"]
    assert pages[0]["type"] == "index" and {"id", "slug", "type", "title", "trajectories", "links"} <= set(pages[0])
    inv = _json(["wiki", "list", "--db", str(db), "--type", "inventory", "--json"])["pages"]
    assert inv and all(p["type"] == "inventory" for p in inv)
    page = _json(["wiki", "show", "alice", "--conversation", CID, "--db", str(db), "--json"])
    assert page["slug"] == "alice" and page["markdown"].startswith("# Alice")
    shown = runner.invoke(APP, ["wiki", "show", "alice", "--conversation", CID, "--db", str(db)])
    assert shown.exit_code == 0 and "Key facts" in shown.stdout and "cl_" in shown.stdout
    assert runner.invoke(APP, ["wiki", "show", "nope", "--db", str(db)]).exit_code == 2
    assert runner.invoke(APP, ["wiki", "list", "--type", "blog", "--db", str(db)]).exit_code == 2
    out = _json(["wiki", "export", str(tmp_path / "out"), "--db", str(db), "--json"])
    pages_out = [f for f in out["files"] if f["kind"] == "page"]
    assert len(pages_out) == len(_json(["wiki", "list", "--db", str(db), "--json"])["pages"])
    assert {f["kind"] for f in out["files"]} == {"page", "claim"}
    assert all(Path(f["path"]).is_file() for f in out["files"])


def test_claims_history(db: Path) -> None:
    out = _json(["claims", "history", "Porto", "--conversation", CID, "--db", str(db), "--json"])
    chain = next(c for c in out["chains"] if c["fact"] == "Alice|moving_to")
    assert [s["op"] for s in chain["steps"]] == ["ADD", "REVISE"]
    step = chain["steps"][1]
    assert {"n", "op", "claim_id", "target_id", "text", "status", "date", "quote", "source_refs", "message_ids"} <= set(step)
    by_id = _json(["claims", "history", step["claim_id"], "--db", str(db), "--json"])
    assert by_id["chains"][0]["steps"][1]["claim_id"] == step["claim_id"]
    assert runner.invoke(APP, ["claims", "history", "zebra crossing", "--db", str(db)]).exit_code == 1
    assert runner.invoke(APP, ["claims", "history", "cl_ffffffffff", "--db", str(db)]).exit_code == 2
    human = runner.invoke(APP, ["claims", "history", "squash", "--db", str(db)])
    assert human.exit_code == 0


@pytest.mark.parametrize("args", [["compile-wiki"], ["wiki"], ["wiki", "list"], ["wiki", "show"], ["wiki", "export"],
                                  ["claims"], ["claims", "history"]])
def test_every_command_has_help(args: list[str]) -> None:
    result = runner.invoke(APP, [*args, "--help"])
    assert result.exit_code == 0 and "Usage:" in result.stdout
