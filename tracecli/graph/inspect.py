"""Read the evidence graph back: one event's neighbourhood, and the whole graph for export.

`event_detail` gathers what `tracecli graph show` prints: the event, its edges
in and out (with the validity marker of the vertex at the other end) and the
messages behind it. `export_graph` collects event, session and topic vertices
and every edge of one or all conversations; `to_json`, `to_graphml` and
`to_dot` serialise that structure. Nothing here prints.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from xml.etree import ElementTree as ET

from tracecli.errors import BadInput, NotFound
from tracecli.graph.build import conversation_ids
from tracecli.scope import check_namespace, namespace_of
from tracecli.store.db import Store, execute_in, placeholders
from tracecli.text import json_text, strip_controls

EXPORT_FORMATS = ("json", "graphml", "dot")
GRAPHML_NS = "http://graphml.graphdrawing.org/xmlns"
_XSI_NS = "http://www.w3.org/2001/XMLSchema-instance"
_GRAPHML_SCHEMA = "http://graphml.graphdrawing.org/xmlns http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd"

# Attributes of every exported vertex and edge, with their GraphML types. Every
# node object carries every node key (None where it does not apply), so the
# JSON shape is stable and the GraphML keys are declared once.
NODE_FIELDS: tuple[tuple[str, str], ...] = (
    ("kind", "string"),
    ("label", "string"),
    ("conversation_id", "string"),
    ("type", "string"),
    ("subject", "string"),
    ("speaker", "string"),
    ("participants", "string"),
    ("facet", "string"),
    ("value", "string"),
    ("negated", "boolean"),
    ("description", "string"),
    ("time_anchor", "string"),
    ("event_time", "string"),
    ("event_time_granularity", "string"),
    ("validity", "double"),
    ("validity_marker", "string"),
    ("valid_until", "string"),
    ("confidence", "double"),
    ("provenance", "string"),
    ("session_id", "string"),
    ("topic_id", "string"),
    ("seq", "int"),
    ("sentence_idx", "int"),
    ("session_idx", "int"),
    ("source_id", "string"),
    ("started_at", "string"),
    ("keywords", "string"),
    ("size", "int"),
)
EDGE_FIELDS: tuple[tuple[str, str], ...] = (
    ("label", "string"),
    ("family", "string"),
    ("confidence", "double"),
    ("justification", "string"),
    ("invalidated_at", "string"),
    ("valid", "boolean"),
    ("provenance", "string"),
    ("conversation_id", "string"),
)


def validity_marker(validity: float | None) -> str | None:
    """TRACE's three-valued validity as a word: 1 → valid, 0.5 → partial, 0 → outdated."""
    if validity is None:
        return None
    if validity >= 1.0:
        return "valid"
    if validity <= 0.0:
        return "outdated"
    return "partial"


@dataclass
class EventInfo:
    """One event vertex with its reasoning, grounding and validity fields (TRACE Eq. 5)."""

    id: str
    conversation_id: str
    session_id: str
    topic_id: str | None
    type: str
    subject: str
    speaker: str
    participants: list[str]
    description: str
    quote: str
    facet: str | None
    value: str | None
    negated: bool
    cue: str | None
    time_anchor: str | None
    event_time: str | None
    event_time_granularity: str | None
    validity: float
    validity_marker: str
    valid_until: str | None
    confidence: float
    provenance: str
    seq: int
    sentence_idx: int


@dataclass
class EdgeInfo:
    """One edge seen from an event: which way it points and what is at the other end."""

    id: str
    direction: str  # out | in
    label: str
    family: str
    other_id: str
    other_kind: str  # event | session | topic | missing
    other_description: str
    other_validity: float | None
    other_validity_marker: str | None
    confidence: float
    justification: str
    invalidated_at: str | None


@dataclass
class SourceMessage:
    """A message an event was distilled from."""

    id: str
    session_id: str
    speaker: str
    timestamp: str | None
    source_ref: str | None
    text: str


@dataclass
class EventDetail:
    """What `tracecli graph show` prints."""

    event: EventInfo
    edges_out: list[EdgeInfo] = field(default_factory=list)
    edges_in: list[EdgeInfo] = field(default_factory=list)
    messages: list[SourceMessage] = field(default_factory=list)


@dataclass
class GraphExport:
    """Vertices and edges of the evidence graph, ready to serialise."""

    nodes: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)


