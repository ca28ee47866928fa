"""compile-wiki: TrajWiki's source-grounded claims, trajectories and Memory Wiki.

Modules, one job each: `claims` (exchanges → grounded claims), `trajectories`
(Eq. 3–4 matching), `lifecycle` (Eq. 5 op log and claim history), `pages`
(Eq. 6–8 page planning, rendering, embedding), `route` (the read side: query
routing for `ask`, pages for the CLI), `compile` (the stage entry point).
"""

from tracecli.wiki.compile import CompileResult, WikiSettings, compile_wiki
from tracecli.wiki.lifecycle import ClaimChain, HistoryStep, claim_history, replay
from tracecli.wiki.pages import PageSettings
from tracecli.wiki.route import PageInfo, active_claims_for_pages, export_pages, get_page, list_pages, route_pages
from tracecli.wiki.trajectories import MatchSettings

__all__ = [
    "ClaimChain", "CompileResult", "HistoryStep", "MatchSettings", "PageInfo", "PageSettings", "WikiSettings",
    "active_claims_for_pages", "claim_history", "compile_wiki", "export_pages", "get_page", "list_pages",
    "replay", "route_pages",
]
