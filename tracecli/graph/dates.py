"""Find date expressions in a sentence and resolve them against the session date.

Candidate phrases are found with patterns; resolution goes through
`dateparser` (relative to the session date) with a few additions it lacks
("two weekends ago", "this weekend", "end of July"); the commonest shapes
("tomorrow", "last Friday", "3 July") are worked out directly, with
dateparser's answers, because dateparser costs milliseconds a call.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass
from functools import lru_cache

_MONTHS = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_DAYS = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_NUM = r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few)"
_ORD = r"\d{1,2}(?:st|nd|rd|th)?"

_PATTERNS = [
    rf"\b{_ORD}\s+(?:of\s+)?{_MONTHS}(?:,?\s+\d{{4}})?\b",
    rf"\b{_MONTHS}\s+{_ORD}(?:,?\s+\d{{4}})?\b",
    rf"\b(?:early|mid|late|end of|the end of|beginning of|start of)\s+{_MONTHS}(?:\s+\d{{4}})?\b",
    rf"\b(?:in|since|by|until|during)\s+{_MONTHS}(?:\s+\d{{4}})?\b",
    rf"\b{_MONTHS}\s+\d{{4}}\b",
    r"\b\d{4}-\d{2}-\d{2}\b",
    r"\b\d{1,2}/\d{1,2}/\d{2,4}\b",
    rf"\b{_NUM}\s+(?:days?|weeks?|weekends?|months?|years?)\s+ago\b",
    rf"\b(?:last|next|this|coming)\s+(?:week(?:end)?|month|year|{_DAYS})\b",
    rf"\b(?:on\s+)?{_DAYS}\b",
    r"\b(?:yesterday|today|tonight|tomorrow)\b",
    rf"\bin\s+{_NUM}\s+(?:days?|weeks?|months?|years?)\b",
    r"\bthe\s+\d{1,2}(?:st|nd|rd|th)\b",
    r"\b(?:in\s+)?(?:19|20)\d{2}\b",
]
_FINDER = re.compile("|".join(f"(?:{p})" for p in _PATTERNS), re.IGNORECASE)
_WORDNUM = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3}


@dataclass(frozen=True)
class DateMention:
    """A date expression found in text, resolved to a calendar date."""

    phrase: str
    start: int
    end: int
    date: dt.date
    granularity: str  # day | week | month | year
    relative: bool


def _num(text: str) -> int:
    text = text.lower().strip()
    return int(text) if text.isdigit() else _WORDNUM.get(text, 1)


def _special(phrase: str, base: dt.datetime, future: bool = False) -> tuple[dt.date, str] | None:
    p = phrase.lower().strip()
    m = re.fullmatch(rf"({_NUM})\s+(days?|weeks?|months?|years?)\s+ago", p)
    if m and not m.group(1).isdigit():
        n, unit = _num(m.group(1)), m.group(2).rstrip("s")
        from dateutil.relativedelta import relativedelta

        delta = {"day": relativedelta(days=n), "week": relativedelta(weeks=n), "month": relativedelta(months=n),
                 "year": relativedelta(years=n)}[unit]
        return (base - delta).date(), unit if unit != "day" else "day"
    m = re.fullmatch(rf"in\s+({_NUM})\s+(days?|weeks?|months?|years?)", p)
    if m:
        n, unit = _num(m.group(1)), m.group(2).rstrip("s")
        from dateutil.relativedelta import relativedelta

        delta = {"day": relativedelta(days=n), "week": relativedelta(weeks=n), "month": relativedelta(months=n),
                 "year": relativedelta(years=n)}[unit]
        return (base + delta).date(), "day" if unit in ("day", "week") else unit
    m = re.fullmatch(rf"({_NUM})\s+weekends?\s+ago", p)
    if m:
        # The Saturday of the weekend N weeks back.
        last_sat = base.date() - dt.timedelta(days=(base.weekday() - 5) % 7 or 7)
        return last_sat - dt.timedelta(weeks=_num(m.group(1)) - 1), "week"
    if p in ("this weekend", "coming weekend", "next weekend"):
        days = (5 - base.weekday()) % 7
        extra = 7 if p == "next weekend" and days < 2 else 0
        return base.date() + dt.timedelta(days=days + extra), "week"
    if p == "last weekend":
        return base.date() - dt.timedelta(days=(base.weekday() - 5) % 7 or 7), "week"
    m = re.fullmatch(rf"(?:the\s+)?(end of|beginning of|start of|early|mid|late)\s+({_MONTHS})(?:\s+(\d{{4}}))?", p)
    if m:
        month = dt.datetime.strptime(m.group(2)[:3].title(), "%b").month
        if m.group(3):
            year = int(m.group(3))
        elif future:
            year = base.year + (1 if month < base.month else 0)
        else:
            year = base.year  # the current period, as dateparser reads a bare month
        day = {"end of": 28, "late": 25, "mid": 15}.get(m.group(1), 1)
        return dt.date(year, month, day), "month"
    return None


@lru_cache(maxsize=16384)
def _resolve(phrase: str, base_day: str, prefer: str) -> tuple[dt.date, str] | None:
    # Keyed by the base's calendar day, not its time: the patterns above name days, weeks, months and
    # years, and their resolution does not depend on the time of day (checked against dateparser for
    # every phrase shape, at 00:00, 09:30, 13:56 and 23:59:59), so one session's messages share entries.
    base = dt.datetime.fromisoformat(base_day)
    special = _special(phrase, base, prefer == "future")
    if special:
        return special
    cleaned = re.sub(r"^(?:in|since|by|until|during|on)\s+", "", phrase.strip(), flags=re.I)
    low = cleaned.lower()
    quick = _quick(low, base.date(), prefer)
    if quick is not None:
        value = quick
    else:
        import dateparser

        settings = {"RELATIVE_BASE": base, "PREFER_DATES_FROM": prefer, "RETURN_AS_TIMEZONE_AWARE": False}
        parsed = dateparser.parse(cleaned, languages=["en"], settings=settings)  # type: ignore[arg-type]
        if parsed is None:
            return None
        value = parsed.date()
    if "week" in low:
        gran = "week"
    elif re.fullmatch(rf"(?:{_MONTHS})(?:\s+\d{{4}})?|(?:last|next|this)\s+month|.*months?\s+ago", low):
        gran = "month"
    elif re.fullmatch(r"(?:19|20)\d{2}|(?:last|next|this)\s+year|.*years?\s+ago", low):
        gran = "year"
    else:
        gran = "day"
    return value, gran


_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
                "november", "december")
_QUICK_DAYS = {"yesterday": -1, "today": 0, "tonight": 0, "tomorrow": 1}
_QUICK_UNIT = re.compile(r"(last|this|next) (week|month|year)")
_QUICK_WEEKDAY = re.compile(r"(?:(last|this|next) )?(" + "|".join(_WEEKDAYS) + r")")
_QUICK_DAY_MONTH = re.compile(r"([1-9]|[12][0-9]|3[01]) (" + "|".join(_MONTH_NAMES) + r")(?: ((?:19|20)[0-9]{2}))?")


def _quick(low: str, base: dt.date, prefer: str) -> dt.date | None:
    """What dateparser answers for the commonest phrases, without its cost; None for anything else.

    Covers yesterday/today/tonight/tomorrow, last/this/next week/month/year,
    [last|this|next] <weekday>, a bare month name (base day ≤ 28) and
    "<day> <month> [year]" (not 29 February, nor a day the month lacks:
    dateparser has its own answers for those). It gave dateparser's answer
    for every base day of 2015–2030 (day words, weeks, weekdays) and of
    mid-2023 to early 2025 (months), with both `prefer` settings;
    tests/test_graph_speedups.py re-checks a sample. Everything else goes to
    dateparser.
    """
    if low in _QUICK_DAYS:
        return base + dt.timedelta(days=_QUICK_DAYS[low])
    m = _QUICK_UNIT.fullmatch(low)
    if m:
        step = {"last": -1, "this": 0, "next": 1}[m.group(1)]
        if m.group(2) == "week":
            return base + dt.timedelta(weeks=step)
        from dateutil.relativedelta import relativedelta

        return base + (relativedelta(months=step) if m.group(2) == "month" else relativedelta(years=step))
    m = _QUICK_WEEKDAY.fullmatch(low)
    if m:
        ahead = (_WEEKDAYS.index(m.group(2)) - base.weekday()) % 7  # days to the next such weekday, 0 = today
        which = m.group(1) or ("next" if prefer == "future" else "bare")
        if which == "last":
            return base - dt.timedelta(days=(7 - ahead) % 7 or 7)
        if which == "next":
            return base + dt.timedelta(days=ahead or 7)
        if which == "this":
            return base + dt.timedelta(days=ahead)
        return base - dt.timedelta(days=(7 - ahead) % 7)  # bare weekday, current period: this one or the last
    if low in _MONTH_NAMES and base.day <= 28:  # that month this year (next year's when ahead), the base's day
        month = _MONTH_NAMES.index(low) + 1
        return dt.date(base.year + (1 if prefer == "future" and month <= base.month else 0), month, base.day)
    m = _QUICK_DAY_MONTH.fullmatch(low)
    if m:
        day, month = int(m.group(1)), _MONTH_NAMES.index(m.group(2)) + 1
        if day > calendar.monthrange(2001, month)[1]:  # 31 June, 29 February: left to dateparser
            return None
        if m.group(3):
            return dt.date(int(m.group(3)), month, day)
        value = dt.date(base.year, month, day)
        if prefer == "future" and value <= base:
            value = dt.date(base.year + 1, month, day)
        return value
    return None


def find_dates(text: str, base: dt.datetime | None, *, future: bool = False) -> list[DateMention]:
    """Date mentions in `text`, resolved against `base` (the session date)."""
    if base is None:
        base = dt.datetime(2000, 1, 1)
    day = base.date().isoformat()
    prefer = "future" if future else "current_period"
    found: list[DateMention] = []
    for phrase, start, end, relative in _candidates(text):
        resolved = _resolve(phrase, day, prefer)
        if resolved is not None:
            found.append(DateMention(phrase, start, end, resolved[0], resolved[1], relative))
    return found


@lru_cache(maxsize=16384)
def _candidates(text: str) -> tuple[tuple[str, int, int, bool], ...]:
    """The date-like phrases of a text (phrase, start, end, relative): the same text is scanned several times."""
    out = []
    for m in _FINDER.finditer(text):
        phrase = m.group(0)
        if phrase.lower() in ("may", "march", "sat", "sun", "wed") or re.fullmatch(r"(?i)on\s+may", phrase):
            continue  # too often a verb or a word, not a date
        if re.fullmatch(r"(?:in\s+)?\d{4}", phrase, re.I) and not (1950 <= int(phrase[-4:]) <= 2100):
            continue
        out.append((phrase, m.start(), m.end(), not re.search(r"\d{4}", phrase)))
    return tuple(out)


def format_date(value: dt.date, granularity: str = "day") -> str:
    """Human form used in answers: '7 May 2023', 'May 2023', '2023', 'the week of 1 May 2023'."""
    if granularity == "year":
        return str(value.year)
    if granularity == "month":
        return f"{value.strftime('%B')} {value.year}"
    text = f"{value.day} {value.strftime('%B')} {value.year}"
    return f"the week of {text}" if granularity == "week" else text
