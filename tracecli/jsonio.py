"""Reading JSON a user gave (input files, batch lines, LLM replies): one line for every way it can be unusable."""

from __future__ import annotations

import json
from typing import Any

from tracecli.errors import BadInput
from tracecli.text import has_surrogate, strip_controls

#: How deeply JSON may nest (chat formats need about 8 levels; Python's parser fails near 1,000).
MAX_JSON_DEPTH = 200


def parse_json(text: str, name: str, where: str = "") -> Any:
    """One JSON value, or BadInput naming the file, the place and the problem (also for a `tree_problem`)."""
    place = f"{where}: " if where else ""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        if where:
            raise BadInput(f"{name}: {where} is not valid JSON ({exc.msg})") from None
        raise BadInput(f"{name}: malformed JSON at line {exc.lineno} column {exc.colno} ({exc.msg})") from None
    except RecursionError:
        raise BadInput(f"{name}: {place}JSON nests deeper than {MAX_JSON_DEPTH} levels") from None
    problem = tree_problem(value)
    if problem:
        raise BadInput(f"{name}: {place}{problem}")
    return value


def tree_problem(value: Any) -> str | None:
    """Why a parsed JSON value cannot be used (nesting deeper than MAX_JSON_DEPTH, text with a lone
    surrogate escape such as \\ud800), or None; walked without recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return f"JSON nests deeper than {MAX_JSON_DEPTH} levels"
        if isinstance(item, str):
            if has_surrogate(item):
                return (f"text {strip_controls(item)[:40]!r} holds a lone surrogate escape (\\ud800 to \\udfff), "
                        "which is not Unicode")
        elif isinstance(item, dict):
            stack.extend((k, depth + 1) for k in item)
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return None


__all__ = ["MAX_JSON_DEPTH", "parse_json", "tree_problem"]
