"""`tracecli mcp`: the memory as a Model Context Protocol server (the official `mcp` SDK's low-level `Server`).

Tools call `tracecli.Memory` and return the JSON the matching CLI command
prints with `--json` (as structured content and as text). Resources are the
wiki pages, `wiki://{namespace}/{slug}`.

Arguments are checked against each tool's input schema here, so a bad call
gets an error result with one line naming the argument, never a traceback,
and the server keeps serving. Writes (`remember`, `forget`) run one at a time
on a writer thread; reads run on a reader thread with a connection of their
own, so the WAL file lets them proceed while a write is in progress; `ask`,
which stores its answer, takes the write lock too and so waits for the write.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote, urlsplit

import mcp_types as types
from mcp.server import Server
from mcp.shared.exceptions import MCPError

from tracecli import __version__
from tracecli.api import Memory
from tracecli.errors import BadInput, TraceError
from tracecli.forget import KINDS
from tracecli.providers.jsonschema import schema_error
from tracecli.scope import check_namespace
from tracecli.store.db import is_pg_url, sqlite3  # the driver the store connects with

if TYPE_CHECKING:
    from tracecli.providers.embeddings import Embedder
    from tracecli.providers.llm import ChatModel

log = logging.getLogger("tracecli.mcp")
T = TypeVar("T")

_NAMESPACE = {"type": "string", "description": "Namespace (user or agent) to work in; default: the server's namespace."}
_CONVERSATION = {"type": "string", "description": "Only this conversation (default: every conversation of the namespace)."}


def _schema(required: list[str], **props: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {**props, "namespace": _NAMESPACE}, "required": required,
            "additionalProperties": False}


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its MCP definition, whether it writes, and the Memory call that serves it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    writes: bool
    call: Callable[[Memory, dict[str, Any], str], dict[str, Any]]

    def definition(self) -> types.Tool:
        hints = types.ToolAnnotations(read_only_hint=not self.writes, destructive_hint=self.name == "forget",
                                      idempotent_hint=self.name != "ask", open_world_hint=False)
        return types.Tool(name=self.name, description=self.description, input_schema=self.input_schema,
                          annotations=hints)


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "remember",
        "Append chat turns to a conversation (created on first use), then update its evidence graph and wiki "
        "incrementally. Sending the same turns again adds nothing. Returns {ingest: {files: [...]}, build_graph: "
        "[...], compile_wiki: [...]}: per conversation, the messages, sessions, events, updates and claims added.",
        _schema(["conversation", "messages"], conversation={"type": "string", "minLength": 1,
                                                            "description": "Conversation id to append to."},
                messages={"type": "array", "minItems": 1, "description": "The turns, oldest first.", "items": {
                    "type": "object", "required": ["speaker", "text"], "additionalProperties": False, "properties": {
                        "speaker": {"type": "string", "minLength": 1},
                        "text": {"type": "string", "minLength": 1},
                        "timestamp": {"type": "string", "description": "ISO-8601 time of the turn (recommended)."},
                        "id": {"type": "string", "description": "Your id for the turn; answers cite it."}}}}),
        True, lambda m, a, ns: m.remember(a["messages"], conversation=a["conversation"], namespace=ns),
    ),
    ToolSpec(
        "ask",
        "Answer a question from the current state of the remembered conversations (or as of a date): superseded "
        "facts never answer a question about now. Returns the object `tracecli ask --json` prints: answer_id, "
        "answer, abstained (true when there is not enough evidence), plan, as_of, source_refs (the ids of the "
        "messages behind the answer), confidence, support, context and evidence paths.",
        _schema(["question"], question={"type": "string", "minLength": 1},
                as_of={"type": "string", "description": "Answer from the state valid at this date, e.g. 2024-03-01."},
                conversation=_CONVERSATION),
        False, lambda m, a, ns: m.ask(a["question"], as_of=a.get("as_of"), conversation=a.get("conversation"),
                                      namespace=ns),
    ),
    ToolSpec(
        "trace",
        "Replay an earlier answer of `ask`: its evidence paths with relation labels and validity markers, the "
        "events, claims and source messages. Returns the object `tracecli trace --json` prints.",
        _schema(["answer_id"], answer_id={"type": "string", "minLength": 1,
                                          "description": "The answer_id that `ask` returned (ans_...)."}),
        False, lambda m, a, ns: m.trace(a["answer_id"], namespace=ns),
    ),
    ToolSpec(
        "forget",
        "Delete messages and everything derived from them (events, claims, wiki text, stored answers); the older "
        "value of a fact becomes current again when its newer value is forgotten. kind: message (ids or refs), "
        "session, conversation, speaker, or namespace (this namespace only). With dry_run nothing changes. "
        "Returns the deletion receipt `tracecli forget --json` prints: message ids and rows removed per table.",
        _schema(["kind", "targets"], kind={"type": "string", "enum": list(KINDS)},
                targets={"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
                conversation=_CONVERSATION, dry_run={"type": "boolean", "description": "Report only; change nothing."}),
        True, lambda m, a, ns: m.forget(a["kind"], a["targets"], conversation=a.get("conversation"),
                                        dry_run=bool(a.get("dry_run", False)), namespace=ns),
    ),
    ToolSpec(
        "wiki_page",
        "Read one Memory Wiki page (index, entity, inventory or topic) by slug or page id. Returns the object "
        "`tracecli wiki show --json` prints, with the page's markdown.",
        _schema(["slug"], slug={"type": "string", "minLength": 1, "description": "e.g. index, or a person's slug."},
                conversation=_CONVERSATION),
        False, lambda m, a, ns: m.wiki_page(a["slug"], conversation=a.get("conversation"), namespace=ns),
    ),
    ToolSpec(
        "claims_history",
        "The ADD -> REVISE -> DEPRECATE history of the facts whose claims match a query (words or a claim id). "
        "Returns {chains: [...]} as `tracecli claims history --json` prints: per fact, what is current now and "
        "every step with its date, quote and source refs.",
        _schema(["query"], query={"type": "string", "minLength": 1}, conversation=_CONVERSATION),
        False, lambda m, a, ns: m.claims_history(a["query"], conversation=a.get("conversation"), namespace=ns),
    ),
    ToolSpec(
        "stats",
        "Counts of what the memory holds. Returns the object `tracecli stats --json` prints (rows per table, "
        "embedding model, schema version), with conversations limited to the namespace.",
        _schema([]),
        False, lambda m, a, ns: m.stats(namespace=ns),
    ),
)
TOOLS_BY_NAME = {t.name: t for t in TOOLS}
#: tools that write to the file and so take the server's write lock: the writes, and `ask`, which stores its
#: answer (what `trace` replays). A deferred write transaction fails at once, without waiting, when another
#: connection commits after the transaction's first read, so an answer stored in the middle of a `remember`
#: would fail it; the other reads never wait.
LOCKING = frozenset({"remember", "forget", "ask"})
WIKI_TEMPLATE = "wiki://{namespace}/{slug}"


def one_line(text: str, limit: int = 400) -> str:
    """An error message as one line of at most `limit` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def parse_wiki_uri(uri: str) -> tuple[str, str]:
    """'wiki://alice/index' → ('alice', 'index'); BadInput for anything else."""
    parts = urlsplit(uri)
    slug = unquote(parts.path.lstrip("/"))
    if parts.scheme != "wiki" or not parts.netloc or not slug or "/" in slug:
        raise BadInput(f"'{uri}' is not a wiki page; expected {WIKI_TEMPLATE}")
    return unquote(parts.netloc), slug


