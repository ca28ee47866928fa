"""Time helpers: every stored timestamp is UTC ISO-8601 text ending in Z."""

from __future__ import annotations

import datetime as dt
import re

from dateutil import parser as du_parser

#: Zone names a timestamp may carry: the ones RFC 5322 §4.3 defines (UT, GMT and the US zones EST … PDT),
#: with UTC and Z. Other abbreviations are refused rather than guessed: most name several offsets (IST is
#: India, Ireland or Israel), and dateutil would silently read an unknown one as UTC.
ZONES = {"UT": 0, "UTC": 0, "GMT": 0, "Z": 0, "EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6,
         "PST": -8, "PDT": -7}
# "GMT+3": POSIX (and dateutil) read it as UTC-3, people mean UTC+3
_POSIX_OFFSET = re.compile(r"(?i)\b(?:GMT|UTC|UT)\s*[+-]\s*\d")


class _UnknownZone(ValueError):
    pass


def iso(value: dt.datetime) -> str:
    """Format a datetime as UTC ISO-8601 with a trailing Z (naive means UTC); ValueError when UTC has no such date."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    try:
        value = value.astimezone(dt.timezone.utc).replace(microsecond=0)
    except OverflowError:
        raise ValueError(f"'{value.isoformat()}' lies outside the years 1–9999 once moved to UTC") from None
    return value.isoformat().replace("+00:00", "Z")


def parse_iso(text: str) -> dt.datetime:
    """Parse a stored timestamp back into an aware UTC datetime."""
    value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return value


def _zone(name: str | None, offset: int | None) -> dt.tzinfo | None:
    if name is None:
        return None if offset is None else dt.timezone(dt.timedelta(seconds=offset))
    hours = ZONES.get(name.upper())
    if hours is None:
        raise _UnknownZone(name)
    return dt.timezone(dt.timedelta(hours=hours))


def _parse_text(text: str, default: dt.datetime, *, whole: bool) -> dt.datetime:
    """dateutil's reading of `text` with the known zones; with `whole`, ValueError unless it names year, month and day."""
    if _POSIX_OFFSET.search(text):
        raise ValueError(f"{text!r}: an offset after GMT or UTC is ambiguous (POSIX reads GMT+3 as UTC-3); "
                         "write it as +03:00")
    value = _dateutil(text, default)
    if whole and value.date() != _dateutil(text, dt.datetime(2002, 2, 2)).date():
        raise ValueError(f"{text!r} has no full date (year, month and day)")
    return value


def _dateutil(text: str, default: dt.datetime) -> dt.datetime:
    try:
        return du_parser.parse(text, default=default, tzinfos=_zone)
    except _UnknownZone as exc:
        raise ValueError(f"{text!r}: unknown or ambiguous time zone {str(exc)!r}; write the offset, e.g. "
                         "2024-03-01T12:00:00-08:00") from None
    except (OverflowError, TypeError, ValueError):
        raise ValueError(f"{text!r} is not a date I can read") from None


def parse_timestamp(value: object) -> str:
    """Normalise an input timestamp (ISO text, common date text, epoch seconds) or raise ValueError."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a date")
    if isinstance(value, (int, float)):
        try:
            return iso(dt.datetime.fromtimestamp(float(value), tz=dt.timezone.utc))
        except (OverflowError, OSError, ValueError):
            raise ValueError(f"{value!r} is not a time in the years 1–9999 (epoch seconds)") from None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{value!r} is not a date")
    text = value.strip()
    try:
        parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        parsed = _parse_text(text, dt.datetime(2001, 1, 1), whole=True)
    return iso(parsed)


def parse_user_date(text: str) -> dt.datetime:
    """Parse a date a user typed (`--as-of 2024-03-01`, `1 March 2024`); end of day when no time is given."""
    stripped = text.strip()
    if not stripped:
        raise ValueError("an empty date")
    value = _parse_text(stripped, dt.datetime(2000, 1, 1, 23, 59, 59), whole=False)
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    try:
        return value.astimezone(dt.timezone.utc)
    except OverflowError:
        raise ValueError(f"{text!r} lies outside the years 1–9999 once moved to UTC") from None
