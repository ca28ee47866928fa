"""`tracecli ask` and `tracecli trace` through Typer's CliRunner: pinned JSON shapes, batch mode, exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("ask_fixtures")

from ask_fixtures import (  # noqa: E402
    ALICE,
    ASK_KEYS,
    CONTEXT_KEYS,
    CONTEXT_KINDS,
    LENA,
    NO_EVIDENCE_QUESTION,
    PATH_KEYS,
    SIGNAL_KEYS,
    STEP_KEYS,
    TRACE_KEYS,
    copy_db,
)
from click.testing import Result  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from tracecli.cli import app  # noqa: E402

pytest_plugins = ["ask_fixtures"]

runner = CliRunner()
TIMING_KEYS = {"shape", "embed", "retrieve", "graph", "wiki", "answer", "total"}
MESSAGE_KEYS = {"ref", "id", "source_ref", "conversation_id", "speaker", "timestamp", "text", "evidence"}
EVENT_KEYS = {"id", "type", "subject", "description", "quote", "time_anchor", "event_time", "facet", "value", "validity",
              "valid_until", "validity_marker", "edges"}
EDGE_KEYS = {"src", "dst", "label", "confidence", "justification", "invalidated_at"}


def invoke(*args: Any, env: dict[str, str] | None = None) -> Result:
    return runner.invoke(app, [str(a) for a in args], env=env)


def one_json(result: Result, code: int = 0) -> Any:
    assert result.exit_code == code, (result.exit_code, result.output)
    assert result.stdout.endswith("\n") and result.stdout.count("\n") == 1, result.stdout
    return json.loads(result.stdout)


def one_error_line(result: Result, code: int, *words: str) -> str:
    assert result.exit_code == code, (result.exit_code, result.output)
    assert "Traceback" not in result.output and "Traceback" not in result.stderr
    assert result.stdout == ""
    err = result.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("error:"), err
    for w in words:
        assert w in err, (w, err)
    return err


@pytest.fixture(scope="module")
def db(ask_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One writable copy of the sample database for this module's commands."""
    return copy_db(ask_db, tmp_path_factory.mktemp("cli") / "trace.db")


@pytest.fixture(scope="module")
def moving(db: Path) -> dict[str, Any]:
    return one_json(invoke("ask", "Where is Alice moving?", "--db", db, "--json"))


def answers_count(db: Path) -> int:
    from tracecli.store import open_store

    store = open_store(db, create=False)
    try:
        return store.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
    finally:
        store.close()


# -- pinned shapes -------------------------------------------------------------------------------


def test_ask_json_shape(moving: dict[str, Any]) -> None:
    out = moving
    assert set(out) == ASK_KEYS
    assert out["answer"] == "Porto" and out["abstained"] is False and out["as_of"] is None
    assert out["answer_id"].startswith("ans_") and out["plan"] in ("temporal", "preference", "multi-hop", "factual")
    assert isinstance(out["source_refs"], list) and all(isinstance(r, str) for r in out["source_refs"])
    assert set(out["timing_ms"]) == TIMING_KEYS and all(isinstance(v, (int, float)) for v in out["timing_ms"].values())
    assert out["context"] and out["paths"]
    for it in out["context"]:
        assert set(it) == CONTEXT_KEYS and it["kind"] in CONTEXT_KINDS
        assert isinstance(it["text"], str) and isinstance(it["score"], (int, float))
        assert isinstance(it["source_refs"], list) and it["source_refs"]
    for p in out["paths"]:
        assert set(p) == PATH_KEYS and set(p["signals"]) == SIGNAL_KEYS
        assert isinstance(p["score"], (int, float)) and p["steps"]
        for st in p["steps"]:
            assert set(st) == STEP_KEYS
            assert st["validity"] in ("valid", "partial", "outdated", "conflict")
        assert p["steps"][-1]["relation_to_next"] is None
        assert all(st["relation_to_next"] for st in p["steps"][:-1])


