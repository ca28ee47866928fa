"""Pure scoring functions for `tracecli eval`: answer F1, BLEU-1, evidence recall, update leakage.

Two answer-F1 flavours are kept apart on purpose, because published numbers use both:

* ``locomo_f1`` — the LoCoMo authors' token F1 (Maharana et al., 2024,
  ``task_eval/evaluation.py``): drop commas, lower-case, strip punctuation,
  drop the words *a, an, the, and*, Porter-stem, then multiset-overlap F1.
  Multi-hop answers (category 1) are split on commas and each gold part takes
  its best-matching predicted part; open-domain gold (category 3) is cut at
  the first ';'.
* ``set_f1`` — the set-based F1 that later memory papers (A-Mem, Mem0, Nemori)
  report as "F1": lower-case, replace ``. , ! ?`` by spaces, split on
  whitespace, and compare token *sets* (no stemming, no article removal).

``bleu1`` is BLEU with unigrams only: clipped unigram precision times the
brevity penalty, over the LoCoMo-normalised, stemmed tokens. Its smoothing is
Chen & Cherry's method 1: a precision with zero matches becomes
``epsilon / len(hypothesis)`` (epsilon = 0.1) instead of 0. (NLTK's
``sentence_bleu`` returns 0 outright when no unigram matches, so a zero-overlap
answer scores at most 0.1·BP here and 0 there; every overlapping answer scores
the same in both.)

Nothing here touches the store or the network.
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tracecli.text import stem

BLEU_EPSILON = 0.1
MAX_REFS_PER_ITEM = 3  # an item citing more messages than this gets no evidence credit
LOCOMO_CATEGORIES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}

_DIA_ID = re.compile(r"D\d+:\d+")
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCT = set(string.punctuation)


# -- LoCoMo evidence -------------------------------------------------------------------------


def parse_dia_ids(evidence: Any) -> list[str]:
    """Every well-formed dia_id ('D3:12') in a LoCoMo `evidence` value, in order, without repeats.

    Malformed entries are common: "D8:6; D9:17" holds two ids, "D" holds none.
    """
    if evidence is None:
        return []
    items = [evidence] if isinstance(evidence, str) else list(evidence) if isinstance(evidence, (list, tuple)) else [evidence]
    out: dict[str, None] = {}
    for item in items:
        for m in _DIA_ID.findall(str(item)):
            out.setdefault(m, None)
    return list(out)


def answer_text(value: Any) -> str:
    """A gold answer as text (LoCoMo has integer answers such as 2022)."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# -- the LoCoMo authors' F1 -------------------------------------------------------------------


def normalize_answer(text: Any) -> str:
    """LoCoMo's normalisation: no commas, lower case, no punctuation, no a/an/the/and, single spaces."""
    s = answer_text(text).replace(",", "")
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def locomo_tokens(text: Any) -> list[str]:
    """Normalised, Porter-stemmed tokens."""
    return [stem(w) for w in normalize_answer(text).split()]


def token_f1(prediction: Any, gold: Any) -> float:
    """Multiset token F1 over LoCoMo-normalised, stemmed tokens (the authors' `f1_score`)."""
    pred = locomo_tokens(prediction)
    ref = locomo_tokens(gold)
    common = Counter(pred) & Counter(ref)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred)
    recall = same / len(ref)
    return 2 * precision * recall / (precision + recall)


def multi_hop_f1(prediction: Any, gold: Any) -> float:
    """Split both sides on commas; mean over gold parts of the best F1 against any predicted part."""
    preds = [p.strip() for p in answer_text(prediction).split(",")]
    golds = [g.strip() for g in answer_text(gold).split(",")]
    return sum(max(token_f1(p, g) for p in preds) for g in golds) / len(golds)


def locomo_gold(gold: Any, category: int | None) -> str:
    """The gold answer as the authors score it: open-domain (3) gold is cut at the first ';'."""
    text = answer_text(gold)
    if category == 3:
        text = text.split(";")[0].strip()
    return text


