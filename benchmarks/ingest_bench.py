"""Ingest throughput on LoCoMo dev vs the raw embedding throughput of the same texts, in one run.

    python benchmarks/ingest_bench.py [--runs 3] [FILE]

Prints a table: messages/s for a full ingest into a fresh database (median of runs) and for
embedding the same note texts alone, two ways: in conversation order, 64 texts per call (how ingest
embedded before it sorted by length), and all texts in one call, which sentence-transformers sorts by
length itself (the reference: the embedder at its best on these texts). Ratios are to the reference.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from tracecli.ingest import ingest_parsed, parse_file
from tracecli.ingest.pipeline import note_text
from tracecli.providers.embeddings import get_embedder
from tracecli.store import open_store

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo_dev.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("file", nargs="?", default=str(DEFAULT))
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    path = Path(args.file)
    convs = parse_file(path)
    texts = [note_text(m.speaker, m.text, m.timestamp or s.started_at) for c in convs for s in c.sessions for m in s.messages]
    embedder = get_embedder()
    embedder.embed_batch(texts[:64])  # load the model (both paths) outside the timings
    embedder.embed_batch(["warm up"])
    raw, ordered, full = [], [], []
    for _ in range(args.runs):
        t = time.perf_counter()
        embedder.embed_batch(texts)
        raw.append(time.perf_counter() - t)
        t = time.perf_counter()
        for i in range(0, len(texts), 64):
            embedder.embed_batch(texts[i : i + 64])
        ordered.append(time.perf_counter() - t)
        with tempfile.TemporaryDirectory() as tmp:
            store = open_store(Path(tmp) / "bench.db")
            t = time.perf_counter()
            ingest_parsed(store, path, parse_file(path), embedder)
            full.append(time.perf_counter() - t)
            store.close()
    n = len(texts)
    raw_s, ordered_s, full_s = statistics.median(raw), statistics.median(ordered), statistics.median(full)
    table = Table(title=f"ingest {path.name}: {n} messages, median of {args.runs} runs")
    for col in ("what", "seconds", "messages/s", "ratio to raw embedding"):
        table.add_column(col)
    table.add_row("raw embedding, one call (sorted by length inside)", f"{raw_s:.2f}", f"{n / raw_s:.0f}", "1.00")
    table.add_row("raw embedding, conversation order, 64 per call", f"{ordered_s:.2f}", f"{n / ordered_s:.0f}",
                  f"{ordered_s / raw_s:.2f}")
    table.add_row("tracecli ingest (parse + embed + write)", f"{full_s:.2f}", f"{n / full_s:.0f}", f"{full_s / raw_s:.2f}")
    Console().print(table)


if __name__ == "__main__":
    main()
