"""Time helpers: every stored timestamp is UTC ISO-8601 text ending in Z."""

from __future__ import annotations

import datetime as dt

from dateutil import parser as du_parser


def iso(value: dt.datetime) -> str:
    """Format a datetime as UTC ISO-8601 with a trailing Z (naive means UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    value = value.astimezone(dt.timezone.utc).replace(microsecond=0)
    return value.isoformat().replace("+00:00", "Z")


def parse_iso(text: str) -> dt.datetime:
    """Parse a stored timestamp back into an aware UTC datetime."""
    value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return value


def parse_timestamp(value: object) -> str:
    """Normalise an input timestamp (ISO text, common date text, epoch seconds) or raise ValueError."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a date")
    if isinstance(value, (int, float)):
        return iso(dt.datetime.fromtimestamp(float(value), tz=dt.timezone.utc))
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{value!r} is not a date")
    text = value.strip()
    try:
        return iso(dt.datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        pass
    try:
        return iso(du_parser.parse(text))
    except (ValueError, OverflowError):
        raise ValueError(f"{value!r} is not a date I can read") from None


def parse_user_date(text: str) -> dt.datetime:
    """Parse a date a user typed (`--as-of 2024-03-01`, `1 March 2024`); end of day when no time is given."""
    stripped = text.strip()
    try:
        value = du_parser.parse(stripped, default=dt.datetime(2000, 1, 1, 23, 59, 59))
    except (ValueError, OverflowError):
        raise ValueError(f"'{text}' is not a date I can read") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return value.astimezone(dt.timezone.utc)
