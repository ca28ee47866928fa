"""Warm `ask` latency on LoCoMo dev, stage by stage, next to flat dense top-k in the same run.

    python benchmarks/ask_bench.py                          # builds LoCoMo dev in a temp dir (~2 min)
    python benchmarks/ask_bench.py --db /tmp/locomo_built.db --limit 100
    python benchmarks/ask_bench.py --db built.db --profile 25 --json out.json

One `tracecli.query.ask.Asker` answers every LoCoMo dev question (all five
categories unless --categories) offline, as `ask --batch` does. Before any
timing, the embedder is loaded and `Asker.warm` loads each conversation's
graph, note and event-sentence vectors, spaCy and the gazetteer, so the
numbers are the steady state of a warm process. The table shows p50 / p95 /
mean of each `timing_ms` stage and of the total, plus `wall`: the whole
`Asker.ask` call including storing the answer (what `timing_ms.total` leaves
out).

The reference is flat dense top-k over the same notes, timed per question in
the same loop (so under the same load): embed the question, then one vec0 KNN
query over the conversation's `note_vectors` with k=10
(`tracecli.query.retrieve.dense_search`). Ratios are tracecli / reference;
the targets are those of issue 9 (p50 ≤ 50 ms, p95 ≤ 150 ms for the total).

With --db the file is copied to a temporary directory first (asking stores
answers, and the first warm-up writes event vectors), so the original is left
as it was. --profile N runs the same loop under cProfile and prints the N
functions with the most cumulative time to stderr.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from tracecli.evaluate.locomo import load_qa
from tracecli.ingest.formats import parse_file
from tracecli.providers.embeddings import get_embedder
from tracecli.query.ask import Asker
from tracecli.query.retrieve import dense_search
from tracecli.store import open_store
from tracecli.store.db import Store

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo_dev.json"
STAGES = ("shape", "embed", "retrieve", "graph", "answer", "total")
TARGETS = {"p50": 50.0, "p95": 150.0}
FLAT_K = 10
err = Console(stderr=True, highlight=False)


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), q in 0–100."""
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def summary(values: list[float]) -> dict[str, float]:
    """p50 / p95 / mean in ms, rounded."""
    return {"p50": round(percentile(values, 50), 2), "p95": round(percentile(values, 95), 2),
            "mean": round(statistics.fmean(values), 2)}


def build(path: Path, db: Path, embedder: Any) -> None:
    """Ingest, build-graph and compile-wiki LoCoMo dev into `db` (not timed)."""
    from tracecli.evaluate.pipeline import prepare

    store = open_store(db)
    try:
        err.print(f"[dim]building {path.name} into {db} (ingest → build-graph → compile-wiki) …[/]")
        t = time.perf_counter()
        prepare(store, [(path, parse_file(path, "locomo"))], embedder=embedder)
        err.print(f"[dim]built in {time.perf_counter() - t:.0f} s[/]")
    finally:
        store.close()


def flat_dense(store: Store, embedder: Any, question: str, conversation_id: str) -> float:
    """The reference: embed the question + one vec0 KNN query (k=10); returns ms."""
    t = time.perf_counter()
    vec = np.asarray(embedder.embed_batch([question])[0], dtype=np.float32)
    dense_search(store, vec, [conversation_id], FLAT_K)
    return (time.perf_counter() - t) * 1000.0


def run(store: Store, embedder: Any, questions: list[tuple[str, str]], profile: cProfile.Profile | None
        ) -> tuple[dict[str, list[float]], list[float]]:
    """Ask every question warm; per stage the ms of each question, and the reference's ms."""
    asker = Asker(store, embedder=embedder)
    for cid in sorted({c for _, c in questions}):
        t = time.perf_counter()
        if hasattr(asker, "warm"):
            made = asker.warm(conversation_id=cid)
        else:  # a tracecli from before `Asker.warm`: one question loads the scope, then spaCy and the gazetteer
            from tracecli.graph.gazetteer import is_place
            from tracecli.graph.nlp import get_nlp

            asker.ask("warm up", conversation_id=cid, store_answer=False)
            get_nlp()("Alice met Bob in Paris.")
            is_place("Paris")
            made = 0
        err.print(f"[dim]warm {cid}: {time.perf_counter() - t:.1f} s ({made} event vectors computed)[/]")
    flat_dense(store, embedder, "warm up", questions[0][1])
    stages: dict[str, list[float]] = {s: [] for s in (*STAGES, "wall")}
    flat: list[float] = []
    for n, (question, cid) in enumerate(questions, 1):
        if profile:
            profile.enable()
        t = time.perf_counter()
        res = asker.ask(question, conversation_id=cid)
        wall = (time.perf_counter() - t) * 1000.0
        if profile:
            profile.disable()
        for s in STAGES:
            stages[s].append(float(res.timing_ms.get(s, 0.0)))
        stages["wall"].append(wall)
        flat.append(flat_dense(store, embedder, question, cid))
        if n % 50 == 0:
            err.print(f"[dim]{n}/{len(questions)} asked[/]")
    return stages, flat