def locomo_f1(prediction: Any, gold: Any, category: int | None) -> float:
    """The LoCoMo authors' answer F1 for one QA item of the given category."""
    ref = locomo_gold(gold, category)
    if category == 1:
        return multi_hop_f1(prediction, ref)
    return token_f1(prediction, ref)


ADVERSARIAL_PHRASES = ("no information available", "not mentioned")


def adversarial_correct(prediction: Any, abstained: bool = False) -> float:
    """Category 5: 1.0 when the system declines (abstains or says the information is not there)."""
    text = answer_text(prediction).lower()
    return 1.0 if abstained or any(p in text for p in ADVERSARIAL_PHRASES) else 0.0


# -- set-based F1 of later memory papers ------------------------------------------------------


def simple_tokens(text: Any) -> list[str]:
    """Lower-case, '.', ',', '!', '?' replaced by spaces, split on whitespace."""
    s = answer_text(text).lower()
    for ch in ".,!?":
        s = s.replace(ch, " ")
    return s.split()


def set_f1(prediction: Any, gold: Any) -> float:
    """F1 over token sets (A-Mem / Mem0 style): no stemming, no article removal."""
    pred, ref = set(simple_tokens(prediction)), set(simple_tokens(gold))
    if not pred or not ref:
        return 0.0
    common = len(pred & ref)
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


# -- BLEU-1 -------------------------------------------------------------------------------------


def brevity_penalty(ref_len: int, hyp_len: int) -> float:
    """BP = 1 when the hypothesis is longer than the reference, else exp(1 - r/c); 0 for an empty hypothesis."""
    if hyp_len == 0:
        return 0.0
    if hyp_len > ref_len:
        return 1.0
    return math.exp(1 - ref_len / hyp_len)


def bleu1_tokens(hypothesis: Sequence[str], reference: Sequence[str], epsilon: float = BLEU_EPSILON) -> float:
    """Unigram BLEU of token lists: clipped precision (method-1 smoothed) times the brevity penalty."""
    if not hypothesis or not reference:
        return 0.0
    ref_counts = Counter(reference)
    matched = sum(min(n, ref_counts[w]) for w, n in Counter(hypothesis).items())
    precision = matched / len(hypothesis) if matched else epsilon / len(hypothesis)
    return brevity_penalty(len(reference), len(hypothesis)) * precision


def bleu1(prediction: Any, gold: Any, category: int | None = None, epsilon: float = BLEU_EPSILON) -> float:
    """BLEU-1 over LoCoMo-normalised, stemmed tokens (open-domain gold cut at ';')."""
    return bleu1_tokens(locomo_tokens(prediction), locomo_tokens(locomo_gold(gold, category)), epsilon)


# -- evidence recall at a budget ---------------------------------------------------------------------


@dataclass(frozen=True)
class BudgetCut:
    """What a budget admits of a ranked context: the items taken, the words used, the refs credited."""

    taken: int
    words: int
    cited: tuple[str, ...]


def cut_at_budget(items: Iterable[tuple[str, Sequence[str]]], budget: int,
                  max_refs: int = MAX_REFS_PER_ITEM) -> BudgetCut:
    """Take (text, source_refs) items in rank order while their whitespace words fit in `budget`.

    The cut stops at the first item that would overflow the budget (a prefix
    of the ranking, as a reader with that budget would see it). Items citing
    more than `max_refs` messages consume budget but are credited with none.
    """
    words = 0
    taken = 0
    cited: dict[str, None] = {}
    for text, refs in items:
        cost = len(text.split())
        if words + cost > budget:
            break
        words += cost
        taken += 1
        unique = list(dict.fromkeys(refs))
        if len(unique) <= max_refs:
            for r in unique:
                cited.setdefault(r, None)
    return BudgetCut(taken, words, tuple(cited))