def _event_info(row: dict[str, Any]) -> EventInfo:
    return EventInfo(
        id=row["id"], conversation_id=row["conversation_id"], session_id=row["session_id"], topic_id=row["topic_id"],
        type=row["type"], subject=row["subject"], speaker=row["speaker"], participants=json.loads(row["participants"]),
        description=row["description"], quote=row["quote"], facet=row["facet"], value=row["value"],
        negated=bool(row["negated"]), cue=row["cue"], time_anchor=row["time_anchor"], event_time=row["event_time"],
        event_time_granularity=row["event_time_granularity"], validity=float(row["validity"]),
        validity_marker=validity_marker(float(row["validity"])) or "valid", valid_until=row["valid_until"],
        confidence=float(row["confidence"]), provenance=row["provenance"], seq=row["seq"], sentence_idx=row["sentence_idx"],
    )


def _describe_vertices(store: Store, ids: set[str]) -> dict[str, tuple[str, str, float | None]]:
    """id → (kind, description, validity) for events, sessions and topics among `ids`."""
    out: dict[str, tuple[str, str, float | None]] = {}
    if not ids:
        return out
    id_list = sorted(ids)
    for r in execute_in(store, "SELECT id, description, validity FROM events WHERE id IN ({marks})", id_list):
        out[r[0]] = ("event", r[1], float(r[2]))
    for r in execute_in(store, "SELECT id, idx, started_at FROM sessions WHERE id IN ({marks})", id_list):
        out[r[0]] = ("session", _session_label(r[1], r[2]), None)
    for r in execute_in(store, "SELECT id, label FROM topics WHERE id IN ({marks})", id_list):
        out[r[0]] = ("topic", _topic_label(r[0], r[1]), None)
    return out


def _session_label(idx: int, started_at: str | None) -> str:
    return f"session {idx + 1}" + (f" ({started_at[:10]})" if started_at else "")


def _topic_label(topic_id: str, label: str | None) -> str:
    return f"topic: {label}" if label else f"topic {topic_id}"


def event_detail(store: Store, event_id: str, namespace: str | None = None) -> EventDetail:
    """An event, its edges in and out, and its source messages; NotFound for an unknown id or one of another namespace."""
    rows = store.query("SELECT * FROM events WHERE id = ?", (event_id,))
    if rows and namespace is not None and namespace_of(store, rows[0]["conversation_id"]) != check_namespace(namespace):
        rows = []  # another namespace's event is not shown, nor said to exist
    if not rows:
        hint = "" if event_id.startswith("ev_") else " (event ids look like ev_1a2b3c4d5e)"
        where = f"namespace '{namespace}'" if namespace is not None else store.path.name
        raise NotFound(
            f"no event '{event_id}' in {where}{hint}; list them with `tracecli graph export --format json`"
        )
    detail = EventDetail(event=_event_info(rows[0]))
    edge_rows = store.query(
        "SELECT * FROM edges WHERE src = ? OR dst = ? ORDER BY family, label, src, dst", (event_id, event_id)
    )
    others = {r["dst"] if r["src"] == event_id else r["src"] for r in edge_rows}
    vertices = _describe_vertices(store, others)
    for r in edge_rows:
        outgoing = r["src"] == event_id
        other = r["dst"] if outgoing else r["src"]
        kind, desc, validity = vertices.get(other, ("missing", "", None))
        info = EdgeInfo(
            id=r["id"], direction="out" if outgoing else "in", label=r["label"], family=r["family"], other_id=other,
            other_kind=kind, other_description=desc, other_validity=validity,
            other_validity_marker=validity_marker(validity), confidence=float(r["confidence"]),
            justification=r["justification"], invalidated_at=r["invalidated_at"],
        )
        (detail.edges_out if outgoing else detail.edges_in).append(info)
    detail.messages = [
        SourceMessage(id=r[0], session_id=r[1], speaker=r[2], timestamp=r[3], source_ref=r[4], text=r[5])
        for r in store.execute(
            "SELECT m.id, m.session_id, m.speaker, m.timestamp, m.source_ref, m.text FROM event_notes en "
            "JOIN notes n ON n.id = en.note_id JOIN messages m ON m.id = n.message_id "
            "WHERE en.event_id = ? ORDER BY m.seq, m.id",
            (event_id,),
        )
    ]
    return detail


# -- export ---------------------------------------------------------------------------------


