"""compile-wiki on LoCoMo dev: claims, revisions, trajectories, pages and compile time.

    python benchmarks/wiki_bench.py                 # LoCoMo dev (../shared/data/locomo_dev.json)
    python benchmarks/wiki_bench.py FILE --json out.json
    python benchmarks/wiki_bench.py --db built.db   # reuse a database that already has its graph

The file is ingested into a fresh database and graphed with the rule
extractor (both timed but not counted); models (MiniLM, spaCy) are loaded
before any timing. Then `compile_wiki` runs offline and is timed per
conversation, followed by a second, incremental run that must find nothing
new (its time is the cost of re-planning and hashing the pages). The table
shows snapshots, claims (and how many were dropped as ungrounded),
REVISE / DEPRECATE ops, trajectories, pages by type, rescue pages and
trajectories reachable only from the index (always 0 after the audit).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from rich.console import Console
from rich.table import Table

from tracecli.graph.build import build_graph
from tracecli.graph.nlp import get_nlp
from tracecli.ingest import ingest_parsed, parse_inputs
from tracecli.providers.embeddings import get_embedder
from tracecli.store import open_store
from tracecli.wiki import compile_wiki

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo_dev.json"
err = Console(stderr=True, highlight=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", nargs="?", type=Path, default=LOCOMO)
    ap.add_argument("--db", type=Path, help="an existing database with its graph built (skips ingest and build-graph)")
    ap.add_argument("--keep-db", type=Path, help="write the benchmark database here instead of a temporary file")
    ap.add_argument("--json", type=Path, help="also write the results as JSON")
    args = ap.parse_args(argv)

    embedder = get_embedder()
    embedder.embed_batch(["warm up"])
    get_nlp()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or args.keep_db or Path(tmp) / "wiki_bench.db"
        store = open_store(path)
        try:
            if args.db is None:
                if not args.file.exists():
                    err.print(f"{args.file} not found")
                    return 2
                t = time.perf_counter()
                for p, convs in parse_inputs([args.file]):
                    ingest_parsed(store, p, convs, embedder)
                ingest_s = time.perf_counter() - t
                t = time.perf_counter()
                build_graph(store, extractor="rules")
                graph_s = time.perf_counter() - t
                err.print(f"ingest {ingest_s:.1f}s, build-graph {graph_s:.1f}s (not counted)")
            t = time.perf_counter()
            results = compile_wiki(store, embedder=embedder)
            total_s = time.perf_counter() - t
            t = time.perf_counter()
            again = compile_wiki(store, embedder=embedder)
            again_s = time.perf_counter() - t
        finally:
            store.close()

    table = Table(title=f"compile-wiki on {args.file.name if args.db is None else args.db.name} (offline)")
    for col in ("conversation", "snapshots", "claims", "ungrounded dropped", "REVISE", "DEPRECATE", "trajectories",
                "pages (index/entity/inventory/topic)", "rescue", "index-only", "compile s", "claims/s"):
        table.add_column(col, justify="right" if col != "conversation" else "left")
    for r in results:
        by = r.pages_by_type
        table.add_row(
            r.conversation_id, str(r.snapshots_total), str(r.claims_total), str(r.ungrounded_dropped), str(r.revisions),
            str(r.deprecations), str(r.trajectories_total),
            f"{r.pages_total} ({by.get('index', 0)}/{by.get('entity', 0)}/{by.get('inventory', 0)}/{by.get('topic', 0)})",
            str(r.rescue_pages), str(r.index_only_trajectories), f"{r.elapsed_s:.1f}",
            f"{r.claims_total / r.elapsed_s:.0f}" if r.elapsed_s else "-",
        )
    table.add_row("total", str(sum(r.snapshots_total for r in results)), str(sum(r.claims_total for r in results)),
                  str(sum(r.ungrounded_dropped for r in results)), str(sum(r.revisions for r in results)),
                  str(sum(r.deprecations for r in results)), str(sum(r.trajectories_total for r in results)),
                  str(sum(r.pages_total for r in results)), str(sum(r.rescue_pages for r in results)),
                  str(sum(r.index_only_trajectories for r in results)), f"{total_s:.1f}", "")
    out = Console() if sys.stdout.isatty() else Console(width=200)
    out.print(table)
    nothing_new = all(r.claims_new == 0 and r.pages_written == 0 for r in again)
    out.print(f"second (incremental) run: {again_s:.2f}s, nothing new: {nothing_new}")
    if args.json:
        args.json.write_text(json.dumps({"results": [asdict(r) for r in results], "compile_s": total_s,
                                         "incremental_s": again_s}, indent=2))
    return 0 if nothing_new else 1


if __name__ == "__main__":
    sys.exit(main())