def table(stats: dict[str, dict[str, float]], ref: dict[str, float], n: int, load: str) -> Table:
    t = Table(title=f"warm ask, LoCoMo dev, {n} questions (ms)", caption=f"load average {load}", title_justify="left",
              caption_justify="left")
    for col in ("stage", "p50", "p95", "mean"):
        t.add_column(col, justify="left" if col == "stage" else "right")
    for s, v in stats.items():
        t.add_row(s, f"{v['p50']:.1f}", f"{v['p95']:.1f}", f"{v['mean']:.1f}")
    t.add_row(f"flat dense top-{FLAT_K} (reference)", f"{ref['p50']:.1f}", f"{ref['p95']:.1f}", f"{ref['mean']:.1f}")
    t.add_row("ratio total / reference", *(f"{stats['total'][k] / ref[k]:.1f}×" if ref[k] else "—" for k in ("p50", "p95", "mean")))
    return t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--locomo", type=Path, default=LOCOMO, help="LoCoMo file (default: shared/data/locomo_dev.json)")
    ap.add_argument("--db", type=Path, help="an already built database of that file (copied first; default: build one)")
    ap.add_argument("--limit", type=int, help="at most this many questions (spread over the samples)")
    ap.add_argument("--categories", type=int, nargs="*", help="QA categories (default: all)")
    ap.add_argument("--profile", type=int, metavar="N", help="run under cProfile and print the top N functions")
    ap.add_argument("--json", type=Path, help="also write the results here as JSON")
    args = ap.parse_args(argv)

    qa = load_qa(args.locomo)
    questions = [(q.question, q.sample_id) for items in qa.values() for q in items
                 if not args.categories or q.category in args.categories]
    if args.limit and args.limit < len(questions):
        step = len(questions) / args.limit
        questions = [questions[int(i * step)] for i in range(args.limit)]
    embedder = get_embedder()
    embedder.embed_batch(["warm up"])
    prof = cProfile.Profile() if args.profile else None
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "locomo.db"
        if args.db:
            if not args.db.exists():
                err.print(f"[red]{args.db}: no such file[/]")
                return 2
            shutil.copy(args.db, db)
        else:
            build(args.locomo, db, embedder)
        store = open_store(db, create=False)
        try:
            stages, flat = run(store, embedder, questions, prof)
        finally:
            store.close()

    import os

    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    stats = {s: summary(v) for s, v in stages.items()}
    ref = summary(flat)
    console = Console(width=max(Console().width, 110))
    console.print(table(stats, ref, len(questions), load))
    verdicts = {k: stats["total"][k] <= limit for k, limit in TARGETS.items()}
    for k, limit in TARGETS.items():
        console.print(f"target total {k} ≤ {limit:.0f} ms: {stats['total'][k]:.1f} ms → "
                      f"{'PASS' if verdicts[k] else 'FAIL'}  (wall incl. storing the answer: {stats['wall'][k]:.1f} ms)")
    if prof:
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(args.profile)
        err.print(out.getvalue(), markup=False, highlight=False)
    if args.json:
        args.json.write_text(json.dumps({
            "questions": len(questions), "load_average": load, "stages_ms": stats,
            "reference_flat_dense_ms": ref, "targets_ms": TARGETS, "passed": verdicts,
        }, indent=1) + "\n", encoding="utf-8")
    return 0 if all(verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
