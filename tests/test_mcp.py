"""`tracecli mcp` as a subprocess, driven by the official MCP client over stdio and over streamable HTTP.

Each test starts one server (one embedding-model load) and runs the whole
scenario through it: tools and resources listed, a conversation remembered in
three turns with a revision in the third, the revised answer with its source,
trace, forget, namespaces, and bad arguments answered with one-line error
results while the server keeps serving.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from memory_scenario import (CONVERSATION, NEW, OLD, QUESTION, REVISION_REF, TURNS, assert_forgotten, assert_revised,
                             assert_traced)
from tracecli.cli import app

mcp = pytest.importorskip("mcp")
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TOOL_NAMES = {"remember", "ask", "trace", "forget", "wiki_page", "claims_history", "stats"}
START_DEADLINE_S = 180  # a hang guard for a loaded machine, not a performance check


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "TOKENIZERS_PARALLELISM": "false", **extra}


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tracecli.cli", "mcp", *args]


async def _ok(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text) == result.structured_content  # text and structure say the same
    return result.structured_content


async def _error(client: Client, tool: str, arguments: dict[str, Any], match: str) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    text = result.content[0].text
    assert "\n" not in text and "Traceback" not in text, text
    assert match in text, text
    return text


async def _scenario(client: Client, namespace: str) -> None:
    """List, remember in three turns, ask, trace, read the wiki, forget: the issue's scenario."""
    tools = (await client.list_tools()).tools
    assert {t.name for t in tools} == TOOL_NAMES
    for tool in tools:
        assert "Returns" in (tool.description or ""), tool.name
        assert "namespace" in tool.input_schema["properties"], tool.name
    templates = (await client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["wiki://{namespace}/{slug}"]
    assert (await client.list_resources()).resources == []  # nothing remembered yet

    for n, turn in enumerate(TURNS, 1):
        out = await _ok(client, "remember", {"conversation": CONVERSATION, "messages": turn})
        assert out["ingest"]["files"][0]["conversations"][0]["new_messages"] == len(turn)
        assert (out["build_graph"][0]["sessions_processed"], out["build_graph"][0]["sessions_total"]) == (1, n)
    again = await _ok(client, "remember", {"conversation": CONVERSATION, "messages": TURNS[0]})
    assert again["ingest"]["files"][0]["conversations"][0]["new_messages"] == 0

    answer = await _ok(client, "ask", {"question": QUESTION})
    assert_revised(answer)
    assert answer["namespace"] == namespace
    assert_traced(await _ok(client, "trace", {"answer_id": answer["answer_id"]}), answer)

    uris = [r.uri for r in (await client.list_resources()).resources]
    assert f"wiki://{namespace}/index" in uris
    index = (await client.read_resource(f"wiki://{namespace}/index")).contents[0]
    assert index.text == (await _ok(client, "wiki_page", {"slug": "index"}))["markdown"]
    chains = (await _ok(client, "claims_history", {"query": NEW}))["chains"]
    assert any(NEW in text for chain in chains for text in chain["current"])
    stats = await _ok(client, "stats", {})
    assert [c["messages"] for c in stats["conversations"]] == [sum(len(t) for t in TURNS)]

    dry = await _ok(client, "forget", {"kind": "message", "targets": [REVISION_REF], "dry_run": True})
    assert dry["dry_run"] and (await _ok(client, "stats", {}))["tables"] == stats["tables"]
    receipt = await _ok(client, "forget", {"kind": "message", "targets": [REVISION_REF]})
    assert_forgotten(receipt, await _ok(client, "ask", {"question": QUESTION}))
    await _error(client, "trace", {"answer_id": answer["answer_id"]}, "no answer")


#: bad calls and a word of the one-line error each must give
BAD_CALLS = [
    ("ask", {}, "arguments: 'question' is a required property"),
    ("ask", {"question": 42}, "question: 42 is not of type 'string'"),
    ("ask", {"question": QUESTION, "as_off": "2024-01-01"}, "('as_off' was unexpected)"),
    ("ask", {"question": QUESTION, "as_of": "someday maybe"}, "as-of"),
    ("remember", {"conversation": CONVERSATION, "messages": []}, "messages: [] should be non-empty"),
    ("remember", {"conversation": CONVERSATION, "messages": [{"speaker": "Maya"}]}, "messages[0]: 'text' is a required property"),
    ("remember", {"conversation": CONVERSATION, "messages": [{"speaker": "Maya", "text": "hi", "timestamp": "soon"}]},
     "date"),
    ("forget", {"kind": "planet", "targets": ["x"]}, "is not one of"),
    ("forget", {"kind": "message", "targets": ["zz9"]}, "no message 'zz9'"),
    ("wiki_page", {"slug": "no-such-page"}, "no wiki page"),
    ("no_such_tool", {}, "unknown tool"),
]


async def _bad_arguments(client: Client) -> None:
    for tool, arguments, match in BAD_CALLS:
        await _error(client, tool, arguments, match)
        await _ok(client, "stats", {})  # still serving


def test_stdio_scenario_locked_namespace_and_bad_arguments(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    params = StdioServerParameters(command=sys.executable, args=_command("--db", str(db), "--namespace", "maya",
                                                                           "--lock-namespace")[1:],
                                   env=_env(), cwd=str(tmp_path))

    async def main() -> None:
        with (tmp_path / "server.err").open("w") as errlog:
            with anyio.fail_after(START_DEADLINE_S + 600):
                async with Client(stdio_client(params, errlog=errlog)) as client:
                    await _scenario(client, "maya")
                    await _error(client, "ask", {"question": QUESTION, "namespace": "other"}, "locked to namespace 'maya'")
                    await _error(client, "remember", {"conversation": "x", "messages": TURNS[0], "namespace": "other"},
                                 "namespace 'other' is refused")
                    await _error(client, "forget", {"kind": "namespace", "targets": ["other"]}, "cannot forget namespace")
                    with pytest.raises(MCPError, match="locked to namespace 'maya'"):
                        await client.read_resource("wiki://other/index")
                    with pytest.raises(MCPError, match="not a wiki page"):
                        await client.read_resource("wiki://maya")
                    await _bad_arguments(client)
                    assert (await _ok(client, "stats", {"namespace": "maya"}))["conversations"]

    anyio.run(main)


def _free_port() -> int:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(proc: subprocess.Popen[bytes], port: int, errlog: Path) -> None:
    deadline = time.monotonic() + START_DEADLINE_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited ({proc.returncode}): {errlog.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"the server did not listen on {port}: {errlog.read_text()[-2000:]}")


def test_http_scenario_and_namespaces(tmp_path: Path) -> None:
    db, port, errlog = tmp_path / "agent.db", _free_port(), tmp_path / "server.err"
    # the default namespace comes from TRACECLI_NAMESPACE; the server is not locked
    with errlog.open("wb") as err:
        proc = subprocess.Popen(_command("--http", f"127.0.0.1:{port}", "--db", str(db)), env=_env(TRACECLI_NAMESPACE="maya"),
                                cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    try:
        _wait_for_port(proc, port, errlog)

        async def main() -> None:
            with anyio.fail_after(START_DEADLINE_S + 600):
                async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                    await _scenario(client, "maya")
                    await _error(client, "ask", {"question": QUESTION, "namespace": "other"},
                                 "namespace 'other' has no conversations")
                    out = await _ok(client, "remember", {"conversation": "elsewhere", "messages": TURNS[0],
                                                         "namespace": "other"})
                    assert out["ingest"]["files"][0]["conversations"][0]["namespace"] == "other"
                    other = await _ok(client, "stats", {"namespace": "other"})
                    assert [c["conversation_id"] for c in other["conversations"]] == ["elsewhere"]
                    mine = await _ok(client, "stats", {})
                    assert [c["conversation_id"] for c in mine["conversations"]] == [CONVERSATION]
                    # the revision told again in 'maya' stays there: 'other' only knows the first plan
                    await _ok(client, "remember", {"conversation": CONVERSATION, "messages": TURNS[2]})
                    assert_revised(await _ok(client, "ask", {"question": QUESTION}))
                    theirs = await _ok(client, "ask", {"question": QUESTION, "namespace": "other"})
                    assert OLD in theirs["answer"] and NEW not in theirs["answer"], theirs["answer"]
                    for tool, arguments, match in BAD_CALLS[:3]:
                        await _error(client, tool, arguments, match)
                    await _ok(client, "stats", {})

        anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(timeout=60)


@pytest.mark.parametrize("address", ["nope", "127.0.0.1", "127.0.0.1:99999", ":80"])
def test_bad_http_address_is_a_usage_error(tmp_path: Path, address: str) -> None:
    result = CliRunner().invoke(app, ["mcp", "--http", address, "--db", str(tmp_path / "x.db")])
    assert result.exit_code == 2
    assert "expected HOST:PORT" in result.output
    assert not (tmp_path / "x.db").exists()


def test_a_taken_port_is_a_usage_error(tmp_path: Path) -> None:
    with closing(socket.create_server(("127.0.0.1", 0))) as taken:
        port = taken.getsockname()[1]
        result = CliRunner().invoke(app, ["mcp", "--http", f"127.0.0.1:{port}", "--db", str(tmp_path / "x.db")])
    assert result.exit_code == 2
    assert f"127.0.0.1:{port}: cannot listen there" in result.output
    assert "Traceback" not in result.output
