"""`tracecli ingest` and `tracecli stats` through Typer's CliRunner: JSON shapes, options, bad input."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pysqlite3.dbapi2 as sqlite3
import pytest
import sqlite_vec
from click.testing import Result
from typer.testing import CliRunner

from tracecli.cli import app
from tracecli.store.migrations import migrations

FIXTURES = Path(__file__).parent / "fixtures"
NATIVE = FIXTURES / "native_sessions.json"

runner = CliRunner()

INGEST_CONV_KEYS = {"conversation_id", "namespace", "source_format", "new_messages", "skipped_messages", "new_sessions", "created"}
STATS_KEYS = {"db", "schema_version", "embedding_model", "embedding_dim", "tables", "conversations", "llm"}
ROW_TABLES = ("meta", "conversations", "sessions", "messages", "notes", "notes_fts", "note_vectors")


def invoke(*args: Any, env: dict[str, str] | None = None) -> Result:
    return runner.invoke(app, [str(a) for a in args], env=env)


def ok_json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith("\n") and result.stdout.count("\n") == 1, result.stdout  # one JSON document, nothing else
    return json.loads(result.stdout)


def state(db: Path) -> dict[str, Any] | None:
    """Everything a bad command must not change; None when the file does not exist."""
    if not db.exists():
        return None
    conn = sqlite3.connect(str(db))
    try:
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return {
            "counts": {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ROW_TABLES if t in names},
            "messages": conn.execute("SELECT * FROM messages ORDER BY id").fetchall() if "messages" in names else [],
            "meta": conn.execute("SELECT * FROM meta ORDER BY key").fetchall() if "meta" in names else [],
        }
    finally:
        conn.close()


def no_rows(db: Path) -> bool:
    st = state(db)
    return st is None or all(n == 0 for n in st["counts"].values())


def assert_bad_input(result: Result, name: str, place: str) -> None:
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output and "Traceback" not in result.stderr
    assert result.stdout == ""
    err = result.stderr
    assert err.count("\n") == 1 and err.endswith("\n"), err  # exactly one line
    assert err.startswith("error: "), err
    assert name in err, err
    assert place in err, err


@pytest.fixture(scope="module")
def populated_template(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    db = tmp_path_factory.mktemp("cli") / "template.db"
    ok_json(invoke("ingest", NATIVE, "--db", db, "--json"))
    return db


@pytest.fixture
def populated(populated_template: Path, tmp_path: Path) -> Path:
    db = tmp_path / "trace.db"
    shutil.copy(populated_template, db)
    return db


# -- JSON shapes --------------------------------------------------------------------------


def test_ingest_json_shape(db_path: Path, embedder: Any) -> None:
    out = ok_json(invoke("ingest", NATIVE, "--db", db_path, "--json"))
    assert set(out) == {"files"}
    [entry] = out["files"]
    assert set(entry) == {"file", "conversations", "elapsed_s"}
    assert Path(entry["file"]).name == "native_sessions.json"
    assert isinstance(entry["elapsed_s"], float) and entry["elapsed_s"] >= 0
    [conv] = entry["conversations"]
    assert set(conv) == INGEST_CONV_KEYS
    assert conv == {
        "conversation_id": "trip-planning",
        "namespace": "default",
        "source_format": "native",
        "new_messages": 4,
        "skipped_messages": 0,
        "new_sessions": 2,
        "created": True,
    }


def test_second_run_reports_nothing_new(populated: Path) -> None:
    before = state(populated)
    out = ok_json(invoke("ingest", NATIVE, "--db", populated, "--json"))
    [conv] = out["files"][0]["conversations"]
    assert (conv["new_messages"], conv["skipped_messages"], conv["new_sessions"], conv["created"]) == (0, 4, 0, False)
    assert state(populated) == before


def test_several_files_and_conversations(db_path: Path, embedder: Any) -> None:
    out = ok_json(invoke("ingest", FIXTURES / "longmemeval.json", FIXTURES / "messages.jsonl", "--db", db_path, "--json"))
    assert [Path(f["file"]).name for f in out["files"]] == ["longmemeval.json", "messages.jsonl"]
    assert [[c["conversation_id"] for c in f["conversations"]] for f in out["files"]] == [["q-update-1", "q-single-2"], ["jl-1", "jl-2"]]
    assert [c["source_format"] for f in out["files"] for c in f["conversations"]] == ["longmemeval"] * 2 + ["jsonl"] * 2
    assert state(db_path)["counts"]["messages"] == 6 + 4


def test_stats_json_shape(populated: Path) -> None:
    out = ok_json(invoke("stats", "--db", populated, "--json"))
    assert set(out) == STATS_KEYS
    assert out["db"] == str(populated)
    assert out["schema_version"] == len(migrations._migrations)
    assert (out["embedding_model"], out["embedding_dim"]) == ("all-MiniLM-L6-v2", 384)
    assert isinstance(out["tables"], dict)
    assert {k: out["tables"][k] for k in ("conversations", "sessions", "messages", "notes")} == {
        "conversations": 1, "sessions": 2, "messages": 4, "notes": 4
    }
    assert out["conversations"] == [
        {
            "conversation_id": "trip-planning",
            "namespace": "default",
            "sessions": 2,
            "messages": 4,
            "first": "2024-03-01T09:00:00Z",
            "last": "2024-04-10T16:31:00Z",
        }
    ]
    assert out["llm"] == []


def test_stats_on_a_fresh_file_without_embeddings(db_path: Path) -> None:
    from tracecli.store import open_store

    open_store(db_path).close()
    out = ok_json(invoke("stats", "--db", db_path, "--json"))
    assert (out["embedding_model"], out["embedding_dim"], out["conversations"]) == (None, None, [])
    assert out["tables"]["messages"] == 0


def test_stats_needs_an_existing_database(db_path: Path) -> None:
    result = invoke("stats", "--db", db_path, "--json")
    assert_bad_input(result, str(db_path), "run `tracecli ingest` first")
    assert not db_path.exists()


def test_human_output_goes_to_stderr(db_path: Path, embedder: Any) -> None:
    result = invoke("ingest", NATIVE, "--db", db_path)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    # A rich table (80 columns when not a terminal, so long cells fold).
    assert result.stderr.startswith("ingest")
    assert re.search(r"│ native\s+│ 4\s+│ 0\s+│ 2\s+│ created │", result.stderr), result.stderr
    result = invoke("stats", "--db", db_path)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert re.search(r"│ messages\s+│ 4\s+│", result.stderr), result.stderr
    assert "all-MiniLM-L6-v2" in result.stderr


# -- options -------------------------------------------------------------------------------


def test_conversation_option_renames(db_path: Path, embedder: Any) -> None:
    out = ok_json(invoke("ingest", FIXTURES / "native_flat.json", "--conversation", "coffee-chat", "--db", db_path, "--json"))
    assert out["files"][0]["conversations"][0]["conversation_id"] == "coffee-chat"
    stats = ok_json(invoke("stats", "--db", db_path, "--json"))
    assert [c["conversation_id"] for c in stats["conversations"]] == ["coffee-chat"]


def test_conversation_option_needs_one_file(db_path: Path) -> None:
    result = invoke("ingest", NATIVE, FIXTURES / "native_flat.json", "--conversation", "x", "--db", db_path)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "--conversation" in result.stderr
    assert not db_path.exists()


def test_namespace_and_gap_hours_options(db_path: Path, embedder: Any) -> None:
    out = ok_json(invoke("ingest", FIXTURES / "native_flat.json", "--namespace", "alice", "--gap-hours", "2", "--db", db_path, "--json"))
    [conv] = out["files"][0]["conversations"]
    assert (conv["namespace"], conv["new_sessions"]) == ("alice", 3)


def test_tracecli_db_env_var(tmp_path: Path, embedder: Any) -> None:
    env_db = tmp_path / "from-env.db"
    out = ok_json(invoke("ingest", NATIVE, "--json", env={"TRACECLI_DB": str(env_db)}))
    assert out["files"][0]["conversations"][0]["new_messages"] == 4
    assert env_db.exists()
    stats = ok_json(invoke("stats", "--json", env={"TRACECLI_DB": str(env_db)}))
    assert stats["db"] == str(env_db)
    assert stats["tables"]["messages"] == 4
    # --db wins over the environment.
    flag_db = tmp_path / "from-flag.db"
    ok_json(invoke("ingest", FIXTURES / "locomo.json", "--db", flag_db, "--json", env={"TRACECLI_DB": str(env_db)}))
    assert state(flag_db)["counts"]["messages"] == 4
    assert state(env_db)["counts"]["conversations"] == 1


# -- lenient input -------------------------------------------------------------------------


def test_extra_keys_are_ignored(tmp_path: Path, db_path: Path, embedder: Any) -> None:
    path = tmp_path / "extra.json"
    path.write_text(json.dumps({
        "conversation_id": "extra", "app_version": "9.9", "sessions": [
            {"id": "s", "colour": "blue", "messages": [{"speaker": "A", "text": "hi", "reactions": ["+1"], "edited": False}]}
        ]
    }))
    out = ok_json(invoke("ingest", path, "--db", db_path, "--json"))
    assert out["files"][0]["conversations"][0]["new_messages"] == 1


def test_missing_timestamps_are_allowed(tmp_path: Path, db_path: Path, embedder: Any) -> None:
    path = tmp_path / "undated.json"
    path.write_text(json.dumps([{"speaker": "A", "text": f"line {i}"} for i in range(3)]))
    out = ok_json(invoke("ingest", path, "--db", db_path, "--json"))
    assert out["files"][0]["conversations"][0]["new_messages"] == 3
    conn = sqlite3.connect(str(db_path))
    try:
        rows = conn.execute("SELECT text, timestamp FROM messages ORDER BY seq").fetchall()
    finally:
        conn.close()
    assert rows == [("line 0", None), ("line 1", None), ("line 2", None)]


# -- bad input -------------------------------------------------------------------------------


def _missing_speaker() -> bytes:
    data = {
        "sessions": [
            {"messages": [{"speaker": "A", "text": "one"}]},
            {"messages": [{"speaker": "A", "text": "two"}, {"speaker": "B", "text": "three"}, {"text": "who said this?"}]},
        ]
    }
    return json.dumps(data).encode()


_NON_UTF8 = b'{"messages": [{"speaker": "A", "text": "caf\xe9"}]}'
_NON_UTF8_AT = _NON_UTF8.index(0xE9)

# (id, file name, content, the exact place/problem text expected on stderr)
BAD_FILES: list[tuple[str, str, bytes, str]] = [
    ("malformed-json", "malformed.json", b'{"sessions": [}', "malformed.json: malformed JSON at line 1 column 15"),
    ("sessions-not-a-list", "shape.json", b'{"sessions": {"a": {"messages": []}}}', "shape.json: 'sessions' is an object, expected a list"),
    ("messages-not-a-list", "shape2.json", b'{"messages": "hello"}', "shape2.json: 'messages' is text, expected a list"),
    (
        "message-is-a-string",
        "shape3.json",
        json.dumps({"sessions": [{"messages": [{"speaker": "A", "text": "ok"}, "hello"]}]}).encode(),
        "shape3.json: sessions[0].messages[1] is text, expected a message object",
    ),
    ("missing-speaker", "nospeaker.json", _missing_speaker(), "nospeaker.json: sessions[1].messages[2] has no 'speaker'"),
    (
        "missing-text",
        "notext.json",
        json.dumps({"sessions": [{"messages": [{"speaker": "A"}]}]}).encode(),
        "notext.json: sessions[0].messages[0] has no 'text'",
    ),
    (
        "empty-text",
        "emptytext.json",
        json.dumps({"messages": [{"speaker": "A", "text": "   "}]}).encode(),
        "emptytext.json: messages[0] has an empty 'text'",
    ),
    ("empty-file", "empty.json", b"", "empty.json: the file is empty"),
    ("whitespace-only", "blank.json", b"  \n\t\n   \n", "blank.json: the file is empty"),
    (
        "unknown-date",
        "date.json",
        json.dumps({"messages": [{"speaker": "A", "text": "ok", "timestamp": "2024-01-01T00:00:00Z"}, {"speaker": "B", "text": "when?", "timestamp": "next tuesday-ish"}]}).encode(),
        "date.json: messages[1] has an unknown date: 'next tuesday-ish'",
    ),
    ("non-utf8", "latin1.json", _NON_UTF8, f"latin1.json: not valid UTF-8 (byte {_NON_UTF8_AT})"),
    ("nothing-fits", "odd.json", b'{"foo": [1, 2, 3]}', "odd.json: no known format fits"),
    (
        "locomo-turn-without-speaker",
        "loco.json",
        json.dumps([{"sample_id": "x", "conversation": {"speaker_a": "A", "speaker_b": "B", "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}], "session_2": [{"dia_id": "D2:1", "text": "yo"}]}}]).encode(),
        "loco.json: [0].conversation.session_2[0] has no 'speaker'",
    ),
    (
        "jsonl-bad-line",
        "chat.jsonl",
        b'{"speaker": "A", "text": "one"}\n{"speaker": "B", "text": "two"}\n{"speaker": "C", "text": \n',
        "chat.jsonl: line 3 is not valid JSON",
    ),
]


@pytest.fixture(params=["existing-db", "no-db"])
def target_db(request: pytest.FixtureRequest, populated_template: Path, tmp_path: Path) -> Path:
    db = tmp_path / "trace.db"
    if request.param == "existing-db":
        shutil.copy(populated_template, db)
    return db


def _check_unchanged(db: Path, before: dict[str, Any] | None) -> None:
    if before is None:
        assert no_rows(db)
    else:
        assert state(db) == before


@pytest.mark.parametrize(("name", "content", "place"), [b[1:] for b in BAD_FILES], ids=[b[0] for b in BAD_FILES])
def test_bad_file(tmp_path: Path, target_db: Path, name: str, content: bytes, place: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    before = state(target_db)
    result = invoke("ingest", path, "--db", target_db, "--json")
    assert_bad_input(result, name, place)
    _check_unchanged(target_db, before)


def test_a_10_mb_message(tmp_path: Path, target_db: Path) -> None:
    path = tmp_path / "huge.json"
    path.write_text(json.dumps({"sessions": [{"messages": [{"speaker": "A", "text": "x" * 10_000_000}]}]}))
    before = state(target_db)
    result = invoke("ingest", path, "--db", target_db, "--json")
    assert_bad_input(result, "huge.json", "huge.json: sessions[0].messages[0] is 10.0 MB; a message may be at most 1.0 MB")
    _check_unchanged(target_db, before)


def test_a_nonexistent_file(tmp_path: Path, target_db: Path) -> None:
    path = tmp_path / "nope.json"
    before = state(target_db)
    result = invoke("ingest", path, "--db", target_db)
    assert_bad_input(result, "nope.json", f"{path}: no such file")
    _check_unchanged(target_db, before)


def test_a_directory(tmp_path: Path, target_db: Path) -> None:
    folder = tmp_path / "chats"
    folder.mkdir()
    before = state(target_db)
    result = invoke("ingest", folder, "--db", target_db)
    assert_bad_input(result, "chats", f"{folder}: is a directory, not a file")
    _check_unchanged(target_db, before)


def test_second_file_bad_writes_neither(tmp_path: Path, target_db: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"sessions": [{"messages": [{"speaker": "A"}]}]}))
    before = state(target_db)
    result = invoke("ingest", FIXTURES / "locomo.json", bad, "--db", target_db, "--json")
    assert_bad_input(result, "bad.json", "bad.json: sessions[0].messages[0] has no 'text'")
    _check_unchanged(target_db, before)


def test_forced_format_that_does_not_fit(target_db: Path) -> None:
    before = state(target_db)
    result = invoke("ingest", NATIVE, "--format", "locomo", "--db", target_db)
    assert_bad_input(result, "native_sessions.json", "native_sessions.json: [0] has no 'conversation' object")
    _check_unchanged(target_db, before)


def test_unknown_format_name(target_db: Path) -> None:
    before = state(target_db)
    result = invoke("ingest", NATIVE, "--format", "yaml", "--db", target_db)
    assert_bad_input(result, "yaml", "unknown format 'yaml'")
    _check_unchanged(target_db, before)


def test_database_that_is_not_a_database(tmp_path: Path) -> None:
    db = tmp_path / "junk.db"
    db.write_bytes(b"this is not sqlite" * 100)
    result = invoke("ingest", NATIVE, "--db", db)
    assert_bad_input(result, str(db), "not a tracecli database")
    assert db.read_bytes() == b"this is not sqlite" * 100


def test_no_files_is_a_usage_error(db_path: Path) -> None:
    result = invoke("ingest", "--db", db_path)
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert not db_path.exists()


# -- regressions: bugs found and fixed -------------------------------------------------------


def test_multiline_malformed_json_names_the_real_line(tmp_path: Path, db_path: Path) -> None:
    path = tmp_path / "pretty.json"
    path.write_text(
        '{\n  "sessions": [\n    {"messages": [\n      {"speaker": "A", "text": "hi"}\n'
        '      {"speaker": "B", "text": "yo"}\n    ]}\n  ]\n}\n'
    )
    result = invoke("ingest", path, "--db", db_path)
    assert_bad_input(result, "pretty.json", "line 5")
    assert "line 1 " not in result.stderr


@pytest.mark.parametrize("stamp", ["[/b] soon", "[bold]whenever"])
def test_error_line_shows_user_text_verbatim(tmp_path: Path, db_path: Path, stamp: str) -> None:
    path = tmp_path / "markup.json"
    path.write_text(json.dumps({"messages": [{"speaker": "A", "text": "hi", "timestamp": stamp}]}))
    result = invoke("ingest", path, "--db", db_path)
    assert_bad_input(result, "markup.json", f"messages[0] has an unknown date: '{stamp}'")


def test_single_line_jsonl_is_detected(tmp_path: Path, db_path: Path, embedder: Any) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text('{"speaker": "A", "text": "just one message", "timestamp": "2024-01-01T00:00:00Z"}\n')
    out = ok_json(invoke("ingest", path, "--db", db_path, "--json"))
    assert out["files"][0]["conversations"][0]["new_messages"] == 1


def test_duplicate_conversation_in_one_file(tmp_path: Path, target_db: Path, embedder: Any) -> None:
    sample = json.loads((FIXTURES / "locomo.json").read_text())[0]
    path = tmp_path / "dup.json"
    path.write_text(json.dumps([sample, sample]))
    before = state(target_db)
    result = invoke("ingest", path, "--db", target_db)
    assert_bad_input(result, "dup.json", "conv-mini")
    _check_unchanged(target_db, before)


def test_namespace_clash_in_second_file_writes_neither(tmp_path: Path, embedder: Any) -> None:
    db = tmp_path / "trace.db"
    a = tmp_path / "a.json"
    b = tmp_path / "b.json"
    a.write_text(json.dumps({"conversation_id": "shared", "namespace": "alice", "messages": [{"speaker": "A", "text": "from a"}]}))
    b.write_text(json.dumps({"conversation_id": "shared", "namespace": "bob", "messages": [{"speaker": "B", "text": "from b"}]}))
    result = invoke("ingest", a, b, "--db", db)
    assert_bad_input(result, "b.json", "already exists in namespace")
    assert no_rows(db)
