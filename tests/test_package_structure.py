"""How the package hangs together, read from its source: imports run one way, providers are typed.

* The CLI layer imports `tracecli.commands.common` and never the other way round: no module of
  `tracecli.commands` imports `tracecli.cli`, and `store.db` and `store.migrations` do not import
  each other (issue 16, item 14); no module of `tracecli.query` imports one that imports it back
  (`newest_successor` lives in `query.paths`, beside the graph it walks). Imports inside functions
  count: they are cycles all the same.
* Chat models and embedders are passed as `ChatModel` / `Embedder` (the Protocols of
  `tracecli.providers`), never as `Any` or `object` (item 16).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tracecli.audit.report import _reaches as reaches  # the audit's reachability search, on any dict of sets

PACKAGE = Path(__file__).resolve().parent.parent / "tracecli"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(name: str) -> set[str]:
    """The tracecli modules `name` imports anywhere in its source (module level or inside functions)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[name].read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module in MODULES:
                out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in MODULES)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in MODULES)
    out.discard(name)
    return out


GRAPH = {name: _imports(name) for name in MODULES}


def test_the_import_graph_is_read() -> None:
    assert "tracecli.commands.common" in GRAPH["tracecli.cli"]
    assert "tracecli.store.schema" in GRAPH["tracecli.store.migrations"]


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.startswith(("tracecli.commands", "tracecli.store", "tracecli.query"))))
def test_no_import_cycle_through_the_cli_or_the_store(name: str) -> None:
    back = sorted(other for other in GRAPH[name] if reaches(GRAPH, other, name))
    assert not back, f"{name} imports {', '.join(back)}, which import(s) {name} again"


def test_commands_never_import_the_cli() -> None:
    assert [n for n in MODULES if n.startswith("tracecli.commands") and "tracecli.cli" in GRAPH[n]] == []


PROVIDER_PARAMETERS = {"llm", "judge_model", "embedder", "emb"}


def _loose_annotation(node: ast.expr | None) -> bool:
    """True for `Any`, `object` and `Any | None` / `object | None`."""
    if node is None:
        return False
    if isinstance(node, ast.Name):
        return node.id in ("Any", "object")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _loose_annotation(node.left) or _loose_annotation(node.right)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _loose_annotation(ast.parse(node.value, mode="eval").body)
    return False


def test_chat_models_and_embedders_are_typed_with_their_protocols() -> None:
    loose = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                loose += [f"{name}.{node.name}({a.arg})" for a in args
                          if a.arg in PROVIDER_PARAMETERS and _loose_annotation(a.annotation)]
    assert loose == []
