"""compile-wiki with an LLM: structured claims validated like offline ones, matcher and pages with fallbacks."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_wiki_common import UPDATE_HEAVY, half_file, ingest

from tracecli.graph.build import build_graph
from tracecli.providers.llm import LLMSettings, OpenAIChatModel
from tracecli.store import open_store
from tracecli.wiki import compile_wiki, replay

CID = "alice-bob-plans"
_LINE = re.compile(r"^M(\d+) \[[^\]]*\] (\w+): (.*)$")


class ScriptedLLM:
    """A MockTransport handler that answers each compile-wiki task plausibly (and sometimes badly)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: dict[str, int] = {}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        fmt = body.get("response_format") or {}
        task = fmt.get("json_schema", {}).get("name", "page") if fmt else "page"
        with self.lock:
            n = self.calls[task] = self.calls.get(task, 0) + 1
        user = body["messages"][-1]["content"]
        if task == "exchange_claims":
            claims = []
            for line in user.splitlines():
                m = _LINE.match(line)
                if not m:
                    continue
                label, speaker, text = f"M{m.group(1)}", m.group(2), m.group(3)
                words = text.split()
                if len(words) < 4 or text.rstrip().endswith("?"):
                    continue
                quote = " ".join(words[:4])
                claims.append({"text": f"{speaker} said that {quote.lower()}", "subject": speaker, "source": label,
                               "supporting_quote": quote, "status": "active"})
                claims.append({"text": f"{speaker} owns a yacht", "subject": speaker, "source": label,
                               "supporting_quote": "I own a yacht", "status": "active"})  # ungrounded
            content: Any = {"claims": claims}
        elif task == "trajectory_match":
            content = ({"decision": "CONTINUE", "selected_candidate": "T1", "rationale": "same thread"} if n % 3 == 0
                       else {"decision": "NEW", "selected_candidate": None, "rationale": "different"})
        elif task == "claim_transition":
            content = {"decision": "ADD", "selected_candidate": None, "rationale": "new detail"}
        else:
            ids = re.findall(r"\bcl_[0-9a-f]{10}\b", user)
            if n % 2 or not ids:
                content = "Sorry, I cannot help with that."
            else:
                content = (f"## Overview\nA page.\n## Key Facts\n- First fact [{ids[0]}]\n## Items/Counts\n- one\n"
                           "## Linked Trajectories\n- see below\n## Conflicts/Uncertainty\n- nothing to report\n")
        text = content if isinstance(content, str) else json.dumps(content)
        return httpx.Response(200, json={"choices": [{"message": {"role": "assistant", "content": text}}],
                                         "usage": {"prompt_tokens": 10, "completion_tokens": 5}})


@pytest.fixture
def llm_db(tmp_path: Path, embedder: Any) -> Path:
    path = tmp_path / "llm.db"
    store = open_store(path)
    try:
        ingest(store, [half_file(UPDATE_HEAVY, tmp_path / "three.json", 3)], embedder)
        build_graph(store, CID, extractor="rules")
    finally:
        store.close()
    return path


def _model(store: Any, handler: ScriptedLLM) -> OpenAIChatModel:
    settings = LLMSettings(provider="openai", url="http://llm.test/v1", model="scripted", max_retries=0, concurrency=2)
    return OpenAIChatModel(settings, store, httpx.Client(transport=httpx.MockTransport(handler)))


def test_llm_mode_validates_and_falls_back(llm_db: Path, embedder: Any) -> None:
    handler = ScriptedLLM()
    store = open_store(llm_db, create=False)
    try:
        res = compile_wiki(store, CID, llm=_model(store, handler), embedder=embedder)[0]
        assert res.mode == "llm" and res.llm_calls > 0
        assert res.ungrounded_dropped > 0  # every yacht was dropped
        assert handler.calls.get("exchange_claims", 0) > 0 and handler.calls.get("trajectory_match", 0) > 0
        claims = store.query("SELECT * FROM claims WHERE conversation_id = ?", (CID,))
        texts = dict(store.execute("SELECT id, text FROM messages").fetchall())
        assert all(any(c["supporting_quote"] in texts[m] for m in json.loads(c["source_message_ids"])) for c in claims)
        assert not any("yacht" in c["text"] for c in claims)
        assert {c["origin"] for c in claims} == {"llm", "rules"}  # faceted claims stay templated
        porto = [c for c in claims if c["text"] == "Alice is moving to Porto."]
        assert porto and porto[0]["predecessor_id"]  # the update is still a REVISE
        assert replay(store, CID) == {r[0]: (r[1], r[2]) for r in store.execute(
            "SELECT id, status, successor_id FROM claims WHERE conversation_id = ?", (CID,))}
        origins = {r[0] for r in store.execute("SELECT origin FROM wiki_pages WHERE type != 'index'")}
        assert origins == {"llm", "rules"}  # accepted pages and deterministic fallbacks
        llm_page = store.query("SELECT markdown FROM wiki_pages WHERE origin = 'llm' LIMIT 1")[0]["markdown"]
        assert "## Key Facts" in llm_page and re.search(r"cl_[0-9a-f]{10}; source", llm_page)
        before = dict(handler.calls)
        again = compile_wiki(store, CID, llm=_model(store, handler), embedder=embedder)[0]
        assert again.claims_new == 0 and again.pages_written == 0 and handler.calls == before
    finally:
        store.close()
