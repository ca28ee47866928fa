"""tracecli.text: one stemmer (nltk's Porter) and one stop-word list, shared by every stage."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import numpy as np
from nltk.stem.porter import PorterStemmer

from tracecli.graph.llm_extract import support
from tracecli.text import STOPWORDS, content_words, stem
from tracecli.wiki.pages import Traj, _salient

PACKAGE = Path(__file__).resolve().parent.parent / "tracecli"


def test_stem_is_porters() -> None:
    porter = PorterStemmer()
    for word in ("moving", "move", "works", "connection", "connected", "happily", "studies", "running"):
        assert stem(word) == porter.stem(word)


def test_llm_event_support_uses_the_porter_stem() -> None:
    # the old hand stemmer kept "connection" and "connected" apart
    assert support("Alice's connection dropped", "my internet connected again, then dropped", ["Alice"]) == 1.0
    assert support("Alice is moving to Porto", "we're finally moving to Porto", ["Alice"]) == 1.0


def _calls(name: str) -> list[str]:
    """Modules of the package that call `name(...)` or define a function called `name`."""
    out = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            called = isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == name
            if called or (isinstance(node, ast.FunctionDef) and node.name == name):
                out.append(str(path.relative_to(PACKAGE)))
    return sorted(set(out))


def test_one_stemmer_and_one_stop_word_list() -> None:
    assert _calls("PorterStemmer") == ["text.py"]
    assert "graph/llm_extract.py" not in _calls("_stem")  # its hand-written stemmer is gone
    for path in PACKAGE.rglob("*.py"):
        assert "spacy.lang.en.stop_words" not in path.read_text(encoding="utf-8"), path


def test_function_words_are_stop_words() -> None:
    assert {"however", "something", "without", "whether", "the", "yeah"} <= STOPWORDS
    assert content_words("However, something moved without a word") == ["moved", "word"]


def test_page_salience_keeps_content_words_that_spacy_called_stop_words() -> None:
    traj = Traj("tr_1", 0, 3, None, None, Counter({"move": 4, "however": 9, "porto": 3, "something": 5}),
                np.zeros(3, dtype=np.float32))
    words = _salient(traj, set(), 5, {}, 1)
    assert "move" in words and "porto" in words
    assert not {"however", "something"} & set(words)


def test_whole_words_match_only_whole_words_any_case():
    from tracecli.text import whole_words

    assert whole_words("Virgin", "Media").search("FINALLY ditched virgin.")
    assert not whole_words("Rover").search("the Rovers' ground")  # inside a longer word
    assert not whole_words("Tom").search("Tom's bike")  # an apostrophe continues the word
    assert whole_words("£200").search("from £200 to £350")
