"""`tracecli forget` on a LoCoMo-sized file: how long each kind of deletion takes, and what it removes.

    python benchmarks/forget_bench.py                     # builds LoCoMo dev (ingest → graph → wiki) first
    python benchmarks/forget_bench.py --db built.db       # reuse a fully built database (it is copied, never changed)
    python benchmarks/forget_bench.py --keep-db built.db  # build once and keep it for the next run

Each case runs on a fresh copy of the built file: a dry run, one message from
the middle of the largest conversation, one session, one speaker's messages
and a whole conversation, each with the wiki compiled again and the file
VACUUMed (the default), and the message case once more with --no-vacuum. The
table gives wall time, messages forgotten, rows removed and re-derived, and
the file size before and after. The embedding model is loaded before timing.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from tracecli.forget import forget
from tracecli.graph.build import build_graph
from tracecli.ingest import ingest_parsed, parse_inputs
from tracecli.providers.embeddings import get_embedder
from tracecli.store import open_store
from tracecli.wiki import compile_wiki

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo_dev.json"
err = Console(stderr=True, highlight=False)


def build(path: Path, source: Path, embedder: object) -> None:
    store = open_store(path)
    try:
        t = time.perf_counter()
        for file, convs in parse_inputs([source]):
            ingest_parsed(store, file, convs, embedder)
        ids = [r[0] for r in store.execute("SELECT id FROM conversations ORDER BY id")]
        for cid in ids:
            build_graph(store, cid, extractor="rules")
            compile_wiki(store, cid, embedder=embedder)
        err.print(f"built {path.name}: {len(ids)} conversations in {time.perf_counter() - t:.1f}s")
    finally:
        store.close()


def cases(path: Path) -> tuple[list[tuple[str, str, list[str], str, bool, bool]], str]:
    """(label, kind, targets, conversation, dry_run, vacuum) picked from the largest conversation."""
    store = open_store(path, create=False)
    try:
        cid, _n = store.execute(
            "SELECT conversation_id, COUNT(*) AS n FROM messages GROUP BY conversation_id ORDER BY n DESC, conversation_id LIMIT 1"
        ).fetchone()
        mid = store.execute(
            "SELECT id FROM messages WHERE conversation_id = ? ORDER BY seq LIMIT 1 OFFSET "
            "(SELECT COUNT(*) / 2 FROM messages WHERE conversation_id = ?)", (cid, cid)).fetchone()[0]
        sid = store.execute("SELECT session_id FROM messages WHERE id = ?", (mid,)).fetchone()[0]
        speaker = store.execute("SELECT speaker FROM messages WHERE id = ?", (mid,)).fetchone()[0]
        ns = store.execute("SELECT namespace FROM conversations WHERE id = ?", (cid,)).fetchone()[0]
    finally:
        store.close()
    return [
        ("message, dry run", "message", [mid], cid, True, True),
        ("message", "message", [mid], cid, False, True),
        ("message, --no-vacuum", "message", [mid], cid, False, False),
        ("session", "session", [sid], cid, False, True),
        (f"speaker ({speaker})", "speaker", [speaker], cid, False, True),
        ("conversation", "conversation", [cid], cid, False, True),
    ], ns


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", nargs="?", type=Path, default=LOCOMO)
    ap.add_argument("--db", type=Path, help="a fully built database to copy for each case")
    ap.add_argument("--keep-db", type=Path, help="build into this path and keep it")
    args = ap.parse_args(argv)
    embedder = get_embedder()
    embedder.embed_batch(["warm up"])

    def recompile(store: object, cids: list[str]) -> None:
        for c in cids:
            compile_wiki(store, c, embedder=embedder)

    with tempfile.TemporaryDirectory() as tmp:
        built = args.db or args.keep_db or Path(tmp) / "built.db"
        if args.db is None:
            if not args.file.exists():
                err.print(f"{args.file} not found")
                return 2
            build(built, args.file, embedder)
        picked, ns = cases(built)
        n_msgs = _count(built, "messages")
        table = Table(title=f"forget on {built.name} ({n_msgs} messages, {built.stat().st_size / 1e6:.1f} MB)", title_justify="left")
        for col in ("case", "messages", "rows removed", "rows re-derived", "wiki recompiled", "seconds", "file MB after"):
            table.add_column(col, justify="left" if col == "case" else "right")
        for label, kind, targets, cid, dry, vacuum in picked:
            copy = Path(tmp) / "case.db"
            for suffix in ("", "-wal", "-shm"):
                Path(f"{copy}{suffix}").unlink(missing_ok=True)
            shutil.copyfile(built, copy)
            store = open_store(copy, create=False)
            try:
                t = time.perf_counter()
                r = forget(store, kind, targets, namespace=ns, conversation_id=cid, dry_run=dry, vacuum=vacuum,
                           recompile=recompile)
                secs = time.perf_counter() - t
            finally:
                store.close()
            table.add_row(label, str(len(r.message_ids)), str(r.total_removed), str(sum(c.added for c in r.counts)),
                          ", ".join(r.wiki_recompiled) or "-", f"{secs:.2f}", f"{copy.stat().st_size / 1e6:.1f}")
        Console(width=160).print(table)
    return 0


def _count(path: Path, table: str) -> int:
    store = open_store(path, create=False)
    try:
        return int(store.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    finally:
        store.close()


if __name__ == "__main__":
    sys.exit(main())
