"""The installed `tracecli`, run in a subprocess the way a new user's shell or a CI script runs it (issue 16).

Each test names the item of issue 16 it covers. Databases are built in-process with the session's
embedder (tests/test_wiki_common.py, tests/conftest.py); the subprocesses only read them, ingest what
is already there, or ask a question.
"""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest
import typer
from cli_proc import ROOT, error_line, run_cli, run_shell
from test_wiki_common import build_sample_db, copy_db, ingest

from tracecli import __version__
from tracecli.cli import app
from tracecli.store import open_store

QUESTION = "Where is Alice moving?"


def _leaf_commands() -> list[list[str]]:
    def walk(cmd: Any, path: list[str]) -> list[list[str]]:
        subs = getattr(cmd, "commands", None)
        if subs:
            return [p for name, sub in sorted(subs.items()) for p in walk(sub, [*path, name])]
        return [path]

    return walk(typer.main.get_command(app), [])


LEAVES = _leaf_commands()


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    """The three sample conversations, ingested, graphed and compiled (read-only here: copy before writing)."""
    return build_sample_db(tmp_path_factory, embedder)


@pytest.fixture(scope="module")
def asked(sample_db: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """A copy of the sample database and the process of one `tracecli ask` over all its conversations."""
    db = copy_db(sample_db, tmp_path_factory.mktemp("asked"))
    proc = run_cli("ask", QUESTION, "--db", db)
    assert proc.returncode == 0, proc.stderr
    return db, proc


def _answer_id(proc: Any) -> str:
    found = re.search(r"\bans_[0-9a-f]+\b", proc.stderr)
    assert found, proc.stderr
    return found.group(0)


def _chat(tmp_path: Path) -> tuple[Path, Path]:
    """One small chat as a native JSON file and as JSONL (the same messages; ids only in the JSON)."""
    messages = [
        ("Ana", "Morning! I finally booked the dentist.", "2024-05-01T08:00:00Z"),
        ("Ben", "Nice, which day?", "2024-05-01T08:02:00Z"),
        ("Ana", "Thursday at nine.", "2024-05-01T08:03:00Z"),
        ("Ben", "ok", "2024-05-01T08:04:00Z"),
        ("Ben", "ok", "2024-05-01T08:04:00Z"),
    ]
    native = tmp_path / "chat.json"
    native.write_text(json.dumps({
        "conversation_id": "chat", "participants": ["Ana", "Ben"],
        "messages": [{"id": f"m{i}", "speaker": s, "text": t, "timestamp": ts} for i, (s, t, ts) in enumerate(messages)],
    }), encoding="utf-8")
    lines = tmp_path / "chat.jsonl"
    lines.write_text("".join(json.dumps({"conversation_id": "chat", "speaker": s, "text": t, "timestamp": ts}) + "\n"
                             for s, t, ts in messages), encoding="utf-8")
    return native, lines


def _count(db: Path, table: str) -> int:
    with open_store(db, create=False) as store:
        return int(store.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


# -- item 1: the documented CI check passes on the quickstart -----------------------------------------------


def test_audit_strict_passes_after_asking_across_conversations(asked: tuple[Path, Any]) -> None:
    db, proc = asked
    sources = re.search(r"sources: (\S+)", proc.stderr)
    assert sources and ":" in sources.group(1), "several conversations in scope: refs are qualified"
    audit = run_cli("audit", "--strict", "--json", "--db", db)
    assert audit.returncode == 0, audit.stdout[-2000:] + audit.stderr
    report = json.loads(audit.stdout)
    assert report["ok"] and report["errors"] == 0
    assert next(c for c in report["checks"] if c["name"] == "answers.references")["checked"] >= 1


# -- item 2: audit without --namespace checks every namespace ----------------------------------------------


def test_audit_without_namespace_checks_every_namespace(tmp_path: Path, embedder: Any) -> None:
    native, _ = _chat(tmp_path)
    db = tmp_path / "ns.db"
    with open_store(db) as store:
        from tracecli.ingest import ingest_parsed, parse_inputs

        for path, convs in parse_inputs([native], namespace="alice"):
            ingest_parsed(store, path, convs, embedder)
    proc = run_cli("audit", "--db", db)
    assert proc.returncode == 0, proc.stderr
    assert "every namespace (alice)" in proc.stderr
    data = json.loads(run_cli("audit", "--json", "--db", db).stdout)
    assert (data["namespace"], data["namespaces"], data["conversation_ids"]) == (None, ["alice"], ["chat"])
    one = json.loads(run_cli("audit", "--json", "--namespace", "alice", "--db", db).stdout)
    assert (one["namespace"], one["conversation_ids"]) == ("alice", ["chat"])
    error_line(run_cli("audit", "--namespace", "bob", "--db", db), 2, "namespace 'bob' has no conversations")


# -- item 3: the same chat in two formats is stored once ----------------------------------------------------


def test_same_chat_in_another_format_is_not_stored_twice(tmp_path: Path, embedder: Any) -> None:
    native, lines = _chat(tmp_path)
    db = tmp_path / "chat.db"
    with open_store(db) as store:
        ingest(store, [native], embedder)
    assert _count(db, "messages") == 5
    proc = run_cli("ingest", lines, "--db", db)
    assert proc.returncode == 0, proc.stderr
    assert "0 new message(s) stored; 5 skipped as already present" in proc.stderr
    again = json.loads(run_cli("ingest", lines, native, "--json", "--db", db).stdout)
    assert [(c["new_messages"], c["skipped_messages"]) for f in again["files"] for c in f["conversations"]] == [(0, 5), (0, 5)]
    assert _count(db, "messages") == 5


def test_a_repeated_line_that_is_new_is_still_added(tmp_path: Path, embedder: Any) -> None:
    native, lines = _chat(tmp_path)
    db = tmp_path / "chat.db"
    with open_store(db) as store:
        ingest(store, [native], embedder)
    with lines.open("a", encoding="utf-8") as fh:  # a third "ok" at the same minute is a new message
        fh.write(json.dumps({"conversation_id": "chat", "speaker": "Ben", "text": "ok", "timestamp": "2024-05-01T08:04:00Z"}) + "\n")
    out = json.loads(run_cli("ingest", lines, "--json", "--db", db).stdout)
    assert [(c["new_messages"], c["skipped_messages"]) for c in out["files"][0]["conversations"]] == [(1, 5)]
    assert _count(db, "messages") == 6


# -- item 4: logs and pipes ---------------------------------------------------------------------------------


def test_tables_in_a_log_keep_ids_and_dates_whole(sample_db: Path) -> None:
    proc = run_cli("stats", "--db", sample_db)
    assert proc.returncode == 0, proc.stderr
    with open_store(sample_db, create=False) as store:
        rows = store.query("SELECT conversation_id, MIN(timestamp) AS first FROM messages GROUP BY conversation_id")
    for row in rows:
        line = next((ln for ln in proc.stderr.splitlines() if row["conversation_id"] in ln), None)
        assert line is not None, proc.stderr
        assert row["first"] in line, line


def test_long_work_reports_progress_lines_in_a_log(tmp_path: Path, embedder: Any) -> None:
    native, _ = _chat(tmp_path)
    db = tmp_path / "chat.db"
    with open_store(db) as store:
        ingest(store, [native], embedder)
    proc = run_cli("build-graph", "--db", db)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^build-graph: sessions: (\d+)/\1 done", proc.stderr, re.M), proc.stderr
    assert "\x1b[" not in proc.stderr, "no colour or cursor codes in a log"
    row = next(ln for ln in proc.stderr.splitlines() if ln.startswith("│ chat "))
    assert re.search(r"\d+\.\ds │$", row), row  # the whole row, time column included, on one line
    quiet = run_cli("build-graph", "--json", "--db", db)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr


# -- item 5: a closed pipe is not an error -----------------------------------------------------------------


@pytest.mark.parametrize("reader", ["head -1", "true"])
def test_help_into_a_closed_pipe_exits_0(reader: str) -> None:
    proc = run_shell(f'set -o pipefail; $TRACECLI --help | {reader}')
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "Broken pipe" not in proc.stderr


def test_export_into_a_closed_pipe_exits_0(sample_db: Path) -> None:
    proc = run_shell(f'set -o pipefail; $TRACECLI export --derived --db "{sample_db}" | head -c 10')
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == '{\n  "forma' and proc.stderr == ""


# -- item 6: every command takes --json and --db -------------------------------------------------------------


@pytest.mark.parametrize("path", LEAVES, ids=[" ".join(p) for p in LEAVES])
def test_every_command_takes_json_and_db(path: list[str]) -> None:
    cmd = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]  # type: ignore[attr-defined]
    opts = {o for p in cmd.params for o in getattr(p, "opts", [])}
    # `mcp` is a server whose stdout is the MCP protocol itself (JSON-RPC): it takes --db, not --json
    assert ({"--db"} if path == ["mcp"] else {"--json", "--db"}) <= opts, path


def test_graph_export_and_export_accept_json(sample_db: Path) -> None:
    graph = run_cli("graph", "export", "--json", "--db", sample_db)
    assert graph.returncode == 0, graph.stderr
    data = json.loads(graph.stdout)
    assert data["nodes"] and data["edges"]
    export = run_cli("export", "--json", "--db", sample_db)
    assert export.returncode == 0, export.stderr
    assert json.loads(export.stdout)["format"] == "tracecli-export"
    error_line(run_cli("graph", "export", "--json", "--format", "dot", "--db", sample_db), 2, "--json")


def test_graph_export_json_with_out_prints_a_summary(sample_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "g.json"
    proc = run_cli("graph", "export", "--json", "--out", out, "--db", sample_db)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    graph = json.loads(out.read_text(encoding="utf-8"))
    assert summary == {"out": str(out), "format": "json", "vertices": len(graph["nodes"]), "edges": len(graph["edges"])}


# -- item 7: usage errors are one line, exit 2 --------------------------------------------------------------


@pytest.mark.parametrize("path", LEAVES, ids=[" ".join(p) for p in LEAVES])
def test_a_bad_flag_is_one_line_and_exit_2(path: list[str], tmp_path: Path) -> None:
    db = tmp_path / "untouched.db"
    line = error_line(run_cli(*path, "--no-such-flag", "--db", db), 2, "--no-such-flag", f"tracecli {' '.join(path)}")
    assert "Usage" not in line and "╭" not in line
    assert not db.exists()


@pytest.mark.parametrize("args", [["--no-such-flag"], ["no-such-command"], ["graph", "no-such-command"],
                                  ["trace"], ["ask", "x", "--budget", "many"]])
def test_other_usage_errors_are_one_line(args: list[str]) -> None:
    error_line(run_cli(*args), 2)


@pytest.mark.parametrize("budget", ["0", "-5", "19"])
def test_every_too_small_budget_is_refused_alike(budget: str, sample_db: Path) -> None:
    error_line(run_cli("ask", QUESTION, "--budget", budget, "--db", sample_db), 2, f"--budget {budget}", "at least 20")


def test_claims_history_of_nothing_is_bad_input(sample_db: Path) -> None:
    error_line(run_cli("claims", "history", "", "--db", sample_db), 2, "query")
    error_line(run_cli("claims", "history", "  ", "--db", sample_db), 2, "query")


# -- item 8: paths of the database ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["stats"], ["audit"], ["ask", QUESTION]])
def test_a_missing_directory_is_named(command: list[str], tmp_path: Path) -> None:
    db = tmp_path / "no" / "such" / "dir" / "x.db"
    error_line(run_cli(*command, "--db", db), 2, str(db.parent), "does not exist")
    assert not (tmp_path / "no").exists()


def test_ingest_into_a_missing_directory_creates_nothing(tmp_path: Path) -> None:
    native, _ = _chat(tmp_path)
    db = tmp_path / "nowhere" / "x.db"
    error_line(run_cli("ingest", native, "--db", db), 2, str(db.parent), "does not exist")
    assert not db.parent.exists()


def test_stats_on_an_empty_file_changes_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    error_line(run_cli("stats", "--db", empty), 2, "empty.db", "empty file")
    assert empty.stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]


# -- item 9: trace marks the answer's evidence ---------------------------------------------------------------


def test_trace_lists_the_cited_messages_first_and_hides_context_only_ones(asked: tuple[Path, Any]) -> None:
    db, proc = asked
    answer_id = _answer_id(proc)
    data = json.loads(run_cli("trace", answer_id, "--json", "--db", db).stdout)
    flags = [m["evidence"] for m in data["messages"]]
    assert flags and flags[0] and flags == sorted(flags, reverse=True), "evidence first, then context only"
    assert {m["ref"] for m in data["messages"] if m["evidence"]} == set(data["source_refs"])
    context_only = [m for m in data["messages"] if not m["evidence"]]
    short = run_cli("trace", answer_id, "--db", db)
    assert short.returncode == 0, short.stderr
    assert "evidence: the messages the answer cites" in short.stderr
    for ref in data["source_refs"]:
        assert ref in short.stderr
    if context_only:
        assert f"{len(context_only)} context-only message(s) not shown" in short.stderr
        full = run_cli("trace", answer_id, "--all", "--db", db)
        assert "context only: retrieved alongside, not cited" in full.stderr
        assert full.stderr.index("evidence:") < full.stderr.index("context only:")
        assert context_only[0]["ref"] in full.stderr[full.stderr.index("context only:"):]


# -- item 10: path tables are sorted by the score they print ------------------------------------------------


def _scores(stderr: str, title: str) -> list[float]:
    block = stderr[stderr.index(title):]
    block = block[: block.index("└")]
    return [float(m.group(1)) for m in re.finditer(r"^│\s+\d+\s+│\s+([0-9.]+)\s+│", block, re.M)]


def test_ask_path_table_is_sorted_by_its_score(asked: tuple[Path, Any]) -> None:
    _, proc = asked
    scores = _scores(proc.stderr, "evidence paths")
    assert len(scores) >= 2, proc.stderr
    assert scores == sorted(scores, reverse=True)


def test_trace_path_table_is_sorted_by_its_score(asked: tuple[Path, Any]) -> None:
    db, proc = asked
    trace = run_cli("trace", _answer_id(proc), "--db", db)
    scores = _scores(trace.stderr, "paths, re-ranked by the answer")
    assert scores == sorted(scores, reverse=True)


# -- item 12: --version ----------------------------------------------------------------------------------


def test_version() -> None:
    proc = run_cli("--version")
    assert proc.returncode == 0, proc.stderr
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert proc.stdout == f"tracecli {project}\n" and __version__ == project


# -- item 13: the README's commands can be copied --------------------------------------------------------


def _readme_commands(readme: str) -> list[str]:
    """Command lines of the README's code blocks: every line of a bash block, the `$ ` lines of a console block."""
    out = []
    for lang, body in re.findall(r"```(\w*)\n(.*?)```", readme, re.S):
        for line in body.splitlines():
            if lang == "console" and line.startswith("$ "):
                out.append(line[2:])
            elif lang == "bash" and line.strip():
                out.append(line)
    return out


def test_readme_takes_answer_ids_from_the_previous_answer() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = _readme_commands(readme)
    assert any(c.startswith("tracecli trace") for c in commands)
    assert not [c for c in commands if re.search(r"\bans_[0-9a-f]", c)], "a literal answer id cannot be copied"
    assert re.search(r'answer_id=\$\(tracecli ask .*--json \| python -c .*\["answer_id"\]', readme)
    assert 'tracecli trace "$answer_id"' in readme


def test_readme_quickstart_runs_as_written(tmp_path: Path, sample_db: Path) -> None:
    """The quickstart's ask → trace one-liner, run by bash against a built file, ends in exit 0."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    one_liner = next(c for c in _readme_commands(readme) if c.startswith("answer_id=$(tracecli ask"))
    db = copy_db(sample_db, tmp_path)
    script = (f'set -euo pipefail; export TRACECLI_DB="{db}"; tracecli() {{ $TRACECLI "$@"; }}\n'
              f'{one_liner}\ntracecli trace "$answer_id" >/dev/null\necho "$answer_id"')
    proc = run_shell(script)
    assert proc.returncode == 0, proc.stderr
    assert re.fullmatch(r"ans_[0-9a-f]+\n", proc.stdout), proc.stdout


def test_demo_script_matches_the_readme() -> None:
    demo = (ROOT / "scripts" / "demo.sh").read_text(encoding="utf-8")
    assert 'tracecli trace "$answer_id"' in demo
    assert shutil.which("bash")