def evidence_recall(cited: Iterable[str], gold: Iterable[str]) -> float | None:
    """Share of gold evidence ids among the cited ids; None when there is no gold evidence."""
    gold_set = set(gold)
    if not gold_set:
        return None
    return len(gold_set & set(cited)) / len(gold_set)


# -- state answers: valid / outdated -------------------------------------------------------------

_MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"], 1)}
_MONTH_ALT = "|".join(list(_MONTHS) + [m[:3] for m in _MONTHS if len(m) > 3] + ["sept"])


def fold(text: Any) -> str:
    """Lower-case, accent-free, punctuation-free, single-spaced text (for containment tests)."""
    s = unicodedata.normalize("NFKD", answer_text(text))
    s = "".join(ch for ch in s if not unicodedata.combining(ch)).lower().replace("'", "").replace("’", "")
    s = re.sub(r"[^a-z0-9]+", " ", s)
    return " ".join(s.split())


def _no_articles(folded: str) -> str:
    return " ".join(w for w in folded.split() if w not in ("a", "an", "the"))


def _month(name: str) -> int:
    name = name.lower()
    if name == "sept":
        return 9
    for full, n in _MONTHS.items():
        if full == name or full[:3] == name:
            return n
    raise KeyError(name)


def month_days(text: Any) -> set[tuple[int, int]]:
    """Every (month, day) written in the text: '22 March', 'March 22nd', '2025-03-22', '22/03'."""
    t = answer_text(text).lower()
    out: set[tuple[int, int]] = set()
    for y, mo, d in re.findall(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b", t):
        out.add((int(mo), int(d)))
    for d, mo in re.findall(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?\s+({_MONTH_ALT})\b", t):
        out.add((_month(mo), int(d)))
    for mo, d in re.findall(rf"\b({_MONTH_ALT})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b", t):
        out.add((_month(mo), int(d)))
    return {(m, d) for m, d in out if 1 <= m <= 12 and 1 <= d <= 31}


def contains_value(answer: Any, value: Any) -> bool:
    """Does the answer state `value`? Word-boundary containment after folding; dates by (month, day).

    Articles are not part of a value ('Seville marathon' states 'the Seville marathon'), as in LoCoMo's
    own normalisation.
    """
    v = _no_articles(fold(value))
    if not v:
        return False
    a = _no_articles(fold(answer))
    if f" {v} " in f" {a} ":
        return True
    dates = month_days(value)
    return bool(dates) and bool(dates & month_days(answer))


@dataclass(frozen=True)
class StateScore:
    """One state answer: does it hold the current value, and does it leak a superseded one instead."""

    valid: bool
    leaked: bool


def score_state_answer(answer: Any, current: Any, superseded: Sequence[Any] = ()) -> StateScore:
    """valid = the current value is in the answer; leaked = a superseded value is, without the current one."""
    valid = contains_value(answer, current)
    stale = any(contains_value(answer, old) for old in superseded if fold(old) and fold(old) != fold(current))
    return StateScore(valid=valid, leaked=stale and not valid)


# -- summaries ------------------------------------------------------------------------------------


def mean(values: Iterable[float | None]) -> float | None:
    """Mean of the non-None values; None when there are none."""
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0–100) with linear interpolation between closest ranks; None when empty."""
    if not values:
        return None
    s = sorted(values)
    pos = (len(s) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def median(values: Sequence[float]) -> float | None:
    """The 50th percentile."""
    return percentile(values, 50.0)


__all__ = [
    "ADVERSARIAL_PHRASES", "BLEU_EPSILON", "BudgetCut", "LOCOMO_CATEGORIES", "MAX_REFS_PER_ITEM", "StateScore",
    "adversarial_correct", "answer_text", "bleu1", "bleu1_tokens", "brevity_penalty", "contains_value",
    "cut_at_budget", "evidence_recall", "fold", "locomo_f1", "locomo_gold", "locomo_tokens", "mean", "median",
    "month_days", "multi_hop_f1", "normalize_answer", "parse_dia_ids", "percentile", "score_state_answer",
    "set_f1", "simple_tokens", "token_f1",
]
