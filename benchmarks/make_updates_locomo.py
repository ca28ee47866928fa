"""Convert the native revision set into an update-heavy evaluation set in LoCoMo format.

Usage:
    python benchmarks/make_updates_locomo.py [DIR] [--questions FILE] [--out FILE]

DIR (default benchmarks/data/revisions) holds native conversations (two
participants, sessions with `started_at`); FILE (default
benchmarks/data/revisions_questions.json) holds tracecli's gold questions.
The output (default benchmarks/data/updates_locomo.json) is a list of LoCoMo
samples: `conversation` with `speaker_a`, `speaker_b`, `session_N` turns
(`speaker`, `dia_id` "D<session>:<turn>", `text`) and `session_N_date_time`
("2:30 pm on 11 February, 2023", the session's start: LoCoMo keeps one time
per session), and `qa` items with `question`, `answer` (the current value),
`evidence` (dia_ids), `superseded` (every earlier value), `outdated_answer`
(the most recent superseded value, or null), `as_of`, `kind`, `revision`
and `person`. No `category`: these are not LoCoMo's categories.

`tracecli eval updates benchmarks/data/updates_locomo.json` reads it.
The output is deterministic (same input, same bytes).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
DEFAULT_DIR = ROOT / "data" / "revisions"
DEFAULT_QUESTIONS = ROOT / "data" / "revisions_questions.json"
DEFAULT_OUT = ROOT / "data" / "updates_locomo.json"


def locomo_date(iso: str) -> str:
    """'2023-02-11T10:15:00Z' → '10:15 am on 11 February, 2023'."""
    when = dt.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    hour = when.hour % 12 or 12
    return f"{hour}:{when.minute:02d} {'am' if when.hour < 12 else 'pm'} on {when.day} {when.strftime('%B')}, {when.year}"


def convert_conversation(conv: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A native conversation → (LoCoMo `conversation` object, native message id → dia_id)."""
    participants = conv["participants"]
    if len(participants) != 2:
        raise SystemExit(f"{conv['conversation_id']}: LoCoMo needs exactly two speakers, not {participants}")
    out: dict[str, Any] = {"speaker_a": participants[0], "speaker_b": participants[1]}
    dia: dict[str, str] = {}
    for n, session in enumerate(conv["sessions"], 1):
        started = session.get("started_at") or session["messages"][0].get("timestamp")
        turns = []
        for k, msg in enumerate(session["messages"], 1):
            dia_id = f"D{n}:{k}"
            if msg.get("id") is not None:
                dia[str(msg["id"])] = dia_id
            turns.append({"speaker": msg["speaker"], "dia_id": dia_id, "text": msg["text"]})
        out[f"session_{n}_date_time"] = locomo_date(started)
        out[f"session_{n}"] = turns
    return out, dia


def convert_question(q: dict[str, Any], dia: dict[str, str]) -> dict[str, Any]:
    """A gold question → a LoCoMo QA item with outdated answers."""
    superseded = [str(v) for v in q.get("superseded") or []]
    return {
        "question": q["question"],
        "answer": q["answer"],
        "evidence": [dia[e] for e in q.get("evidence") or [] if e in dia],
        "superseded": superseded,
        "outdated_answer": superseded[-1] if superseded else None,
        "as_of": q.get("as_of"),
        "kind": q.get("kind"),
        "revision": q.get("revision"),
        "person": q.get("person"),
    }


def convert(source: Path, questions: Path) -> list[dict[str, Any]]:
    """Every conversation in `source` with its questions, as LoCoMo samples (in file-name order)."""
    gold = json.loads(questions.read_text(encoding="utf-8"))
    samples = []
    for path in sorted(source.glob("*.json")):
        conv = json.loads(path.read_text(encoding="utf-8"))
        cid = conv.get("conversation_id") or path.stem
        conversation, dia = convert_conversation(conv)
        qa = [convert_question(q, dia) for q in gold if q.get("conversation_id", path.stem) == cid]
        samples.append({"sample_id": cid, "conversation": conversation, "qa": qa})
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--questions", type=Path, default=DEFAULT_QUESTIONS)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    samples = convert(args.source, args.questions)
    text = json.dumps(samples, ensure_ascii=False, indent=2) + "\n"
    args.out.write_text(text, encoding="utf-8")
    n_q = sum(len(s["qa"]) for s in samples)
    print(f"wrote {len(samples)} conversations and {n_q} questions to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
