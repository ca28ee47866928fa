"""Fuzz tracecli and print how many cases were tried and held, per group (issue 17).

    python benchmarks/fuzz_report.py                 # the test suite's case counts, random seeds
    python benchmarks/fuzz_report.py --scale 5       # five times as many cases per group
    python benchmarks/fuzz_report.py --seed 17       # reproducible

The groups and their checks are tests/fuzz_cases.py (the same ones tests/test_fuzz.py runs). A case
"held" when tracecli answered it as a user may expect: exit 0, 1 or 2 without a traceback, an error in
one line, a refused input that left the database byte-identical, nothing that acts on a terminal in
what it printed. Failures are listed after the table with the case that caused them. Also prints the
outcomes seen per group (how many inputs were read, refused, answered), so a group that only ever
tests refusals shows as such.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402


def run_group(group: Any, lab: Any, examples: int, rng_seed: int) -> tuple[int, int, Counter[str], list[str]]:
    """(tried, held, outcomes, failures) of one group; failures are not shrunk, every case counts."""
    tried = held = 0
    outcomes: Counter[str] = Counter()
    failures: list[str] = []

    @seed(rng_seed)
    @settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(group.strategy)
    def case(value: Any) -> None:
        nonlocal tried, held
        tried += 1
        try:
            outcome = group.check(lab, value)
        except Exception as exc:  # noqa: BLE001 - every failure is reported, none stops the run
            failures.append(f"{type(exc).__name__}: {str(exc)[:300]}\n      case: {value!r:.300}")
            return
        held += 1
        outcomes[outcome or "held"] += 1

    case()
    return tried, held, outcomes, failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="cases per group, as a multiple of the test suite's")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: a new one, printed)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="rounds of the concurrency scenario (ask and stats while compile-wiki, forget and two ingests run)")
    args = parser.parse_args()
    for var in ("TRACECLI_LLM_URL", "TRACECLI_LLM_MODEL", "TRACECLI_LLM_API_KEY", "OPENAI_API_KEY", "TRACECLI_DB",
                "TRACECLI_NAMESPACE", "TRACECLI_EMBEDDER"):
        os.environ.pop(var, None)  # offline, like the test suite
    rng_seed = args.seed if args.seed is not None else random.randrange(2**31)

    from concurrency_case import run_concurrently
    from fuzz_cases import GROUPS, Lab

    from tracecli.providers.embeddings import get_embedder

    embedder = get_embedder()  # loaded once; every CLI call in the run reuses it
    started = time.perf_counter()
    lab = Lab()
    rows, all_failures = [], []
    try:
        for group in GROUPS:
            t0 = time.perf_counter()
            tried, held, outcomes, failures = run_group(group, lab, max(1, round(group.examples * args.scale)), rng_seed)
            rows.append((group.name, tried, held, time.perf_counter() - t0, outcomes))
            all_failures.extend(f"{group.name}: {f}" for f in failures)
        t0, held, reads = time.perf_counter(), 0, Counter[str]()
        for n in range(args.rounds):
            folder = lab.root / f"concurrent{n}"
            folder.mkdir()
            try:
                reads.update(run_concurrently(folder, embedder))
                held += 1
            except Exception as exc:  # noqa: BLE001
                all_failures.append(f"concurrent commands: {type(exc).__name__}: {str(exc)[:300]}")
        reads = Counter({f"{k} rounds meanwhile": v for k, v in reads.items()})
        rows.append(("concurrent commands", args.rounds, held, time.perf_counter() - t0, reads))
    finally:
        lab.close()

    width = max(len(r[0]) for r in rows)
    print(f"tracecli fuzz report · seed {rng_seed} · scale {args.scale:g} · {time.perf_counter() - started:.0f} s\n")
    print(f"| {'group'.ljust(width)} | tried | held |")
    print(f"| {'-' * width} | ----: | ---: |")
    for name, tried, held, _, _ in rows:
        print(f"| {name.ljust(width)} | {tried:5d} | {held:4d} |")
    total_tried, total_held = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"| {'total'.ljust(width)} | {total_tried:5d} | {total_held:4d} |")
    print("\noutcomes per group:")
    for name, _, _, seconds, outcomes in rows:
        seen = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items(), key=lambda kv: (-kv[1], kv[0])))
        print(f"  {name} ({seconds:.1f} s): {seen}")
    if all_failures:
        print(f"\n{len(all_failures)} case(s) did not hold:")
        for f in all_failures:
            print(f"  - {f}")
    return 1 if all_failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
