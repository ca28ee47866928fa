"""`ask --batch`: read one question object per JSONL line."""

from __future__ import annotations

import json
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

    items = []
    for n, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{path.name}: line {n} is not valid JSON ({exc.msg})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("question"), str) or not obj["question"].strip():
            raise BadInput(f"{path.name}: line {n} has no 'question' text")
        for key in ("conversation", "as_of"):
            if obj.get(key) is not None and not isinstance(obj[key], str):
                raise BadInput(f"{path.name}: line {n} '{key}' must be text")
        items.append(BatchItem(obj["question"], obj.get("conversation"), obj.get("as_of")))
    if not items:
        raise BadInput(f"{path.name}: holds no questions")
    return items
