"""build-graph throughput on LoCoMo dev and on synthetic conversations, plus incremental vs full rebuild.

    python benchmarks/graph_bench.py                          # LoCoMo dev + synthetic 1K and 10K
    python benchmarks/graph_bench.py --sizes 1000 10000 50000 # add 50K (slow: ingest embeds every message)
    python benchmarks/graph_bench.py --sizes 1000 --no-locomo --json results.json

Each data set is ingested into a fresh database with the real embedder
(ingest time is shown but not counted), then `build_graph` (rule extractor)
is timed. The table shows build time, messages/s, events, edges, and the
candidate gate's pairs considered vs pairs possible. For the largest
synthetic size ≥ 10K, one new session is appended (benchmarks/synth.py
`add_session`) and the incremental build of that session is timed against a
full `--rebuild` of the same conversation. Model loading (MiniLM, spaCy) is
done before any timing.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synth import add_session, generate  # noqa: E402

from tracecli.graph.build import BuildResult, build_graph  # noqa: E402
from tracecli.graph.nlp import get_nlp  # noqa: E402
from tracecli.ingest import ingest_parsed, parse_file  # noqa: E402
from tracecli.providers.embeddings import get_embedder  # noqa: E402
from tracecli.store import open_store  # noqa: E402
from tracecli.store.db import Store  # noqa: E402

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo_dev.json"
STRUCTURAL = ("member_of", "next")
err = Console(stderr=True, highlight=False)


@dataclass
class Row:
    dataset: str
    messages: int
    sessions: int
    ingest_s: float
    build_s: float
    messages_per_s: float
    events: int
    semantic_edges: int
    all_edges: int
    updates: int
    pairs_considered: int
    pairs_possible: int


def _ingest(store: Store, path: Path, embedder: Any) -> tuple[int, float]:
    t = time.perf_counter()
    res = ingest_parsed(store, path, parse_file(path), embedder)
    return res.new_messages, time.perf_counter() - t


def _row(name: str, store: Store, messages: int, ingest_s: float, build_s: float, results: list[BuildResult]) -> Row:
    labels: dict[str, int] = {}
    for r in results:
        for k, v in r.edges_by_label.items():
            labels[k] = labels.get(k, 0) + v
    sessions = store.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
    return Row(
        dataset=name, messages=messages, sessions=sessions, ingest_s=round(ingest_s, 2), build_s=round(build_s, 2),
        messages_per_s=round(messages / build_s, 1) if build_s else 0.0,
        events=sum(r.events_total for r in results),
        semantic_edges=sum(v for k, v in labels.items() if k not in STRUCTURAL), all_edges=sum(labels.values()),
        updates=labels.get("updates", 0),
        pairs_considered=sum(r.pairs_considered for r in results), pairs_possible=sum(r.pairs_possible for r in results),
    )


def bench_file(name: str, path: Path, workdir: Path, embedder: Any) -> tuple[Row, Path]:
    """Ingest `path` into a fresh database and time a full build-graph."""
    db = workdir / f"{name}.db"
    store = open_store(db)
    try:
        err.print(f"[dim]{name}: ingesting {path.name} …[/]")
        messages, ingest_s = _ingest(store, path, embedder)
        err.print(f"[dim]{name}: {messages} messages ingested in {ingest_s:.1f}s; building …[/]")
        t = time.perf_counter()
        results = build_graph(store, extractor="rules")
        build_s = time.perf_counter() - t
        return _row(name, store, messages, ingest_s, build_s, results), db
    finally:
        store.close()


def bench_incremental(db: Path, conv: dict[str, Any], workdir: Path, embedder: Any, seed: int) -> dict[str, Any]:
    """Append one session to an already built conversation; time its build, then a full rebuild."""
    extended = add_session(conv, seed=seed)
    path = workdir / f"{conv['conversation_id']}-plus-one.json"
    path.write_text(json.dumps(extended, ensure_ascii=False), encoding="utf-8")
    store = open_store(db)
    try:
        new_messages, _ = _ingest(store, path, embedder)
        t = time.perf_counter()
        (inc,) = build_graph(store, conv["conversation_id"], extractor="rules")
        incremental_s = time.perf_counter() - t
        t = time.perf_counter()
        (full,) = build_graph(store, conv["conversation_id"], extractor="rules", rebuild=True)
        full_s = time.perf_counter() - t
    finally:
        store.close()
    return {
        "conversation": conv["conversation_id"], "new_messages": new_messages,
        "sessions_built_incremental": inc.sessions_processed, "incremental_s": round(incremental_s, 2),
        "sessions_built_full": full.sessions_processed, "full_rebuild_s": round(full_s, 2),
        "speed_up": round(full_s / incremental_s, 1) if incremental_s else None,
        "same_event_count": inc.events_total == full.events_total,
        "same_edges": inc.edges_by_label == full.edges_by_label,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000], help="synthetic conversation sizes (messages)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--locomo", type=Path, default=LOCOMO, help="LoCoMo file (default: shared/data/locomo_dev.json)")
    ap.add_argument("--no-locomo", action="store_true", help="skip LoCoMo")
    ap.add_argument("--no-incremental", action="store_true", help="skip the one-new-session measurement")
    ap.add_argument("--json", type=Path, help="also write the results here as JSON")
    ap.add_argument("--workdir", type=Path, help="keep the databases here (default: a temporary directory)")
    args = ap.parse_args(argv)

    embedder = get_embedder()
    embedder.embed_batch(["warm up"])
    get_nlp()("Warm up the parser.")
    rows: list[Row] = []
    incremental: dict[str, Any] | None = None
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        if not args.no_locomo:
            if args.locomo.exists():
                rows.append(bench_file("locomo_dev", args.locomo, workdir, embedder)[0])
            else:
                err.print(f"[yellow]{args.locomo} not found; skipping LoCoMo[/]")
        big: tuple[Path, dict[str, Any]] | None = None
        for size in sorted(args.sizes):
            conv = generate(size, args.seed)
            path = workdir / f"synth-{size}.json"
            path.write_text(json.dumps(conv, ensure_ascii=False), encoding="utf-8")
            row, db = bench_file(f"synthetic {size:,}", path, workdir, embedder)
            rows.append(row)
            if size >= 10_000 and big is None:
                big = (db, conv)
        if big is not None and not args.no_incremental:
            err.print("[dim]appending one session to the 10K conversation …[/]")
            incremental = bench_incremental(big[0], big[1], workdir, embedder, args.seed)

    table = Table(title="build-graph (rule extractor)", title_justify="left")
    for col in ("data set", "messages", "sessions", "ingest s", "build s", "msgs/s", "events", "edges (semantic / all)",
                "updates", "pairs considered / possible"):
        table.add_column(col, justify="left" if col == "data set" else "right")
    for r in rows:
        share = f" ({r.pairs_considered / r.pairs_possible:.2%})" if r.pairs_possible else ""
        table.add_row(r.dataset, f"{r.messages:,}", f"{r.sessions:,}", f"{r.ingest_s:.1f}", f"{r.build_s:.1f}",
                      f"{r.messages_per_s:,.0f}", f"{r.events:,}", f"{r.semantic_edges:,} / {r.all_edges:,}",
                      f"{r.updates:,}", f"{r.pairs_considered:,} / {r.pairs_possible:,}{share}")
    console = Console(width=max(Console().width, 150))
    console.print(table)
    if incremental:
        t2 = Table(title="one new session added to the 10K conversation", title_justify="left")
        for col in ("new messages", "incremental build s", "full rebuild s", "speed-up", "same graph size"):
            t2.add_column(col, justify="right")
        t2.add_row(str(incremental["new_messages"]), f"{incremental['incremental_s']:.2f}",
                   f"{incremental['full_rebuild_s']:.2f}", f"{incremental['speed_up']}×",
                   "yes" if incremental["same_event_count"] and incremental["same_edges"] else "NO")
        console.print(t2)
    if args.json:
        args.json.write_text(json.dumps({"rows": [asdict(r) for r in rows], "incremental": incremental}, indent=1) + "\n",
                             encoding="utf-8")


if __name__ == "__main__":
    main()
