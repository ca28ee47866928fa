"""How cost grows with size: synthetic 10K / 50K / 200K-message files through the whole CLI.

    python benchmarks/scale_bench.py                          # 10K and 50K
    python benchmarks/scale_bench.py --sizes 10000 50000 200000
    python benchmarks/scale_bench.py --sizes 2000 --questions 20   # a quick look

For each size, seeded synthetic conversations (benchmarks/synth.py: small
talk, plans, causal remarks and facts revised explicitly, implicitly and in
chains) of `--per-conversation` messages each are written as native files,
then the real CLI runs in subprocesses, each timed on the wall clock with its
own peak RSS (os.wait4): `tracecli ingest`, `build-graph`, `compile-wiki`,
and `ask --batch` with questions (two phrasings each) about each person's *current*
residence, employer, diet, sport and coffee (gold = the last value synth stated). Ask
latency is the per-question `timing_ms.total` inside a batch (model loaded
once): the batch runs twice, and the first pass also pays for embedding the
event sentences it re-ranks for the first time (they are kept in the file); "current" is the share of answers naming the gold value. The
last columns are the file size and how each cost grows against the smallest
size of the run. Targets (issue 9): ingest + build + compile for 200K within
30 min, ask p50 ≤ 200 ms at 200K, peak memory ≤ 3 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synth import generate  # noqa: E402

QUESTIONS = {
    "residence": ["Where does {p} live now?", "Which city is {p} living in these days?"],
    "employer": ["Where does {p} work now?", "Which company does {p} work for at the moment?"],
    "diet": ["What diet does {p} follow now?", "What does {p} eat these days?"],
    "sport": ["What sport does {p} play now?", "Which sport is {p} doing at the moment?"],
    "coffee": ["What coffee does {p} drink now?", "What is {p}'s usual coffee order these days?"],
}
err = Console(stderr=True, highlight=False)


@dataclass
class Stage:
    seconds: float
    peak_mb: float


@dataclass
class Row:
    size: int
    conversations: int
    ingest: Stage
    build: Stage
    compile: Stage
    ask: Stage
    first_p50_ms: float
    ask_p50_ms: float
    ask_p95_ms: float
    current: float
    questions: int
    file_mb: float

    @property
    def pipeline_s(self) -> float:
        return self.ingest.seconds + self.build.seconds + self.compile.seconds


def run(args: list[str], env: dict[str, str], stdout: Path | None = None) -> Stage:
    """One CLI stage in a subprocess: wall time and the child's own peak RSS."""
    started = time.perf_counter()
    with open(stdout or os.devnull, "w", encoding="utf-8") as out, tempfile.TemporaryFile("w+", encoding="utf-8") as log:
        proc = subprocess.Popen([sys.executable, "-m", "tracecli.cli", *args], stdout=out, stderr=log, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        log.seek(0)
        tail = log.read()
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"`tracecli {' '.join(args[:2])}` failed: {tail.strip()[-500:]}")
    return Stage(seconds, usage.ru_maxrss / 1024.0)


def _times(path: Path) -> list[float]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return sorted(float(r["timing_ms"]["total"]) for r in rows if "timing_ms" in r)