def _blank_node(node_id: str, kind: str, cid: str, label: str) -> dict[str, Any]:
    node: dict[str, Any] = {"id": node_id}
    node.update({name: None for name, _ in NODE_FIELDS})
    node.update(kind=kind, conversation_id=cid, label=label)
    return node


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def export_graph(store: Store, conversation_id: str | None = None, namespace: str | None = None) -> GraphExport:
    """Event, session and topic vertices and all edges of one (or every built) conversation of a namespace."""
    cids = conversation_ids(store, conversation_id, namespace)
    built = {
        r[0] for r in store.execute("SELECT DISTINCT conversation_id FROM graph_sessions")
    }
    cids = [c for c in cids if c in built]
    if not cids:
        which = (f"conversation '{conversation_id}'" if conversation_id
                 else f"namespace '{namespace}'" if namespace is not None else store.path.name)
        raise NotFound(f"no evidence graph for {which}; run `tracecli build-graph` first")
    out = GraphExport()
    for cid in cids:
        topic_of = dict(
            store.execute(
                "SELECT st.session_id, st.topic_id FROM session_topics st JOIN sessions s ON s.id = st.session_id "
                "WHERE s.conversation_id = ?",
                (cid,),
            ).fetchall()
        )
        for t in store.query("SELECT * FROM topics WHERE conversation_id = ? ORDER BY id", (cid,)):
            node = _blank_node(t["id"], "topic", cid, _topic_label(t["id"], t["label"]))
            node.update(keywords=", ".join(json.loads(t["keywords"] or "[]")), size=t["size"])
            out.nodes.append(node)
        for s in store.query(
            "SELECT s.* FROM sessions s JOIN graph_sessions g ON g.session_id = s.id WHERE s.conversation_id = ? ORDER BY s.idx",
            (cid,),
        ):
            node = _blank_node(s["id"], "session", cid, _session_label(s["idx"], s["started_at"]))
            node.update(session_idx=s["idx"], source_id=s["source_id"], started_at=s["started_at"], topic_id=topic_of.get(s["id"]))
            out.nodes.append(node)
        for r in store.query("SELECT * FROM events WHERE conversation_id = ? ORDER BY seq, sentence_idx, id", (cid,)):
            ev = _event_info(r)
            node = _blank_node(ev.id, "event", cid, _short(ev.description))
            node.update(
                type=ev.type, subject=ev.subject, speaker=ev.speaker, participants=", ".join(ev.participants),
                facet=ev.facet, value=ev.value, negated=ev.negated, description=ev.description,
                time_anchor=ev.time_anchor, event_time=ev.event_time, event_time_granularity=ev.event_time_granularity,
                validity=ev.validity, validity_marker=ev.validity_marker, valid_until=ev.valid_until,
                confidence=ev.confidence, provenance=ev.provenance, session_id=ev.session_id, topic_id=ev.topic_id,
                seq=ev.seq, sentence_idx=ev.sentence_idx,
            )
            out.nodes.append(node)
    known = {n["id"] for n in out.nodes}
    marks = placeholders(cids)
    for r in store.query(
        f"SELECT * FROM edges WHERE conversation_id IN ({marks}) ORDER BY conversation_id, family, label, src, dst", cids
    ):
        # An edge whose end is not a vertex (a half-cleared graph) would make
        # GraphML and DOT readers invent an empty vertex: leave it out.
        if r["src"] not in known or r["dst"] not in known:
            continue
        out.edges.append({
            "id": r["id"], "src": r["src"], "dst": r["dst"], "label": r["label"], "family": r["family"],
            "confidence": float(r["confidence"]), "justification": r["justification"],
            "invalidated_at": r["invalidated_at"], "valid": r["invalidated_at"] is None,
            "provenance": r["provenance"], "conversation_id": r["conversation_id"],
        })
    return out


def serialise(export: GraphExport, fmt: str) -> str:
    """The export in `fmt` (json | graphml | dot); BadInput for another format."""
    if fmt == "json":
        return to_json(export)
    if fmt == "graphml":
        return to_graphml(export)
    if fmt == "dot":
        return to_dot(export)
    raise BadInput(f"unknown export format '{fmt}'; choose one of {', '.join(EXPORT_FORMATS)}")


def to_json(export: GraphExport) -> str:
    """{"nodes": [...], "edges": [...]} with stable keys."""
    return json_text({"nodes": export.nodes, "edges": export.edges}, indent=1) + "\n"


# XML 1.0 forbids most control characters even when escaped.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(value: Any, kind: str) -> str:
    if kind == "boolean":
        return "true" if value else "false"
    if kind == "double":
        return repr(float(value))
    if kind == "int":
        return str(int(value))
    return strip_controls(_XML_INVALID.sub("", str(value)))  # also DEL and C1: valid XML, but they act on a terminal


