"""compile-wiki: TrajWiki's source-grounded claims, trajectories and Memory Wiki.

Modules, one job each: `claims` (exchanges → grounded claims; `llm_claims` with
a model), `trajectories` (Eq. 3–4 matching), `lifecycle` (Eq. 5 op log and claim
history), `pages` (Eq. 6–8 page planning, embedding), `markdown` (page text),
`route` (the read side: query routing for `ask`, pages for the CLI), `obsidian`
(the exported vault), `compile` (the stage entry point).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracecli.wiki.compile import CompileResult, WikiSettings, compile_wiki
    from tracecli.wiki.lifecycle import ClaimChain, HistoryStep, claim_history, replay
    from tracecli.wiki.pages import PageSettings
    from tracecli.wiki.route import PageInfo, active_claims_for_pages, export_pages, get_page, list_pages, route_pages
    from tracecli.wiki.trajectories import MatchSettings

# Names are imported on first use: `wiki list`, `wiki show` and `trace` need only
# `route`, and `compile` pulls in numpy, the graph builder and spaCy's word lists.
_EXPORTS = {
    "CompileResult": "compile", "WikiSettings": "compile", "compile_wiki": "compile",
    "ClaimChain": "lifecycle", "HistoryStep": "lifecycle", "claim_history": "lifecycle", "replay": "lifecycle",
    "PageSettings": "pages",
    "PageInfo": "route", "active_claims_for_pages": "route", "export_pages": "route", "get_page": "route",
    "list_pages": "route", "route_pages": "route",
    "MatchSettings": "trajectories",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(import_module(f"tracecli.wiki.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tracecli.wiki' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "ClaimChain", "CompileResult", "HistoryStep", "MatchSettings", "PageInfo", "PageSettings", "WikiSettings",
    "active_claims_for_pages", "claim_history", "compile_wiki", "export_pages", "get_page", "list_pages",
    "replay", "route_pages",
]
