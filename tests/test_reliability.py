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
import shutil
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
    # outside a terminal, long work reports its progress on stderr line by line; the error is one line, the last
    lines = result.stderr.splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], result.stderr
    err = errors[0] + "\n"
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


def test_an_answer_whose_sources_were_forgotten_meanwhile_is_not_stored(ask_db_copy: Path, embedder: Any,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from tracecli.forget import forget
    from tracecli.query.ask import Asker

    record = Asker._record

    def forget_first(self: Asker, scope: Any, result: Any) -> None:
        # another command forgets the answer's evidence after the question read its snapshot
        with open_store(ask_db_copy, create=False) as other:
            forget(other, "message", result.source_refs[:1], namespace="default", conversation_id=ALICE)
        record(self, scope, result)

    monkeypatch.setattr(Asker, "_record", forget_first)
    with open_store(ask_db_copy, create=False) as store:
        res = Asker(store, embedder=embedder).ask("Where is Alice moving?", conversation_id=ALICE)
        assert store.execute("SELECT COUNT(*) FROM answers WHERE id = ?", (res.answer_id,)).fetchone()[0] == 0
    assert any("forgotten meanwhile" in w for w in res.warnings), res.warnings
    assert invoke("audit", "--strict", "--db", ask_db_copy).exit_code == 0


def test_forget_warns_instead_of_failing_when_it_cannot_rewrite_the_file_after_its_commit(ask_db_copy: Path) -> None:
    from tracecli.forget import _scrub

    holder = store_db._connect(ask_db_copy)
    holder.execute("BEGIN IMMEDIATE")  # another command started writing right after the forget committed
    try:
        with open_store(ask_db_copy, create=False, busy_timeout=0.1) as store:
            warnings: list[str] = []
            assert _scrub(store, True, warnings) == (False, "")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert len(warnings) == 1 and "not rewritten" in warnings[0] and "another command is writing" in warnings[0]


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


# -- 4. hostile input ------------------------------------------------------------------------------------------------


def test_deeply_nested_json_is_one_line_for_ingest_import_and_ask_batch(tmp_path: Path, ask_db_copy: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    deep_jsonl = tmp_path / "deep.jsonl"
    deep_jsonl.write_text('{"question": "x"}\n' + "[" * 100_000 + "]" * 100_000 + "\n")
    before = ask_db_copy.read_bytes()
    one_line_error(invoke("ingest", deep, "--db", ask_db_copy), "deep.json", "nests deeper than")
    one_line_error(invoke("import", deep, "--db", ask_db_copy), "deep.json", "nests deeper than")
    one_line_error(invoke("ask", "--batch", deep_jsonl, "--db", ask_db_copy), "deep.jsonl", "line 2", "nests deeper")
    assert ask_db_copy.read_bytes() == before


@pytest.mark.parametrize("stamp", ["9999-12-31T23:00:00-05:00", "0001-01-01T01:00:00+05:00", 1e300, "Infinity"])
def test_timestamps_outside_the_calendar_are_one_line(tmp_path: Path, stamp: Any) -> None:
    raw = '{"messages": [{"speaker": "A", "text": "hi", "timestamp": %s}]}' % (
        stamp if stamp == "Infinity" else json.dumps(stamp))
    path = tmp_path / "dates.json"
    path.write_text(raw)
    one_line_error(invoke("ingest", path, "--db", tmp_path / "t.db"), "dates.json", "messages[0]")
    assert not (tmp_path / "t.db").exists()


def test_as_of_outside_the_calendar_is_one_line(ask_db_copy: Path) -> None:
    one_line_error(invoke("ask", "Where is Alice moving?", "--as-of", "9999-12-31T23:59:59-14:00", "--db", ask_db_copy),
                   "--as-of", "outside the years")


def _chatgpt(**changes: Any) -> list[dict[str, Any]]:
    data = json.loads((FIXTURES / "chatgpt.json").read_text())
    conv = data[0]
    for path, value in changes.items():
        node, _, key = path.rpartition(".")
        target = conv
        for part in node.split(".") if node else []:
            target = target[part]
        target[key] = value
    return data


@pytest.mark.parametrize(("changes", "place"), [
    ({"mapping.n1.message.author": "user"}, "[0].mapping['n1'].message.author"),
    ({"mapping.n1.message.content.parts": 5}, "[0].mapping['n1'].message.content.parts"),
    ({"current_node": ["n5"]}, "[0].current_node"),
    ({"mapping.n1.message.create_time": "yesterday-ish"}, "[0].mapping['n1'].message.create_time"),
])
def test_chatgpt_exports_with_wrongly_typed_fields_are_one_line(tmp_path: Path, changes: dict[str, Any], place: str) -> None:
    path = write_json(tmp_path / "chat.json", _chatgpt(**changes))
    one_line_error(invoke("ingest", path, "--db", tmp_path / "t.db"), "chat.json", place)


def test_chatgpt_export_with_mixed_create_times_and_no_current_node_reads(tmp_path: Path) -> None:
    data = _chatgpt(current_node=None)
    data[0]["mapping"]["n4a"]["message"]["create_time"] = "2023-11-14T22:20:00Z"
    result = invoke("ingest", write_json(tmp_path / "chat.json", data), "--db", tmp_path / "t.db", "--json")
    no_traceback(result)
    assert result.exit_code == 0, result.output


def test_longmemeval_with_a_number_for_session_ids_is_one_line(tmp_path: Path) -> None:
    data = json.loads((FIXTURES / "longmemeval.json").read_text())
    data[0]["haystack_session_ids"] = 5
    path = write_json(tmp_path / "lme.json", data)
    one_line_error(invoke("ingest", path, "--db", tmp_path / "t.db"), "lme.json", "[0].haystack_session_ids", "a list")


def test_a_damaged_database_is_one_line_on_every_command(tmp_path: Path) -> None:
    db = tmp_path / "trace.db"
    src = write_json(tmp_path / "c.json", {"conversation_id": "c", "messages": messages("QQQQ marker text QQQQ", "fine")})
    assert invoke("ingest", src, "--db", db).exit_code == 0
    raw = db.read_bytes()
    marker = "QQQQ marker text QQQQ".encode()
    assert marker in raw
    db.write_bytes(raw.replace(marker, b"\xff" * len(marker)))  # text that is no longer UTF-8, as a bad page gives
    for args in (["export"], ["ask", "marker text?"], ["forget", "conversation", "c"]):
        result = invoke(*args, "--db", db)
        no_traceback(result)
        if result.exit_code != 0:
            one_line_error(result, str(db))


def test_a_database_with_a_broken_page_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "trace.db"
    src = write_json(tmp_path / "c.json", {"conversation_id": "c", "messages": messages(*[f"message {i}" for i in range(9)])})
    assert invoke("ingest", src, "--db", db).exit_code == 0
    raw = bytearray(db.read_bytes())
    page = 4096
    for start in range(page, len(raw), page):  # every b-tree page header after the first: garbage
        raw[start:start + 8] = b"\x99" * 8
    db.write_bytes(bytes(raw))
    for args in (["stats"], ["export"], ["ask", "message?"], ["ingest", str(src)]):
        result = invoke(*args, "--db", db)
        no_traceback(result)
        one_line_error(result, str(db))


# -- 5. zones, duplicate ids, forget, namespaces ---------------------------------------------------------------------


def test_us_zone_abbreviations_are_resolved_and_others_refused(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    src = write_json(tmp_path / "z.json", {"conversation_id": "z", "messages": [
        {"speaker": "A", "text": "hi", "timestamp": "2024-03-01 12:00 PST"}]})
    result = invoke("ingest", src, "--db", db)
    assert result.exit_code == 0 and "Warning" not in result.output, result.output
    assert _first(db, "SELECT timestamp FROM messages") == "2024-03-01T20:00:00Z"
    bad = write_json(tmp_path / "ist.json", {"messages": [{"speaker": "A", "text": "hi"},
                                                         {"speaker": "B", "text": "yo", "timestamp": "2024-03-01 12:00 IST"}]})
    err = one_line_error(invoke("ingest", bad, "--db", db), "ist.json", "messages[1]", "'IST'")
    assert "Warning" not in err


def test_a_message_id_given_twice_in_one_conversation_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    assert invoke("ingest", NATIVE, "--db", db).exit_code == 0
    before = db.read_bytes()
    dup = write_json(tmp_path / "dup.json", {"conversation_id": "d", "messages": [
        {"id": "m1", "speaker": "A", "text": "one"}, {"id": "m2", "speaker": "B", "text": "two"},
        {"id": "m1", "speaker": "A", "text": "three"}]})
    one_line_error(invoke("ingest", dup, "--db", db), "dup.json", "messages[2]", "'m1'", "messages[0]")
    assert db.read_bytes() == before


def test_a_new_message_with_a_stored_messages_id_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    first = write_json(tmp_path / "a.json", {"conversation_id": "d", "messages": [{"id": "m1", "speaker": "A", "text": "one"}]})
    assert invoke("ingest", first, "--db", db).exit_code == 0
    again = write_json(tmp_path / "b.json", {"conversation_id": "d", "messages": [{"id": "m1", "speaker": "A", "text": "edited"}]})
    one_line_error(invoke("ingest", again, "--db", db), "b.json", "'m1'", "stored message")
    assert _first(db, "SELECT COUNT(*) FROM messages") == 1


def test_forget_message_takes_every_row_a_ref_names(ask_db_copy: Path) -> None:
    with open_store(ask_db_copy, create=False) as store:  # two rows under one ref, as files ingested before the fix hold
        a, b = [r[0] for r in store.execute("SELECT id FROM messages WHERE conversation_id = ? ORDER BY seq LIMIT 2", (ALICE,))]
        store.execute("UPDATE messages SET source_ref = 'twice' WHERE id IN (?, ?)", (a, b))
    result = invoke("forget", "message", "twice", "--conversation", ALICE, "--db", ask_db_copy, "--json")
    assert result.exit_code == 0, result.output
    assert sorted(json.loads(result.stdout)["message_ids"]) == sorted([a, b])
    assert _first(ask_db_copy, "SELECT COUNT(*) FROM messages WHERE source_ref = 'twice'") == 0


def test_namespace_names_are_normalised_in_one_place(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    assert invoke("ingest", NATIVE, "--namespace", " carol ", "--db", db).exit_code == 0
    assert _first(db, "SELECT namespace FROM conversations") == "carol"
    stats = json.loads(invoke("stats", "--db", db, "--json").stdout)
    assert {c["namespace"] for c in stats["conversations"]} == {"carol"}
    assert invoke("audit", "--namespace", "carol ", "--db", db).exit_code == 0
    for bad in ("   ", "ca\x1brol", "ca\nrol"):
        one_line_error(invoke("ingest", NATIVE, "--namespace", bad, "--db", tmp_path / "other.db"), "--namespace")
    named = write_json(tmp_path / "n.json", {"namespace": "\tbob\x07", "messages": messages("hi")})
    one_line_error(invoke("ingest", named, "--db", db), "n.json", "'namespace'")


# -- 6. FIFOs --------------------------------------------------------------------------------------------------------


def _within(seconds: float, func: Any) -> Any:
    """func() on a thread; fails the test (instead of hanging it) when it has not returned in time."""
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(func()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert box, "the command still waits on the FIFO"
    return box[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_is_refused_not_read(tmp_path: Path, ask_db_copy: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    for args in (["ingest", fifo, "--db", ask_db_copy], ["import", fifo, "--db", ask_db_copy],
                 ["ask", "--batch", fifo, "--db", ask_db_copy], ["stats", "--db", fifo]):
        result = _within(60, lambda args=args: invoke(*args))
        one_line_error(result, "pipe.json", "not a regular file")


# -- 7. wiki export ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_folders_db(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    """One small conversation stored as 'a/b' and as 'a_b', with their wikis."""
    tmp = tmp_path_factory.mktemp("folders")
    db = tmp / "trace.db"
    src = write_json(tmp / "c.json", {"messages": messages("I'm moving to Porto next month.", "I adopted a cat called Miso.")})
    for cid in ("a/b", "a_b"):
        assert invoke("ingest", src, "--conversation", cid, "--db", db).exit_code == 0
    for args in (["build-graph"], ["compile-wiki"]):
        assert invoke(*args, "--db", db).exit_code == 0
    return db


def test_wiki_export_gives_each_conversation_its_own_folder(two_folders_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "wiki"
    result = invoke("wiki", "export", out, "--db", two_folders_db, "--json")
    assert result.exit_code == 0, result.output
    files = json.loads(result.stdout)["files"]
    listed = {f["path"] for f in files}
    assert len(listed) == len(files) == len(list(out.rglob("*.md")))
    assert len({Path(f["path"]).parent for f in files if f["kind"] == "page"}) == 2


def test_wiki_export_writes_nothing_through_a_planted_link(two_folders_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "wiki"
    assert invoke("wiki", "export", out, "--db", two_folders_db).exit_code == 0
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    page = next(out.rglob("index.md"))
    page.unlink()
    page.symlink_to(victim)
    one_line_error(invoke("wiki", "export", out, "--db", two_folders_db), "symbolic link")
    assert victim.read_text() == "keep me"
    page.unlink()
    folder = page.parent
    shutil.rmtree(folder)  # pages and their claims/ notes
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder.symlink_to(elsewhere, target_is_directory=True)
    one_line_error(invoke("wiki", "export", out, "--db", two_folders_db), "symbolic link")
    assert list(elsewhere.iterdir()) == []


# -- 8. the LLM path ----------------------------------------------------------------------------------------------------


def _llm_env(server: LLMServer, **extra: str) -> dict[str, str]:
    return {"TRACECLI_LLM_URL": server.url, "TRACECLI_LLM_MODEL": "test-model", "TRACECLI_LLM_API_KEY": "sk-secret-key",
            **extra}


def test_ask_falls_back_to_the_offline_answer_on_llm_errors(llm_server: LLMServer, ask_db_copy: Path) -> None:
    llm_server.responder = lambda body: error_reply(503, "overloaded")
    result = invoke("ask", "Where is Alice moving?", "--conversation", ALICE, "--json", "--db", ask_db_copy,
                    env=_llm_env(llm_server, TRACECLI_LLM_DEADLINE="1"))
    no_traceback(result)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert "Porto" in out["answer"] and out["support"].startswith("fallback:")
    assert "warning: the LLM's answer could not be used" in result.stderr
    assert llm_server.requests, "the LLM was asked first"
    assert "sk-secret-key" not in result.output


def test_ask_with_an_llm_answers_on_a_read_only_file(llm_server: LLMServer, ask_db_copy: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The LLM cache and ledger are records too: a file that cannot take them does not fail the question."""
    monkeypatch.setattr(store_db, "_writable", lambda path: False)
    llm_server.responder = lambda body: json_reply({"answer": "Porto", "abstain": False, "cited_refs": ["s3-m6"]})
    before = ask_db_copy.read_bytes()
    result = invoke("ask", "Where is Alice moving?", "--conversation", ALICE, "--json", "--db", ask_db_copy,
                    env=_llm_env(llm_server))
    no_traceback(result)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["answer"] == "Porto" and out["support"] == "llm"
    assert "the answer was not stored (the file is read-only)" in result.stderr
    assert ask_db_copy.read_bytes() == before


def test_an_oversized_reply_is_not_read_whole_nor_sent_back(llm_server: LLMServer, ask_db_copy: Path) -> None:
    huge = chat_reply("x" * 3_000_000)
    llm_server.responder = lambda body: huge
    result = invoke("ask", "Where is Alice moving?", "--conversation", ALICE, "--json", "--db", ask_db_copy,
                    env=_llm_env(llm_server))
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["support"].startswith("fallback:") and "at most 1,000,000" in result.stderr
    assert 1 <= len(llm_server.requests) <= 2  # the call and one corrective retry
    assert all(len(json.dumps(r.body)) < 200_000 for r in llm_server.requests)  # the reply was never echoed


def test_the_llm_timeout_and_deadline_come_from_the_environment(llm_server: LLMServer, ask_db_copy: Path) -> None:
    slow = Scripted(status=200, body=json_reply({"answer": "x"}).body, delay=1.5,
                    headers={"Content-Type": "application/json"})
    llm_server.responder = lambda body: slow
    result = invoke("ask", "Where is Alice moving?", "--conversation", ALICE, "--json", "--db", ask_db_copy,
                    env=_llm_env(llm_server, TRACECLI_LLM_TIMEOUT="0.2", TRACECLI_LLM_DEADLINE="0.3"))
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["support"].startswith("fallback:")
    assert "within 0.3 s" in result.stderr
    assert len(llm_server.requests) == 1  # the deadline left no time for a retry


@pytest.mark.parametrize("url", ["https//user:sk-secret-key@example.invalid/v1", "user:sk-secret-key@example.invalid/v1",
                                 "ftp://user:sk-secret-key@example.invalid/v1"])
def test_a_mistyped_llm_url_never_prints_the_key(ask_db_copy: Path, url: str) -> None:
    result = invoke("ask", "Where is Alice moving?", "--db", ask_db_copy,
                    env={"TRACECLI_LLM_URL": url, "TRACECLI_LLM_MODEL": "m", "TRACECLI_LLM_API_KEY": "sk-secret-key"})
    err = one_line_error(result, "TRACECLI_LLM_URL", "http(s) URL")
    assert "sk-secret" not in err and "user:" not in err


def test_error_lines_never_carry_the_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracecli.redact import redact

    monkeypatch.setenv("TRACECLI_LLM_API_KEY", "sk-abcdef123")
    assert redact("failed: Bearer sk-abcdef123 at https//u:pw@host/v1 for alice@example.com") == \
        "failed: Bearer *** at https//***@host/v1 for alice@example.com"


# -- 9. LIKE wildcards -------------------------------------------------------------------------------------------------


def test_claims_history_wildcards_match_only_themselves(two_folders_db: Path) -> None:
    assert invoke("claims", "history", "Porto", "--db", two_folders_db).exit_code == 0
    for query in ("%", "_", "%%", "%_%"):
        result = invoke("claims", "history", query, "--db", two_folders_db, "--json")
        no_traceback(result)
        assert result.exit_code in (1, 2), (query, result.output)
        assert result.stdout == "", query
