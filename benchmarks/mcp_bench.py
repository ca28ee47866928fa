"""Latency of an MCP `ask` round trip against a warm `tracecli mcp` server, beside in-process `Memory.ask`.

    python benchmarks/mcp_bench.py                        # LoCoMo dev conv-26 (419 turns), 100 questions
    python benchmarks/mcp_bench.py --sample conv-30 --limit 50 --transport stdio http

One LoCoMo conversation is built into a temporary file through `Memory`
(ingest → update) in a child process, not timed: the bulk embedding there
loads torch, which a program that opens an existing memory never does. Then
the same questions are asked in-process with `Memory.ask` and through the
official MCP client against `tracecli mcp` started as a subprocess on the same file (stdio, and/or streamable HTTP on a
free 127.0.0.1 port). Each side first answers a few questions untimed, so
both are warm (embedder, graph and vectors loaded); then each question is
asked in-process and over MCP alternately, so a shift of the machine's load
(other processes) hits both sides alike. The table gives p50 / p95 / mean in
ms, the ratio MCP / in-process, and the overhead: the call's time minus the
`timing_ms.total` the ask itself reports (storing the answer and making the
JSON; for MCP also the transport and the server's thread hop). It also counts
questions whose answer text differed between the two (it should be 0).
Both processes run BLAS on one thread, as `tracecli mcp` does.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from rich.console import Console
from rich.table import Table

from tracecli import Memory
from tracecli.blas import one_blas_thread
from tracecli.evaluate.locomo import load_qa

ROOT = Path(__file__).resolve().parents[1]
LOCOMO = ROOT.parent / "shared" / "data" / "locomo_dev.json"
NAMESPACE = "bench"
WARM_UP = 3
err = Console(stderr=True, highlight=False)


def summary(values: list[float]) -> dict[str, float]:
    """p50 / p95 / mean in ms, rounded."""
    arr = np.asarray(values, dtype=np.float64)
    return {"p50": round(float(np.percentile(arr, 50)), 2), "p95": round(float(np.percentile(arr, 95)), 2),
            "mean": round(statistics.fmean(values), 2)}


def build(locomo: Path, sample: str, db: Path) -> None:
    """Write the one sample to a file of its own and remember it through Memory (not timed)."""
    data = json.loads(locomo.read_text(encoding="utf-8"))
    picked = [s for s in data if s.get("sample_id") == sample]
    if not picked:
        raise SystemExit(f"{locomo.name} has no sample '{sample}' (samples: {', '.join(s['sample_id'] for s in data)})")
    one = db.parent / f"{sample}.json"
    one.write_text(json.dumps(picked), encoding="utf-8")
    t = time.perf_counter()
    with Memory(db, NAMESPACE) as mem:
        mem.ingest(one, format="locomo")
        mem.update()
    err.print(f"[dim]built {sample} in {time.perf_counter() - t:.0f} s[/]")


@dataclass
class Timings:
    """Per question: the wall ms of the call, and the ms `ask` itself reports (`timing_ms.total`)."""

    wall: list[float] = field(default_factory=list)
    ask: list[float] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)

    def add(self, started: float, result: dict[str, Any]) -> None:
        self.wall.append((time.perf_counter() - started) * 1000.0)
        self.ask.append(float(result["timing_ms"]["total"]))
        self.answers.append(str(result["answer"]))

    def overhead(self) -> list[float]:
        """What the call costs beyond answering: storing the answer, JSON, and for MCP the transport."""
        return [w - a for w, a in zip(self.wall, self.ask)]


def _free_port() -> int:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _server_command(db: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "tracecli.cli", "mcp", "--db", str(db), "--namespace", NAMESPACE, *extra]


def _start_http(db: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    proc = subprocess.Popen(_server_command(db, "--http", f"127.0.0.1:{port}"), env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL)
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"the HTTP server exited ({proc.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.2)


def interleaved(mem: Memory, db: Path, questions: list[str], sample: str, transport: str) -> tuple[Timings, Timings]:
    """Ask each question in-process, then over MCP, alternately, so a change of load hits both sides alike."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = None
    if transport == "http":
        proc, target = _start_http(db, env)
    else:
        cmd = _server_command(db)
        target = stdio_client(StdioServerParameters(command=cmd[0], args=cmd[1:], env=env))

    async def run() -> tuple[Timings, Timings]:
        async with Client(target) as client:
            async def ask(q: str) -> dict[str, Any]:
                result = await client.call_tool("ask", {"question": q, "conversation": sample})
                if result.is_error:
                    raise SystemExit(f"ask failed: {result.content[0].text}")
                return dict(result.structured_content)

            for q in questions[:WARM_UP]:
                mem.ask(q, conversation=sample)
                await ask(q)
            local, remote = Timings(), Timings()
            for q in questions:
                t = time.perf_counter()
                local.add(t, mem.ask(q, conversation=sample))
                t = time.perf_counter()
                remote.add(t, await ask(q))
            return local, remote

    try:
        return anyio.run(run)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=60)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--locomo", type=Path, default=LOCOMO, help="LoCoMo file (default: shared/data/locomo_dev.json)")
    ap.add_argument("--sample", default="conv-26", help="the conversation to remember (default conv-26)")
    ap.add_argument("--limit", type=int, default=100, help="questions asked (spread over the sample's; default 100)")
    ap.add_argument("--transport", nargs="+", choices=("stdio", "http"), default=["stdio"],
                    help="MCP transports to time (default: stdio)")
    ap.add_argument("--db", type=Path, help="reuse this built file (built here first if missing); a copy is timed")
    ap.add_argument("--json", type=Path, help="also write the results here as JSON")
    args = ap.parse_args(argv)

    questions = [q.question for q in load_qa(args.locomo).get(args.sample, [])]
    if args.limit and args.limit < len(questions):
        step = len(questions) / args.limit
        questions = [questions[int(i * step)] for i in range(args.limit)]
    results: dict[str, tuple[Timings, Timings]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        built = args.db or db
        if not built.exists():
            child = multiprocessing.get_context("spawn").Process(target=build, args=(args.locomo, args.sample, built))
            child.start()
            child.join()
            if child.exitcode != 0:
                return 2
        if built != db:
            shutil.copy(built, db)  # asking stores answers: the reused file stays as it was
        # one BLAS thread here too, as the server runs: otherwise each process's idle OpenBLAS workers
        # busy-wait and slow the other side down, and the ratio measures that instead (see tracecli/blas.py)
        # a fresh Memory beside each server: an Asker caches the phrases it embedded, so a Memory that has seen
        # the questions before would answer them faster than the new server process does
        with one_blas_thread():
            for transport in args.transport:
                with Memory(db, NAMESPACE) as mem:
                    results[transport] = interleaved(mem, db, questions, args.sample, transport)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    t = Table(title=f"warm ask, LoCoMo {args.sample}, {len(questions)} questions, in-process and MCP alternately (ms)",
              caption=f"load average {load}; overhead: call time minus the ask's own timing_ms.total",
              title_justify="left", caption_justify="left")
    for col in ("", "p50", "p95", "mean", "overhead p50", "ratio p50", "ratio p95"):
        t.add_column(col, justify="left" if not col else "right")
    out: dict[str, Any] = {}
    for transport, (local, remote) in results.items():
        ref = summary(local.wall)
        for name, side in ((f"Memory.ask (in-process, beside {transport})", local), (f"MCP ask round trip ({transport})", remote)):
            s = summary(side.wall)
            over = summary(side.overhead())["p50"]
            t.add_row(name, f"{s['p50']:.1f}", f"{s['p95']:.1f}", f"{s['mean']:.1f}", f"{over:.1f}",
                      f"{s['p50'] / ref['p50']:.2f}×", f"{s['p95'] / ref['p95']:.2f}×")
            out[name] = {**s, "overhead_p50": over}
    Console(width=max(Console().width, 120)).print(t)
    mismatches = {tr: sum(a != b for a, b in zip(lo.answers, re.answers)) for tr, (lo, re) in results.items()}
    for transport, n in mismatches.items():
        print(f"answers that differ between in-process and MCP ({transport}): {n}")
    if args.json:
        args.json.write_text(json.dumps({"sample": args.sample, "questions": len(questions), "load_average": load,
                                         "ms": out, "answer_mismatches": mismatches}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