def write_inputs(size: int, per_conversation: int, seed: int, workdir: Path) -> tuple[list[Path], list[dict[str, str]]]:
    """Conversation files totalling `size` messages, and the current-value questions with their gold."""
    files, questions = [], []
    n_convs = max(1, -(-size // per_conversation))
    for i in range(n_convs):
        n = min(per_conversation, size - i * per_conversation)
        conv = generate(n, seed=seed + i)
        path = workdir / f"synth-{size}-{i}.json"
        path.write_text(json.dumps({k: v for k, v in conv.items() if k != "facts"}), encoding="utf-8")
        files.append(path)
        latest: dict[tuple[str, str], str] = {}
        for fact in conv["facts"]:
            latest[(fact["person"], fact["facet"])] = str(fact["value"])
        for (person, facet), value in sorted(latest.items()):
            for template in QUESTIONS.get(facet, []):
                questions.append({"question": template.format(p=person), "conversation": conv["conversation_id"],
                                  "gold": value})
    return files, questions


def bench_size(size: int, per_conversation: int, n_questions: int, seed: int, workdir: Path) -> Row:
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    for var in ("TRACECLI_LLM_URL", "TRACECLI_LLM_MODEL", "TRACECLI_DB", "TRACECLI_NAMESPACE"):
        env.pop(var, None)
    db = workdir / f"scale-{size}.db"
    files, questions = write_inputs(size, per_conversation, seed, workdir)
    random.Random(seed).shuffle(questions)
    questions = questions[:n_questions]
    err.print(f"[{size:,}] {len(files)} conversation file(s), {len(questions)} questions")
    ingest = run(["ingest", *map(str, files), "--db", str(db), "--json"], env)
    err.print(f"[{size:,}] ingest {ingest.seconds:.1f}s")
    build = run(["build-graph", "--db", str(db), "--json"], env)
    err.print(f"[{size:,}] build-graph {build.seconds:.1f}s")
    compile_ = run(["compile-wiki", "--db", str(db), "--json"], env)
    err.print(f"[{size:,}] compile-wiki {compile_.seconds:.1f}s")
    batch = workdir / f"questions-{size}.jsonl"
    batch.write_text("".join(json.dumps({"question": q["question"], "conversation": q["conversation"]}) + "\n"
                             for q in questions), encoding="utf-8")
    answers_path = workdir / f"answers-{size}.jsonl"
    # first pass: each question also embeds the event sentences it re-ranks for the first time (kept in the file);
    # second pass, a new process: the steady state a long-lived memory sees
    first = run(["ask", "--batch", str(batch), "--db", str(db)], env, stdout=answers_path)
    first_times = _times(answers_path)
    ask = run(["ask", "--batch", str(batch), "--db", str(db)], env, stdout=answers_path)
    answers = [json.loads(line) for line in answers_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    times = _times(answers_path)
    right = sum(1 for q, a in zip(questions, answers) if q["gold"].lower() in str(a.get("answer", "")).lower())
    return Row(
        size=size, conversations=len(files), ingest=ingest, build=build, compile=compile_, ask=Stage(ask.seconds, max(ask.peak_mb, first.peak_mb)),
        first_p50_ms=statistics.median(first_times) if first_times else float("nan"),
        ask_p50_ms=statistics.median(times) if times else float("nan"),
        ask_p95_ms=times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))] if times else float("nan"),
        current=right / len(questions) if questions else float("nan"), questions=len(questions),
        file_mb=sum(p.stat().st_size for p in (db, Path(f"{db}-wal")) if p.exists()) / 1e6,
    )


def render(rows: list[Row]) -> Table:
    base = rows[0]
    t = Table(title="scale: synthetic conversations through the CLI (wall clock, peak RSS per stage)", title_justify="left")
    for col in ("messages", "convs", "ingest s", "build s (msg/s)", "compile s", "pipeline s (×)", "peak MB",
                "ask p50 first pass ms", "ask p50 / p95 ms (×)", "current", "file MB (×)"):
        t.add_column(col, justify="right")
    for r in rows:
        grow = r.size / base.size
        t.add_row(
            f"{r.size:,}", str(r.conversations), f"{r.ingest.seconds:.0f}",
            f"{r.build.seconds:.0f} ({r.size / r.build.seconds:.0f})", f"{r.compile.seconds:.0f}",
            f"{r.pipeline_s:.0f} ({r.pipeline_s / base.pipeline_s:.1f}× for {grow:.0f}× data)",
            f"{max(r.ingest.peak_mb, r.build.peak_mb, r.compile.peak_mb, r.ask.peak_mb):.0f}",
            f"{r.first_p50_ms:.0f}", f"{r.ask_p50_ms:.0f} / {r.ask_p95_ms:.0f} ({r.ask_p50_ms / base.ask_p50_ms:.1f}×)",
            f"{r.current:.2f} of {r.questions}", f"{r.file_mb:.0f} ({r.file_mb / base.file_mb:.1f}×)",
        )
    return t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000], help="total messages per run")
    ap.add_argument("--per-conversation", type=int, default=10_000, help="messages per synthetic conversation")
    ap.add_argument("--questions", type=int, default=60, help="current-value questions asked per size")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--workdir", type=Path, help="keep files and databases here (default: a temporary directory)")
    ap.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        for size in sorted(args.sizes):
            rows.append(bench_size(size, args.per_conversation, args.questions, args.seed, workdir))
            Console(width=200).print(render(rows))
    if args.json:
        from dataclasses import asdict

        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
