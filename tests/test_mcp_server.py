"""`tracecli.mcp_server` in-process: reads while a write holds the database, writes and asks in turn, schemas, URIs."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from memory_scenario import CONVERSATION, NEW, QUESTION, TURNS, assert_revised
from tracecli.errors import BadInput
from tracecli.mcp_server import TOOLS, MemoryServer, one_line, parse_http_address, parse_wiki_uri

jsonschema = pytest.importorskip("jsonschema")
HANG_GUARD_S = 120  # only stops a deadlock from hanging the suite


def _structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return result.structured_content


def test_reads_run_while_a_write_holds_the_database(db_path: Path, embedder: Any) -> None:
    server = MemoryServer(db_path, namespace="maya", embedder=embedder)
    gate, holding = threading.Event(), threading.Event()

    def hold_sqlite_write_lock(mem: Any) -> None:
        mem.store.execute("BEGIN IMMEDIATE")
        holding.set()
        try:
            assert gate.wait(HANG_GUARD_S)
        finally:
            mem.store.execute("ROLLBACK")

    async def a_long_write() -> None:
        # what a remember or forget holds while it writes: the server's write lock and SQLite's
        async with server.write_lock:
            await server.writer.run(hold_sqlite_write_lock)

    async def main() -> None:
        for turn in TURNS:
            _structured(await server.call("remember", {"conversation": CONVERSATION, "messages": turn}))
        answer = _structured(await server.call("ask", {"question": QUESTION}))
        assert_revised(answer)
        writing = asyncio.ensure_future(a_long_write())
        await asyncio.to_thread(holding.wait, HANG_GUARD_S)
        queued_write = asyncio.ensure_future(server.call("remember", {"conversation": CONVERSATION, "messages": [
            {"speaker": "Tom", "text": "See you in Bilbao then!", "timestamp": "2024-07-16T08:00:00Z"}]}))
        queued_ask = asyncio.ensure_future(server.call("ask", {"question": QUESTION}))
        try:
            reads = [("trace", {"answer_id": answer["answer_id"]}), ("stats", {}), ("wiki_page", {"slug": "index"}),
                     ("claims_history", {"query": NEW})]
            for tool, arguments in reads:
                _structured(await asyncio.wait_for(server.call(tool, arguments), HANG_GUARD_S))
            # the second write waits for the first, and so does ask, which stores its answer
            assert not queued_write.done() and not queued_ask.done()
        finally:
            gate.set()
        await asyncio.wait_for(writing, HANG_GUARD_S)
        added = _structured(await asyncio.wait_for(queued_write, HANG_GUARD_S))
        assert added["ingest"]["files"][0]["conversations"][0]["new_messages"] == 1
        assert_revised(_structured(await asyncio.wait_for(queued_ask, HANG_GUARD_S)))

    try:
        asyncio.run(main())
    finally:
        server.close()


def test_asks_and_remembers_at_once_all_succeed(any_db: str, embedder: Any) -> None:
    """An answer stored between a write's first read and its first write must not fail the write (on an SQLite
    file and on PostgreSQL)."""
    server = MemoryServer(any_db, namespace="maya", embedder=embedder)
    chatter = [{"speaker": "Tom" if i % 2 else "Maya", "text": f"Message number {i} about the flat hunt in {NEW}.",
                "timestamp": f"2024-07-{16 + i // 4:02d}T{8 + i % 4:02d}:00:00Z"} for i in range(12)]

    async def main() -> None:
        _structured(await server.call("remember", {"conversation": CONVERSATION, "messages": TURNS[0]}))

        async def writes() -> None:
            for i in range(0, len(chatter), 3):
                _structured(await server.call("remember", {"conversation": CONVERSATION, "messages": chatter[i:i + 3]}))

        async def asks() -> None:
            for _ in range(8):
                _structured(await server.call("ask", {"question": QUESTION}))

        await asyncio.wait_for(asyncio.gather(writes(), asks()), HANG_GUARD_S * 3)
        stats = _structured(await server.call("stats", {}))
        assert stats["conversations"][0]["messages"] == len(TURNS[0]) + len(chatter)

    try:
        asyncio.run(main())
    finally:
        server.close()


def test_tool_definitions() -> None:
    names = [t.name for t in TOOLS]
    assert names == ["remember", "ask", "trace", "forget", "wiki_page", "claims_history", "stats"]
    for tool in TOOLS:
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        assert tool.input_schema["additionalProperties"] is False
        assert "namespace" in tool.input_schema["properties"] and "namespace" not in tool.input_schema["required"]
        definition = tool.definition()
        assert definition.annotations is not None
        assert definition.annotations.read_only_hint is (tool.name not in ("remember", "forget"))
    assert {t.name for t in TOOLS if t.writes} == {"remember", "forget"}


@pytest.mark.parametrize("uri, expected", [
    ("wiki://maya/index", ("maya", "index")),
    ("wiki://maya/maya-tom%20notes", ("maya", "maya-tom notes")),
    ("wiki://maya/wp_4ae2b70350", ("maya", "wp_4ae2b70350")),
])
def test_parse_wiki_uri(uri: str, expected: tuple[str, str]) -> None:
    assert parse_wiki_uri(uri) == expected


@pytest.mark.parametrize("uri", ["wiki://maya", "wiki://maya/", "http://maya/index", "wiki:///index", "wiki://maya/a/b"])
def test_parse_wiki_uri_refuses(uri: str) -> None:
    with pytest.raises(BadInput, match="not a wiki page"):
        parse_wiki_uri(uri)


def test_parse_http_address() -> None:
    assert parse_http_address("127.0.0.1:8765") == ("127.0.0.1", 8765)
    assert parse_http_address("[::1]:9000") == ("::1", 9000)
    for bad in ("8765", "127.0.0.1:", "127.0.0.1:0", "host:http"):
        with pytest.raises(BadInput):
            parse_http_address(bad)


def test_one_line() -> None:
    assert one_line("a\n  b\tc") == "a b c"
    assert len(one_line("x" * 1000, limit=50)) == 50


def test_locked_server_refuses_before_touching_the_file(db_path: Path) -> None:
    server = MemoryServer(db_path, namespace="maya", lock_namespace=True)
    try:
        result = asyncio.run(server.call("stats", {"namespace": "bob"}))
        assert result.is_error and "locked to namespace 'maya'" in result.content[0].text
        assert not db_path.exists()
        assert server.check_namespace(None) == "maya" and server.check_namespace("maya") == "maya"
    finally:
        server.close()
