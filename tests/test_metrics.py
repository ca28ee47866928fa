"""Scoring functions of `tracecli eval`, against hand-computed values."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracecli.evaluate import metrics as m


# -- evidence ids ------------------------------------------------------------------------


def test_parse_dia_ids_handles_malformed_evidence() -> None:
    assert m.parse_dia_ids(["D1:3", "D8:6; D9:17", "D"]) == ["D1:3", "D8:6", "D9:17"]
    assert m.parse_dia_ids(["D", ""]) == []
    assert m.parse_dia_ids("D2:1,D2:4") == ["D2:1", "D2:4"]
    assert m.parse_dia_ids(["D1:3", "D1:3"]) == ["D1:3"]
    assert m.parse_dia_ids(None) == []


def test_answer_text_of_integers() -> None:
    assert m.answer_text(2022) == "2022"
    assert m.answer_text(2.0) == "2"
    assert m.answer_text(None) == ""


# -- the LoCoMo authors' F1 -----------------------------------------------------------------


def test_normalize_answer() -> None:
    # commas dropped, lower case, punctuation and a/an/the/and removed
    assert m.normalize_answer("The cat, and a Dog!") == "cat dog"
    assert m.normalize_answer("7 May, 2023") == "7 may 2023"


def test_token_f1_hand_computed() -> None:
    # pred: [went, to, beach] vs gold: [beach]  -> stems: went, to, beach / beach
    # P = 1/3, R = 1/1, F1 = 2 * (1/3) / (4/3) = 0.5
    assert m.token_f1("went to the beach", "the beach") == pytest.approx(0.5)
    assert m.token_f1("running", "runs") == pytest.approx(1.0)  # Porter: run / run
    assert m.token_f1("", "anything") == 0.0
    assert m.token_f1("Paris", "London") == 0.0


def test_integer_answers_score() -> None:
    assert m.locomo_f1(2022, 2022, 2) == 1.0
    assert m.locomo_f1("In 2022", 2022, 2) == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert m.locomo_f1("2", 2, 1) == 1.0
    assert m.set_f1("2022", 2022) == 1.0
    assert m.bleu1("2022", 2022) == pytest.approx(1.0)


def test_multi_hop_splits_on_commas() -> None:
    # gold parts: "pottery", "running"; pred parts: "running", "reading"
    # pottery -> best 0, running -> best 1 -> mean 0.5
    assert m.locomo_f1("running, reading", "pottery, running", 1) == pytest.approx(0.5)
    # the same strings as a single-hop item: pred [run, read] gold [potteri, run] -> P=R=1/2 -> 0.5
    assert m.locomo_f1("running, reading", "pottery, running", 4) == pytest.approx(0.5)
    assert m.locomo_f1("running and pottery", "pottery, running", 1) == pytest.approx(2 * 0.5 * 1 / 1.5)


def test_open_domain_gold_cut_at_semicolon() -> None:
    gold = "Likely yes; since she loves art"
    assert m.locomo_gold(gold, 3) == "Likely yes"
    assert m.locomo_f1("likely yes", gold, 3) == 1.0
    assert m.locomo_f1("likely yes", gold, 4) < 1.0


def test_adversarial() -> None:
    assert m.adversarial_correct("No information available about that.") == 1.0
    assert m.adversarial_correct("Paris") == 0.0
    assert m.adversarial_correct("", abstained=True) == 1.0


# -- set F1 --------------------------------------------------------------------------------


def test_set_f1_hand_computed() -> None:
    # pred set {she, went, to, the, beach}, gold set {the, beach}: P = 2/5, R = 1, F1 = 0.8/1.4
    assert m.set_f1("She went to the beach.", "The beach") == pytest.approx(2 * 0.4 / 1.4)
    # sets: repeated tokens count once; no stemming
    assert m.set_f1("beach beach", "beach") == 1.0
    assert m.set_f1("runs", "running") == 0.0
    assert m.simple_tokens("Hi, there! OK? yes.") == ["hi", "there", "ok", "yes"]


# -- BLEU-1 ---------------------------------------------------------------------------------


def test_bleu1_hand_computed() -> None:
    # hyp [cat, sat, mat] ref [cat, on, mat]: clipped matches 2, P = 2/3, c = r = 3 -> BP = 1
    assert m.bleu1_tokens(["cat", "sat", "mat"], ["cat", "on", "mat"]) == pytest.approx(2 / 3)
    # clipping: hyp [the, the, the] vs ref [the, cat]: matched min(3, 1) = 1 -> P = 1/3, BP = 1 (c > r)
    assert m.bleu1_tokens(["the", "the", "the"], ["the", "cat"]) == pytest.approx(1 / 3)
    # brevity: hyp [cat] ref [cat, on, mat]: P = 1, BP = exp(1 - 3/1)
    assert m.bleu1_tokens(["cat"], ["cat", "on", "mat"]) == pytest.approx(math.exp(-2))
    # method-1 smoothing: no match -> epsilon / |hyp|, times BP = 1 (c = 2 > r = 1)
    assert m.bleu1_tokens(["dog", "ran"], ["cat"]) == pytest.approx(0.1 / 2)
    assert m.bleu1_tokens([], ["cat"]) == 0.0


def test_bleu1_equals_nltk_when_unigrams_match() -> None:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    cases = [
        (["melanie", "paint", "a", "sunris"], ["sunris", "paint"]),
        (["a", "b", "c", "d", "e"], ["a", "x", "c", "y", "e", "f", "g"]),
        (["x", "y"], ["y", "y", "y", "z"]),
    ]
    for hyp, ref in cases:
        ours = m.bleu1_tokens(hyp, ref)
        theirs = sentence_bleu([ref], hyp, weights=(1, 0, 0, 0), smoothing_function=SmoothingFunction().method1)
        assert ours == pytest.approx(theirs)


def test_bleu1_string_uses_locomo_tokens() -> None:
    assert m.bleu1("The sunrise", "sunrise") == pytest.approx(1.0)


# -- evidence recall at a budget ---------------------------------------------------------------


def test_cut_at_budget_takes_a_prefix() -> None:
    items = [
        ("one two three", ["D1:1"]),  # 3 words
        ("four five", ["D1:2", "D1:3", "D1:4", "D1:5"]),  # 2 words, too many refs: no credit
        ("six seven eight nine", ["D2:1"]),  # 4 words -> 9 in total, over a budget of 8: stop
        ("ten", ["D3:1"]),  # would fit, but the cut is a prefix
    ]
    cut = m.cut_at_budget(items, 8)
    assert cut.taken == 2 and cut.words == 5
    assert cut.cited == ("D1:1",)
    assert m.evidence_recall(cut.cited, ["D1:1", "D2:1"]) == 0.5
    assert m.evidence_recall(cut.cited, ["D1:2"]) == 0.0  # cited only by the 4-ref item
    assert m.evidence_recall(cut.cited, []) is None
    assert m.cut_at_budget(items, 100).cited == ("D1:1", "D2:1", "D3:1")


def test_three_refs_still_count() -> None:
    cut = m.cut_at_budget([("a b", ["D1:1", "D1:2", "D1:3"])], 10)
    assert m.evidence_recall(cut.cited, ["D1:3"]) == 1.0


def test_recall_with_malformed_gold() -> None:
    gold = m.parse_dia_ids(["D8:6; D9:17", "D"])
    cut = m.cut_at_budget([("x", ["D9:17"])], 300)
    assert m.evidence_recall(cut.cited, gold) == 0.5


@given(st.lists(st.tuples(st.text(max_size=30), st.lists(st.sampled_from(["D1:1", "D1:2", "D2:1", "D3:3"]), max_size=5)),
                max_size=12), st.integers(min_value=0, max_value=40))
def test_recall_is_a_fraction(items: list, budget: int) -> None:
    cut = m.cut_at_budget(items, budget)
    assert cut.words <= budget
    r = m.evidence_recall(cut.cited, ["D1:1", "D2:1"])
    assert r is not None and 0.0 <= r <= 1.0


# -- state answers ---------------------------------------------------------------------------


def test_contains_value() -> None:
    assert m.contains_value("Maya lives in Edinburgh now.", "Edinburgh")
    assert not m.contains_value("Maya lives in Edinburghshire", "Edinburgh")
    assert m.contains_value("Sofía's team is in Málaga", "Malaga")
    assert m.contains_value("It moved to March 22nd", "22 March")
    assert m.contains_value("2025-03-22", "22 March")
    assert not m.contains_value("15 March", "22 March")
    assert not m.contains_value("anything", "")


def test_state_scores() -> None:
    s = m.score_state_answer("Alice is moving to Porto", "Porto", ["Oslo"])
    assert s.valid and not s.leaked
    s = m.score_state_answer("Alice is moving to Oslo", "Porto", ["Oslo"])
    assert not s.valid and s.leaked
    s = m.score_state_answer("Oslo, then Porto", "Porto", ["Oslo"])
    assert s.valid and not s.leaked  # both: the current one is there, so no leakage
    s = m.score_state_answer("not enough evidence", "Porto", ["Oslo"])
    assert not s.valid and not s.leaked


# -- summaries -------------------------------------------------------------------------------


def test_percentiles() -> None:
    assert m.median([3.0, 1.0, 2.0]) == 2.0
    assert m.median([1.0, 2.0, 3.0, 4.0]) == 2.5
    assert m.percentile(list(map(float, range(1, 101))), 95) == pytest.approx(95.05)
    assert m.percentile([], 95) is None
    assert m.mean([1.0, None, 3.0]) == 2.0
    assert m.mean([None]) is None
