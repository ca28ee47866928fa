"""`tracecli.Memory`: the library's entry point for programs and agents.

One object per database file and namespace. Each method calls the same stage
function as the matching CLI command and returns the JSON that command prints
with `--json` (plain dicts and lists), so a program and a shell script see the
same shapes. Errors are `tracecli.errors.TraceError` subclasses; nothing
prints and nothing exits.

    with Memory("trace.db", namespace="alice") as mem:
        mem.add([{"speaker": "Alice", "text": "I'm moving to Lisbon in May."}], conversation="chat")
        mem.update()
        print(mem.ask("Where is Alice moving?")["answer"])

A Memory holds one SQLite connection: use it from one thread at a time (open
one per thread; the file is in WAL mode, so readers never wait for a writer).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from tracecli.errors import BadInput
from tracecli.ingest.formats import DEFAULT_GAP_HOURS
from tracecli.render import to_jsonable
from tracecli.scope import check_namespace
from tracecli.store import Store, open_store
from tracecli.store.db import is_pg_url

if TYPE_CHECKING:
    from tracecli.ingest.model import ParsedConversation
    from tracecli.providers.embeddings import Embedder
    from tracecli.providers.llm import ChatModel
    from tracecli.query.ask import Asker

JSON = dict[str, Any]
#: live turns, as `add` (and `ingest`) take them: {speaker, text, timestamp?, id?} objects
Messages = Sequence[Mapping[str, Any]]


class Memory:
    """A tracecli database seen from one namespace: ingest, add live turns, update, ask, trace, forget."""

    def __init__(self, path: str | Path, namespace: str | None = None, *, embedder: Embedder | None = None,
                 llm: ChatModel | None = None, gap_hours: float = DEFAULT_GAP_HOURS) -> None:
        """Open (creating if needed) the database at `path`; `namespace` defaults to 'default'.

        `embedder` and `llm` default to what the CLI uses: TRACECLI_EMBEDDER (MiniLM) and the
        chat model configured by TRACECLI_LLM_URL / TRACECLI_LLM_MODEL (none: offline).
        """
        self.namespace = check_namespace(namespace)
        self.path = path if is_pg_url(path) else Path(path)  # a postgresql:// URL stays whole
        self.gap_hours = gap_hours
        self._embedder = embedder
        self._llm = llm
        self._asker: Asker | None = None
        self._store: Store | None = open_store(self.path)

    # -- lifecycle ----------------------------------------------------------------------
    @property
    def store(self) -> Store:
        """The open store (BadInput once the Memory is closed)."""
        if self._store is None:
            raise BadInput(f"this Memory of {self.path} is closed; open a new one")
        return self._store

    def close(self) -> None:
        """Close the database connection (idempotent)."""
        if self._store is not None:
            self._store.close()
            self._store = None
            self._asker = None

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Memory({str(self.path)!r}, namespace={self.namespace!r})"

    # -- providers ----------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from tracecli.providers.embeddings import get_embedder

            self._embedder = get_embedder()
        return self._embedder

    @property
    def llm(self) -> Any:
        if self._llm is None:
            from tracecli.providers.llm import LLMSettings, get_chat_model

            self._llm = get_chat_model(LLMSettings.from_env(), store=self.store)
        return self._llm

    def _ns(self, namespace: str | None) -> str:
        return self.namespace if namespace is None else check_namespace(namespace)

    # -- writing ------------------------------------------------------------------------
    def ingest(self, source: str | Path | Messages, *, conversation: str | None = None, format: str = "auto",
               namespace: str | None = None) -> JSON:
        """Load a chat file (any format `tracecli ingest` reads) or a list of turns; what `ingest --json` prints.

        A list of turns needs `conversation` (see `add`). Everything is stored in
        this Memory's namespace, whatever the file says.
        """
        from tracecli.ingest import ingest_parsed, parse_inputs

        if not isinstance(source, (str, Path)):
            return self.add(source, conversation=conversation or "", namespace=namespace)
        [(path, convs)] = parse_inputs([source], format, conversation_id=conversation, namespace=self._ns(namespace),
                                       gap_hours=self.gap_hours)
        return {"files": [to_jsonable(ingest_parsed(self.store, path, convs, self.embedder))]}

    def add(self, messages: Messages, *, conversation: str, namespace: str | None = None) -> JSON:
        """Append live turns ({speaker, text, timestamp?, id?}) to a conversation; the JSON of `ingest --json`.

        Idempotent (turns already stored are skipped) and incremental: the new
        turns form new sessions, which the next `update()` builds and compiles.
        """
        from tracecli.ingest import ingest_parsed

        conv = self._parse_live(messages, conversation, self._ns(namespace))
        return {"files": [to_jsonable(ingest_parsed(self.store, Path("messages"), [conv], self.embedder))]}

    def update(self, *, conversation: str | None = None, namespace: str | None = None) -> JSON:
        """build-graph, then compile-wiki, for what is new: {"build_graph": [...], "compile_wiki": [...]}."""
        from tracecli.graph.build import build_graph
        from tracecli.wiki import compile_wiki

        ns = self._ns(namespace)
        built = build_graph(self.store, conversation, llm=self.llm, namespace=ns)
        compiled = compile_wiki(self.store, conversation, llm=self.llm, embedder=self.embedder, namespace=ns)
        return {"build_graph": to_jsonable(built), "compile_wiki": to_jsonable(compiled)}

    def remember(self, messages: Messages, *, conversation: str, namespace: str | None = None) -> JSON:
        """`add` the turns, then `update` that conversation: {"ingest": ..., "build_graph": [...], "compile_wiki": [...]}."""
        added = self.add(messages, conversation=conversation, namespace=namespace)
        return {"ingest": added, **self.update(conversation=conversation.strip(), namespace=namespace)}

    def forget(self, kind: str, targets: str | Sequence[str], *, conversation: str | None = None,
               dry_run: bool = False, vacuum: bool = True, namespace: str | None = None) -> JSON:
        """Forget messages (kind: message | session | conversation | speaker | namespace) and all derived from them.

        Returns the receipt `forget --json` prints. Targets are looked up in this
        Memory's namespace; `kind="namespace"` may name only that namespace.
        """
        from tracecli.forget import forget

        ns = self._ns(namespace)
        names = [targets] if isinstance(targets, str) else list(targets)
        if kind == "namespace" and any(t != ns for t in names):
            other = next(t for t in names if t != ns)
            raise BadInput(f"this memory works in namespace '{ns}'; it cannot forget namespace '{other}'")
        receipt = forget(self.store, kind, names, namespace=ns, conversation_id=conversation, dry_run=dry_run,
                         vacuum=vacuum, recompile=self._recompile)
        self._asker = None  # VACUUM may have rewritten the file under the cached scopes
        return to_jsonable(receipt)

    def _recompile(self, store: Store, conversation_ids: list[str]) -> None:
        from tracecli.wiki import compile_wiki

        for cid in conversation_ids:
            compile_wiki(store, cid, llm=self.llm, embedder=self.embedder)

    # -- reading ------------------------------------------------------------------------
    def ask(self, question: str, *, as_of: str | None = None, conversation: str | None = None,
            budget: int | None = None, namespace: str | None = None) -> JSON:
        """Answer from the current state (or `as_of` a date); the object `ask --json` prints.

        Not enough evidence is an answer with `abstained: true`, not an error.
        """
        if self._asker is None:
            from tracecli.query.ask import Asker

            self._asker = Asker(self.store, embedder=self.embedder, llm=self.llm)
        result = self._asker.ask(question, conversation_id=conversation, as_of=as_of, budget=budget,
                                 namespace=self._ns(namespace))
        return to_jsonable(result)

    def trace(self, answer_id: str, *, namespace: str | None = None) -> JSON:
        """Replay an answer: paths, events, claims and source messages; what `trace --json` prints."""
        from tracecli.query.trace import trace_answer

        return to_jsonable(trace_answer(self.store, answer_id, namespace=self._ns(namespace)))

    def wiki_page(self, slug: str, *, conversation: str | None = None, namespace: str | None = None) -> JSON:
        """One wiki page with its markdown; what `wiki show --json` prints."""
        from tracecli.wiki import get_page

        return to_jsonable(get_page(self.store, slug, conversation, namespace=self._ns(namespace)))

    def wiki_pages(self, *, conversation: str | None = None, page_type: str | None = None,
                   namespace: str | None = None) -> JSON:
        """The wiki's pages without their markdown; what `wiki list --json` prints."""
        from tracecli.wiki import list_pages

        pages = list_pages(self.store, conversation, page_type, namespace=self._ns(namespace))
        return {"pages": [{k: v for k, v in to_jsonable(p).items() if k != "markdown"} for p in pages]}

    def claims_history(self, query: str, *, conversation: str | None = None, namespace: str | None = None) -> JSON:
        """The ADD → REVISE → DEPRECATE history of the claims matching `query`; what `claims history --json` prints."""
        from tracecli.wiki import claim_history

        return {"chains": to_jsonable(claim_history(self.store, query, conversation, namespace=self._ns(namespace)))}

    def stats(self, *, namespace: str | None = None) -> JSON:
        """What `stats --json` prints, with `conversations` limited to the namespace (table counts are the file's)."""
        from tracecli.stats import collect_stats

        ns = self._ns(namespace)
        out = to_jsonable(collect_stats(self.store))
        out["conversations"] = [c for c in out["conversations"] if c["namespace"] == ns]
        return out

    # -- parsing ------------------------------------------------------------------------
    def _parse_live(self, messages: Any, conversation: str | None, namespace: str) -> ParsedConversation:
        from tracecli.ingest.live import parse_messages

        return parse_messages(messages, conversation or "", namespace=namespace, gap_hours=self.gap_hours)


__all__ = ["Memory"]
