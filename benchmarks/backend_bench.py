"""The same synthetic data on SQLite and on PostgreSQL: load time, `ask` latency, throughput under a writer.

    python benchmarks/backend_bench.py                       # 50K messages (slow: embedding and build-graph)
    python benchmarks/backend_bench.py --messages 5000       # a smaller run
    python benchmarks/backend_bench.py --pg-url postgresql://user@host/db   # an existing, empty database

Without --pg-url a PostgreSQL with pgvector is started with `pgserver` in a temporary directory.

Per backend it prints:
* load: `ingest` of every message (vectors computed beforehand and shared, so the time is the store's
  own: rows, full-text index, vector index) and `build-graph`;
* ask p50 / p95 (ms) with one client, warm (a first untimed pass loads the scopes and stores the event
  vectors), answers not stored;
* throughput: asks per second summed over `--readers` reader processes (each with its own connection)
  while one writer process appends sessions, and how many sessions the writer appended meanwhile.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synth import add_session, generate  # noqa: E402

err = Console(stderr=True)
T0 = time.perf_counter()


def say(text: str) -> None:
    """A progress line on stderr with the seconds since the start (the 50K run takes a while)."""
    err.print(f"[dim]{time.perf_counter() - T0:7.0f} s  {text}[/]")


class CachedEmbedder:
    """An embedder that computes each text once, so both backends load the same precomputed vectors."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.cache = inner, {}
        self.id, self.dimension = inner.id, inner.dimension
        self.name = getattr(inner, "name", "cached")

    def embed_batch(self, texts: list[str]) -> list[Any]:
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            self.cache.update(zip(todo, self.inner.embed_batch(todo)))
        return [self.cache[t] for t in texts]

    def path_for(self, total: int) -> Any:
        # ingest asks the embedder for its path (MiniLM: numpy or torch by count); without this the
        # inner model's path would be handed out and every load would embed again, uncached
        return self.embed_batch

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def conversations(n_messages: int, n_conv: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n_conv):
        conv = generate(n_messages // n_conv, seed=100 + i)
        conv["conversation_id"] = f"bench-{i}"
        out.append(conv)
    return out


def _parsed(convs: list[dict[str, Any]]) -> list[Any]:
    import json

    from tracecli.ingest.formats import parse_file

    parsed = []
    with tempfile.TemporaryDirectory() as tmp:
        for conv in convs:
            path = Path(tmp) / f"{conv['conversation_id']}.json"
            path.write_text(json.dumps({k: v for k, v in conv.items() if k != "facts"}))
            parsed.extend(parse_file(path, "native"))
    return parsed


def load(db: str, parsed: list[Any], embedder: Any, *, graph: bool = True) -> tuple[float, float]:
    from tracecli.graph.build import build_graph
    from tracecli.ingest import ingest_parsed
    from tracecli.store import open_store

    with open_store(db) as store:
        t = time.perf_counter()
        ingest_parsed(store, Path("synthetic"), parsed, embedder)
        t_ingest = time.perf_counter() - t
        t = time.perf_counter()
        if graph:
            build_graph(store)
        return t_ingest, time.perf_counter() - t


def questions(convs: list[dict[str, Any]], n: int) -> list[tuple[str, str]]:
    out = []
    for i in range(n):
        conv = convs[i % len(convs)]
        fact = conv["facts"][(i * 7) % len(conv["facts"])]
        wording = {"residence": "Where does {p} live now?", "employer": "Where does {p} work now?",
                   "diet": "What diet does {p} follow?", "coffee": "What coffee does {p} drink?",
                   "sport": "What sport does {p} play?", "pet": "What is the name of {p}'s pet?",
                   "hobbies": "What are {p}'s hobbies?", "trip": "Where is {p} travelling to?"}
        template = wording.get(fact["facet"], "What is {p}'s " + fact["facet"] + " now?")
        out.append((template.format(p=fact["person"]), conv["conversation_id"]))
    return out


def ask_latency(db: str, qs: list[tuple[str, str]], embedder: Any) -> list[float]:
    from tracecli.query.ask import Asker
    from tracecli.store import open_store

    with open_store(db) as store:
        asker = Asker(store, embedder=embedder)
        for q, cid in qs:  # untimed: loads each scope and stores the event vectors the questions meet
            asker.ask(q, conversation_id=cid, store_answer=False)
        times = []
        for q, cid in qs:
            t = time.perf_counter()
            asker.ask(q, conversation_id=cid, store_answer=False)
            times.append((time.perf_counter() - t) * 1000.0)
        return times


def _start_together(ready: Any, seconds: float) -> float:
    """Wait until every reader and the writer is warm, then return when this one stops (all start at once)."""
    ready.wait()
    return time.time() + seconds


def _reader(db: str, qs: list[tuple[str, str]], ready: Any, seconds: float, out: Any) -> None:
    try:
        _read(db, qs, ready, seconds, out)
    except BaseException as exc:  # reported by the parent; the others are released from the barrier
        ready.abort()
        out.put(("error", f"reader: {exc!r}"))


def _read(db: str, qs: list[tuple[str, str]], ready: Any, seconds: float, out: Any) -> None:
    from tracecli.providers.embeddings import get_embedder
    from tracecli.query.ask import Asker
    from tracecli.store import open_store

    embedder = get_embedder("minilm")
    with open_store(db, create=False) as store:
        asker = Asker(store, embedder=embedder)
        for cid in sorted({c for _, c in qs}):
            asker.ask("warm up", conversation_id=cid, store_answer=False)
        stop = _start_together(ready, seconds)
        n, i = 0, 0
        while time.time() < stop:
            q, cid = qs[i % len(qs)]
            asker.ask(q, conversation_id=cid, store_answer=False)
            n, i = n + 1, i + 1
        out.put(("reader", n))


def _writer(db: str, conv: dict[str, Any], ready: Any, seconds: float, out: Any) -> None:
    try:
        _write(db, conv, ready, seconds, out)
    except BaseException as exc:
        ready.abort()
        out.put(("error", f"writer: {exc!r}"))


def _write(db: str, conv: dict[str, Any], ready: Any, seconds: float, out: Any) -> None:
    from tracecli.ingest import ingest_parsed
    from tracecli.providers.embeddings import get_embedder
    from tracecli.store import open_store

    embedder = get_embedder("minilm")
    embedder.embed_batch(["warm up"])
    with open_store(db) as store:
        stop = _start_together(ready, seconds)
        n = 0
        while time.time() < stop:
            add_session(conv, seed=1000 + n, n_messages=20)
            ingest_parsed(store, Path("synthetic"), _parsed([conv]), embedder)
            n += 1
        out.put(("writer", n))


def throughput(db: str, qs: list[tuple[str, str]], conv: dict[str, Any], readers: int, seconds: float,
               warmup: float) -> tuple[float, int]:
    """Asks per second over `readers` processes and sessions appended by one writer, all timed from one start.

    Each process loads its model and warms its scopes first; the clock starts when the last one is ready
    (a barrier), so a slow warm-up on a loaded machine delays the run instead of spoiling it."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    ready = ctx.Barrier(readers + 1)
    procs = [ctx.Process(target=_reader, args=(db, qs, ready, seconds, out)) for _ in range(readers)]
    procs.append(ctx.Process(target=_writer, args=(db, conv, ready, seconds, out)))
    for p in procs:
        p.start()
    results = [out.get(timeout=warmup + seconds) for _ in procs]
    for p in procs:
        p.join()
    for kind, what in results:
        if kind == "error":
            raise SystemExit(what)
    asks = sum(n for kind, n in results if kind == "reader")
    return asks / seconds, sum(n for kind, n in results if kind == "writer")


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=50_000)
    ap.add_argument("--conversations", type=int, default=10)
    ap.add_argument("--questions", type=int, default=40)
    ap.add_argument("--readers", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=3600.0,
                    help="seconds the reader processes may take to load models and warm up before the run gives up")
    ap.add_argument("--pg-url", help="an empty PostgreSQL database (default: start pgserver in a temporary directory)")
    args = ap.parse_args(argv)

    from tracecli.providers.embeddings import get_embedder

    tmp = Path(tempfile.mkdtemp(prefix="tracecli-backend-bench-"))
    pg_url = args.pg_url
    if pg_url is None:
        import pgserver

        pg_url = pgserver.get_server(tmp / "pgdata", cleanup_mode="stop").get_uri()
    convs = conversations(args.messages, args.conversations)
    parsed = _parsed(convs)
    plain = get_embedder("minilm")
    embedder = CachedEmbedder(plain)
    say(f"embedding {args.messages} messages once (an untimed load; both backends then share the vectors) …")
    load(str(tmp / "warm.db"), parsed, embedder, graph=False)
    qs = questions(convs, args.questions)
    rows = []
    for name, db in (("SQLite", str(tmp / "bench.db")), ("PostgreSQL", pg_url)):
        say(f"{name}: loading …")
        t_ingest, t_graph = load(db, parsed, embedder)
        say(f"{name}: ingest {t_ingest:.1f} s, build-graph {t_graph:.1f} s; asking …")
        lat = ask_latency(db, qs, plain)  # not the cached embedder: it would spare the second backend work
        say(f"{name}: ask p50 {statistics.median(lat):.1f} ms; {args.readers} readers + 1 writer for {args.seconds:.0f} s …")
        qps, sessions = throughput(db, qs, dict(convs[0]), args.readers, args.seconds, args.warmup)
        rows.append([name, f"{t_ingest:.1f}", f"{t_graph:.1f}", f"{statistics.median(lat):.1f}", f"{pct(lat, 0.95):.1f}",
                     f"{qps:.2f}", str(sessions)])
    table = Table(title=f"backend_bench: {args.messages} messages, {args.conversations} conversations, "
                        f"{args.questions} questions, {args.readers} readers + 1 writer for {args.seconds:.0f} s")
    for col in ("backend", "ingest s", "build-graph s", "ask p50 ms", "ask p95 ms", "asks/s (readers)",
                "sessions appended"):
        table.add_column(col)
    for r in rows:
        table.add_row(*r)
    Console(width=160).print(table)
    from tracecli.store.pg import close_pools

    close_pools()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
