"""JSON-schema validation (the `jsonschema` package) and a forgiving JSON-reply parser for LLM output.

Errors name the offending path ("items[2].label: ...") so a corrective retry can quote it. Every keyword of
the schema's draft is checked (Draft 2020-12 unless the schema names another with `$schema`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

Schema = Mapping[str, Any]

#: longest quote of the offending value in an error message
MAX_QUOTE = 80
_VALIDATORS: dict[str, Any] = {}


def _validator(schema: Schema) -> Any:
    """A validator for `schema`, built once per distinct schema; `jsonschema` is imported on first use (~0.1 s)."""
    key = json.dumps(schema, sort_keys=True, default=str)
    if key not in _VALIDATORS:
        from jsonschema.validators import validator_for

        cls = validator_for(schema)
        cls.check_schema(schema)
        _VALIDATORS[key] = cls(schema)
    return _VALIDATORS[key]


def _where(path: Any, top: str) -> str:
    """'items[2].label' for the path ('items', 2, 'label'); `top` for the value itself."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or top


def schema_error(value: Any, schema: Schema, top: str = "reply") -> str | None:
    """The most telling place where `value` breaks `schema` ("items[2].label: ..."), or None if it conforms.

    `top` names the value itself in the message (an LLM's reply, a tool's arguments)."""
    from jsonschema.exceptions import best_match

    error = best_match(_validator(schema).iter_errors(value))
    if error is None:
        return None
    message = error.message
    quoted = repr(error.instance)
    if len(quoted) > MAX_QUOTE:  # jsonschema quotes the offending value, which may be a whole reply
        message = message.replace(quoted, quoted[: MAX_QUOTE - 1] + "…", 1)
    return f"{_where(error.absolute_path, top)}: {message}"


class ReplyInvalid(ValueError):
    """Raised inside the client when a reply cannot be parsed or breaks the schema."""


_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def parse_json_reply(text: str, schema: Schema | None = None) -> Any:
    """The JSON in a reply: the whole text, a ```json fence, or the first JSON object in prose."""
    text = text.strip()
    if not text:
        raise ReplyInvalid("the reply was empty")
    try:
        return json.loads(text)
    except ValueError:
        pass
    for block in _FENCE.findall(text):
        try:
            return json.loads(block.strip())
        except ValueError:
            continue
    want = schema.get("type") if schema else None
    openers = "[" if want == "array" else "{" if want in (None, "object") else "{["
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in openers:
            try:
                value, _ = decoder.raw_decode(text, i)
            except ValueError:
                continue
            return value
    raise ReplyInvalid("the reply holds no JSON object")


def validate_reply(text: str, schema: Schema) -> Any:
    """Parse `text` and check it against `schema`; raise ReplyInvalid naming the first problem."""
    value = parse_json_reply(text, schema)
    err = schema_error(value, schema)
    if err:
        raise ReplyInvalid(err)
    return value


__all__ = ["ReplyInvalid", "Schema", "parse_json_reply", "schema_error", "validate_reply"]