def test_trace_json_shape(db: Path, moving: dict[str, Any]) -> None:
    out = one_json(invoke("trace", moving["answer_id"], "--db", db, "--json"))
    assert set(out) == TRACE_KEYS
    for key in ("answer_id", "question", "answer", "abstained", "plan", "as_of", "source_refs", "context"):
        assert out[key] == moving[key], key
    assert out["asked"] == moving
    assert out["paths"]
    for p in out["paths"]:
        assert set(p) == PATH_KEYS | {"trace_score", "trace_signals"}
        assert set(p["trace_signals"]) == {"as", "qs", "bonus"}
        for st in p["steps"]:
            assert set(st) == STEP_KEYS
    for e in out["events"]:
        assert set(e) == EVENT_KEYS
        for edge in e["edges"]:
            assert set(edge) == EDGE_KEYS
    assert out["messages"]
    for m in out["messages"]:
        assert set(m) == MESSAGE_KEYS
    assert isinstance(out["claims"], list)


def test_ask_human_output(db: Path) -> None:
    result = invoke("ask", "What is Alice's cat called?", "--db", db, "--conversation", ALICE)
    assert result.exit_code == 0, result.output
    assert result.stdout == "Mochi\n"
    assert "ans_" in result.stderr and "tracecli trace ans_" in result.stderr
    assert "sources: s4-m9" in result.stderr


def test_trace_human_output(db: Path, moving: dict[str, Any]) -> None:
    result = invoke("trace", moving["answer_id"], "--db", db)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert "Where is Alice moving?" in result.stderr and "Porto" in result.stderr
    assert "OUTDATED" in result.stderr


def test_as_of_option(db: Path) -> None:
    out = one_json(invoke("ask", "Where is Alice moving?", "--db", db, "--as-of", "2024-02-01", "--json", "--conversation", ALICE))
    assert out["answer"] == "Oslo" and out["as_of"] == "2024-02-01T23:59:59Z"
    out = one_json(invoke("ask", "Where is Alice moving?", "--db", db, "--as-of", "1 February 2024", "--json", "--conversation", ALICE))
    assert out["as_of"] == "2024-02-01T23:59:59Z"
    # Porto replaced Oslo at 2024-03-12T19:47:59Z: a time with an offset is read in UTC, to the second
    out = one_json(invoke("ask", "Where is Alice moving?", "--db", db, "--as-of", "2024-03-12T21:00:00+02:00", "--json", "--conversation", ALICE))
    assert (out["answer"], out["as_of"]) == ("Oslo", "2024-03-12T19:00:00Z")
    out = one_json(invoke("ask", "Where is Alice moving?", "--db", db, "--as-of", "2024-03-12T22:00:00+02:00", "--json", "--conversation", ALICE))
    assert (out["answer"], out["as_of"]) == ("Porto", "2024-03-12T20:00:00Z")


def test_budget_option(db: Path) -> None:
    out = one_json(invoke("ask", "Where is Alice moving?", "--db", db, "--budget", "40", "--json"))
    assert sum(len(it["text"].split()) for it in out["context"]) <= 40


def test_db_from_the_environment(ask_db_copy: Path) -> None:
    out = one_json(invoke("ask", "What is Bob's dog called?", "--json", env={"TRACECLI_DB": str(ask_db_copy)}))
    assert out["answer"] == "Pepper"
    assert answers_count(ask_db_copy) == 1


# -- batch -------------------------------------------------------------------------------------------

BATCH = [
    {"question": "Where is Alice moving?"},
    {"question": "Which company did Alice work for?", "as_of": "2024-08-20"},
    {"question": "When is Lena's spring concert?", "conversation": LENA},
    {"question": "What is Alice's cat called?", "conversation": ALICE, "as_of": "2024-03-01"},
    {"question": NO_EVIDENCE_QUESTION},
]


def _comparable(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in ("answer_id", "timing_ms")}


def test_batch_equals_single_asks(db: Path, tmp_path: Path) -> None:
    f = tmp_path / "questions.jsonl"
    f.write_text("\n".join(json.dumps(b) for b in BATCH) + "\n\n", encoding="utf-8")
    result = invoke("ask", "--batch", f, "--db", db)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == len(BATCH)
    batch = [json.loads(line) for line in lines]
    for item, got in zip(BATCH, batch):
        assert set(got) == ASK_KEYS
        args: list[Any] = ["ask", item["question"], "--db", db, "--json"]
        if "as_of" in item:
            args += ["--as-of", item["as_of"]]
        if "conversation" in item:
            args += ["--conversation", item["conversation"]]
        single = one_json(invoke(*args), code=1 if got["abstained"] else 0)
        assert _comparable(got) == _comparable(single), item
        assert got["answer_id"] != single["answer_id"]
        assert one_json(invoke("trace", got["answer_id"], "--db", db, "--json"))["answer"] == got["answer"]
    assert [b["abstained"] for b in batch] == [False, False, False, False, True]
    assert [b["answer"] for i, b in enumerate(batch) if i in (0, 1, 3)] == ["Porto", "Brightwave", "Biscuit"]


