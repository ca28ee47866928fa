"""`tracecli.Memory`: the scenario in-process, the CLI's --json shapes, idempotent live turns, errors as exceptions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import tracecli
from memory_scenario import (CONVERSATION, NEW, QUESTION, REVISION_REF, TURNS, assert_forgotten, assert_revised,
                             assert_traced)
from tracecli import Memory
from tracecli.cli import app
from tracecli.errors import BadInput, NotFound, TraceError

runner = CliRunner()


def _remembered(db: Path, embedder: Any, namespace: str = "maya") -> Memory:
    mem = Memory(db, namespace, embedder=embedder)
    for turn in TURNS:
        mem.add(turn, conversation=CONVERSATION)
        mem.update()
    return mem


def _cli_json(db: Path, *args: str, namespace: str = "maya") -> Any:
    result = runner.invoke(app, [*args, "--db", str(db), "--namespace", namespace, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_memory_is_exported() -> None:
    assert tracecli.Memory is Memory
    with pytest.raises(AttributeError):
        tracecli.NoSuchThing  # noqa: B018


def test_scenario_in_process(any_db: str, embedder: Any) -> None:
    """ingest → update → ask → trace → forget → audit, on an SQLite file and on PostgreSQL."""
    with Memory(any_db, namespace="maya", embedder=embedder) as mem:
        for n, turn in enumerate(TURNS, 1):
            added = mem.add(turn, conversation=CONVERSATION)["files"][0]["conversations"][0]
            assert (added["new_messages"], added["new_sessions"], added["created"]) == (len(turn), 1, n == 1)
            update = mem.update()
            built, compiled = update["build_graph"][0], update["compile_wiki"][0]
            # incremental: each call's turns are one new session, built and compiled alone
            assert (built["sessions_processed"], built["sessions_total"]) == (1, n)
            assert compiled["sessions_compiled"] == 1
        assert built["updates"] >= 1  # the third turn revised the plan
        answer = mem.ask(QUESTION)
        assert_revised(answer)
        assert_traced(mem.trace(answer["answer_id"]), answer)

        dry = mem.forget("message", [REVISION_REF], dry_run=True)
        assert dry["dry_run"] and len(dry["message_ids"]) == 1
        assert NEW in mem.ask(QUESTION)["answer"]  # a dry run changes nothing

        receipt = mem.forget("message", REVISION_REF)
        assert_forgotten(receipt, mem.ask(QUESTION))
        with pytest.raises(NotFound):
            mem.trace(answer["answer_id"])  # the answer that quoted it went with it
        from tracecli.audit import run_audit

        report = run_audit(mem.store)
        assert report.errors == 0, [c for c in report.checks if c.errors]


def test_add_is_idempotent(db_path: Path, embedder: Any) -> None:
    with _remembered(db_path, embedder) as mem:
        before = mem.stats()["tables"]
        again = mem.add(TURNS[0] + TURNS[2], conversation=CONVERSATION)["files"][0]["conversations"][0]
        assert (again["new_messages"], again["skipped_messages"], again["new_sessions"]) == (0, 5, 0)
        assert mem.update()["build_graph"][0]["sessions_processed"] == 0
        assert mem.stats()["tables"] == before


def test_resending_old_turns_with_new_ones_appends_a_session(db_path: Path, embedder: Any) -> None:
    with _remembered(db_path, embedder) as mem:
        late = {"id": "d1", "speaker": "Maya", "text": "The Bilbao flat has a balcony.", "timestamp": "2024-07-15T09:05:00Z"}
        added = mem.add(TURNS[2] + [late], conversation=CONVERSATION)["files"][0]["conversations"][0]
        assert (added["new_messages"], added["skipped_messages"], added["new_sessions"]) == (1, 3, 1)
        built = mem.update()["build_graph"][0]
        assert (built["sessions_processed"], built["sessions_total"]) == (1, len(TURNS) + 1)
        assert_revised(mem.ask(QUESTION))


def test_results_are_the_cli_json(db_path: Path, embedder: Any) -> None:
    with _remembered(db_path, embedder) as mem:
        answer = mem.ask(QUESTION)
        cli_answer = _cli_json(db_path, "ask", QUESTION)
        assert list(answer) == list(cli_answer)
        assert answer["answer"] == cli_answer["answer"] and answer["source_refs"] == cli_answer["source_refs"]
        assert mem.trace(answer["answer_id"]) == _cli_json(db_path, "trace", answer["answer_id"])
        assert mem.wiki_page("index") == _cli_json(db_path, "wiki", "show", "index")
        assert mem.wiki_pages() == _cli_json(db_path, "wiki", "list")
        assert mem.claims_history(NEW) == _cli_json(db_path, "claims", "history", NEW)
        stats = runner.invoke(app, ["stats", "--db", str(db_path), "--json"])
        assert mem.stats() == json.loads(stats.stdout)  # one namespace: nothing filtered
        receipt = mem.forget("message", [REVISION_REF], dry_run=True)
        cli_receipt = _cli_json(db_path, "forget", "message", REVISION_REF, "--dry-run")
        assert list(receipt) == list(cli_receipt) and receipt["message_ids"] == cli_receipt["message_ids"]


def test_ingest_a_file_and_a_list(db_path: Path, embedder: Any, tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"conversation_id": "from-file", "namespace": "elsewhere", "messages": TURNS[0]}))
    with Memory(db_path, "maya", embedder=embedder) as mem:
        files = mem.ingest(path)["files"]
        assert files[0]["conversations"][0]["namespace"] == "maya"  # the Memory's namespace wins over the file's
        assert mem.ingest(path)["files"][0]["conversations"][0]["new_messages"] == 0
        listed = mem.ingest(TURNS[1], conversation="from-list")["files"][0]["conversations"][0]
        assert (listed["conversation_id"], listed["new_messages"]) == ("from-list", len(TURNS[1]))
        assert [c["conversation_id"] for c in mem.stats()["conversations"]] == ["from-file", "from-list"]


def test_namespaces_stay_apart(any_db: str, embedder: Any) -> None:
    with _remembered(any_db, embedder) as maya, Memory(any_db, "other", embedder=embedder) as other:
        with pytest.raises(NotFound, match="namespace 'other' has no conversations"):
            other.ask(QUESTION)
        answer = maya.ask(QUESTION)
        with pytest.raises(NotFound):
            other.trace(answer["answer_id"])
        assert other.stats()["conversations"] == []
        with pytest.raises(BadInput, match="cannot forget namespace 'maya'"):
            other.forget("namespace", ["maya"])
        with pytest.raises(NotFound, match="namespace 'other'"):
            maya.ask(QUESTION, namespace="other")  # a per-call namespace overrides the Memory's


@pytest.mark.parametrize("call, match", [
    (lambda m: m.add([], conversation="c"), "empty"),
    (lambda m: m.add("hello", conversation="c"), "expected a list"),
    (lambda m: m.add([{"speaker": "Maya"}], conversation="c"), r"messages\[0\] has no 'text'"),
    (lambda m: m.add([{"speaker": "Maya", "text": "hi", "timestamp": "not a date"}], conversation="c"), "date"),
    (lambda m: m.add([{"speaker": "Maya", "text": "hi"}], conversation=" "), "name the conversation"),
    (lambda m: m.ask(""), "empty"),
    (lambda m: m.ask(QUESTION, as_of="someday maybe"), "--as-of"),
    (lambda m: m.trace("ans_0000000000"), "no answer"),
    (lambda m: m.wiki_page("no-such-page"), "no wiki page"),
    (lambda m: m.forget("planet", ["x"]), "unknown thing to forget"),
    (lambda m: m.forget("message", ["zz9"]), "no message"),
    (lambda m: m.ask(QUESTION, conversation="nope"), "no conversation 'nope'"),
    (lambda m: Memory(m.path, " "), "namespace"),
])
def test_errors_are_library_exceptions(db_path: Path, embedder: Any, call: Any, match: str) -> None:
    with Memory(db_path, "maya", embedder=embedder) as mem:
        mem.add(TURNS[0], conversation=CONVERSATION)
        mem.update()
        with pytest.raises(TraceError, match=match) as info:
            call(mem)
        assert "\n" not in str(info.value)


def test_a_closed_memory_says_so(db_path: Path, embedder: Any) -> None:
    mem = Memory(db_path, "maya", embedder=embedder)
    mem.close()
    mem.close()  # idempotent
    with pytest.raises(BadInput, match="closed"):
        mem.stats()
    assert repr(mem) == f"Memory({str(db_path)!r}, namespace='maya')"


@pytest.fixture(scope="module")
def built_db(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    db = tmp_path_factory.mktemp("facade") / "trace.db"
    _remembered(db, embedder).close()
    return db


#: every CLI command with a Memory counterpart, and the typed Memory method it must go through
FACADE_CALLS = [
    (["ingest", "{chat}"], "ingest_parsed"),
    (["build-graph"], "build_graph"),
    (["compile-wiki"], "compile_wiki"),
    (["ask", QUESTION], "answer"),
    (["trace", "ans_x"], "trace_result"),
    (["forget", "message", REVISION_REF, "--dry-run"], "forget_receipt"),
    (["wiki", "show", "index"], "page"),
    (["wiki", "list"], "pages"),
    (["wiki", "export", "{chat}.vault"], "export_wiki"),
    (["claims", "history", NEW], "claim_chains"),
    (["stats"], "file_stats"),
]


@pytest.mark.parametrize(("args", "method"), FACADE_CALLS, ids=[" ".join(a[:2]) for a, _ in FACADE_CALLS])
def test_cli_commands_go_through_memory(built_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        args: list[str], method: str) -> None:
    """A command that called the stage code directly would succeed here; through the facade it meets the patch."""
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"conversation_id": "another", "messages": TURNS[0]}))

    def refuse(self: Memory, *a: Any, **kw: Any) -> Any:
        raise BadInput(f"reached Memory.{method} in namespace {self.namespace}")

    monkeypatch.setattr(Memory, method, refuse)
    namespace = [] if args[0] == "stats" else ["--namespace", "maya"]
    result = runner.invoke(app, [*(a.format(chat=chat) for a in args), "--db", str(built_db), *namespace])
    assert result.exit_code == 2, result.output
    assert f"reached Memory.{method} in namespace {'default' if args[0] == 'stats' else 'maya'}" in result.stderr


@pytest.mark.parametrize(("public", "typed", "call"), [
    ("ask", "answer", lambda m: m.ask(QUESTION)),
    ("trace", "trace_result", lambda m: m.trace("ans_x")),
    ("update", "build_graph", lambda m: m.update()),
    ("update", "compile_wiki", lambda m: m.update()),
    ("forget", "forget_receipt", lambda m: m.forget("message", REVISION_REF, dry_run=True)),
    ("wiki_page", "page", lambda m: m.wiki_page("index")),
    ("claims_history", "claim_chains", lambda m: m.claims_history(NEW)),
    ("stats", "file_stats", lambda m: m.stats()),
])
def test_json_methods_wrap_the_typed_ones(built_db: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch,
                                          public: str, typed: str, call: Any) -> None:
    """The JSON a program gets and the objects the CLI renders come from the same call."""
    def refuse(self: Memory, *a: Any, **kw: Any) -> Any:
        raise BadInput(f"reached {typed}")

    monkeypatch.setattr(Memory, typed, refuse)
    with Memory(built_db, "maya", embedder=embedder) as mem, pytest.raises(BadInput, match=f"reached {typed}"):
        call(mem)


def test_default_gap_is_the_importers() -> None:
    from tracecli.api import DEFAULT_GAP_HOURS
    from tracecli.ingest.formats import DEFAULT_GAP_HOURS as IMPORTER_GAP

    assert DEFAULT_GAP_HOURS == IMPORTER_GAP
