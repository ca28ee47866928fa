"""Namespaces isolate: ask, trace, retrieval, traversal, wiki, graph, audit and the LLM cache never cross them.

Three namespaces hold near-identical conversations (same speakers, same
message ids): in `alice` Alice moves to Oslo, then "forget Oslo, it's Porto
now"; in `bob` she moves to Lisbon; in `default` to Berlin.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import Result
from llm_server import LLMServer, json_reply, running_server
from typer.testing import CliRunner

from tracecli.cli import app
from tracecli.errors import NoAnswer, NotFound
from tracecli.graph.build import build_graph
from tracecli.graph.inspect import event_detail, export_graph
from tracecli.ingest import ingest_parsed, parse_file
from tracecli.providers.llm import LLMSettings, OpenAIChatModel
from tracecli.query.ask import Asker
from tracecli.query.paths import load_graph, traverse
from tracecli.query.retrieve import hybrid_search
from tracecli.query.settings import AskSettings
from tracecli.query.trace import trace_answer
from tracecli.scope import Scope, llm_scope, resolve_scope, scope_of
from tracecli.store import Store, open_store
from tracecli.wiki import claim_history, compile_wiki, get_page, list_pages, route_pages

runner = CliRunner()
QUESTION = "Where is Alice moving?"
CONV = {"alice": "alice-move", "bob": "bob-move", "default": "plain-move"}
CITY = {"alice": "Porto", "bob": "Lisbon", "default": "Berlin"}
FOREIGN = {"alice": ("Lisbon", "Berlin"), "bob": ("Oslo", "Porto", "Berlin"), "default": ("Oslo", "Porto", "Lisbon")}


def _conversation(cid: str, namespace: str | None, sessions: list[list[tuple[str, str]]]) -> dict[str, Any]:
    days = ["2024-01-08", "2024-03-12"]
    data: dict[str, Any] = {
        "conversation_id": cid, "participants": ["Alice", "Bob"],
        "sessions": [
            {"id": f"s{i + 1}", "started_at": f"{days[i]}T09:00:00Z", "messages": [
                {"id": f"s{i + 1}-m{j + 1}", "speaker": who, "text": text, "timestamp": f"{days[i]}T09:0{j}:00Z"}
                for j, (who, text) in enumerate(msgs)]}
            for i, msgs in enumerate(sessions)
        ],
    }
    if namespace is not None:
        data["namespace"] = namespace
    return data


FILES = {
    "alice": _conversation(CONV["alice"], "alice", [
        [("Alice", "I'm moving to Oslo in the summer."), ("Bob", "Oslo sounds great, enjoy the fjords.")],
        [("Alice", "Forget Oslo, it's Porto now."), ("Bob", "Porto, nice! Great food there.")],
    ]),
    "bob": _conversation(CONV["bob"], "bob", [
        [("Alice", "I'm moving to Lisbon in the summer."), ("Bob", "Lisbon sounds great, enjoy the beaches.")],
    ]),
    "default": _conversation(CONV["default"], None, [
        [("Alice", "I'm moving to Berlin in the summer."), ("Bob", "Berlin sounds great, enjoy the museums.")],
    ]),
}


@pytest.fixture(scope="module")
def ns_db(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    """Three namespaces, each ingested, built (rules) and compiled; read-only by convention."""
    root = tmp_path_factory.mktemp("namespaces")
    path = root / "trace.db"
    store = open_store(path)
    try:
        for name, data in FILES.items():
            f = root / f"{name}.json"
            f.write_text(json.dumps(data), encoding="utf-8")
            ingest_parsed(store, f, parse_file(f), embedder)
        for ns in CONV:
            build_graph(store, extractor="rules", namespace=ns)
            compile_wiki(store, namespace=ns, embedder=embedder)
    finally:
        store.close()
    return path


@pytest.fixture(scope="module")
def store(ns_db: Path) -> Iterator[Store]:
    s = open_store(ns_db, create=False)
    yield s
    s.close()


@pytest.fixture(scope="module")
def asker(store: Store, embedder: Any) -> Asker:
    return Asker(store, embedder=embedder)


def invoke(*args: Any, env: dict[str, str] | None = None) -> Result:
    return runner.invoke(app, [str(a) for a in args], env=env)


def ok_json(result: Result) -> Any:
    assert result.exit_code == 0, (result.exit_code, result.output)
    return json.loads(result.stdout)


def error_line(result: Result, code: int, *needles: str) -> str:
    assert result.exit_code == code, (result.exit_code, result.output)
    assert "Traceback" not in result.output and result.stdout == ""
    err = result.stderr.strip()
    assert err.startswith("error:") and "\n" not in err, err
    for needle in needles:
        assert needle in err, (needle, err)
    return err


# -- scope resolution ---------------------------------------------------------------------------


def test_resolve_scope(store: Store) -> None:
    from tracecli.commands.common import DEFAULT_NAMESPACE as CLI_DEFAULT
    from tracecli.scope import DEFAULT_NAMESPACE

    assert CLI_DEFAULT == DEFAULT_NAMESPACE == "default"
    assert resolve_scope(store, "alice") == Scope("alice", (CONV["alice"],))
    assert resolve_scope(store) == Scope("default", (CONV["default"],))  # never every namespace at once
    assert resolve_scope(store, None, CONV["bob"]) == Scope("bob", (CONV["bob"],))  # library: a conversation names its own
    with pytest.raises(NotFound, match="conversation 'bob-move' is in namespace 'bob', not 'alice'"):
        resolve_scope(store, "alice", CONV["bob"])
    with pytest.raises(NotFound, match=r"namespace 'carol' has no conversations .*namespaces: alice, bob, default"):
        resolve_scope(store, "carol")
    with pytest.raises(NotFound, match="no conversation 'nope'"):
        resolve_scope(store, "alice", "nope")
    assert scope_of(store, [CONV["bob"], CONV["alice"]]) == Scope("alice+bob", (CONV["alice"], CONV["bob"]))


# -- ask: answers, context and citations stay in the namespace ----------------------------------------


@pytest.mark.parametrize("ns", ["alice", "bob", "default"])
def test_ask_answers_from_own_namespace_only(store: Store, asker: Asker, ns: str) -> None:
    res = asker.ask(QUESTION, namespace=ns)
    assert CITY[ns] in res.answer and not res.abstained and res.namespace == ns
    texts = " ".join([c.text for c in res.context] + [s.description for p in res.paths for s in p.steps])
    for city in FOREIGN[ns]:
        assert city not in res.answer and city not in texts, (city, texts)
    traced = trace_answer(store, res.answer_id, namespace=ns)
    assert traced.messages and all(m.get("conversation_id") == CONV[ns] for m in traced.messages), traced.messages
    assert all(c["conversation_id"] == CONV[ns] for c in traced.claims)
    events = {r["id"]: r["conversation_id"] for r in store.query("SELECT id, conversation_id FROM events")}
    assert {events[s.event_id] for p in res.paths for s in p.steps} <= {CONV[ns]}
    payload = json.loads(store.execute("SELECT payload FROM answers WHERE id = ?", (res.answer_id,)).fetchone()[0])
    assert payload["namespace"] == ns


def test_retrieval_and_traversal_stay_in_scope(store: Store, embedder: Any) -> None:
    qvec = np.asarray(embedder.embed_batch([QUESTION])[0], dtype=np.float32)
    for ns in CONV:
        cids = resolve_scope(store, ns).conversation_ids
        hits = hybrid_search(store, QUESTION, qvec, cids, k_dense=50, k_sparse=50)
        assert hits and {h.conversation_id for h in hits} == {CONV[ns]}
        graph = load_graph(store, cids)
        assert graph.events and {ev.conversation_id for ev in graph.events.values()} == {CONV[ns]}
        paths = traverse(graph, list(graph.events), AskSettings())
        assert all(eid in graph.events for p in paths for eid in p.event_ids)


def test_wiki_routing_and_pages_stay_in_scope(store: Store, embedder: Any) -> None:
    qvec = embedder.embed_batch([QUESTION])[0]
    owner = {r[0]: r[1] for r in store.execute("SELECT id, conversation_id FROM wiki_pages")}
    for ns in CONV:
        routed = [pid for cid in resolve_scope(store, ns).conversation_ids for pid, _ in route_pages(store, cid, QUESTION, qvec)]
        assert routed and {owner[p] for p in routed} == {CONV[ns]}
        pages = list_pages(store, namespace=ns)
        assert pages and {p.conversation_id for p in pages} == {CONV[ns]}
        # every namespace has an 'alice' page; the namespace picks one without ambiguity
        page = get_page(store, "alice", namespace=ns)
        assert page.conversation_id == CONV[ns] and CITY[ns] in page.markdown
        assert not any(city in page.markdown for city in FOREIGN[ns])
    with pytest.raises(NotFound):
        get_page(store, "alice", CONV["bob"], namespace="alice")


def test_claims_and_graph_inspection_stay_in_scope(store: Store) -> None:
    assert claim_history(store, "Porto", namespace="alice")
    with pytest.raises(NoAnswer):
        claim_history(store, "Porto", namespace="bob")
    export = export_graph(store, namespace="bob")
    assert {n["conversation_id"] for n in export.nodes} == {CONV["bob"]}
    alice_event = store.execute("SELECT id FROM events WHERE conversation_id = ? LIMIT 1", (CONV["alice"],)).fetchone()[0]
    assert event_detail(store, alice_event, namespace="alice").event.id == alice_event
    with pytest.raises(NotFound, match="in namespace 'bob'"):
        event_detail(store, alice_event, namespace="bob")


def test_trace_of_another_namespace_is_not_found(store: Store, asker: Asker) -> None:
    res = asker.ask(QUESTION, namespace="alice")
    assert trace_answer(store, res.answer_id, namespace="alice").answer == res.answer
    for other in ("bob", None):  # None: the default namespace
        with pytest.raises(NotFound, match=f"no answer '{res.answer_id}'"):
            trace_answer(store, res.answer_id, namespace=other)


# -- the CLI -----------------------------------------------------------------------------------------


def test_cli_ask_and_trace(ns_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "trace.db"
    db.write_bytes(ns_db.read_bytes())
    alice = ok_json(invoke("ask", QUESTION, "--namespace", "alice", "--json", "--db", db))
    assert "Porto" in alice["answer"] and alice["namespace"] == "alice"
    plain = ok_json(invoke("ask", QUESTION, "--json", "--db", db))
    assert "Berlin" in plain["answer"] and plain["namespace"] == "default"
    bob = ok_json(invoke("ask", QUESTION, "--json", "--db", db, env={"TRACECLI_NAMESPACE": "bob"}))
    assert "Lisbon" in bob["answer"] and bob["namespace"] == "bob"
    flagged = ok_json(invoke("ask", QUESTION, "--namespace", "alice", "--json", "--db", db, env={"TRACECLI_NAMESPACE": "bob"}))
    assert "Porto" in flagged["answer"]  # the flag wins over the environment

    error_line(invoke("ask", QUESTION, "--conversation", CONV["bob"], "--namespace", "alice", "--db", db), 2,
               "conversation 'bob-move' is in namespace 'bob', not 'alice'")
    error_line(invoke("ask", QUESTION, "--conversation", CONV["bob"], "--db", db), 2, "not 'default'")
    error_line(invoke("ask", QUESTION, "--namespace", "carol", "--db", db), 2, "namespace 'carol' has no conversations")

    traced = ok_json(invoke("trace", alice["answer_id"], "--namespace", "alice", "--json", "--db", db))
    assert traced["answer"] == alice["answer"] and traced["namespace"] == "alice"
    error_line(invoke("trace", alice["answer_id"], "--namespace", "bob", "--db", db), 2, "no answer")
    error_line(invoke("trace", alice["answer_id"], "--db", db), 2, "no answer")


def test_cli_wiki_graph_audit_build(ns_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "trace.db"
    db.write_bytes(ns_db.read_bytes())
    pages = ok_json(invoke("wiki", "list", "--namespace", "bob", "--json", "--db", db))["pages"]
    assert pages and {p["conversation_id"] for p in pages} == {CONV["bob"]}
    page = ok_json(invoke("wiki", "show", "alice", "--namespace", "bob", "--json", "--db", db))
    assert "Lisbon" in page["markdown"] and "Porto" not in page["markdown"]
    out = tmp_path / "wiki"
    files = ok_json(invoke("wiki", "export", out, "--namespace", "alice", "--json", "--db", db))["files"]
    assert files and {f["conversation_id"] for f in files} == {CONV["alice"]}
    assert [p.name for p in out.iterdir()] == [CONV["alice"]]
    assert invoke("claims", "history", "Porto", "--namespace", "bob", "--db", db).exit_code == 1
    assert ok_json(invoke("claims", "history", "Porto", "--namespace", "alice", "--json", "--db", db))["chains"]

    export = ok_json(invoke("graph", "export", "--namespace", "alice", "--db", db))
    assert {n["conversation_id"] for n in export["nodes"]} == {CONV["alice"]}
    event = next(n["id"] for n in export["nodes"] if n["kind"] == "event")
    assert ok_json(invoke("graph", "show", event, "--namespace", "alice", "--json", "--db", db))
    error_line(invoke("graph", "show", event, "--namespace", "bob", "--db", db), 2, "no event")

    audit = ok_json(invoke("audit", "--namespace", "bob", "--json", "--db", db))
    assert audit["conversation_ids"] == [CONV["bob"]] and audit["ok"]

    built = ok_json(invoke("build-graph", "--namespace", "bob", "--json", "--db", db))["conversations"]
    assert [r["conversation_id"] for r in built] == [CONV["bob"]]
    compiled = ok_json(invoke("compile-wiki", "--namespace", "alice", "--json", "--db", db))["conversations"]
    assert [r["conversation_id"] for r in compiled] == [CONV["alice"]]


# -- the LLM cache -------------------------------------------------------------------------------------

SCHEMA: dict[str, Any] = {"title": "reply", "type": "object", "properties": {"ok": {"type": "boolean"}},
                          "required": ["ok"], "additionalProperties": False}
PROMPT = [{"role": "user", "content": "Summarise: Alice is moving."}]


@pytest.fixture
def llm_server() -> Iterator[LLMServer]:
    with running_server() as server:
        yield server


def make_model(server: LLMServer, store: Store) -> OpenAIChatModel:
    settings = LLMSettings(provider="openai", url=server.url, model="test-model", timeout=5.0, max_retries=0)
    return OpenAIChatModel(settings, store)


def test_identical_prompt_is_cached_per_namespace(llm_server: LLMServer, tmp_path: Path) -> None:
    llm_server.responder = lambda body: json_reply({"ok": True})
    store = open_store(tmp_path / "cache.db")
    try:
        model = make_model(llm_server, store)
        alice, bob = Scope("alice", ("a1",)), Scope("bob", ("b1",))
        for scope in (alice, bob):
            with llm_scope(model, scope):
                assert not model.complete(PROMPT, SCHEMA).cache_hit
        assert len(llm_server.requests) == 2  # no cross-namespace hit for a byte-identical prompt
        for scope in (alice, bob, alice, bob):
            with llm_scope(model, scope):
                assert model.complete(PROMPT, SCHEMA).cache_hit
        assert len(llm_server.requests) == 2  # once per namespace on repeat
        assert model.scope is None  # llm_scope restores what was there
        # another conversation of the namespace reuses the reply and is recorded with it (so `forget` of either drops it)
        with llm_scope(model, Scope("alice", ("a2",))):
            assert model.complete(PROMPT, SCHEMA).cache_hit
        rows = store.query("SELECT namespace, conversation_ids FROM llm_cache ORDER BY namespace")
        assert [(r["namespace"], json.loads(r["conversation_ids"])) for r in rows] == [
            ("alice", ["a1", "a2"]), ("bob", ["b1"])]
        assert not model.complete(PROMPT, SCHEMA).cache_hit  # unscoped calls share nothing with a namespace
        assert len(llm_server.requests) == 3
    finally:
        store.close()


def _twin(cid: str, namespace: str) -> dict[str, Any]:
    return _conversation(cid, namespace, [[("Alice", "I'm moving to Oslo in the summer."), ("Bob", "Oslo, nice.")]])


def test_build_graph_twins_in_two_namespaces_each_pay(llm_server: LLMServer, tmp_path: Path, embedder: Any) -> None:
    """Byte-identical sessions in two namespaces: each namespace's extraction is its own call and cache row."""
    llm_server.responder = lambda body: json_reply({"events": [], "links": []})
    store = open_store(tmp_path / "twins.db")
    try:
        for cid, ns in (("twin-a", "alice"), ("twin-b", "bob")):
            f = tmp_path / f"{cid}.json"
            f.write_text(json.dumps(_twin(cid, ns)), encoding="utf-8")
            ingest_parsed(store, f, parse_file(f), embedder)
        model = make_model(llm_server, store)
        for ns in ("alice", "bob"):
            build_graph(store, extractor="llm", llm=model, namespace=ns)
        assert len(llm_server.requests) == 2
        prompts = [json.dumps(r.messages) for r in llm_server.requests]
        assert prompts[0] == prompts[1]  # the same prompt, sent once per namespace
        for ns in ("alice", "bob"):
            [res] = build_graph(store, extractor="llm", llm=model, namespace=ns, rebuild=True)
            assert res.llm_cache_hits == 1
        assert len(llm_server.requests) == 2
        rows = store.query("SELECT namespace, conversation_ids FROM llm_cache ORDER BY namespace")
        assert [(r["namespace"], json.loads(r["conversation_ids"])) for r in rows] == [
            ("alice", ["twin-a"]), ("bob", ["twin-b"])]
    finally:
        store.close()


def test_ask_llm_cache_records_the_scope(llm_server: LLMServer, ns_db: Path, tmp_path: Path, embedder: Any) -> None:
    llm_server.responder = lambda body: json_reply({"answer": "", "abstain": True, "cited_refs": []})
    db = tmp_path / "trace.db"
    db.write_bytes(ns_db.read_bytes())
    store = open_store(db, create=False)
    try:
        asker = Asker(store, embedder=embedder, llm=make_model(llm_server, store))
        asker.ask(QUESTION, namespace="bob")
        asker.ask(QUESTION, namespace="bob")
        assert len(llm_server.requests) == 1
        sent = json.dumps(llm_server.requests[0].messages)
        assert "Lisbon" in sent and not any(city in sent for city in FOREIGN["bob"])
        rows = store.query("SELECT namespace, conversation_ids FROM llm_cache")
        assert [(r["namespace"], json.loads(r["conversation_ids"])) for r in rows] == [("bob", [CONV["bob"]])]
    finally:
        store.close()
