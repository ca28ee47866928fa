"""The whole pipeline in one process: ingest → build-graph → compile-wiki (`tracecli update`, `Memory.update`).

Fixed costs (the embedding model, spaCy) are paid once for all three stages, and
only the stages with something to do run. `pending` tells `ask` whether the
graph or the wiki has not seen some messages yet.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tracecli.store.db import Store, execute_in

if TYPE_CHECKING:
    from tracecli.graph.build import BuildResult
    from tracecli.ingest.pipeline import IngestResult
    from tracecli.wiki import CompileResult

#: progress of one stage: (stage, done, total)
StageProgress = Callable[[str, int, int], None]


@dataclass
class UpdateResult:
    """What one `update` did: the three stages' results and each stage's wall time in seconds."""

    ingest: list[IngestResult] = field(default_factory=list)
    build_graph: list[BuildResult] = field(default_factory=list)
    compile_wiki: list[CompileResult] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The `update --json` receipt: {"ingest": {"files": [...]}, "build_graph": [...], "compile_wiki": [...], "seconds": {...}}."""
        from tracecli.render import to_jsonable

        return {"ingest": {"files": to_jsonable(self.ingest)}, "build_graph": to_jsonable(self.build_graph),
                "compile_wiki": to_jsonable(self.compile_wiki), "seconds": dict(self.seconds)}


@dataclass(frozen=True)
class Pending:
    """Messages of a scope that build-graph or compile-wiki has not seen yet."""

    graph: int
    wiki: int

    @property
    def any(self) -> bool:
        return bool(self.graph or self.wiki)

    def warning(self) -> str:
        """The one line `ask` prints when the answer may miss them."""
        parts = [f"{n} message(s) not in the {what} yet" for n, what in ((self.graph, "graph"), (self.wiki, "wiki")) if n]
        return "; ".join(parts) + ": this answer does not see them; run `tracecli update` (or `ask --update`)"


def pending(store: Store, conversation_ids: Sequence[str]) -> Pending:
    """How many messages of these conversations are in sessions the graph (or the wiki) has not taken in.

    A session the graph built before it received more messages counts with all its messages (build-graph
    rebuilds the conversation then). Two indexed queries: cheap enough for every `ask`.
    """
    if not conversation_ids:
        return Pending(0, 0)
    graph = execute_in(store, """
        SELECT COUNT(*) FROM messages m JOIN (
            SELECT s.id FROM sessions s LEFT JOIN graph_sessions g ON g.session_id = s.id
            WHERE s.conversation_id IN ({marks})
              AND (g.session_id IS NULL OR g.message_count < (SELECT COUNT(*) FROM messages x WHERE x.session_id = s.id))
        ) p ON m.session_id = p.id""", list(conversation_ids))
    wiki = execute_in(store, """
        SELECT COUNT(*) FROM messages m JOIN sessions s ON s.id = m.session_id
        LEFT JOIN wiki_sessions w ON w.session_id = s.id
        WHERE s.conversation_id IN ({marks}) AND w.session_id IS NULL""", list(conversation_ids))
    return Pending(sum(int(r[0]) for r in graph), sum(int(r[0]) for r in wiki))


__all__ = ["Pending", "StageProgress", "UpdateResult", "pending"]
