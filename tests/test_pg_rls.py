"""Row-level security per namespace on PostgreSQL (pgserver): a role bound to one namespace cannot read or write
another's rows whatever SQL it sends, a role held by the session setting is held to each command's namespace,
and the tables' owner (the default deployment) sees no change."""

from __future__ import annotations

import itertools

import psycopg
import pytest

from test_backends import _conversation, _note
from tracecli.api import Memory
from tracecli.errors import StoreError
from tracecli.store import open_store
from tracecli.store.pg import GLOBAL_TABLES, RLS_ENV, rls_condition

_ROLES = itertools.count()
VEC = [1.0, 0.0, 0.0, 0.0]


def role_url(pg_url: str, namespace: str | None) -> str:
    """A new login role given access with `tracecli_grant` (bound to `namespace`, or not bound), as a URL."""
    role = f"agent_{next(_ROLES)}_{namespace or 'unbound'}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'DROP ROLE IF EXISTS "{role}"')
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute("SELECT tracecli_grant(%s, %s)", (role, namespace))
    assert pg_url.startswith("postgresql://postgres:@")
    return pg_url.replace("postgres:@", f"{role}:@", 1)


@pytest.fixture
def two_namespaces(pg_url: str) -> str:
    """A database whose owner stored conversation `ca` in namespace a and `cb` in namespace b."""
    with open_store(pg_url) as store, store.transaction():
        store.bind_embedding_model("test", len(VEC))
        for cid, ns, rowid in (("ca", "a", 1), ("cb", "b", 2)):
            _conversation(store, cid, ns)
            _note(store, rowid, cid, f"the note of {ns}", VEC)
            store.execute("INSERT INTO answers(id, conversation_id, question, answer, plan, payload, created_at) "
                          "VALUES (?, ?, 'q', 'a', 'p', '{}', 'now')", (f"ans_{ns}", cid))
            store.execute("INSERT INTO answer_items(answer_id, rank, kind, text, score) VALUES (?, 0, 'note', 't', 1)",
                          (f"ans_{ns}",))
            store.execute("INSERT INTO llm_cache(key, reply, namespace, conversation_ids) VALUES (?, 'r', ?, ?)",
                          (f"k_{ns}", ns, f'["{cid}"]'))
    return pg_url


def _counts(url: str, setting: str | None = None) -> dict[str, int]:
    """Rows per namespaced table seen by a raw connection (no tracecli, no WHERE)."""
    with psycopg.connect(url, autocommit=True) as conn:
        if setting is not None:
            conn.execute("SELECT set_config('tracecli.namespace', %s, false)", (setting,))
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_policies WHERE policyname = 'tracecli_namespace'")]
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}


def test_every_table_is_namespaced_or_global(two_namespaces: str) -> None:
    """A table added by a later migration without a conversation id or namespace fails here until it gets a rule."""
    with psycopg.connect(two_namespaces, autocommit=True) as conn:
        tables = {r[0]: r[1] for r in conn.execute(
            "SELECT c.relname, c.relrowsecurity FROM pg_class c WHERE c.relkind = 'r' "
            "AND c.relnamespace = 'public'::regnamespace")}
        policies = {r[0] for r in conn.execute("SELECT tablename FROM pg_policies WHERE policyname = 'tracecli_namespace'")}
    ungoverned = {t for t in tables if t not in GLOBAL_TABLES and t not in policies}
    assert not ungoverned
    assert all(tables[t] for t in policies)
    assert {"conversations", "messages", "notes", "notes_fts", "note_vectors", "answers", "answer_items", "llm_cache"} <= policies
    assert rls_condition("meta", ["key", "value"]) is None


