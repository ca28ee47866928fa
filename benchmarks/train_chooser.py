"""Fit the learned answer choice (`tracecli.query.choose`) on the dev sets and report it, leave-one-set-out.

Usage:
    python benchmarks/train_chooser.py [SET_DIR ...] [--workdir DIR] [--cv] [--no-write] [--out FILE]

Each SET_DIR holds `conversations/` and `questions.json` (the held-out format of `benchmarks/data/heldout_*`);
the default is every set the README calls dev. Each set is built once into DIR/<set>.db (kept, so a second run
only asks; delete DIR after changing build-graph), and its candidate rows are kept beside it while the query
stage's code is unchanged. Every question is asked with the learned choice off; the rule answer step's proposal and the best-ranked
sentences become one group of candidates, a candidate marked right when its message is one the question's gold
evidence names. `--cv` prints, per question kind, how often the rule step's own sentence and the model's choice
are a gold evidence message, each set scored by a model fitted on the others. The weights fitted on all the sets
are written to `tracecli/query/choose_weights.json` unless `--no-write`.

Only dev sets may be given: a set the weights were fitted on cannot be quoted as held-out afterwards.
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tracecli.evaluate import metrics  # noqa: E402
from tracecli.evaluate.pipeline import prepare  # noqa: E402
from tracecli.evaluate.updates import load_updates  # noqa: E402
from tracecli.providers.embeddings import get_embedder  # noqa: E402
from tracecli.query import choose  # noqa: E402
from tracecli.query.ask import Asker  # noqa: E402
from tracecli.query.settings import AskSettings  # noqa: E402
from tracecli.store import open_store  # noqa: E402

#: the sets whose failures were read (README, Quality: the sets table)
DEV = "a b c d e f g h j k l n o p q r u v z aa ab ac".split()

Group = tuple[str, str, np.ndarray, np.ndarray, np.ndarray]  # set, kind, features, right, stale


Asked = tuple[str, str, list[choose.Row], choose.Flags, np.ndarray, np.ndarray]  # set, kind, rows, flags, right, stale


def _query_code() -> str:
    """A digest of the query stage's source: the cached rows were read by this code (`asked_groups`)."""
    digest = hashlib.sha1()
    for path in sorted((ROOT / "tracecli" / "query").glob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def asked_groups(set_dir: Path, workdir: Path, embedder: object) -> list[Asked]:
    """Each answered question of the set as its candidate rows, asked on the set's database in `workdir` (built the
    first time; delete it after changing what build-graph writes) and kept there (`<set>.rows.pkl`) while the query
    stage's code is the same, so a second run only fits."""
    cache = workdir / f"{set_dir.name}.rows.pkl"
    code = _query_code()
    if cache.exists():
        stamp, rows = pickle.loads(cache.read_bytes())
        if stamp == code:
            return rows
    data = load_updates(set_dir / "conversations", questions=set_dir / "questions.json")
    db = workdir / f"{set_dir.name}.db"
    fresh = not db.exists()
    store = open_store(db)
    if fresh:
        prepare(store, data.parsed, embedder=embedder)
    asker = Asker(store, settings=AskSettings(learned_choice=False), embedder=embedder)
    asker.choice_log = []
    out: list[Asked] = []
    for q in data.questions:
        before = len(asker.choice_log)
        asker.ask(q.question, conversation_id=q.conversation_id, as_of=q.as_of, store_answer=False)
        if len(asker.choice_log) == before:
            continue  # abstained: the learned choice does not answer what the rule step would not
        rows, flags = asker.choice_log[-1]
        # right: the sentence states the gold value, or its message is gold evidence; stale: it states a
        # superseded value and not the current one (the scorer's own reading, tracecli.evaluate.metrics)
        said = [metrics.score_state_answer(r.event.quote, q.current, q.superseded) for r in rows]
        right = np.array([bool(s.valid) or bool(set(r.event.source_refs) & set(q.evidence))
                          for r, s in zip(rows, said)], dtype=float)
        stale = np.array([bool(s.leaked) and not ok for s, ok in zip(said, right)], dtype=float)
        out.append((set_dir.name, q.groups.get("kind", "?"), rows, flags, right, stale))
    store.close()
    cache.write_bytes(pickle.dumps((code, out)))
    return out


def groups_of(set_dir: Path, workdir: Path, embedder: object) -> list[Group]:
    return [(name, kind, choose.features(rows, flags), right, stale)
            for name, kind, rows, flags, right, stale in asked_groups(set_dir, workdir, embedder)
            if choose.replaceable(flags.support)]  # a chain's answer is never replaced: nothing to learn there


def report(groups: list[Group], weights_for: dict[str, choose.Trees]) -> None:
    table: dict[str, Counter] = defaultdict(Counter)
    for name, kind, x, right, stale in groups:
        proposal = int(np.argmax(x[:, choose.FEATURE_NAMES.index("proposed")]))
        chosen = int(np.argmax(choose.scores(x, weights_for[name])))
        for k in (kind, "all"):
            table[k]["n"] += 1
            table[k]["reachable"] += right.any()
            table[k]["rule"] += right[proposal] > 0
            table[k]["rule stale"] += stale[proposal] > 0
            table[k]["chosen"] += right[chosen] > 0
            table[k]["chosen stale"] += stale[chosen] > 0
    print("| kind | questions answered | a right sentence among the candidates | rule step: right / stale | "
          "learned choice (leave-one-set-out): right / stale |")
    print("| --- | --- | --- | --- | --- |")
    for k in sorted(table, key=lambda k: (k == "all", k)):
        c = table[k]
        print(f"| {k} | {c['n']} | {c['reachable']} | {c['rule']} / {c['rule stale']} | "
              f"{c['chosen']} / {c['chosen stale']} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sets", nargs="*", type=Path)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/tracecli-chooser"))
    ap.add_argument("--cv", action="store_true", help="report leave-one-set-out accuracy")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--out", type=Path, default=choose.WEIGHTS_FILE)
    ap.add_argument("--stale-cost", type=float, default=1.0,
                    help="how much a candidate's chance of stating an outdated value counts against it (default 1)")
    args = ap.parse_args()
    sets = args.sets or [ROOT / "benchmarks" / "data" / f"heldout_{s}" for s in DEV]
    args.workdir.mkdir(parents=True, exist_ok=True)
    embedder = get_embedder()
    groups: list[Group] = []
    for set_dir in sets:
        groups += groups_of(set_dir, args.workdir, embedder)
        print(f"{set_dir.name}: {sum(1 for g in groups if g[0] == set_dir.name)} questions", file=sys.stderr)
    names = list(dict.fromkeys(g[0] for g in groups))
    if args.cv:
        held = {n: choose.fit([(x, y, st) for s, _, x, y, st in groups if s != n], stale_cost=args.stale_cost)
                for n in names}
        report(groups, held)
    model = choose.fit([(x, y, st) for _, _, x, y, st in groups], stale_cost=args.stale_cost)
    print(f"\n{len(model.roots)} trees, {len(model.feature)} nodes, depth ≤ {model.depth}")
    if not args.no_write:
        args.out.write_text(model.to_json(names), encoding="utf-8")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
