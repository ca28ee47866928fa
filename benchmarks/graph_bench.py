"""build-graph throughput on LoCoMo dev and on synthetic conversations, plus incremental vs full rebuild.

    python benchmarks/graph_bench.py                          # LoCoMo dev + synthetic 1K and 10K
    python benchmarks/graph_bench.py --sizes 10000            # LoCoMo dev + synthetic 10K only
    python benchmarks/graph_bench.py --sizes 1000 10000 50000 # add 50K (slow: ingest embeds every message)
    python benchmarks/graph_bench.py --sizes 1000 --no-locomo --json results.json
    python benchmarks/graph_bench.py --workdir /tmp/gb        # keep the databases; a second run skips ingest

Each data set is ingested into a database with the real embedder (ingest time
is shown but not counted; with --workdir an already ingested database is
reused), then a full build-graph (rule extractor, `rebuild=True`) is timed.
The table shows build time (wall clock and this process's CPU time, which is
less sensitive to other load on the machine), messages/s against the target
(--target, default 150 msg/s), events, edges, and the candidate gate's pairs
considered vs pairs possible. For the smallest synthetic size ≥ 10K, one new
session is appended (benchmarks/synth.py `add_session`) to a copy of that
database, and the incremental build of that session is timed against a full
`--rebuild` of the same conversation (target ≤ --incremental-target, default
2 s). Model and data loading (MiniLM, spaCy, the place gazetteer) is done
before any timing; the load average is printed, since timings on a shared
machine are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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
from tracecli.graph.gazetteer import is_place  # noqa: E402
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
    build_cpu_s: float
    messages_per_s: float
    meets_target: bool
    events: int
    semantic_edges: int
    all_edges: int
    updates: int
    pairs_considered: int
    pairs_possible: int


def _ingest(store: Store, path: Path, embedder: Any) -> float:
    t = time.perf_counter()
    ingest_parsed(store, path, parse_file(path), embedder)
    return time.perf_counter() - t


def _row(name: str, store: Store, ingest_s: float, build_s: float, cpu_s: float, results: list[BuildResult],
         target: float) -> Row:
    labels: dict[str, int] = {}
    for r in results:
        for k, v in r.edges_by_label.items():
            labels[k] = labels.get(k, 0) + v
    sessions = store.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
    messages = store.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    rate = round(messages / build_s, 1) if build_s else 0.0
    return Row(
        dataset=name, messages=messages, sessions=sessions, ingest_s=round(ingest_s, 2), build_s=round(build_s, 2),
        build_cpu_s=round(cpu_s, 2), messages_per_s=rate, meets_target=rate >= target,
        events=sum(r.events_total for r in results),
        semantic_edges=sum(v for k, v in labels.items() if k not in STRUCTURAL), all_edges=sum(labels.values()),
        updates=labels.get("updates", 0),
        pairs_considered=sum(r.pairs_considered for r in results), pairs_possible=sum(r.pairs_possible for r in results),
    )


def bench_file(name: str, path: Path, workdir: Path, embedder: Any, target: float) -> tuple[Row, Path]:
    """Ingest `path` (unless its database is already there) and time a full build-graph."""
    db = workdir / f"{name.replace(' ', '-').replace(',', '')}.db"
    store = open_store(db)
    try:
        err.print(f"[dim]{name}: ingesting {path.name} …[/]")
        ingest_s = _ingest(store, path, embedder)
        err.print(f"[dim]{name}: ingested in {ingest_s:.1f}s; building …[/]")
        t, c = time.perf_counter(), time.process_time()
        results = build_graph(store, extractor="rules", rebuild=True)
        build_s, cpu_s = time.perf_counter() - t, time.process_time() - c
        return _row(name, store, ingest_s, build_s, cpu_s, results, target), db
    finally:
        store.close()


def bench_incremental(db: Path, conv: dict[str, Any], workdir: Path, embedder: Any, seed: int,
                      target_s: float) -> dict[str, Any]:
    """Append one session to a copy of an already built conversation; time its build, then a full rebuild."""
    extended = add_session(conv, seed=seed)
    path = workdir / f"{conv['conversation_id']}-plus-one.json"
    path.write_text(json.dumps(extended, ensure_ascii=False), encoding="utf-8")
    copy = workdir / f"{db.stem}-plus-one.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{copy}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(db, copy)  # the base database stays as it was, so a --workdir can be reused
    store = open_store(copy)
    try:
        before = store.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
        _ingest(store, path, embedder)
        new_messages = store.execute("SELECT COUNT(*) FROM messages").fetchone()[0] - before
        t = time.perf_counter()
        (inc,) = build_graph(store, conv["conversation_id"], extractor="rules")
        incremental_s = time.perf_counter() - t
        t = time.perf_counter()
        (full,) = build_graph(store, conv["conversation_id"], extractor="rules", rebuild=True)
        full_s = time.perf_counter() - t
    finally:
        store.close()
    return {
        "conversation": conv["conversation_id"], "messages": before + new_messages, "new_messages": new_messages,
        "sessions_built_incremental": inc.sessions_processed, "incremental_s": round(incremental_s, 2),
        "sessions_built_full": full.sessions_processed, "full_rebuild_s": round(full_s, 2),
        "speed_up": round(full_s / incremental_s, 1) if incremental_s else None,
        "meets_target": incremental_s <= target_s,
        "same_event_count": inc.events_total == full.events_total,
        "same_edges": inc.edges_by_label == full.edges_by_label,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000],
                    help="synthetic conversation sizes in messages (default: 1000 10000; none: --sizes with no value)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--locomo", type=Path, default=LOCOMO, help="LoCoMo file (default: shared/data/locomo_dev.json)")
    ap.add_argument("--no-locomo", action="store_true", help="skip LoCoMo")
    ap.add_argument("--no-incremental", action="store_true", help="skip the one-new-session measurement")
    ap.add_argument("--target", type=float, default=150.0, help="build throughput target in messages/s (default 150)")
    ap.add_argument("--incremental-target", type=float, default=2.0,
                    help="target for building one new session of the ≥10K conversation, seconds (default 2)")
    ap.add_argument("--json", type=Path, help="also write the results here as JSON")
    ap.add_argument("--workdir", type=Path,
                    help="keep the databases here and reuse them on the next run (default: a temporary directory)")
    args = ap.parse_args(argv)

    embedder = get_embedder()
    embedder.embed_batch(["warm up"])
    get_nlp()("Warm up the parser.")
    is_place("Lisbon")  # loads the gazetteer
    load_before = os.getloadavg()
    rows: list[Row] = []
    incremental: dict[str, Any] | None = None
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        if not args.no_locomo:
            if args.locomo.exists():
                rows.append(bench_file("locomo_dev", args.locomo, workdir, embedder, args.target)[0])
            else:
                err.print(f"[yellow]{args.locomo} not found; skipping LoCoMo[/]")
        big: tuple[Path, dict[str, Any]] | None = None
        for size in sorted(args.sizes):
            conv = generate(size, args.seed)
            path = workdir / f"synth-{size}.json"
            path.write_text(json.dumps(conv, ensure_ascii=False), encoding="utf-8")
            row, db = bench_file(f"synthetic {size:,}", path, workdir, embedder, args.target)
            rows.append(row)
            if size >= 10_000 and big is None:
                big = (db, conv)
        if big is not None and not args.no_incremental:
            err.print(f"[dim]appending one session to the {len(big[1]['sessions'])}-session synthetic conversation …[/]")
            incremental = bench_incremental(big[0], big[1], workdir, embedder, args.seed, args.incremental_target)
    load_after = os.getloadavg()

    table = Table(title=f"build-graph (rule extractor, full build); target ≥ {args.target:g} messages/s",
                  title_justify="left")
    for col in ("data set", "messages", "sessions", "ingest s", "build s", "cpu s", "msgs/s",
                f"≥ {args.target:g}/s", "events", "edges (semantic / all)", "updates", "pairs considered / possible"):
        table.add_column(col, justify="left" if col == "data set" else "right")
    for r in rows:
        share = f" ({r.pairs_considered / r.pairs_possible:.2%})" if r.pairs_possible else ""
        table.add_row(r.dataset, f"{r.messages:,}", f"{r.sessions:,}", f"{r.ingest_s:.1f}", f"{r.build_s:.1f}",
                      f"{r.build_cpu_s:.1f}", f"{r.messages_per_s:,.0f}", "yes" if r.meets_target else "NO",
                      f"{r.events:,}", f"{r.semantic_edges:,} / {r.all_edges:,}",
                      f"{r.updates:,}", f"{r.pairs_considered:,} / {r.pairs_possible:,}{share}")
    console = Console(width=max(Console().width, 170))
    console.print(table)
    if incremental:
        t2 = Table(title=f"one new session added to the {incremental['messages'] - incremental['new_messages']:,}-message "
                         f"conversation; target ≤ {args.incremental_target:g} s", title_justify="left")
        for col in ("new messages", "incremental build s", f"≤ {args.incremental_target:g} s", "full rebuild s",
                    "speed-up", "same graph size"):
            t2.add_column(col, justify="right")
        t2.add_row(str(incremental["new_messages"]), f"{incremental['incremental_s']:.2f}",
                   "yes" if incremental["meets_target"] else "NO", f"{incremental['full_rebuild_s']:.2f}",
                   f"{incremental['speed_up']}×",
                   "yes" if incremental["same_event_count"] and incremental["same_edges"] else "NO")
        console.print(t2)
    console.print(f"load average (1/5/15 min) before timing {' '.join(f'{x:.2f}' for x in load_before)}, "
                  f"after {' '.join(f'{x:.2f}' for x in load_after)}; {os.cpu_count()} CPUs")
    if args.json:
        args.json.write_text(json.dumps({"rows": [asdict(r) for r in rows], "incremental": incremental,
                                         "target_messages_per_s": args.target,
                                         "load_average": {"before": load_before, "after": load_after}}, indent=1) + "\n",
                             encoding="utf-8")


if __name__ == "__main__":
    main()