def to_graphml(export: GraphExport) -> str:
    """GraphML with declared keys (readable by networkx, Gephi and yEd)."""
    ET.register_namespace("", GRAPHML_NS)
    ET.register_namespace("xsi", _XSI_NS)
    root = ET.Element(f"{{{GRAPHML_NS}}}graphml", {f"{{{_XSI_NS}}}schemaLocation": _GRAPHML_SCHEMA})
    for prefix, target, fields in (("n", "node", NODE_FIELDS), ("e", "edge", EDGE_FIELDS)):
        for name, kind in fields:
            ET.SubElement(root, f"{{{GRAPHML_NS}}}key",
                          {"id": f"{prefix}_{name}", "for": target, "attr.name": name, "attr.type": kind})
    graph = ET.SubElement(root, f"{{{GRAPHML_NS}}}graph", {"id": "tracecli", "edgedefault": "directed"})
    for node in export.nodes:
        el = ET.SubElement(graph, f"{{{GRAPHML_NS}}}node", {"id": _xml_text(node["id"], "string")})
        for name, kind in NODE_FIELDS:
            if node.get(name) is not None:
                ET.SubElement(el, f"{{{GRAPHML_NS}}}data", {"key": f"n_{name}"}).text = _xml_text(node[name], kind)
    for edge in export.edges:
        el = ET.SubElement(graph, f"{{{GRAPHML_NS}}}edge", {
            "id": _xml_text(edge["id"], "string"), "source": _xml_text(edge["src"], "string"),
            "target": _xml_text(edge["dst"], "string"),
        })
        for name, kind in EDGE_FIELDS:
            if edge.get(name) is not None:
                ET.SubElement(el, f"{{{GRAPHML_NS}}}data", {"key": f"e_{name}"}).text = _xml_text(edge[name], kind)
    ET.indent(root, space=" ")
    return "<?xml version='1.0' encoding='utf-8'?>\n" + ET.tostring(root, encoding="unicode") + "\n"


def dot_quote(value: Any) -> str:
    """A DOT double-quoted string: backslashes and quotes escaped, line breaks as \\n, control characters removed
    (a label is shown, and DOT has no escape for them)."""
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
    text = strip_controls(text)
    return f'"{text}"'


_DOT_FILL = {"valid": "#d9f2d9", "partial": "#fff2cc", "outdated": "#f4cccc"}
_DOT_EDGE_STYLE = {
    "updates": ("#cc0000", "bold"), "contradicts": ("#9900cc", "dashed"), "causes": ("#1f4e9e", "solid"),
    "enables": ("#2e7d32", "solid"), "prevents": ("#e65100", "solid"), "before": ("#888888", "dotted"),
    "member_of": ("#bbbbbb", "dashed"), "next": ("#bbbbbb", "solid"),
}


# Data attributes whose names Graphviz already uses for something else.
_DOT_RENAME = {"size": "topic_size"}


def _dot_attrs(pairs: Sequence[tuple[str, Any]]) -> str:
    return ", ".join(f"{k}={dot_quote(v)}" for k, v in pairs if v is not None)


def to_dot(export: GraphExport) -> str:
    """Graphviz DOT: every id and value quoted; colours by validity and relation label."""
    lines = ['digraph "tracecli" {', '  graph [rankdir="LR", fontname="Helvetica"];',
             '  node [fontname="Helvetica", style="filled", fillcolor="white"];', '  edge [fontname="Helvetica"];']
    shapes = {"event": "box", "session": "ellipse", "topic": "diamond"}
    for node in export.nodes:
        style = [("shape", shapes.get(node["kind"], "box"))]
        if node["kind"] == "event":
            style.append(("fillcolor", _DOT_FILL.get(node["validity_marker"] or "", "white")))
        data = [(_DOT_RENAME.get(name, name), node[name]) for name, _ in NODE_FIELDS if node.get(name) is not None]
        lines.append(f"  {dot_quote(node['id'])} [{_dot_attrs(style + data)}];")
    for edge in export.edges:
        colour, line_style = _DOT_EDGE_STYLE.get(edge["label"], ("black", "solid"))
        if not edge["valid"]:
            line_style = "dashed"
        data = [(name, edge[name]) for name, _ in EDGE_FIELDS if edge.get(name) is not None]
        lines.append(
            f"  {dot_quote(edge['src'])} -> {dot_quote(edge['dst'])} "
            f"[{_dot_attrs([('id', edge['id']), ('color', colour), ('style', line_style)] + data)}];"
        )
    lines.append("}")
    return "\n".join(lines) + "\n"
