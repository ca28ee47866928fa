"""Small text helpers shared by every stage: tokens, keywords, hashing, token counts."""

from __future__ import annotations

import functools
import hashlib
import json
import re
from typing import Any

#: The one stop-word list: English function words (pronouns, determiners, prepositions, conjunctions,
#: auxiliaries and connective adverbs; the closed classes of spaCy's English stop list, without its content
#: words such as "move" or "name", its numbers and its time words such as "first" or "never") and the fillers
#: of chat ("yeah", "lol", "gonna").
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having
    he her here hers herself him himself his how i if in into is it its itself just me more most my myself no
    nor not now of off on once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your yours yourself yourselves
    across afterwards almost alone although among amongst anyhow anyone anything anyway anywhere around
    beforehand behind beside besides beyond cannot either else elsewhere everyone everything everywhere except
    hence hereafter hereby herein hereupon however indeed latter latterly meanwhile might moreover must namely
    neither nevertheless nobody none noone nothing nowhere onto otherwise perhaps quite rather regarding
    somehow someone something sometime sometimes somewhere thence thereafter thereby therefore therein
    thereupon thru thus toward towards unless upon us via whatever whence whenever whereafter whereas whereby
    wherein whereupon wherever whether whither whoever whose within without yet
    yeah yes oh ok okay hey hi hello lol haha really also got get gets going gonna wanna im ive its thats
    dont didnt doesnt cant wont isnt arent wasnt one much many well still even though let lets like know think
    s t re ve ll d m""".split()
)

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\-]*")


def words(text: str) -> list[str]:
    """Lower-cased word tokens (apostrophes folded)."""
    return [w.lower().replace("'", "") for w in _WORD.findall(text)]


def content_words(text: str) -> list[str]:
    """Word tokens without stopwords."""
    return [w for w in words(text) if w not in STOPWORDS and len(w) > 1]


@functools.lru_cache(maxsize=1)
def _porter() -> Any:
    from nltk.stem.porter import PorterStemmer  # nltk takes seconds to import: only when a stem is asked for

    return PorterStemmer()


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Porter stem of a lower-case word (nltk's, the stemmer of the LoCoMo authors' answer F1)."""
    return str(_porter().stem(word))


def keywords(text: str, limit: int = 12) -> list[str]:
    """Distinct content words in order of first appearance."""
    seen: dict[str, None] = {}
    for w in content_words(text):
        seen.setdefault(w, None)
        if len(seen) >= limit:
            break
    return list(seen)


def count_tokens(text: str) -> int:
    """Budget tokens: whitespace-separated words (documented; no network tokenizer)."""
    return len(text.split())


def short_hash(*parts: object, length: int = 10) -> str:
    """A stable hex digest of the parts, for content-derived ids."""
    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()
    return h[:length]


def fts_query(text: str) -> str:
    """An FTS5 MATCH expression: the content words OR-ed, each quoted (no syntax errors)."""
    terms = dict.fromkeys(content_words(text))
    return " OR ".join(f'"{t}"' for t in terms)


#: Characters that act on a terminal instead of showing: the C0 controls but tab and newline, DEL, the C1
#: controls (ECMA-48), and the bidirectional embeddings, overrides and isolates (Unicode UAX #9), which
#: reorder what is shown around them; and lone surrogates (what undecodable bytes in a command line become),
#: which cannot be written as UTF-8 at all.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
#: What JSON leaves raw (with ensure_ascii=False) of those: the C0 controls are always escaped.
_JSON_RAW_CONTROL = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def whole_words(*phrases: str) -> re.Pattern[str]:
    """Matches any of `phrases` as whole words, case-insensitively: not inside a longer word, nor before or after an
    apostrophe that continues it ("Rovers" in "the Rovers' ground" is not "Rover")."""
    return re.compile(r"(?<![\w'’])(?:" + "|".join(re.escape(p) for p in phrases) + r")(?![\w'’])", re.I)


def has_surrogate(text: str) -> bool:
    """True when `text` holds a lone surrogate: not Unicode text, and SQLite cannot store it."""
    return _SURROGATE.search(text) is not None


def strip_controls(text: str) -> str:
    """`text` without terminal control characters (ESC sequences lose their ESC and show as text)."""
    return _CONTROL.sub("", text)


def json_text(value: Any, **kwargs: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, **kwargs)` with every terminal control character escaped (\\u009b):
    the same JSON value, safe to print on a terminal."""
    text = json.dumps(value, ensure_ascii=False, **kwargs)
    return _JSON_RAW_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


#: a line that opens by asking (a question word or an auxiliary first)
_ASKING = re.compile(
    r"^\W*(?:who|what|when|where|why|how|which|whose|did|do|does|are|is|was|were|have|has|can|could|will|would|should|"
    r"shall|may)\b", re.I)
#: the end of a sentence that chat goes on from in lower case ("… in May. you in?")
_LOWER_BREAK = re.compile(r"(?<=[.!])[\"'”’)]*\s+(?=[a-z])")


def question_after_statement(text: str) -> int | None:
    """Where the question starts in a line that first states something and then asks, the way chat writes it in lower
    case ("planning a trip, thinking Lisbon in May. you in?"): the offset of the question, or None for a line that
    does not end with one, or that only asks (or opens with too little to state anything: "rip umbrella. you ok?")."""
    line = text.rstrip()
    if not line.endswith("?"):
        return None
    breaks = list(_LOWER_BREAK.finditer(line))
    if not breaks:
        return _own_news_asking(line)
    stated = line[: breaks[-1].start()]
    if "?" in stated or len(stated.split()) < 4 or _ASKING.match(stated):
        return None
    return breaks[-1].end()


#: a line that opens with the speaker's own words ("I'm …", "my …", "we …")
_OWN = re.compile(r"^\W*(?:i|i'm|i’m|i've|i’ve|i'll|i’ll|we|we're|we’re|we've|we’ve|my|our)\b", re.I)
#: a word of the speaker's own anywhere in a line
_OWN_WORD = re.compile(r"\b(?:i|i'm|i’m|i've|i’ve|me|my|we|we're|we’re|we've|we’ve|us|our)\b", re.I)
#: the other person, whom a question is put to
_YOU = re.compile(r"\b(?:you|your|u|ur)\b", re.I)


def _own_news_asking(line: str) -> int | None:
    """A line of the speaker's news that ends by asking, within one sentence: a statement and a short question after
    its last comma ("I'm heading into town, want a coffee?" → the offset of "want"), or news told with surprise
    ("they moved me from alto to second soprano??": the whole line is stated, its length is returned). None when the
    line opens by asking, is not about the speaker, or is put to the other person."""
    if _ASKING.match(line) or _YOU.match(line.lstrip(" \t\"'(")):
        return None
    cut = line.rfind(", ")
    if cut > 0 and _OWN.match(line) and len(line[:cut].split()) >= 4 and len(line[cut + 2:].split()) <= 6 \
            and "?" not in line[:cut]:
        return cut + 2
    if re.search(r"(?:\?\?|\?!|!\?)$", line) and len(line.split()) >= 6 and _OWN_WORD.search(line) \
            and not _YOU.search(line):
        return len(line)
    return None
