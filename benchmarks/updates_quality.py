"""Measure how well build-graph catches fact revisions (`updates` edges) against a gold set.

Usage:
    python benchmarks/updates_quality.py [DIR] [--gold FILE] [--json] [--keep-db FILE] [--quiet]

DIR (default benchmarks/data/revisions) holds conversations in any format
`tracecli ingest` reads; FILE (default benchmarks/data/revisions_gold.json)
is a list of revision records:

    {"conversation_id", "person", "facet_kind", "values": [old, ..., newest],
     "evidence": [[msg ids stating values[0]], ...], "type": "explicit"|"implicit"|"chained"|"stable"}

Every file is ingested into one temporary database (MiniLM loads once) and
the graph is built with the rule extractor through the library. Then:

* recall — a gold transition values[i] -> values[i+1] is caught when an
  `updates` edge (src = newer event, dst = older event) goes from an event
  sourced from evidence[i+1] to an event of the same person sourced from
  evidence[i]. Message ids are the native ids (messages.source_ref) or the
  store's own messages.id.
* final state — the newest value's event is valid (validity 1.0) and the
  events of every older value are outdated (validity 0.0). For stable records:
  the value's event exists and is still valid. Events of a message are
  narrowed to those whose value matches the gold value when any does (a message
  can carry several facts); otherwise any event of the person counts.
* precision — an `updates` edge is correct when both events belong to the
  person of one gold record, the src message is among evidence[j] and the dst
  message among evidence[i] of that record with i < j. Edges touching no gold
  record are false and printed with both quotes.
* cross-person errors — `updates` edges whose two events have different subjects.

Exit status is always 0 (this is a report, not a gate).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent
DEFAULT_DIR = ROOT / "data" / "revisions"
DEFAULT_GOLD = ROOT / "data" / "revisions_gold.json"
TYPES = ("explicit", "implicit", "chained", "stable")

sys.path.insert(0, str(ROOT.parent))


# -- helpers -----------------------------------------------------------------------


def norm(text: str | None) -> str:
    """Lower-case, accent-free, punctuation-free text for loose comparison."""
    if not text:
        return ""
    text = unicodedata.normalize("NFKD", str(text))
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    text = re.sub(r"[^a-z0-9]+", " ", text).strip()
    return re.sub(r"^(the|a|an|my|our) ", "", text)


_MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"], 1)}


def month_day(text: str | None) -> tuple[int, int] | None:
    """(month, day) of a date written as '4 October 2025', 'October 4', '2025-10-04' or '10-04'."""
    if not text:
        return None
    t = norm(text)
    m = re.search(r"\b(\d{4}) (\d{1,2}) (\d{1,2})\b", t)
    if m:
        return int(m.group(2)), int(m.group(3))
    m = re.search(r"\b(\d{1,2})(?:st|nd|rd|th)? (" + "|".join(_MONTHS) + r")\b", t)
    if m:
        return _MONTHS[m.group(2)], int(m.group(1))
    m = re.search(r"\b(" + "|".join(_MONTHS) + r") (\d{1,2})\b", t)
    if m:
        return _MONTHS[m.group(1)], int(m.group(2))
    m = re.fullmatch(r"(\d{1,2}) (\d{1,2})", t)
    if m:
        return int(m.group(1)), int(m.group(2))
    return None


def value_matches(gold: str, *candidates: str | None) -> bool:
    """Does an extracted value (or its normalised form) name the gold value?"""
    g = norm(gold)
    g_date = month_day(gold)
    for cand in candidates:
        c = norm(cand)
        if not c:
            continue
        if g_date is not None and month_day(cand) == g_date:
            return True
        if g == c or (len(c) >= 3 and (c in g or g in c)):
            return True
        gt, ct = set(g.split()), set(c.split())
        if gt and ct and len(gt & ct) / len(gt | ct) >= 0.5:
            return True
    return False


def same_person(a: str | None, b: str | None) -> bool:
    return norm(a) == norm(b) and bool(norm(a))


def short(text: str, width: int = 150) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


# -- data ------------------------------------------------------------------------------


@dataclass
class Event:
    id: str
    cid: str
    subject: str
    speaker: str
    facet: str | None
    value: str | None
    value_norm: str | None
    negated: bool
    cue: str | None
    quote: str
    validity: float
    refs: set[str] = field(default_factory=set)  # "cid|source_ref" and "cid|message id"
    native: set[str] = field(default_factory=set)  # the source_refs alone (store ids when a message has none)

    def source_refs(self) -> list[str]:
        """The native message ids (source_ref, else the store's id) this event comes from."""
        return sorted(r.split("|", 1)[1] for r in self.refs if r.split("|", 1)[1] in self.native)

    def label(self) -> str:
        if not self.facet:
            return f"{self.subject}: (no facet) v={self.validity:g}"
        neg = "NOT " if self.negated else ""
        cue = f" cue={self.cue!r}" if self.cue else ""
        return f"{self.subject}: {self.facet}={neg}{self.value!r} v={self.validity:g}{cue}"


@dataclass
class Record:
    idx: int
    cid: str
    person: str
    facet_kind: str
    values: list[str]
    evidence: list[list[str]]
    type: str

    def where(self, cid: str, ref: str) -> list[int]:
        """Indices of the values whose evidence holds message `ref`."""
        if cid != self.cid:
            return []
        return [i for i, ev in enumerate(self.evidence) if ref in ev]

    def title(self) -> str:
        return f"{self.cid} · {self.person} · {self.facet_kind} [{self.type}]"


def load_gold(path: Path) -> list[Record]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    records = []
    for i, r in enumerate(raw):
        typ = r.get("type", "explicit")
        records.append(Record(i, r["conversation_id"], r["person"], r.get("facet_kind", "?"), list(r["values"]),
                              [list(e) for e in r["evidence"]], typ))
    return records


def build(directory: Path, db_path: Path, quiet: bool) -> tuple[object, dict[str, float]]:
    from tracecli.graph.build import build_graph
    from tracecli.ingest import ingest_parsed, parse_file
    from tracecli.providers.embeddings import get_embedder
    from tracecli.store import open_store

    timings: dict[str, float] = {}
    store = open_store(db_path)
    started = time.perf_counter()
    embedder = get_embedder()
    files = sorted(p for p in directory.iterdir() if p.suffix.lower() in (".json", ".jsonl"))
    if not files:
        raise SystemExit(f"no .json/.jsonl conversations in {directory}")
    for path in files:
        convs = parse_file(path)
        ingest_parsed(store, path, convs, embedder)
    timings["ingest_s"] = round(time.perf_counter() - started, 2)
    started = time.perf_counter()
    for res in build_graph(store, extractor="rules"):
        timings[f"build:{res.conversation_id}"] = res.elapsed_s
        if not quiet:
            print(f"  built {res.conversation_id}: {res.events_total} events, {res.updates} updates, "
                  f"{res.contradicts} contradicts ({res.elapsed_s:.1f}s)", file=sys.stderr)
    timings["build_s"] = round(time.perf_counter() - started, 2)
    return store, timings


def load_graph(store) -> tuple[dict[str, Event], list[tuple[str, str, float, str]], dict[tuple[str, str], str]]:
    events: dict[str, Event] = {}
    for r in store.query(
        "SELECT id, conversation_id, subject, speaker, facet, value, value_norm, negated, cue, quote, validity FROM events"
    ):
        events[r["id"]] = Event(r["id"], r["conversation_id"], r["subject"], r["speaker"] or "", r["facet"], r["value"],
                                r["value_norm"], bool(r["negated"]), r["cue"], r["quote"], float(r["validity"]))
    for eid, cid, ref, mid in store.execute(
        "SELECT en.event_id, m.conversation_id, m.source_ref, m.id FROM event_notes en "
        "JOIN notes n ON n.id = en.note_id JOIN messages m ON m.id = n.message_id"
    ):
        ev = events.get(eid)
        if ev is None:
            continue
        if ref is not None:
            ev.refs.add(f"{cid}|{ref}")
        ev.refs.add(f"{cid}|{mid}")
        ev.native.add(ref if ref is not None else mid)
    edges = [
        (r[0], r[1], float(r[2]), r[3] or "")
        for r in store.execute("SELECT src, dst, confidence, justification FROM edges WHERE label = 'updates'")
    ]
    texts: dict[tuple[str, str], str] = {}
    for cid, ref, mid, speaker, text in store.execute("SELECT conversation_id, source_ref, id, speaker, text FROM messages"):
        line = f"{speaker}: {text}"
        texts[(cid, mid)] = line
        if ref is not None:
            texts[(cid, ref)] = line
    return events, edges, texts


# -- scoring -----------------------------------------------------------------------------


def attribution(records: list[Record], events: dict[str, Event]) -> dict[str, list[tuple[Record, int]]]:
    """Which gold (record, value index) pairs each event stands for.

    An event counts for (record, i) when its source message is in record.evidence[i].
    When that message is evidence for several gold facts (one message can state a
    diet and a partner), the event goes only to the facts whose value it matches,
    if it matches any; an event matching none stays with all of them.
    """
    at: dict[tuple[str, str], list[tuple[Record, int]]] = defaultdict(list)
    for rec in records:
        for i, ev_ids in enumerate(rec.evidence):
            for ref in ev_ids:
                at[(rec.cid, ref)].append((rec, i))
    claims: dict[str, list[tuple[Record, int]]] = {}
    for ev in events.values():
        cands: dict[tuple[int, int], tuple[Record, int]] = {}
        for key in ev.refs:
            cid, ref = key.split("|", 1)
            for rec, i in at.get((cid, ref), []):
                cands[(rec.idx, i)] = (rec, i)
        if not cands:
            continue
        matching = [c for c in cands.values() if value_matches(c[0].values[c[1]], ev.value, ev.value_norm)]
        claims[ev.id] = matching or list(cands.values())
    return claims


def score(records: list[Record], events: dict[str, Event], edges, texts) -> dict:
    claims = attribution(records, events)
    by_claim: dict[tuple[int, int], list[Event]] = defaultdict(list)
    for eid, cl in claims.items():
        for rec, i in cl:
            by_claim[(rec.idx, i)].append(events[eid])
    by_ref: dict[str, list[Event]] = defaultdict(list)
    for ev in events.values():
        for ref in ev.refs:
            by_ref[ref].append(ev)

    def claimed(rec: Record, i: int, person: bool = True) -> list[Event]:
        evs = by_claim.get((rec.idx, i), [])
        return [e for e in evs if same_person(e.subject, rec.person)] if person else list(evs)

    def raw_events(rec: Record, i: int) -> list[Event]:
        seen: dict[str, Event] = {}
        for ref in rec.evidence[i]:
            for ev in by_ref.get(f"{rec.cid}|{ref}", []):
                seen[ev.id] = ev
        return list(seen.values())

    edge_pairs = {(s, d) for s, d, _, _ in edges}
    per_type = {t: dict(records=0, transitions=0, caught=0, edges=0, correct=0, final_ok=0) for t in TYPES}
    misses, final_fails, caught = [], [], []

    # recall + final state
    for rec in records:
        if rec.type not in per_type:
            per_type[rec.type] = dict(records=0, transitions=0, caught=0, edges=0, correct=0, final_ok=0)
        row = per_type[rec.type]
        row["records"] += 1
        for i in range(len(rec.values) - 1):
            row["transitions"] += 1
            newer = claimed(rec, i + 1, person=False)
            older = claimed(rec, i)
            hit = next(((n, o) for n in newer for o in older if (n.id, o.id) in edge_pairs), None)
            if hit:
                row["caught"] += 1
                caught.append(f"[{rec.type}] {rec.cid} · {rec.person} · {rec.facet_kind}: {rec.values[i]!r} -> "
                              f"{rec.values[i + 1]!r}  ({hit[0].label()}  ->  {hit[1].label()})")
            else:
                misses.append(dict(
                    record=rec.idx, conversation_id=rec.cid, person=rec.person, facet_kind=rec.facet_kind, type=rec.type,
                    old=rec.values[i], new=rec.values[i + 1],
                    old_msgs=[(m, texts.get((rec.cid, m), "?")) for m in rec.evidence[i]],
                    new_msgs=[(m, texts.get((rec.cid, m), "?")) for m in rec.evidence[i + 1]],
                    old_events=[e.label() for e in raw_events(rec, i)],
                    new_events=[e.label() for e in raw_events(rec, i + 1)],
                ))
        ok, why = final_state(rec, claimed)
        if ok:
            row["final_ok"] += 1
        else:
            final_fails.append(dict(record=rec.idx, title=rec.title(), values=rec.values, why=why))

    # precision
    false_edges, cross = [], []
    unattributed = 0
    for src, dst, conf, why in edges:
        s, d = events.get(src), events.get(dst)
        if s is None or d is None:
            continue
        if not same_person(s.subject, d.subject):
            cross.append((s, d))
        verdict, rtype = judge(s, d, claims)
        if rtype is None:
            unattributed += 1
        else:
            per_type[rtype]["edges"] += 1
            if verdict == "correct":
                per_type[rtype]["correct"] += 1
        if verdict != "correct":
            false_edges.append(dict(
                conversation_id=s.cid, reason=verdict, type=rtype or "-", confidence=conf, justification=why,
                newer=s.label(), older=d.label(), newer_msg=s.source_refs(), older_msg=d.source_refs(),
                newer_quote=s.quote, older_quote=d.quote,
            ))

    overall = {k: sum(r[k] for r in per_type.values()) for k in ("records", "transitions", "caught", "correct", "final_ok")}
    overall["edges"] = len(edges)
    per_type["overall"] = overall
    for row in per_type.values():
        row["recall"] = round(row["caught"] / row["transitions"], 3) if row["transitions"] else None
        row["precision"] = round(row["correct"] / row["edges"], 3) if row["edges"] else None
        row["final_state_acc"] = round(row["final_ok"] / row["records"], 3) if row["records"] else None
    return dict(
        per_type=per_type,
        unattributed_edges=unattributed,
        cross_person_errors=len(cross),
        misses=misses,
        caught=caught,
        final_state_failures=final_fails,
        false_edges=false_edges,
        cross_person=[dict(newer=s.label(), older=d.label(), newer_quote=s.quote, older_quote=d.quote) for s, d in cross],
    )


def final_state(rec: Record, claimed) -> tuple[bool, str]:
    """Newest value valid, every older value outdated (stable records: the value valid)."""
    newest = rec.values[-1]
    evs = [e for e in claimed(rec, len(rec.values) - 1) if not e.negated]  # "not X anymore" does not state the new value
    if not evs:
        return False, f"no (non-negated) event of {rec.person} extracted for {newest!r}"
    pool = [e for e in evs if value_matches(newest, e.value, e.value_norm)] or evs
    if not any(e.validity == 1.0 for e in pool):
        return False, f"{newest!r} is not valid: " + "; ".join(e.label() for e in pool)
    for i, old in enumerate(rec.values[:-1]):
        olds = claimed(rec, i)
        if not olds:
            return False, f"no event of {rec.person} extracted for older value {old!r}"
        matched = [e for e in olds if value_matches(old, e.value, e.value_norm)]
        # value-matching events must all be outdated; without any, one outdated event of the message will do
        if not (all(e.validity == 0.0 for e in matched) if matched else any(e.validity == 0.0 for e in olds)):
            return False, f"older value {old!r} still valid: " + "; ".join(e.label() for e in olds)
    return True, ""


def judge(s: Event, d: Event, claims: dict[str, list[tuple[Record, int]]]) -> tuple[str, str | None]:
    """Classify one updates edge (s newer, d older): 'correct' or why not, and the record type it falls to."""
    sc = {(rec.idx, i): (rec, i) for rec, i in claims.get(s.id, [])}
    dc = {(rec.idx, i): (rec, i) for rec, i in claims.get(d.id, [])}
    recs = {rec.idx: rec for rec, _ in [*sc.values(), *dc.values()]}
    if not same_person(s.subject, d.subject):
        rec = next((r for r in recs.values() if same_person(r.person, d.subject)), None)
        return "cross-person", rec.type if rec else None
    mine = {k: r for k, r in recs.items() if same_person(r.person, s.subject)}
    if not mine:
        return ("other person's gold fact" if recs else "no gold fact"), None
    pairs = []
    for idx, rec in mine.items():
        si = [i for (r, i) in sc if r == idx]
        di = [i for (r, i) in dc if r == idx]
        if si and di:
            pairs.append((rec, si, di))
    for rec, si, di in pairs:
        if max(si) > min(di):
            return "correct", rec.type
    if pairs:
        rec, si, di = pairs[0]
        if set(si) & set(di):
            return ("same value, same message" if set(s.source_refs()) & set(d.source_refs()) else "same value"), rec.type
        return "wrong direction", rec.type
    d_rec = next((mine[r] for (r, _) in dc if r in mine), None)
    s_rec = next((mine[r] for (r, _) in sc if r in mine), None)
    if d_rec and s_rec:
        return "different gold facts", d_rec.type
    return "one end outside gold", (d_rec or s_rec).type


# -- output --------------------------------------------------------------------------------


def pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def print_report(result: dict, timings: dict[str, float]) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover
        Console = None
    rows = result["per_type"]
    headers = ["type", "records", "gold transitions", "caught", "recall", "edges", "correct", "precision", "final-state acc"]
    lines = []
    for t, row in rows.items():
        lines.append([t, str(row["records"]), str(row["transitions"]), str(row["caught"]), pct(row["recall"]),
                      str(row["edges"]), str(row["correct"]), pct(row["precision"]),
                      f"{pct(row['final_state_acc'])} ({row['final_ok']}/{row['records']})"])
    if Console is not None:
        console = Console(width=160)
        table = Table(title="updates-edge quality vs gold revisions")
        for h in headers:
            table.add_column(h, justify="left" if h == "type" else "right")
        for line in lines:
            table.add_row(*line, end_section=line[0] == "stable")
        console.print(table)
    else:
        print(" | ".join(headers))
        for line in lines:
            print(" | ".join(line))
    print(f"edges touching no gold record of their person (counted false, in overall only): {result['unattributed_edges']}")
    print(f"cross-person updates edges: {result['cross_person_errors']}")
    reasons = _count(e["reason"] for e in result["false_edges"])
    if reasons:
        print("false edges by reason: " + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())))
    print(f"timings: ingest {timings.get('ingest_s')}s, build-graph {timings.get('build_s')}s")

    print(f"\n== Caught transitions ({len(result['caught'])}) ==")
    for c in result["caught"]:
        print(" - " + c)

    print(f"\n== Missed transitions ({len(result['misses'])}) ==")
    for m in result["misses"]:
        print(f"\n[{m['type']}] {m['conversation_id']} · {m['person']} · {m['facet_kind']}: {m['old']!r} -> {m['new']!r}")
        for mid, text in m["old_msgs"]:
            print(f"   old {mid}: {short(text)}")
        for mid, text in m["new_msgs"]:
            print(f"   new {mid}: {short(text)}")
        print(f"   events(old, {m['person']}): {m['old_events'] or 'none'}")
        print(f"   events(new): {m['new_events'] or 'none'}")

    print(f"\n== Final-state failures ({len(result['final_state_failures'])}) ==")
    for f in result["final_state_failures"]:
        print(f" - {f['title']} {f['values']}: {short(f['why'], 220)}")

    print(f"\n== False updates edges ({len(result['false_edges'])}) ==")
    for e in result["false_edges"]:
        print(f"\n[{e['reason']}] {e['conversation_id']} (type {e['type']}, conf {e['confidence']:g})")
        print(f"   newer {e['newer_msg']}: {e['newer']}")
        print(f"         \"{short(e['newer_quote'])}\"")
        print(f"   older {e['older_msg']}: {e['older']}")
        print(f"         \"{short(e['older_quote'])}\"")

    if result["cross_person"]:
        print(f"\n== Cross-person edges ({len(result['cross_person'])}) ==")
        for c in result["cross_person"]:
            print(f" - {c['newer']}  ->  {c['older']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("directory", nargs="?", default=str(DEFAULT_DIR), help="folder of conversations (default: %(default)s)")
    ap.add_argument("--gold", default=str(DEFAULT_GOLD), help="gold revision records (default: %(default)s)")
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON instead of the report")
    ap.add_argument("--keep-db", metavar="FILE", help="build into FILE (kept) instead of a temporary database")
    ap.add_argument("--quiet", action="store_true", help="no per-conversation build lines on stderr")
    args = ap.parse_args(argv)

    directory, gold_path = Path(args.directory), Path(args.gold)
    records = load_gold(gold_path)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tracecli-updq-") as tmp:
        db_path = Path(args.keep_db) if args.keep_db else Path(tmp) / "updates.db"
        if args.keep_db and db_path.exists():
            raise SystemExit(f"{db_path} exists; give a new file to --keep-db")
        store, timings = build(directory, db_path, args.quiet or args.json)
        events, edges, texts = load_graph(store)
        ingested = {r[0] for r in store.execute("SELECT id FROM conversations")}
        store.close()
    missing = sorted({r.cid for r in records} - ingested)
    if missing:
        print(f"warning: gold conversations not found in {directory}: {', '.join(missing)}", file=sys.stderr)
    records = [r for r in records if r.cid in ingested]
    result = score(records, events, edges, texts)
    timings["total_s"] = round(time.perf_counter() - started, 2)

    if args.json:
        out = dict(
            per_type=result["per_type"], unattributed_edges=result["unattributed_edges"],
            cross_person_errors=result["cross_person_errors"], false_edges=len(result["false_edges"]),
            false_edge_reasons=dict(sorted(_count(e["reason"] for e in result["false_edges"]).items())),
            misses=[f"{m['conversation_id']}:{m['person']}:{m['facet_kind']}:{m['old']}->{m['new']}" for m in result["misses"]],
            timings=timings,
        )
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        print_report(result, timings)
    return 0


def _count(items) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for i in items:
        out[i] += 1
    return dict(out)


if __name__ == "__main__":
    sys.exit(main())
