"""The CLI on both backends, each command in a process of its own: one scenario (ingest → build-graph →
compile-wiki → ask → trace → forget → audit) gives the same answers on an SQLite file and on PostgreSQL,
and `export` / `import` move the data between them byte for byte."""

from __future__ import annotations

import json
from pathlib import Path


from cli_proc import error_line, run_cli

ROOT = Path(__file__).resolve().parent.parent
CAUSAL = ROOT / "sample_conversations" / "causal_chains.json"
QUESTIONS = ("Why did Maya miss the Manchester half marathon?", "How did Maya end up meeting her co-founder Jonas?")


def _ok(*args: object, **env: str) -> str:
    proc = run_cli(*args, **env)
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout


def _scenario(db: str, *, vacuumed: bool = True, **env: str) -> dict[str, object]:
    """What a user sees along the scenario, minus ids and timings (`env`: TRACECLI_* variables of every command)."""
    _ok("ingest", CAUSAL, "--db", db, **env)
    _ok("build-graph", "--db", db, **env)
    _ok("compile-wiki", "--db", db, **env)
    answers = [json.loads(_ok("ask", q, "--db", db, "--json", **env)) for q in QUESTIONS]
    trace = _ok("trace", answers[0]["answer_id"], "--db", db, "--json", **env)
    assert QUESTIONS[0] in trace
    target = answers[0]["source_refs"][0]
    receipt = json.loads(_ok("forget", "message", target, "--db", db, "--json", **env))
    assert receipt["message_ids"] and receipt["vacuumed"] == vacuumed and receipt["storage"]
    audit = json.loads(_ok("audit", "--db", db, "--json", **env))
    after = json.loads(_ok("ask", QUESTIONS[0], "--db", db, "--json", **env))
    assert target not in after["source_refs"]
    stats = json.loads(_ok("stats", "--db", db, "--json", **env))
    return {
        "answers": [(a["answer"], a["abstained"], a["source_refs"]) for a in answers],
        "forgot": {c["table"]: c["removed"] for c in receipt["counts"] if c["table"] not in ("answers", "answer_items")},
        "audit": (audit["ok"], audit["errors"]),
        "after": (after["answer"], after["source_refs"]),
        "rows": {t: n for t, n in stats["tables"].items() if t not in ("answers", "answer_items")},
    }


def test_the_scenario_is_the_same_on_both_backends(tmp_path: Path, pg_url: str) -> None:
    lite = _scenario(str(tmp_path / "trace.db"))
    pg = _scenario(pg_url)
    assert lite["audit"] == (True, 0)
    assert pg == lite


def test_the_scenario_is_the_same_for_a_role_held_to_its_namespace(tmp_path: Path, pg_url: str) -> None:
    """Row-level security on: a login role bound to namespace `team` runs the whole scenario beside another
    namespace's data, gets the answers a file holding only `team` gives, and leaves the other namespace alone."""
    import psycopg

    from test_pg_rls import role_url

    _ok("ingest", ROOT / "sample_conversations" / "update_heavy.json", "--db", pg_url, "--namespace", "neighbour")
    _ok("build-graph", "--db", pg_url, "--namespace", "neighbour")
    _ok("compile-wiki", "--db", pg_url, "--namespace", "neighbour")  # the owner makes the vector tables
    neighbour = _ok("export", "--derived", "--namespace", "neighbour", "--db", pg_url)
    url = role_url(pg_url, "team")
    held = _scenario(url, vacuumed=False, TRACECLI_NAMESPACE="team", TRACECLI_PG_RLS="1")
    assert held == _scenario(str(tmp_path / "trace.db"), TRACECLI_NAMESPACE="team")
    assert _ok("export", "--derived", "--namespace", "neighbour", "--db", pg_url) == neighbour
    error_line(run_cli("ask", QUESTIONS[0], "--db", url, "--namespace", "neighbour"), 2, "bound to namespace 'team'")
    (tmp_path / "neighbour.jsonl").write_text(neighbour)
    error_line(run_cli("import", tmp_path / "neighbour.jsonl", "--db", url), 2, "bound to namespace 'team'")
    # without the variable, the owner is refused only when asked to be
    error_line(run_cli("stats", "--db", pg_url, TRACECLI_PG_RLS="1"), 2, "bypasses row-level security")
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT namespace, count(*) FROM conversations GROUP BY 1 ORDER BY 1").fetchall() == [
            ("neighbour", 1), ("team", 1)]


def test_export_import_between_backends_is_byte_identical(tmp_path: Path, pg_url: str) -> None:
    """SQLite → PostgreSQL → SQLite: the derived export is the same bytes at every step."""
    source = str(tmp_path / "source.db")
    _ok("ingest", CAUSAL, "--db", source)
    _ok("build-graph", "--db", source)
    _ok("compile-wiki", "--db", source)
    first, second, third = (tmp_path / f"{n}.jsonl" for n in ("first", "second", "third"))
    _ok("export", "--derived", "--out", first, "--db", source)
    _ok("import", first, "--db", pg_url)
    _ok("export", "--derived", "--out", second, "--db", pg_url)
    back = str(tmp_path / "back.db")
    _ok("import", second, "--db", back)
    _ok("export", "--derived", "--out", third, "--db", back)
    assert first.read_bytes() == second.read_bytes() == third.read_bytes()
    # and the imported PostgreSQL copy answers as the source does
    for q in QUESTIONS:
        a = json.loads(_ok("ask", q, "--db", source, "--json"))
        b = json.loads(_ok("ask", q, "--db", pg_url, "--json"))
        assert (a["answer"], a["source_refs"]) == (b["answer"], b["source_refs"])


def test_bad_postgresql_urls_are_one_line_errors(pg_server) -> None:
    unknown_db = pg_server.get_uri().replace("/postgres?", "/no_such_db?", 1)
    line = error_line(run_cli("stats", "--db", unknown_db), 2, "cannot connect", "no_such_db")
    assert "postgres:@" not in line
    error_line(run_cli("stats", "--db", pg_server.get_uri()), 2, "holds no tracecli data yet")


def test_eval_refuses_a_postgresql_url(pg_server, tmp_path: Path) -> None:
    data = tmp_path / "x.json"
    data.write_text("[]")
    error_line(run_cli("eval", "locomo", data, "--db", pg_server.get_uri()), 2, "eval builds into an SQLite file")
