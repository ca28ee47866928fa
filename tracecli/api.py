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

The CLI goes through this class too: each command opens its store the way it
needs (created, written, or read in one snapshot), wraps it with
`Memory(..., store=store)` and calls the typed method behind the JSON one
(`answer` behind `ask`, `trace_result` behind `trace`, ...), which it renders.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from tracecli.errors import BadInput
from tracecli.render import to_jsonable
from tracecli.scope import bind_namespaces, check_namespace
from tracecli.store import Store, open_store
from tracecli.store.db import is_pg_url

if TYPE_CHECKING:
    from tracecli.forget import ForgetReceipt
    from tracecli.graph.build import BuildResult
    from tracecli.ingest.model import ParsedConversation
    from tracecli.ingest.pipeline import IngestResult
    from tracecli.pipeline import Pending, StageProgress, UpdateResult
    from tracecli.query.ask import AskResult
    from tracecli.query.settings import AskSettings
    from tracecli.query.trace import TraceResult
    from tracecli.stats import Stats
    from tracecli.wiki import ClaimChain, CompileResult, PageInfo
    from tracecli.providers.embeddings import Embedder
    from tracecli.providers.llm import ChatModel
    from tracecli.query.ask import Asker

JSON = dict[str, Any]
#: (done, total) of a long stage
ProgressFn = Callable[[int, int], None]
#: files as `parse_inputs` returns them: (path, its conversations)
Parsed = Sequence[tuple[Path, list["ParsedConversation"]]]
#: live turns, as `add` (and `ingest`) take them: {speaker, text, timestamp?, id?} objects
Messages = Sequence[Mapping[str, Any]]
#: kept in step with tracecli.ingest.formats.DEFAULT_GAP_HOURS (not imported: reading commands come
#: through this module and must not load numpy and sqlite-vec)
DEFAULT_GAP_HOURS = 4.0