def test_batch_options_apply_to_lines_without_their_own(db: Path, tmp_path: Path) -> None:
    f = tmp_path / "q.jsonl"
    f.write_text(json.dumps({"question": "Where is Alice moving?"}) + "\n"
                 + json.dumps({"question": "Where is Alice moving?", "as_of": "2024-06-01"}) + "\n", encoding="utf-8")
    result = invoke("ask", "--batch", f, "--db", db, "--as-of", "2024-02-01", "--conversation", ALICE)
    assert result.exit_code == 0, result.output
    first, second = (json.loads(x) for x in result.stdout.splitlines())
    assert (first["answer"], first["as_of"]) == ("Oslo", "2024-02-01T23:59:59Z")
    assert (second["answer"], second["as_of"]) == ("Porto", "2024-06-01T23:59:59Z")


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ('{"question": "Where is Alice moving?"}\n{"question": \n', ["line 2", "not valid JSON"]),
        ('{"question": "Where?"}\n{"q": "no question key"}\n', ["line 2", "question"]),
        ('{"question": "   "}\n', ["line 1", "question"]),
        ('{"question": "Where?", "as_of": 20240101}\n', ["line 1", "as_of"]),
        ('["Where?"]\n', ["line 1"]),
        ("\n\n", []),
    ],
)
def test_bad_batch_file_answers_nothing(db: Path, tmp_path: Path, content: str, words: list[str]) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text(content, encoding="utf-8")
    before = answers_count(db)
    one_error_line(invoke("ask", "--batch", f, "--db", db), 2, "bad.jsonl", *words)
    assert answers_count(db) == before


# -- exit codes --------------------------------------------------------------------------------------


def test_unknown_answer_id(db: Path) -> None:
    one_error_line(invoke("trace", "ans_nope", "--db", db), 2, "ans_nope")
    one_error_line(invoke("trace", "ans_nope", "--db", db, "--json"), 2, "ans_nope")


def test_missing_database(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.db"
    one_error_line(invoke("ask", "Where is Alice moving?", "--db", missing), 2, "nowhere.db")
    one_error_line(invoke("ask", "Where is Alice moving?", "--db", missing, "--json"), 2, "nowhere.db")
    one_error_line(invoke("trace", "ans_x", "--db", missing), 2, "nowhere.db")
    assert not missing.exists()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["ask", ""], ["empty"]),
        (["ask", "   ", "--json"], ["empty"]),
        (["ask", "Where is Alice moving?", "--as-of", "not a date"], ["--as-of", "not a date"]),
        (["ask", "Where is Alice moving?", "--as-of", "2024-13-45", "--json"], ["--as-of"]),
        (["ask", "Where is Alice moving?", "--budget", "5"], ["--budget"]),
        (["ask", "Where is Alice moving?", "--conversation", "nope"], ["nope"]),
        (["ask"], ["QUESTION", "--batch"]),
    ],
)
def test_bad_input_exits_2(db: Path, args: list[str], words: list[str]) -> None:
    before = answers_count(db)
    one_error_line(invoke(*args, "--db", db), 2, *words)
    assert answers_count(db) == before


def test_question_and_batch_together(db: Path, tmp_path: Path) -> None:
    f = tmp_path / "q.jsonl"
    f.write_text('{"question": "Where?"}\n', encoding="utf-8")
    one_error_line(invoke("ask", "Where is Alice moving?", "--batch", f, "--db", db), 2, "--batch")


def test_no_evidence_abstains_with_exit_1(db: Path) -> None:
    out = one_json(invoke("ask", NO_EVIDENCE_QUESTION, "--db", db, "--json"), code=1)
    assert out["abstained"] is True and out["answer"] == "not enough evidence"
    assert out["source_refs"] == []
    human = invoke("ask", NO_EVIDENCE_QUESTION, "--db", db)
    assert human.exit_code == 1 and human.stdout == "not enough evidence\n"
    assert "Traceback" not in human.output
    traced = one_json(invoke("trace", out["answer_id"], "--db", db, "--json"))
    assert traced["abstained"] is True
