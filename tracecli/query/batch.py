"""`ask --batch`: read one question object per JSONL line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tracecli.errors import BadInput


@dataclass
class BatchItem:
    question: str
    conversation: str | None = None
    as_of: str | None = None


def read_batch(path: Path) -> list[BatchItem]:
    """Parse and validate the whole file before answering anything."""
    # here, not at the top: `tracecli.ingest` loads the ingest pipeline, which `ask` does not need
    from tracecli.ingest.formats import read_text
    from tracecli.jsonio import parse_json
    from tracecli.timeutil import parse_user_date

    items = []
    for n, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        obj = parse_json(line, path.name, f"line {n}")
        if not isinstance(obj, dict) or not isinstance(obj.get("question"), str) or not obj["question"].strip():
            raise BadInput(f"{path.name}: line {n} has no 'question' text")
        for key in ("conversation", "as_of"):
            if obj.get(key) is not None and not isinstance(obj[key], str):
                raise BadInput(f"{path.name}: line {n} '{key}' must be text")
        if obj.get("as_of") is not None:
            try:
                parse_user_date(obj["as_of"])
            except ValueError as exc:
                raise BadInput(f"{path.name}: line {n} 'as_of': {exc}") from None
        items.append(BatchItem(obj["question"], obj.get("conversation"), obj.get("as_of")))
    if not items:
        raise BadInput(f"{path.name}: holds no questions")
    return items
