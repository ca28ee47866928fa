"""Shared, session-scoped fixtures for the ask/trace tests: one database built from the sample conversations.

Import the fixtures by name in a test module (`from ask_fixtures import ask_db, asker, ...`).
The database is built once per session through the library (parse_file → ingest_parsed →
build_graph with the rule extractor) and never written afterwards; tests that write get a copy.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tracecli.store import Store, open_store

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_conversations"
GOLD = SAMPLES / "gold"
SAMPLE_FILES = sorted(SAMPLES.glob("*.json"))

# conversation ids of the sample files
ALICE = "alice-bob-plans"
LENA = "lena-omar-flat"
MAYA = "maya-sam-project"

ASK_KEYS = {"answer_id", "question", "answer", "abstained", "plan", "as_of", "source_refs", "context", "paths", "timing_ms", "confidence", "support",
            "warnings", "namespace", "candidates"}
CONTEXT_KEYS = {"kind", "text", "source_refs", "score"}
CONTEXT_KINDS = {"note", "path", "claim", "wiki"}
PATH_KEYS = {"score", "signals", "steps", "answer"}
SIGNAL_KEYS = {"ns", "pc", "tc", "uv"}
STEP_KEYS = {"event_id", "description", "time", "validity", "valid_until", "relation_to_next"}
TRACE_KEYS = {"answer_id", "question", "answer", "abstained", "plan", "as_of", "source_refs", "paths", "events",
              "claims", "messages", "context", "asked", "namespace", "candidates"}
NO_EVIDENCE_QUESTION = "What is the capital of Mongolia's second moon?"


def _conversation_of(path: Path) -> str:
    return json.loads(path.read_text(encoding="utf-8"))["conversation_id"]


def gold_questions() -> list[dict[str, Any]]:
    """Every gold question, tagged with its file stem and conversation id."""
    out = []
    for qfile in sorted(GOLD.glob("*.questions.json")):
        stem = qfile.name.removesuffix(".questions.json")
        cid = _conversation_of(SAMPLES / f"{stem}.json")
        for q in json.loads(qfile.read_text(encoding="utf-8")):
            out.append({**q, "file": stem, "conversation": cid, "key": f"{stem}:{q['id']}"})
    return out


def build_sample_db(path: Path, embedder: Any) -> Path:
    """Ingest the three sample conversations and build their graph (rules) into `path`."""
    from tracecli.graph.build import build_graph
    from tracecli.ingest import ingest_parsed, parse_file

    store = open_store(path)
    try:
        for f in SAMPLE_FILES:
            ingest_parsed(store, f, parse_file(f), embedder)
        build_graph(store, extractor="rules")
    finally:
        store.close()
    for suffix in ("-wal", "-shm"):
        leftover = Path(str(path) + suffix)
        assert not leftover.exists() or leftover.stat().st_size == 0, f"{leftover} was not checkpointed"
    return path


def build_chat_db(path: Path, chats: Sequence[Path], embedder: Any, *, wiki: bool = False) -> Path:
    """Ingest chat files and build their graph (rules), and their wiki when asked, into `path`."""
    from tracecli.graph.build import build_graph
    from tracecli.ingest import ingest_parsed, parse_file
    from tracecli.wiki.compile import compile_wiki

    with open_store(path) as s:
        for f in chats:
            ingest_parsed(s, f, parse_file(f), embedder)
        build_graph(s, extractor="rules")
        if wiki:
            compile_wiki(s, embedder=embedder)
    return path


def copy_db(src: Path, dst: Path) -> Path:
    """A private copy of a closed (checkpointed) database file."""
    shutil.copyfile(src, dst)
    return dst


@pytest.fixture(scope="session")
def ask_db(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    """The pristine sample database (read-only by convention: copy it before writing)."""
    return build_sample_db(tmp_path_factory.mktemp("askdb") / "samples.db", embedder)


@pytest.fixture(scope="session")
def ask_store(ask_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """A session-wide store on a copy of the sample database; asks write their answers here."""
    store = open_store(copy_db(ask_db, tmp_path_factory.mktemp("askstore") / "shared.db"), create=False)
    yield store
    store.close()


class MemoEmbedder:
    """The session embedder with a per-text memo, so a question asked again (other budget, other date) is embedded once."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.id, self.dimension = inner, inner.id, inner.dimension
        self._memo: dict[str, np.ndarray] = {}

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if todo:
            self._memo.update(zip(todo, self.inner.embed_batch(todo)))
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._memo[t] for t in texts])