class Memory:
    """A tracecli database seen from one namespace: ingest, add live turns, update, ask, trace, forget."""

    def __init__(self, path: str | Path, namespace: str | None = None, *, embedder: Embedder | None = None,
                 llm: ChatModel | None = None, gap_hours: float = DEFAULT_GAP_HOURS, use_llm_cache: bool = True,
                 ask_settings: AskSettings | None = None, store: Store | None = None) -> None:
        """Open (creating if needed) the database at `path`; `namespace` defaults to 'default'.

        `embedder` and `llm` default to what the CLI uses: TRACECLI_EMBEDDER (MiniLM) and the
        chat model configured by TRACECLI_LLM_URL / TRACECLI_LLM_MODEL (none: offline);
        `use_llm_cache=False` makes that model ask again instead of reusing cached replies.
        `store`: a store the caller has already opened (and closes), used instead of opening `path`.
        """
        self.namespace = check_namespace(namespace)
        if store is not None:
            self.path = store.path
        else:
            self.path = path if is_pg_url(path) else Path(path)  # a postgresql:// URL stays whole
        self.gap_hours = gap_hours
        self._embedder = embedder
        self._llm = llm
        self._use_llm_cache = use_llm_cache
        self._ask_settings = ask_settings
        self._asker: Asker | None = None
        self._owns_store = store is None
        self._store: Store | None = open_store(self.path) if store is None else store

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
            if self._owns_store:
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

            self._llm = get_chat_model(LLMSettings.from_env(use_cache=self._use_llm_cache), store=self.store)
        return self._llm

    def _ns(self, namespace: str | None) -> str:
        """The namespace of this call, which the store is bound to from here on (row-level security)."""
        ns = self.namespace if namespace is None else check_namespace(namespace)
        self.store.bind_namespace(ns)
        return ns

    # -- writing ------------------------------------------------------------------------
    def ingest(self, source: str | Path | Messages, *, conversation: str | None = None, format: str = "auto",
               namespace: str | None = None) -> JSON:
        """Load a chat file (any format `tracecli ingest` reads) or a list of turns; what `ingest --json` prints.

        A list of turns needs `conversation` (see `add`). Everything is stored in
        this Memory's namespace, whatever the file says.
        """
        from tracecli.ingest import parse_inputs

        if not isinstance(source, (str, Path)):
            return self.add(source, conversation=conversation or "", namespace=namespace)
        parsed = parse_inputs([source], format, conversation_id=conversation, namespace=self._ns(namespace),
                              gap_hours=self.gap_hours)
        return {"files": to_jsonable(self.ingest_parsed(parsed))}

    def ingest_parsed(self, parsed: Parsed, *, progress: Callable[[Path], ProgressFn | None] | None = None,
                      on_new: Callable[[int], None] | None = None) -> list[IngestResult]:
        """Store parsed files (`tracecli.ingest.parse_inputs`), each in one transaction; the typed `ingest`.

        Conversations that clash with stored ones are refused before any file is written.
        `progress(path)` gives the embedding progress callback of that file; `on_new(n)` hears each file's
        count of new messages before they are embedded (with several files,
        the run's count, which decides the embedding path: see `tracecli.ingest.pipeline.ingest_parsed`).
        """
        from tracecli.ingest import ingest_parsed
        from tracecli.ingest.pipeline import check_parsed, count_new

        bind_namespaces(self.store, (c.namespace for _, convs in parsed for c in convs))
        check_parsed(self.store, parsed)
        total = count_new(self.store, parsed) if len(parsed) > 1 else None  # one embedding path for all the files
        return [ingest_parsed(self.store, path, convs, self.embedder, progress=progress(path) if progress else None,
                              embed_total=total, on_new=on_new) for path, convs in parsed]

    def add(self, messages: Messages, *, conversation: str, namespace: str | None = None) -> JSON:
        """Append live turns ({speaker, text, timestamp?, id?}) to a conversation; the JSON of `ingest --json`.

        Idempotent (turns already stored are skipped) and incremental: the new
        turns form new sessions, which the next `update()` builds and compiles.
        """
        from tracecli.ingest import ingest_parsed

        conv = self._parse_live(messages, conversation, self._ns(namespace))
        return {"files": to_jsonable(self.ingest_parsed([(Path("messages"), [conv])]))}

    def update(self, *, conversation: str | None = None, namespace: str | None = None) -> JSON:
        """build-graph, then compile-wiki, for what is new: {"build_graph": [...], "compile_wiki": [...]}."""
        done = self.run_update(conversation=conversation, namespace=namespace)
        return {"build_graph": to_jsonable(done.build_graph), "compile_wiki": to_jsonable(done.compile_wiki)}

    def run_update(self, parsed: Parsed = (), *, conversation: str | None = None, namespace: str | None = None,
                   extractor: str = "auto", progress: StageProgress | None = None) -> UpdateResult:
        """The whole pipeline in this process (`tracecli update`): store the parsed files, then build the graph
        and compile the wiki of everything new.

        The namespaces updated are those the files' conversations were stored in (none given: this
        Memory's, or `namespace`); `conversation` limits the graph and wiki to that one.
        `progress(stage, done, total)` hears every stage.
        """
        from tracecli.pipeline import UpdateResult

        def stage(name: str) -> ProgressFn | None:
            return None if progress is None else lambda done, total: progress(name, done, total)

        clock = time.perf_counter
        started = clock()
        result = UpdateResult()
        try:
            if parsed:
                result.ingest = self.ingest_parsed(parsed, progress=lambda path: stage(f"ingest {path.name}: embedding"),
                                                   on_new=self._preload_graph)
            ingested = clock()
            names = sorted({c.namespace for _, convs in parsed for c in convs}) or [self._ns(namespace)]
            for ns in names:
                result.build_graph += self.build_graph(conversation=conversation, extractor=extractor, namespace=ns,
                                                       progress=stage("build-graph: sessions"))
            built = clock()
            for ns in names:
                result.compile_wiki += self.compile_wiki(conversation=conversation, namespace=ns,
                                                         progress=stage("compile-wiki: sessions"))
            compiled = clock()
        finally:
            from tracecli.graph.nlp import wait_for_preload

            # a load `_preload_graph` started ends with the run (build-graph waits for it anyway, unless it had
            # nothing to build, or a stage failed): no thread is left importing spaCy while the process exits
            wait_for_preload()
        result.seconds = {"ingest": round(ingested - started, 3), "build_graph": round(built - ingested, 3),
                          "compile_wiki": round(compiled - built, 3), "total": round(compiled - started, 3)}
        return result

    def _preload_graph(self, new_messages: int) -> None:
        """Once a file turns out to hold new messages, load spaCy and the extractor on a second thread while
        ingest embeds them (`graph.nlp.preload`): build-graph needs both next. Not when the embedding takes
        the torch path (`minilm-torch` on a big ingest): spaCy's import hides torch while it runs."""
        from tracecli.providers.embeddings import imports_torch

        if new_messages and not imports_torch(self.embedder, new_messages):
            from tracecli.graph.nlp import preload

            preload()

    def pending(self, *, conversation: str | None = None, namespace: str | None = None) -> Pending:
        """How many messages of the namespace (or `conversation`) the graph or the wiki has not seen yet."""
        from tracecli.pipeline import pending
        from tracecli.scope import resolve_scope

        return pending(self.store, resolve_scope(self.store, self._ns(namespace), conversation).conversation_ids)

    def build_graph(self, *, conversation: str | None = None, extractor: str = "auto", rebuild: bool = False,
                    progress: ProgressFn | None = None, namespace: str | None = None) -> list[BuildResult]:
        """The evidence graph of what is new (`tracecli build-graph`), one result per conversation."""
        from tracecli.graph.build import build_graph

        return build_graph(self.store, conversation, extractor=extractor, rebuild=rebuild, llm=self.llm,
                           progress=progress, namespace=self._ns(namespace))

    def compile_wiki(self, *, conversation: str | None = None, progress: ProgressFn | None = None,
                     namespace: str | None = None) -> list[CompileResult]:
        """The wiki of what the graph has and the wiki has not (`tracecli compile-wiki`), one result per conversation."""
        from tracecli.wiki import compile_wiki

        return compile_wiki(self.store, conversation, llm=self.llm, embedder=self._embedder, progress=progress,
                            namespace=self._ns(namespace))

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
        ns = self._ns(namespace)
        names = [targets] if isinstance(targets, str) else list(targets)
        if kind == "namespace" and any(t != ns for t in names):
            other = next(t for t in names if t != ns)
            raise BadInput(f"this memory works in namespace '{ns}'; it cannot forget namespace '{other}'")
        return to_jsonable(self.forget_receipt(kind, names, conversation=conversation, dry_run=dry_run, vacuum=vacuum,
                                               namespace=ns))

    def forget_receipt(self, kind: str, targets: Sequence[str], *, conversation: str | None = None,
                       dry_run: bool = False, vacuum: bool = True, namespace: str | None = None) -> ForgetReceipt:
        """The typed `forget` (what `tracecli forget` renders); the wikis it erased are compiled again."""
        from tracecli.forget import forget

        receipt = forget(self.store, kind, list(targets), namespace=self._ns(namespace), conversation_id=conversation,
                         dry_run=dry_run, vacuum=vacuum, recompile=self._recompile)
        self._asker = None  # VACUUM may have rewritten the file under the cached scopes
        return receipt

    def _recompile(self, store: Store, conversation_ids: list[str]) -> None:
        from tracecli.wiki import compile_wiki

        for cid in conversation_ids:
            compile_wiki(store, cid, llm=self.llm, embedder=self._embedder)

    # -- reading ------------------------------------------------------------------------
    def ask(self, question: str, *, as_of: str | None = None, conversation: str | None = None,
            budget: int | None = None, namespace: str | None = None) -> JSON:
        """Answer from the current state (or `as_of` a date); the object `ask --json` prints.

        Not enough evidence is an answer with `abstained: true`, not an error.
        """
        return to_jsonable(self.answer(question, as_of=as_of, conversation=conversation, budget=budget,
                                       namespace=namespace))

    def answer(self, question: str, *, as_of: str | None = None, conversation: str | None = None,
               budget: int | None = None, namespace: str | None = None) -> AskResult:
        """The typed `ask` (what `tracecli ask` renders); one Asker per Memory, so its caches stay warm."""
        if self._asker is None:
            from tracecli.query.ask import Asker

            self._asker = Asker(self.store, embedder=self._embedder, llm=self.llm, settings=self._ask_settings)
        return self._asker.ask(question, conversation_id=conversation, as_of=as_of, budget=budget,
                               namespace=self._ns(namespace))

    def trace(self, answer_id: str, *, namespace: str | None = None) -> JSON:
        """Replay an answer: paths, events, claims and source messages; what `trace --json` prints."""
        return to_jsonable(self.trace_result(answer_id, namespace=namespace))

    def trace_result(self, answer_id: str, *, namespace: str | None = None) -> TraceResult:
        """The typed `trace` (what `tracecli trace` renders)."""
        from tracecli.query.trace import trace_answer

        return trace_answer(self.store, answer_id, namespace=self._ns(namespace))

    def wiki_page(self, slug: str, *, conversation: str | None = None, namespace: str | None = None) -> JSON:
        """One wiki page with its markdown; what `wiki show --json` prints."""
        return to_jsonable(self.page(slug, conversation=conversation, namespace=namespace))

    def page(self, slug: str, *, conversation: str | None = None, namespace: str | None = None) -> PageInfo:
        """The typed `wiki_page` (what `tracecli wiki show` renders)."""
        from tracecli.wiki import get_page

        return get_page(self.store, slug, conversation, namespace=self._ns(namespace))

    def wiki_pages(self, *, conversation: str | None = None, page_type: str | None = None,
                   namespace: str | None = None) -> JSON:
        """The wiki's pages without their markdown; what `wiki list --json` prints."""
        pages = self.pages(conversation=conversation, page_type=page_type, namespace=namespace)
        return {"pages": [{k: v for k, v in to_jsonable(p).items() if k != "markdown"} for p in pages]}

    def pages(self, *, conversation: str | None = None, page_type: str | None = None,
              namespace: str | None = None) -> list[PageInfo]:
        """The typed `wiki_pages` (what `tracecli wiki list` renders)."""
        from tracecli.wiki import list_pages

        return list_pages(self.store, conversation, page_type, namespace=self._ns(namespace))

    def export_wiki(self, directory: str | Path, *, conversation: str | None = None,
                    namespace: str | None = None) -> list[tuple[str, str, Path]]:
        """Write the wiki as an Obsidian vault under `directory` (what `tracecli wiki export` does):
        (conversation, page slug or 'claims/<id>', path) for every file written."""
        from tracecli.wiki import export_pages

        return export_pages(self.store, directory, conversation, namespace=self._ns(namespace))

    def claims_history(self, query: str, *, conversation: str | None = None, namespace: str | None = None) -> JSON:
        """The ADD → REVISE → DEPRECATE history of the claims matching `query`; what `claims history --json` prints."""
        return {"chains": to_jsonable(self.claim_chains(query, conversation=conversation, namespace=namespace))}

    def claim_chains(self, query: str, *, conversation: str | None = None, namespace: str | None = None,
                     ) -> list[ClaimChain]:
        """The typed `claims_history` (what `tracecli claims history` renders)."""
        from tracecli.wiki import claim_history

        return claim_history(self.store, query, conversation, namespace=self._ns(namespace))

    def stats(self, *, namespace: str | None = None) -> JSON:
        """What `stats --json` prints, with `conversations` limited to the namespace (table counts are the file's)."""
        ns = self._ns(namespace)
        out = to_jsonable(self.file_stats())
        out["conversations"] = [c for c in out["conversations"] if c["namespace"] == ns]
        return out

    def file_stats(self) -> Stats:
        """The whole file's statistics, every namespace (what `tracecli stats` renders)."""
        from tracecli.stats import collect_stats

        return collect_stats(self.store)

    # -- parsing ------------------------------------------------------------------------
    def _parse_live(self, messages: Any, conversation: str | None, namespace: str) -> ParsedConversation:
        from tracecli.ingest.live import parse_messages

        return parse_messages(messages, conversation or "", namespace=namespace, gap_hours=self.gap_hours)


__all__ = ["Memory"]
