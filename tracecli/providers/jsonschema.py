"""A JSON-schema subset validator and a forgiving JSON-reply parser for LLM output.

The subset covers what structured-output prompts use: type (or a list of
types), const, enum, minimum/maximum, minLength/maxLength, minItems/maxItems,
items, properties, required and additionalProperties. Errors name the first
offending path ("items[2].label: ...") so a corrective retry can quote it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

Schema = Mapping[str, Any]

_TYPE_NAMES = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}


def _type_name(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _is_type(value: Any, name: str) -> bool:
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if isinstance(value, bool):
        return False
    if name == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, (int, float))
    raise ValueError(f"unsupported schema type {name!r}")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def schema_error(value: Any, schema: Schema, path: str = "") -> str | None:
    """The first place `value` breaks `schema` ("items[2].label: ..."), or None if it conforms."""
    where = path or "reply"
    expected = schema.get("type")
    if expected is not None:
        names = [expected] if isinstance(expected, str) else list(expected)
        if not any(_is_type(value, n) for n in names):
            return f"{where}: expected {' or '.join(names)}, got {_type_name(value)}"
    if "const" in schema and value != schema["const"]:
        return f"{where}: {value!r} is not {schema['const']!r}"
    if "enum" in schema and not any(_same(value, e) for e in schema["enum"]):
        return f"{where}: {value!r} is not one of {list(schema['enum'])!r}"
    if _num(value):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{where}: {value!r} is less than the minimum {schema['minimum']!r}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{where}: {value!r} is more than the maximum {schema['maximum']!r}"
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            return f"{where}: shorter than {schema['minLength']} characters"
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"{where}: longer than {schema['maxLength']} characters"
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            return f"{where}: has {len(value)} items, fewer than {schema['minItems']}"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"{where}: has {len(value)} items, more than {schema['maxItems']}"
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                err = schema_error(item, items, f"{path}[{i}]" if path else f"[{i}]")
                if err:
                    return err
    if isinstance(value, dict):
        props: Mapping[str, Any] = schema.get("properties") or {}
        for name in schema.get("required") or []:
            if name not in value:
                return f"{_join(path, name)}: required property is missing"
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in props:
                err = schema_error(item, props[key], _join(path, key))
                if err:
                    return err
            elif extra is False:
                return f"{where}: unexpected property {key!r}"
            elif isinstance(extra, Mapping):
                err = schema_error(item, extra, _join(path, key))
                if err:
                    return err
    return None


def _num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _same(value: Any, expected: Any) -> bool:
    # In Python True == 1; in JSON a boolean never equals a number.
    return bool(value == expected) and isinstance(value, bool) == isinstance(expected, bool)


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
