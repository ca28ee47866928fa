"""Start-up and query latency of the CLI: wall time of whole processes, as a user sees them.

    python benchmarks/startup_bench.py                # builds a small database in a temp dir
    python benchmarks/startup_bench.py --runs 9
    python benchmarks/startup_bench.py --db trace.db  # an existing, compiled database
    python benchmarks/startup_bench.py --json out.json

Each row is the median wall time of N fresh processes (default 5):
`python -c pass` (the floor every command pays), `tracecli --help`, `stats`,
`trace ANSWER_ID`, `wiki show SLUG`, and a cold offline `ask` of one question
(a new process that loads the query embedder). The last row is the same
question inside `ask --batch` once warm: the median of the per-question
`timing_ms.total` that `ask --batch` prints, the first question left out.
Ratios are against `python -c pass`; targets are those of issue 9. The CPU
column (user + system time of the process) moves less than wall time when other
work shares the machine: read it when the wall times look noisy.

Without --db the benchmark ingests sample_conversations/update_heavy.json,
builds its graph and compiles its wiki (not timed, ~30 s). Every command runs
offline: the LLM and embedder variables are removed from its environment.
With --db, the `ask` rows store their answers in that file like any `ask`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_conversations" / "update_heavy.json"
QUESTION = "where is Alice going now?"
err = Console(stderr=True, highlight=False)


@dataclass
class Row:
    what: str
    median_s: float
    runs: list[float]
    target_s: float | None
    cpu_s: float | None = None

    @property
    def passed(self) -> bool | None:
        return None if self.target_s is None else self.median_s <= self.target_s


def _env() -> dict[str, str]:
    """The caller's environment, offline: no LLM, the default (MiniLM) embedder, no hub."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TRACECLI_LLM_", "TRACECLI_EMBED", "OPENAI_")) and k != "TRACECLI_DB"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


def _tracecli() -> list[str]:
    """The installed console script next to this interpreter, else `python -m tracecli.cli`."""
    script = Path(sys.executable).parent / "tracecli"
    return [str(script)] if script.exists() else [sys.executable, "-m", "tracecli.cli"]


def _run(cmd: list[str], ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), check=False)
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return proc


def _cpu_children() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def _wall(cmd: list[str], runs: int, ok: tuple[int, ...] = (0,)) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of `runs` fresh processes."""
    _run(cmd, ok)  # once untimed: page cache and .pyc files warm, as for a user's second command
    times, cpu = [], []
    for _ in range(runs):
        c, t = _cpu_children(), time.perf_counter()
        _run(cmd, ok)
        times.append(time.perf_counter() - t)
        cpu.append(_cpu_children() - c)
    return times, cpu


def _build(db: Path) -> None:
    cli = _tracecli()
    for step in (["ingest", str(SAMPLE)], ["build-graph"], ["compile-wiki"]):
        err.print(f"[dim]building: tracecli {' '.join(step)}[/]")
        _run([*cli, *step, "--db", str(db), "--json"])


def _batch_per_question(db: Path, runs: int, tmp: Path) -> list[float]:
    """Per-question seconds inside one `ask --batch` of runs + 1 questions, the first (cold) one left out."""
    batch = tmp / "batch.jsonl"
    batch.write_text("".join(json.dumps({"question": QUESTION}) + "\n" for _ in range(runs + 1)), encoding="utf-8")
    proc = _run([*_tracecli(), "ask", "--batch", str(batch), "--db", str(db)], ok=(0, 1))
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return [line["timing_ms"]["total"] / 1000 for line in lines[1:]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="processes per row (median reported)")
    ap.add_argument("--db", type=Path, help="an existing compiled database (default: build one from update_heavy.json)")
    ap.add_argument("--json", type=Path, help="also write the results as JSON")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be at least 1")

    tmp = Path(tempfile.mkdtemp(prefix="startup_bench_"))
    try:
        db = args.db
        if db is None:
            db = tmp / "bench.db"
            _build(db)
        elif not db.exists():
            ap.error(f"{db}: no such database")
        cli = _tracecli()
        asked = json.loads(_run([*cli, "ask", QUESTION, "--db", str(db), "--json"], ok=(0, 1)).stdout)
        pages = json.loads(_run([*cli, "wiki", "list", "--db", str(db), "--json"]).stdout)["pages"]
        page = next((p for p in pages if p["type"] == "entity"), pages[0] if pages else None)
        if page is None:
            raise SystemExit(f"{db} has no wiki pages; run `tracecli compile-wiki` first")

        cases: list[tuple[str, list[str], float | None, tuple[int, ...]]] = [
            ("python -c pass", [sys.executable, "-c", "pass"], None, (0,)),
            ("tracecli --help", [*cli, "--help"], 0.5, (0,)),
            ("tracecli stats", [*cli, "stats", "--db", str(db)], 0.5, (0,)),
            ("tracecli trace ID", [*cli, "trace", asked["answer_id"], "--db", str(db)], 0.5, (0,)),
            (f"tracecli wiki show {page['slug']}",
             [*cli, "wiki", "show", page["slug"], "--conversation", page["conversation_id"], "--db", str(db)], 0.5, (0,)),
            ("tracecli ask (cold, 1 question)", [*cli, "ask", QUESTION, "--db", str(db)], 2.0, (0, 1)),
        ]
        rows = []
        for what, cmd, target, ok in cases:
            err.print(f"[dim]timing: {what}[/]")
            times, cpu = _wall(cmd, args.runs, ok)
            rows.append(Row(what, statistics.median(times), times, target, statistics.median(cpu)))
        err.print("[dim]timing: ask --batch[/]")
        per_q = _batch_per_question(db, args.runs, tmp)
        rows.append(Row("ask --batch, per question (warm)", statistics.median(per_q), per_q, None))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    floor = rows[0].median_s
    table = Table(title=f"tracecli start-up: median wall time of {args.runs} runs (question: {QUESTION!r})")
    for col, justify in (("what", "left"), ("median s", "right"), ("× python -c pass", "right"),
                         ("CPU s", "right"), ("target s", "right"), ("result", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        verdict = {None: "", True: "[green]pass[/]", False: "[red]FAIL[/]"}[row.passed]
        table.add_row(row.what, f"{row.median_s:.3f}", f"{row.median_s / floor:.1f}",
                      "—" if row.cpu_s is None else f"{row.cpu_s:.3f}",
                      "—" if row.target_s is None else f"≤ {row.target_s:.1f}", verdict)
    Console().print(table)
    if args.json:
        args.json.write_text(json.dumps({"runs": args.runs, "question": QUESTION,
                                         "rows": [{**asdict(r), "passed": r.passed} for r in rows]}, indent=2),
                             encoding="utf-8")
    return 0 if all(r.passed is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