class _Lane:
    """One worker thread with its own Memory (SQLite connections stay on the thread that opened them)."""

    def __init__(self, name: str, opener: Callable[[], Memory]) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"tracecli-{name}")
        self._opener = opener
        self._local = threading.local()

    def _memory(self) -> Memory:
        mem = getattr(self._local, "memory", None)
        if mem is None:
            mem = self._local.memory = self._opener()
        return mem

    async def run(self, fn: Callable[[Memory], T]) -> T:
        return await asyncio.wrap_future(self._pool.submit(lambda: fn(self._memory())))

    def close(self) -> None:
        def shut() -> None:
            mem = getattr(self._local, "memory", None)
            if mem is not None:
                mem.close()

        self._pool.submit(shut).result()
        self._pool.shutdown(wait=True)


class MemoryServer:
    """The MCP server over one database file: tools, wiki resources, namespace policy, reader and writer lanes."""

    def __init__(self, db: str | Path, *, namespace: str | None = None, lock_namespace: bool = False,
                 embedder: Embedder | None = None, llm: ChatModel | None = None) -> None:
        self.db = db if is_pg_url(db) else Path(db)  # a postgresql:// URL stays whole
        self.namespace = check_namespace(namespace)
        self.lock_namespace = lock_namespace

        def opener() -> Memory:
            return Memory(self.db, self.namespace, embedder=embedder, llm=llm)

        # one writer at a time; reads on a connection of their own
        self.writer = _Lane("write", opener)
        self.reader = _Lane("read", opener)
        self.write_lock = asyncio.Lock()
        self.server: Server[Any] = Server(
            "tracecli", version=__version__,
            instructions="State-aware memory of conversations: `remember` chat turns, then `ask` what is true now "
                         "(revised facts replace old ones) and `trace` an answer to its source messages.",
            on_list_tools=self._list_tools, on_call_tool=self._call_tool, on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_templates, on_read_resource=self._read_resource,
        )

    def close(self) -> None:
        """Close both lanes' databases and stop their threads."""
        self.writer.close()
        self.reader.close()

    def check_namespace(self, requested: Any) -> str:
        """The namespace a call works in; BadInput when the server is locked to another."""
        if requested is None:
            return self.namespace
        ns = check_namespace(str(requested))
        if self.lock_namespace and ns != self.namespace:
            raise BadInput(f"this server is locked to namespace '{self.namespace}'; namespace '{ns}' is refused")
        return ns

    # -- tools ----------------------------------------------------------------------------
    async def _list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[t.definition() for t in TOOLS])

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await self.call(params.name, dict(params.arguments or {}))

    async def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Run one tool call; every failure becomes an error result with one line."""
        tool = TOOLS_BY_NAME.get(name)
        try:
            if tool is None:
                raise BadInput(f"unknown tool '{name}'; tools: {', '.join(TOOLS_BY_NAME)}")
            problem = schema_error(arguments, tool.input_schema, top="arguments")
            if problem:
                raise BadInput(f"bad arguments: {problem}")
            ns = self.check_namespace(arguments.get("namespace"))
            lane = self.writer if tool.writes else self.reader
            if tool.name in LOCKING:
                # waited for here, not on the lane's thread, so the reads queued behind an ask are not held up
                async with self.write_lock:
                    result = await lane.run(lambda mem: tool.call(mem, arguments, ns))
            else:
                result = await lane.run(lambda mem: tool.call(mem, arguments, ns))
        except TraceError as exc:
            return _error(f"{name}: {exc}")
        except Exception as exc:  # a bug must not take the server down: log it, answer with one line
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                return _error(f"{name}: the database stayed locked by another writer ({exc}); try again")
            log.exception("tool %s failed", name)
            return _error(f"{name}: internal error ({type(exc).__name__}: {exc})")
        text = json.dumps(result, ensure_ascii=False)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=result)

    # -- resources ------------------------------------------------------------------------
    async def _list_resources(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        try:
            pages = (await self.reader.run(lambda mem: mem.wiki_pages()))["pages"]
        except TraceError:  # nothing remembered yet in this namespace
            pages = []
        slugs = [p["slug"] for p in pages]
        return types.ListResourcesResult(resources=[
            types.Resource(
                # a slug shared by two conversations' pages is ambiguous: those pages are named by id
                uri=f"wiki://{self.namespace}/{p['slug'] if slugs.count(p['slug']) == 1 else p['id']}",
                name=p["title"], mime_type="text/markdown",
                description=f"{p['type']} page of conversation {p['conversation_id']}",
            )
            for p in pages
        ])

    async def _list_templates(self, ctx: Any,
                              params: types.PaginatedRequestParams | None) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[types.ResourceTemplate(
            uri_template=WIKI_TEMPLATE, name="wiki page", mime_type="text/markdown",
            description="A Memory Wiki page as markdown, by namespace and slug (or page id); slug 'index' is the "
                        "index page.",
        )])

    async def _read_resource(self, ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            namespace, slug = parse_wiki_uri(uri)
            ns = self.check_namespace(namespace)
            page = await self.reader.run(lambda mem: mem.wiki_page(slug, namespace=ns))
        except TraceError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=one_line(str(exc))) from None
        return types.ReadResourceResult(contents=[
            types.TextResourceContents(uri=uri, mime_type="text/markdown", text=page["markdown"])])

    # -- transports -------------------------------------------------------------------------
    async def run_stdio(self) -> None:
        """Serve one client on stdin/stdout until it closes the stream."""
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    async def run_http(self, listener: socket.socket, host: str) -> None:
        """Serve streamable HTTP at http://HOST:PORT/mcp on a bound socket until interrupted."""
        import uvicorn

        app = self.server.streamable_http_app(host=host)
        await uvicorn.Server(uvicorn.Config(app, log_level="warning")).serve(sockets=[listener])


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=one_line(message))], is_error=True)


