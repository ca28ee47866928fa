"""Validity semantics (TRACE Eq. 11, 12) as a pure function, plus its application to the store.

`updates` (new → old) sets the old event's `valid_until` to the new event's
time and v = 0; one hop along causes/enables from a superseded event gives
v = 0.5; causes/prevents edges out of a superseded event get `invalidated_at`.
`contradicts` changes no validity. Propagation always starts from scratch, so
running it twice gives the same state (idempotent).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tracecli.store.db import Store

CAUSAL_DEPENDENCY = ("causes", "enables")
INVALIDATED_BY_UPDATE = ("causes", "prevents")


@dataclass
class ValidityState:
    """What propagation decides: v per event, valid_until per event, invalidated_at per edge key."""

    validity: dict[str, float] = field(default_factory=dict)
    valid_until: dict[str, str] = field(default_factory=dict)
    invalidated: dict[tuple[str, str, str], str] = field(default_factory=dict)


def propagate(anchors: Mapping[str, str | None], edges: Iterable[tuple[str, str, str]]) -> ValidityState:
    """Derive validity from edges (src, dst, label); `anchors` maps event id → ISO time (or None)."""
    edges = list(edges)
    state = ValidityState(validity={e: 1.0 for e in anchors})
    superseded_at: dict[str, str] = {}
    for src, dst, label in edges:
        if label != "updates" or src not in anchors or dst not in anchors:
            continue
        when = anchors[src] or ""
        state.validity[dst] = 0.0
        # An event superseded several times is outdated from the earliest update on.
        prev = superseded_at.get(dst)
        if prev is None or (when and (not prev or when < prev)):
            superseded_at[dst] = when
    for event_id, when in superseded_at.items():
        if when:
            state.valid_until[event_id] = when
    for src, dst, label in edges:
        if src not in superseded_at or dst not in anchors:
            continue
        if label in CAUSAL_DEPENDENCY and state.validity.get(dst, 1.0) == 1.0:
            state.validity[dst] = 0.5
        if label in INVALIDATED_BY_UPDATE:
            state.invalidated[(src, dst, label)] = superseded_at[src] or ""
    return state


def apply_validity(store: Store, conversation_id: str) -> ValidityState:
    """Recompute and store validity for one conversation's events and edges."""
    anchors = {
        r[0]: r[1]
        for r in store.execute(
            "SELECT id, COALESCE(time_anchor, '') FROM events WHERE conversation_id = ?", (conversation_id,)
        )
    }
    edges = [
        (r[0], r[1], r[2])
        for r in store.execute(
            "SELECT src, dst, label FROM edges WHERE conversation_id = ? AND family != 'structural'", (conversation_id,)
        )
    ]
    state = propagate(anchors, edges)
    conn = store.conn
    conn.execute("UPDATE events SET validity = 1.0, valid_until = NULL WHERE conversation_id = ?", (conversation_id,))
    conn.executemany(
        "UPDATE events SET validity = ? WHERE id = ?",
        [(v, e) for e, v in state.validity.items() if v != 1.0],
    )
    conn.executemany("UPDATE events SET valid_until = ? WHERE id = ?", [(u, e) for e, u in state.valid_until.items()])
    conn.execute("UPDATE edges SET invalidated_at = NULL WHERE conversation_id = ?", (conversation_id,))
    conn.executemany(
        "UPDATE edges SET invalidated_at = ? WHERE src = ? AND dst = ? AND label = ?",
        [(when or "superseded", s, d, lab) for (s, d, lab), when in state.invalidated.items()],
    )
    return state