@pytest.fixture(scope="session")
def asker(ask_store: Store, embedder: Any) -> Any:
    """One Asker for the session (graphs and note vectors load once; each question text is embedded once)."""
    from tracecli.query.ask import Asker

    return Asker(ask_store, embedder=MemoEmbedder(embedder))


@pytest.fixture
def ask_db_copy(ask_db: Path, tmp_path: Path) -> Path:
    """A private copy of the sample database for a test that writes."""
    return copy_db(ask_db, tmp_path / "trace.db")


@pytest.fixture(scope="session")
def gold_runs(asker: Any) -> list[tuple[dict[str, Any], Any]]:
    """Every current/as_of/stable gold question asked once (as_of only for as_of questions)."""
    runs = []
    for q in gold_questions():
        if q["kind"] not in ("current", "as_of", "stable"):
            continue
        as_of = q["as_of"] if q["kind"] == "as_of" else None
        runs.append((q, asker.ask(q["question"], as_of=as_of)))
    return runs


# -- helpers shared by the test modules ----------------------------------------------------


def render_steps(steps: list[dict[str, Any]]) -> str:
    """The context text of a path, rebuilt from its JSON steps (must equal the `path` item text)."""
    parts = []
    for st in steps:
        if st["validity"] == "outdated":
            tag = "[OUTDATED" + (f" until {st['valid_until'][:10]}" if st["valid_until"] else "") + "]"
        else:
            tag = f"[{st['validity']}]"
        when = f" ({st['time'][:10]})" if st["time"] else ""
        parts.append(f"{st['description']}{when} {tag}")
        if st["relation_to_next"]:
            parts.append(f"—{st['relation_to_next']}→")
    return " ".join(parts)


def expected_marker(row: dict[str, Any], as_of: str | None, in_conflict: bool) -> str:
    """Reference validity marker of an event row (TRACE Eq. 20's v(e) at `as_of`), independent of the library."""
    if in_conflict:
        return "conflict"
    if as_of is None:
        v = row["validity"]
    elif row["time_anchor"] and row["time_anchor"] > as_of:
        return "not yet"  # said after the as-of date: not known then, which is not superseded
    elif row["valid_until"] and row["valid_until"] <= as_of:
        v = 0.0
    else:
        v = 1.0 if row["validity"] == 0.0 else row["validity"]
    return "valid" if v >= 1.0 else "partial" if v > 0 else "outdated"


def event_rows(store: Store) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in store.query("SELECT * FROM events")}


def conflict_ids(store: Store) -> set[str]:
    ids: set[str] = set()
    for src, dst in store.execute("SELECT src, dst FROM edges WHERE label = 'contradicts'"):
        ids.update((src, dst))
    return ids


def message_refs(store: Store, conversation_ids: list[str] | None = None) -> dict[str, set[str]]:
    """ref (source_ref or message id) → the conversations holding a message with that ref."""
    out: dict[str, set[str]] = {}
    for mid, ref, cid in store.execute("SELECT id, source_ref, conversation_id FROM messages"):
        if conversation_ids is not None and cid not in conversation_ids:
            continue
        for r in (mid, ref):
            if r:
                out.setdefault(r, set()).add(cid)
                # with several conversations in scope, refs are qualified: "conversation:ref"
                out.setdefault(f"{cid}:{r}", set()).add(cid)
    return out


def note_texts(store: Store) -> dict[str, set[str]]:
    """ref → the note texts of messages with that ref."""
    out: dict[str, set[str]] = {}
    for ref, cid, text in store.execute(
        "SELECT COALESCE(m.source_ref, m.id), m.conversation_id, n.text FROM notes n JOIN messages m ON m.id = n.message_id"
    ):
        out.setdefault(ref, set()).add(text)
        out.setdefault(f"{cid}:{ref}", set()).add(text)
    return out


def jsonable(value: Any) -> Any:
    from tracecli.render import to_jsonable

    return json.loads(json.dumps(to_jsonable(value), ensure_ascii=False))


def module_store(chat: Path, name: str) -> Any:
    """A module-scoped fixture yielding `built_store` of one chat file (closed after the module's tests)."""

    @pytest.fixture(scope="module")
    def store(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Store]:
        s = built_store(tmp_path_factory.mktemp(name) / f"{name}.db", chat, embedder)
        yield s
        s.close()

    return store


def built_store(db: Path, chat: Path, embedder: Any) -> Store:
    """A new store at `db` holding one chat file, its graph built with the rule extractor."""
    from tracecli.graph.build import build_graph
    from tracecli.ingest import ingest_parsed, parse_file

    store = open_store(db)
    ingest_parsed(store, chat, parse_file(chat), embedder)
    build_graph(store, extractor="rules")
    return store
