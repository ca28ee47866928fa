"""Regression tests for issue 17 (reliability and safety), one section per numbered item.

1. other programs' SQLite files are never changed; reading commands never create or upgrade a file
2. lock contention: writers queue, readers never fail, `ask` answers without storing when it must
3. chat text is never read as Rich markup and its control characters never reach the terminal
4. hostile input (deep JSON, overflowing dates, mistyped exports, damaged databases): one line, exit 2
5. zone abbreviations, duplicate message ids, `forget` of a ref, namespace names
6. a FIFO as input is refused, not read
7. `wiki export`: a folder per conversation, no writing through symbolic links
8. the LLM path: fallback on errors, capped replies, a deadline, no key in any error
9. LIKE wildcards in `claims history`
"""

from __future__ import annotations

import json
import os
import sqlite3 as stdlib_sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pysqlite3.dbapi2 as sqlite3
import pytest
from click.testing import Result
from typer.testing import CliRunner

pytest.register_assert_rewrite("ask_fixtures")

from ask_fixtures import ALICE  # noqa: E402
from llm_server import LLMServer, Scripted, chat_reply, error_reply, json_reply, llm_server  # noqa: E402, F401 (the fixture)

from tracecli.cli import app  # noqa: E402
from tracecli.store import db as store_db  # noqa: E402
from tracecli.store import open_store  # noqa: E402

pytest_plugins = ["ask_fixtures"]

runner = CliRunner()
FIXTURES = Path(__file__).parent / "fixtures"
NATIVE = FIXTURES / "native_sessions.json"
CONTROL = ("\x1b", "\x07", "\x9b", "\u202e")


def invoke(*args: Any, env: dict[str, str] | None = None) -> Result:
    return runner.invoke(app, [str(a) for a in args], env=env)


def no_traceback(result: Result) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output


def one_line_error(result: Result, *needles: str, code: int = 2) -> str:
    no_traceback(result)
    assert result.exit_code == code, result.output
    err = result.stderr
    assert err.startswith("error: ") and err.count("\n") == 1, err
    for needle in needles:
        assert needle in err, err
    return err


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def messages(*texts: str, speaker: str = "Alice") -> list[dict[str, Any]]:
    return [{"speaker": speaker, "text": t, "timestamp": f"2024-03-0{i + 1}T10:00:00Z"} for i, t in enumerate(texts)]


# -- 1. other programs' files ------------------------------------------------------------------------------------


def foreign_db(path: Path, table: str = "customers") -> bytes:
    """An application's SQLite file (rollback journal, one table with a row), as the stdlib sqlite3 writes it."""
    conn = stdlib_sqlite3.connect(path)
    conn.execute(f"CREATE TABLE {table} (key TEXT, value TEXT)")
    conn.execute(f"INSERT INTO {table} VALUES ('a', 'b')")
    conn.commit()
    conn.close()
    return path.read_bytes()


READING = [["stats"], ["ask", "Where is Alice moving?"], ["trace", "ans_x"], ["wiki", "list"], ["claims", "history", "x"],
           ["graph", "show", "ev_x"], ["graph", "export"], ["audit"], ["export"]]
WRITING = [["ingest", str(NATIVE)], ["build-graph"], ["compile-wiki"], ["forget", "message", "m1"]]


@pytest.mark.parametrize("table", ["customers", "meta"])
@pytest.mark.parametrize("args", READING + WRITING, ids=lambda a: " ".join(a[:2]))
def test_another_programs_file_is_refused_by_every_command_and_left_as_it_was(tmp_path: Path, args: list[str],
                                                                                 table: str) -> None:
    db = tmp_path / "app.db"
    before = foreign_db(db, table)
    result = invoke(*args, "--db", db)
    one_line_error(result, str(db), "not a tracecli database")
    assert db.read_bytes() == before
    assert not Path(f"{db}-wal").exists()  # not switched to WAL
    conn = stdlib_sqlite3.connect(db)
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == [table]
    conn.close()


@pytest.mark.parametrize("args", READING, ids=lambda a: " ".join(a[:2]))
def test_reading_commands_never_create_a_file(tmp_path: Path, args: list[str]) -> None:
    db = tmp_path / "none.db"
    one_line_error(invoke(*args, "--db", db), "tracecli ingest")
    assert not db.exists()
    empty = tmp_path / "empty.db"
    empty.touch()
    one_line_error(invoke(*args, "--db", empty), "tracecli ingest")
    assert empty.read_bytes() == b""


