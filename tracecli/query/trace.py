"""trace: replay a stored answer with its paths, events, claims and source messages.

Answer-aware re-ranking (TRACE §II-G) uses the answer as a second signal:
S' = 0.35·AS + 0.25·QS + 0.2·PC + 0.1·TC + 0.1·b, where AS and QS are the
lexical overlap of the path's text with the answer and with the question
(content words; no model needed, so `trace` starts fast), PC/TC are kept from
ranking and b = 1 when a path event mentions an answer word. Paths with no
overlap with either the question or the answer are dropped as irrelevant. The
answer itself is never changed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tracecli.errors import NotFound
from tracecli.scope import DEFAULT_NAMESPACE, check_namespace, namespace_of
from tracecli.store.db import Store, placeholders
from tracecli.text import content_words

TRACE_WEIGHTS = {"as": 0.35, "qs": 0.25, "pc": 0.2, "tc": 0.1, "bonus": 0.1}


@dataclass
class TraceResult:
    """What `trace --json` prints."""

    answer_id: str
    question: str
    answer: str
    abstained: bool
    plan: str
    as_of: str | None
    source_refs: list[str]
    paths: list[dict[str, Any]]
    events: list[dict[str, Any]]
    claims: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    context: list[dict[str, Any]]
    asked: dict[str, Any] = field(default_factory=dict)
    namespace: str = DEFAULT_NAMESPACE
    candidates: list[dict[str, Any]] = field(default_factory=list)  # what each evidence source proposed; `won` marks the answer


def _overlap(words: set[str], text: str) -> float:
    if not words:
        return 0.0
    return len(words & set(content_words(text))) / len(words)


def rerank_paths(question: str, answer: str, paths: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Answer-aware re-ranking of stored paths (§II-G); adds `trace_score` and `trace_signals`."""
    qw, aw = set(content_words(question)), set(content_words(answer))
    out = []
    for p in paths:
        text = " ".join(s["description"] for s in p["steps"])
        as_, qs = _overlap(aw, text), _overlap(qw, text)
        if as_ == 0 and qs == 0:
            continue
        bonus = 1.0 if any(aw & set(content_words(s["description"])) for s in p["steps"]) else 0.0
        sig = p.get("signals", {})
        score = (TRACE_WEIGHTS["as"] * as_ + TRACE_WEIGHTS["qs"] * qs + TRACE_WEIGHTS["pc"] * sig.get("pc", 0.0)
                 + TRACE_WEIGHTS["tc"] * sig.get("tc", 0.0) + TRACE_WEIGHTS["bonus"] * bonus)
        out.append({**p, "trace_score": round(score, 6),
                     "trace_signals": {"as": round(as_, 4), "qs": round(qs, 4), "bonus": bonus}})
    out.sort(key=lambda p: (-p["trace_score"], -p["score"]))
    return out


def trace_answer(store: Store, answer_id: str, namespace: str | None = None) -> TraceResult:
    """Replay what `ask` returned for `answer_id`; only answers asked in `namespace` (None: `default`) are found."""
    ns = check_namespace(namespace)
    row = store.execute("SELECT payload, conversation_id FROM answers WHERE id = ?", (answer_id,)).fetchone()
    asked = json.loads(row[0]) if row is not None else {}
    conversations = [c for c in (row[1] or "").split(",") if c] if row is not None else []
    if row is None or _answer_namespace(store, asked, conversations) != ns:
        # another namespace's answer is not shown, nor said to exist
        raise NotFound(f"no answer '{answer_id}' in namespace '{ns}' of {store.path.name}; "
                       "`tracecli ask` prints the id of each answer")
    event_ids = list(dict.fromkeys(s["event_id"] for p in asked["paths"] for s in p["steps"]))
    events = _events(store, event_ids)
    # the answer's own sources first, then what the context only showed alongside them
    refs = list(dict.fromkeys([*asked["source_refs"], *(r for it in asked["context"] for r in it["source_refs"])]))
    return TraceResult(
        answer_id=answer_id, question=asked["question"], answer=asked["answer"], abstained=asked["abstained"],
        plan=asked["plan"], as_of=asked["as_of"], source_refs=asked["source_refs"],
        paths=rerank_paths(asked["question"], asked["answer"], asked["paths"]), events=events,
        claims=_claims(store, event_ids, asked["source_refs"], conversations),
        messages=_messages(store, refs, conversations, set(asked["source_refs"])), context=asked["context"], asked=asked,
        namespace=ns, candidates=list(asked.get("candidates") or []),
    )


def _answer_namespace(store: Store, asked: dict[str, Any], conversations: list[str]) -> str | None:
    """The namespace an answer was asked in: recorded in its payload, else (older answers) its conversations'."""
    if asked.get("namespace"):
        return str(asked["namespace"])
    owners = {namespace_of(store, c) for c in conversations}
    return owners.pop() if len(owners) == 1 else None  # None: gone, or spanning namespaces


def _events(store: Store, ids: list[str]) -> list[dict[str, Any]]:
    if not ids:
        return []
    marks = placeholders(ids)
    rows = {r["id"]: r for r in store.query(
        f"SELECT id, type, subject, description, quote, time_anchor, event_time, facet, value, validity, valid_until "
        f"FROM events WHERE id IN ({marks})", ids)}
    out = []
    for eid in ids:
        r = rows.get(eid)
        if r is None:
            out.append({"id": eid, "missing": True})
            continue
        r = dict(r)
        r["validity_marker"] = "valid" if r["validity"] >= 1 else "partial" if r["validity"] > 0 else "outdated"
        r["edges"] = store.query(
            "SELECT src, dst, label, confidence, justification, invalidated_at FROM edges "
            "WHERE (src = ? OR dst = ?) AND family != 'structural' ORDER BY label, id", (eid, eid))
        out.append(r)
    return out


def _messages(store: Store, refs: list[str], conversations: list[str], evidence: set[str]) -> list[dict[str, Any]]:
    """The messages behind `refs`; `evidence` is True for those the answer cites, False for context only."""
    out = []
    for ref in refs:
        scope, plain = conversations, ref
        conv, sep, rest = ref.partition(":")
        if sep and conv in conversations and len(conversations) > 1:
            scope, plain = [conv], rest  # a qualified ref: 'conversation:source_ref'
        marks = placeholders(scope) or "''"
        row = store.query(
            f"SELECT id, source_ref, conversation_id, speaker, timestamp, text FROM messages "
            f"WHERE (source_ref = ? OR id = ?) AND conversation_id IN ({marks}) ORDER BY seq LIMIT 1",
            (plain, plain, *scope),
        )
        found = {"ref": ref, **row[0]} if row else {"ref": ref, "source_ref": ref, "missing": True}
        out.append({**found, "evidence": ref in evidence})
    return out


def _claims(store: Store, event_ids: list[str], refs: list[str], conversations: list[str]) -> list[dict[str, Any]]:
    """Claims resting on the answer's messages, with their op history (when compile-wiki has run)."""
    if not store.has_table("claims") or not refs:
        return []
    try:
        from tracecli.wiki.route import claims_for_refs  # type: ignore[attr-defined]
    except ImportError:
        return []
    return claims_for_refs(store, refs, conversations)