def test_a_bound_role_reads_only_its_namespace_even_without_a_where(two_namespaces: str) -> None:
    owner = _counts(two_namespaces)
    url = role_url(two_namespaces, "a")
    seen = _counts(url)
    assert owner["messages"] == 2 and owner["note_vectors"] == 2 and owner["answer_items"] == 2
    assert seen == {table: n // 2 for table, n in owner.items()}  # every row of b is hidden, every row of a is there
    # the session setting cannot move a bound role to another namespace
    assert _counts(url, setting="b") == seen
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET tracecli.namespace = 'b'")
        assert [r[0] for r in conn.execute("SELECT text FROM messages")] == ["the note of a"]
        assert [r[0] for r in conn.execute("SELECT id FROM conversations")] == ["ca"]
        assert conn.execute("SELECT rowid FROM note_vectors ORDER BY embedding <=> '[1,0,0,0]' LIMIT 5").fetchall() == [(1,)]


def test_a_bound_role_cannot_write_another_namespace(two_namespaces: str) -> None:
    url = role_url(two_namespaces, "a")
    with psycopg.connect(url, autocommit=True) as conn:
        for sql in ("INSERT INTO conversations(id, namespace, created_at) VALUES ('cx', 'b', 'now')",
                    "INSERT INTO sessions(id, conversation_id, idx, source_id) VALUES ('sx', 'cb', 1, 'x')",
                    "INSERT INTO notes_fts(rowid, text, keywords) VALUES (2, 'planted', '')"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
                conn.execute(sql)
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute("UPDATE conversations SET namespace = 'b' WHERE id = 'ca'")  # moving a row out is a write to b
        with pytest.raises(psycopg.Error):  # not granted at all: the bindings are the owner's
            conn.execute("DELETE FROM tracecli_role_namespaces")
    with psycopg.connect(url, autocommit=True) as conn:  # no WHERE: only a's rows change
        assert conn.execute("UPDATE messages SET text = 'overwritten'").rowcount == 1
        assert conn.execute("DELETE FROM notes_fts").rowcount == 1
        assert conn.execute("DELETE FROM llm_cache").rowcount == 1
    with psycopg.connect(two_namespaces, autocommit=True) as conn:
        assert dict(conn.execute("SELECT conversation_id, text FROM messages").fetchall()) == {
            "ca": "overwritten", "cb": "the note of b"}
        assert conn.execute("SELECT rowid FROM notes_fts").fetchall() == [(2,)]
        assert conn.execute("SELECT key FROM llm_cache").fetchall() == [("k_b",)]


def test_a_bound_role_numbers_rows_past_every_namespace(two_namespaces: str) -> None:
    """SQLite's rowid rule (one more than the largest) over the whole table, not over the rows the role sees."""
    with psycopg.connect(role_url(two_namespaces, "a"), autocommit=True) as conn:
        conn.execute("INSERT INTO messages(id, conversation_id, session_id, seq, turn, speaker, text, content_hash) "
                     "VALUES ('m_new', 'ca', 's_ca', 9, 9, 'A', 'new', 'h_new')")
        rowid = conn.execute("INSERT INTO notes(id, message_id, conversation_id, text) "
                             "VALUES ('n_new', 'm_new', 'ca', 'new') RETURNING rowid").fetchone()[0]
    assert rowid == 3  # b's note holds rowid 2, which this role cannot see


def test_tracecli_as_a_bound_role(two_namespaces: str, monkeypatch: pytest.MonkeyPatch) -> None:
    url = role_url(two_namespaces, "a")
    monkeypatch.setenv(RLS_ENV, "1")
    with Memory(url, "a", embedder=None) as memory:
        assert [c["conversation_id"] for c in memory.file_stats().conversations] == ["ca"]
        assert memory.store.fts_search("notes_fts", '"note"') == [(1, pytest.approx(0.1))]
        assert [r for r, _ in memory.store.knn("note_vectors", VEC, 5, "cb")] == []
    with Memory(url, "b") as memory, pytest.raises(StoreError, match="bound to namespace 'a'.*cannot work in 'b'"):
        memory.pending()


def test_an_unbound_role_is_held_to_each_commands_namespace(two_namespaces: str) -> None:
    url = role_url(two_namespaces, None)
    assert set(_counts(url).values()) == {0}  # no namespace named: nothing
    assert _counts(url, setting="b")["messages"] == 1
    with Memory(url, "a") as memory:
        store = memory.store
        assert memory.pending().graph == 1
        assert store.execute("SELECT id FROM conversations").fetchall() == [("ca",)]
        assert memory.pending(namespace="b").graph == 1  # the next call of the same Memory, in another namespace
        assert store.execute("SELECT id FROM conversations").fetchall() == [("cb",)]
        assert store.execute("SELECT text FROM messages").fetchall() == [("the note of b",)]


def test_the_owner_sees_no_change(two_namespaces: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default deployment (tracecli runs as the tables' owner): the policies do not apply, nothing changes."""
    with Memory(two_namespaces, "a") as memory:
        assert memory.store.execute("SELECT count(*) FROM messages").fetchone()[0] == 2
        assert sorted(c["conversation_id"] for c in memory.file_stats().conversations) == ["ca", "cb"]
    monkeypatch.setenv(RLS_ENV, "1")  # … unless asked to refuse a role the policies do not hold
    with pytest.raises(StoreError, match="TRACECLI_PG_RLS=1 but the role postgres bypasses row-level security"):
        open_store(two_namespaces)
    monkeypatch.setenv(RLS_ENV, "maybe")
    with pytest.raises(StoreError, match="TRACECLI_PG_RLS='maybe'"):
        open_store(two_namespaces)


def test_a_pooled_connection_forgets_the_namespace(two_namespaces: str) -> None:
    url = role_url(two_namespaces, None)
    with Memory(url, "b") as memory:
        assert memory.pending().graph == 1
    with open_store(url) as store:  # the same pooled connection, back from the pool: no namespace bound
        assert store.execute("SELECT count(*) FROM conversations").fetchone()[0] == 0