def parse_http_address(value: str) -> tuple[str, int]:
    """'127.0.0.1:8765' → ('127.0.0.1', 8765), or BadInput."""
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise BadInput(f"--http {value!r}: expected HOST:PORT, e.g. 127.0.0.1:8765")
    return host.strip("[]"), int(port)


def listen(address: str) -> tuple[socket.socket, str]:
    """A socket listening on HOST:PORT, and the host; BadInput when the address is malformed or taken."""
    host, port = parse_http_address(address)
    try:
        return socket.create_server((host, port)), host
    except OSError as exc:
        raise BadInput(f"--http {address}: cannot listen there ({exc.strerror or exc})") from None


def serve(db: str | Path, *, namespace: str | None = None, lock_namespace: bool = False, http: str | None = None) -> None:
    """Run the server on stdio (or streamable HTTP at `http`, HOST:PORT) until the client or a signal stops it."""
    from tracecli.blas import one_blas_thread

    listener = listen(http) if http else None
    server = MemoryServer(db, namespace=namespace, lock_namespace=lock_namespace)
    # A server answers one small question at a time; idle OpenBLAS workers busy-wait and took the CPU from the
    # other lane and from the client on a 2-core machine (see tracecli/blas.py): one BLAS thread for its lifetime.
    try:
        with one_blas_thread():
            if listener is not None:
                asyncio.run(server.run_http(*listener))
            else:
                asyncio.run(server.run_stdio())
    finally:
        if listener is not None:
            listener[0].close()
        server.close()


__all__ = ["MemoryServer", "TOOLS", "listen", "parse_http_address", "parse_wiki_uri", "serve"]