def test_reading_commands_never_upgrade_an_older_file_and_a_writing_one_does(tmp_path: Path) -> None:
    from sqlite_utils import Database

    from tracecli.store.migrations import migrations

    db = tmp_path / "old.db"
    conn = store_db._connect(db)
    migrations.apply(Database(conn), stop_before=store_db.SCHEMA[-1])
    conn.close()
    before = db.read_bytes()
    for args in READING:
        one_line_error(invoke(*args, "--db", db), "older tracecli", "tracecli ingest")
        assert db.read_bytes() == before
    assert invoke("ingest", NATIVE, "--db", db).exit_code == 0
    with open_store(db, create=False, upgrade=False) as store:
        assert store.schema_version() == len(store_db.SCHEMA)


def test_a_new_file_is_marked_as_tracecli_and_an_unmarked_older_one_is_still_known(tmp_path: Path) -> None:
    db = tmp_path / "trace.db"
    with open_store(db) as store:
        assert store.get_meta("application") == "tracecli"
        store.execute("DELETE FROM meta WHERE key = 'application'")  # as a file made before the row existed
    assert invoke("stats", "--db", db).exit_code == 0


# -- 2. locks ------------------------------------------------------------------------------------------------------


@pytest.fixture
def locked(ask_db_copy: Path) -> Iterator[Path]:
    """A copy of the sample database while another connection holds its write lock (a write in progress)."""
    holder = store_db._connect(ask_db_copy)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO meta(key, value) VALUES ('someone', 'writing')")
    yield ask_db_copy
    holder.execute("ROLLBACK")
    holder.close()


def test_a_writer_waits_for_the_lock_then_exits_with_one_line_and_changes_nothing(locked: Path, tmp_path: Path) -> None:
    before = locked.read_bytes()
    extra = write_json(tmp_path / "extra.json", {"conversation_id": "extra", "messages": messages("Hello there.")})
    result = invoke("ingest", extra, "--db", locked, env={"TRACECLI_BUSY_TIMEOUT": "0.2"})
    one_line_error(result, str(locked), "another command is writing", "TRACECLI_BUSY_TIMEOUT")
    assert locked.read_bytes() == before


def test_reading_commands_never_fail_while_a_writer_holds_the_lock(locked: Path) -> None:
    for args in (["stats", "--json"], ["graph", "export"], ["audit", "--json"], ["export"]):
        result = invoke(*args, "--db", locked, env={"TRACECLI_BUSY_TIMEOUT": "0.2"})
        no_traceback(result)
        assert result.exit_code == 0, (args, result.output)


def test_ask_answers_while_the_lock_is_held_and_says_the_answer_was_not_stored(locked: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tracecli.query.ask.ASIDE_WAIT", 0.1)
    result = invoke("ask", "Where is Alice moving?", "--conversation", ALICE, "--json", "--db", locked)
    no_traceback(result)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert "Porto" in out["answer"]
    assert any("not stored" in w and "another command is writing" in w for w in out["warnings"])
    assert "warning: the answer was not stored" in result.stderr


def test_ask_answers_on_a_read_only_file(ask_db_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # root may write any file, so the test says "read-only" where the store asks
    monkeypatch.setattr(store_db, "_writable", lambda path: False)
    before = ask_db_copy.read_bytes()
    result = invoke("ask", "Where is Alice moving?", "--conversation", ALICE, "--db", ask_db_copy)
    no_traceback(result)
    assert result.exit_code == 0 and "Porto" in result.stdout, result.output
    assert "the answer was not stored (the file is read-only)" in result.stderr
    assert ask_db_copy.read_bytes() == before


def test_a_writer_that_read_first_is_not_failed_by_another_commit(ask_db_copy: Path) -> None:
    """compile-wiki reads, then writes, in one transaction; an `ask` storing its answer meanwhile used to fail it."""
    reading, errors = threading.Event(), []

    def long_writer() -> None:
        try:
            with open_store(ask_db_copy, create=False) as first, first.transaction():
                first.execute("SELECT COUNT(*) FROM messages").fetchone()
                reading.set()
                threading.Event().wait(0.3)  # the other command commits (or tries to) meanwhile
                first.set_meta("compiled", "yes")
        except Exception as exc:  # noqa: BLE001 - the test reports any failure
            errors.append(exc)

    thread = threading.Thread(target=long_writer)
    thread.start()
    reading.wait(10)
    with open_store(ask_db_copy, create=False) as second, second.transaction():
        second.set_meta("answer", "stored")
    thread.join(30)
    assert errors == []
    with open_store(ask_db_copy, create=False) as store:
        assert (store.get_meta("compiled"), store.get_meta("answer")) == ("yes", "stored")


def test_two_ingests_of_one_file_store_each_message_once(tmp_path: Path, embedder: Any) -> None:
    from tracecli.ingest import ingest_parsed, parse_file

    db = tmp_path / "trace.db"
    open_store(db).close()
    both_planned = threading.Barrier(2, timeout=30)

    class Waiting:
        """The session embedder, but each ingest waits until both have planned what to write."""

        id, dimension = embedder.id, embedder.dimension

        def embed_batch(self, texts: list[str]) -> Any:
            both_planned.wait()
            return embedder.embed_batch(texts)

    errors: list[BaseException] = []

    def run() -> None:
        try:
            with open_store(db, create=False) as store:
                ingest_parsed(store, NATIVE, parse_file(NATIVE), Waiting())
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    with open_store(db, create=False) as store:
        assert store.execute("SELECT COUNT(*), COUNT(DISTINCT content_hash) FROM messages").fetchone() == (4, 4)
        assert store.execute("SELECT COUNT(*) FROM notes").fetchone()[0] == 4


# -- 3. markup and control characters ------------------------------------------------------------------------------

HOSTILE_ID = "[/bold]conv[red]"
HOSTILE_TEXTS = [
    "I moved to Porto [/bold] last week \x1b]0;pwned\x07 and love it.",
    "Alice is moving to Lisbon \x1b[2J\x1b[H now [link=file:///etc/passwd]click[/link].",
    "Bob adopted a cat called [bold]Miso\x9b31m and \x1b]8;;file:///etc/passwd\x07this\x1b]8;;\x07 \u202eevil.",
]


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    tmp = tmp_path_factory.mktemp("hostile")
    src = write_json(tmp / "[red]x[bold].json", {
        "conversation_id": HOSTILE_ID, "participants": ["[/b]Alice", "Bob\x1b[31m"],
        "messages": [{"id": f"[/i]m{i}", "speaker": ["[/b]Alice", "Bob\x1b[31m"][i % 2], "text": t,
                      "timestamp": f"2024-03-0{i + 1}T10:00:00Z"} for i, t in enumerate(HOSTILE_TEXTS)]})
    db = tmp / "trace.db"
    for args in (["ingest", src], ["build-graph"], ["compile-wiki"]):
        result = invoke(*args, "--db", db)
        no_traceback(result)
        assert result.exit_code == 0, result.output
        assert not any(c in result.output for c in CONTROL)
    return db


def _first(db: Path, sql: str) -> Any:
    with open_store(db, create=False, upgrade=False) as store:
        return store.execute(sql).fetchone()[0]


def test_user_text_is_never_markup_and_its_control_characters_never_reach_the_terminal(hostile_db: Path) -> None:
    ask = invoke("ask", "Where is Alice moving?", "--db", hostile_db, "--json")
    answer_id = json.loads(ask.stdout)["answer_id"]
    event_id = _first(hostile_db, "SELECT id FROM events ORDER BY id")
    runs = [["stats"], ["ask", "Where is Alice moving?"], ["trace", answer_id], ["claims", "history", "Porto"],
            ["graph", "show", event_id], ["graph", "export", "--format", "dot"], ["graph", "export"],
            ["wiki", "list"], ["wiki", "show", "index", "--conversation", HOSTILE_ID], ["export"],
            ["audit"], ["stats", "--json"], ["trace", answer_id, "--json"]]
    for args in runs:
        result = invoke(*args, "--db", hostile_db)
        no_traceback(result)
        assert result.exit_code in (0, 1), (args, result.output)
        assert not any(c in result.output for c in CONTROL), (args, result.output)
    # the stored text is what the file said
    assert _first(hostile_db, "SELECT text FROM messages ORDER BY seq") == HOSTILE_TEXTS[0]
    stats = json.loads(invoke("stats", "--db", hostile_db, "--json").stdout)
    assert [c["conversation_id"] for c in stats["conversations"]] == [HOSTILE_ID]


def test_json_output_escapes_control_characters_and_keeps_the_value(hostile_db: Path) -> None:
    result = invoke("export", "--db", hostile_db)
    assert "\\u001b]0;pwned\\u0007" in result.stdout and "\\u009b31m" in result.stdout
    texts = [m["text"] for s in json.loads(result.stdout)["conversations"][0]["sessions"] for m in s["messages"]]
    assert texts == HOSTILE_TEXTS


def test_error_lines_show_user_text_without_markup_or_controls(tmp_path: Path) -> None:
    bad = write_json(tmp_path / "[bold]bad\x1b[2J.json", {"messages": [{"speaker": "[/x]", "text": ""}]})
    err = one_line_error(invoke("ingest", bad, "--db", tmp_path / "t.db"), "[bold]bad[2J.json")
    assert "\x1b" not in err
