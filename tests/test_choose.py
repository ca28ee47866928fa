"""The learned choice of the answer's sentence (tracecli.query.choose): its rows, features, fitting and weights."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from ask_fixtures import ALICE, ask_db, ask_store  # noqa: F401 (ask_db, ask_store are fixtures)

from tracecli.query import choose
from tracecli.query.answer import Answer
from tracecli.query.paths import EventNode, Graph
from tracecli.query.shape import shape_of


def _ev(eid: str, seq: int, quote: str, subject: str = "Noor", speaker: str | None = "Noor",
        anchor: str | None = None) -> EventNode:
    return EventNode(
        id=eid, conversation_id="c", session_id="s", type="state_change", subject=subject, description=quote,
        quote=quote, time_anchor=anchor or f"2024-0{min(seq, 9)}-01T10:00:00Z", event_time=None,
        event_time_granularity=None, seq=seq, sentence_idx=0, facet=None, value=None, negated=False, confidence=0.6,
        validity=1.0, valid_until=None, topic_id=None, speaker=speaker, source_refs=[f"m{seq}"],
    )


OLD = _ev("old", 1, "I get my hair cut at a little place on the high street")
NEW = _ev("new", 7, "the new barber on Mill Lane did a great job on saturday")
ASKS = _ev("asks", 8, "where do you get yours cut?")
OTHER = _ev("other", 9, "my barber is on Mill Lane too", subject="Ivo", speaker="Ivo")
GRAPH = Graph({e.id: e for e in (OLD, NEW, ASKS, OTHER)}, defaultdict(list), defaultdict(list), {}, {})
QUESTION = "Where does Noor get her hair cut these days?"


def _rows(as_of: str | None = None) -> list[choose.Row]:
    shape = shape_of(QUESTION, ["Noor", "Ivo"], None)
    ranked = [(OLD, 0.9), (OTHER, 0.8), (NEW, 0.75), (ASKS, 0.7)]
    return choose.candidate_rows(GRAPH, shape, ranked, {}, OLD, QUESTION, as_of, None)


def test_rows_read_who_said_what_and_when_against_the_proposal():
    rows = {r.event.id: r for r in _rows()}
    assert rows["old"].proposed and not rows["new"].proposed
    assert rows["new"].later and not rows["new"].earlier and rows["new"].person
    assert not rows["other"].person and not rows["other"].subject
    assert rows["asks"].question and rows["asks"].asking
    assert rows["new"].novel and not rows["old"].novel
    assert rows["old"].shared >= 2  # "hair", "cut"


def test_asked_as_of_a_date_sentences_said_after_it_are_no_candidates():
    ids = [r.event.id for r in _rows(as_of="2024-03-01T00:00:00Z")]
    assert ids == ["old"]


def test_the_proposal_joins_the_candidates_when_ranked_below_the_window():
    shape = shape_of(QUESTION, ["Noor"], None)
    filler = [(_ev(f"f{i}", 20 + i, f"filler {i}"), 0.5) for i in range(choose.WINDOW)]
    rows = choose.candidate_rows(GRAPH, shape, filler, {"old": 0.2}, OLD, QUESTION, None, None)
    assert len(rows) == choose.WINDOW + 1 and rows[-1].proposed and rows[-1].rank == choose.WINDOW


def test_features_name_every_column_and_time_features_depend_on_the_kind_of_question():
    rows = _rows()
    now = choose.features(rows, choose.Flags(now=True, as_of=False, before=False, support="sentence"))
    before = choose.features(rows, choose.Flags(now=False, as_of=False, before=True, support="sentence"))
    assert now.shape == (len(rows), len(choose.FEATURE_NAMES))
    col = choose.FEATURE_NAMES.index("now: latest of its speaker's")
    assert now[[r.event.id for r in rows].index("asks"), col] == 1.0
    assert before[:, col].sum() == 0.0


def _group(rng: np.random.Generator, flags: choose.Flags) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two statements of the same person, the newer one ranked lower; right is the newer one asked for now, the
    older one asked for what came before."""
    first, second = sorted(rng.choice(np.arange(1, 60), size=2, replace=False))
    old = _ev("o", int(first), "I drive a Polo")
    new = _ev("n", int(second), "I drive a Tesla")
    top = float(rng.uniform(0.5, 0.9))
    rows = [choose.Row(event=old, rank=0, score=top, person=True, subject=True, proposed=True, same_message=True,
                       later=False, earlier=False, valid=True, question=False, hedged=False, muses=False, typed=True,
                       novel=False, overlap=0.5, shared=1, words=4, negated=False, frame=True, facet=False,
                       near_proposal=1.0, holds_value=True, asking=False),
            choose.Row(event=new, rank=1, score=top - float(rng.uniform(0.0, 0.08)), person=True, subject=True,
                       proposed=False, same_message=False, later=True, earlier=False, valid=True, question=False,
                       hedged=False, muses=False, typed=True, novel=False, overlap=0.5, shared=1, words=4,
                       negated=False, frame=True, facet=False, near_proposal=0.8, holds_value=True, asking=False)]
    right = np.array([0.0, 1.0]) if flags.now else np.array([1.0, 0.0])
    return choose.features(rows, flags), right, 1.0 - right


def test_fit_learns_to_take_the_newer_statement_for_now_and_the_older_for_before():
    rng = np.random.default_rng(3)
    now = choose.Flags(now=True, as_of=False, before=False, support="sentence")
    before = choose.Flags(now=False, as_of=False, before=True, support="sentence")
    groups = [_group(rng, now) for _ in range(40)] + [_group(rng, before) for _ in range(40)]
    model = choose.fit(groups, rounds=60)
    x_now, _, _ = _group(rng, now)
    x_before, _, _ = _group(rng, before)
    assert int(np.argmax(choose.scores(x_now, model))) == 1
    assert int(np.argmax(choose.scores(x_before, model))) == 0
    with pytest.raises(ValueError):
        choose.fit([(x_now, np.zeros(2), np.zeros(2))])


def test_the_stale_cost_steers_away_from_an_outdated_statement():
    rng = np.random.default_rng(5)
    now = choose.Flags(now=True, as_of=False, before=False, support="sentence")
    newer_right = [(x, right, np.zeros(2)) for x, right, _ in (_group(rng, now) for _ in range(20))]
    # twice as often, the newer statement states an outdated value and nothing is right
    newer_stale = [(x, np.zeros(2), right) for x, right, _ in (_group(rng, now) for _ in range(40))]
    x, _, _ = _group(rng, now)
    without = choose.fit(newer_right + newer_stale, stale_cost=0.0, rounds=60)
    with_cost = choose.fit(newer_right + newer_stale, stale_cost=1.0, rounds=60)
    assert int(np.argmax(choose.scores(x, without))) == 1
    assert int(np.argmax(choose.scores(x, with_cost))) == 0


def test_stored_trees_score_as_the_fitted_model_does():
    """The trees walked in numpy (what `ask` runs; scikit-learn is needed only to fit) give scikit-learn's own
    probabilities, and survive the JSON round trip."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(7)
    x = rng.normal(size=(400, len(choose.FEATURE_NAMES)))
    label = (x[:, 0] > 0).astype(int) + (x[:, 1] > 0.8)
    fitted = HistGradientBoostingClassifier(max_iter=30, max_leaf_nodes=7, random_state=0).fit(x, label)
    model = choose._exported(fitted, stale_cost=0.5)
    assert np.allclose(model.proba(x[:50]), fitted.predict_proba(x[:50]))
    again = choose.Trees.from_json(json.loads(model.to_json(["heldout_test"])))
    assert np.allclose(again.proba(x[:50]), model.proba(x[:50]))


def test_the_shipped_model_fits_the_features():
    model = choose.weights()
    assert isinstance(model, choose.Trees)
    assert model.proba(np.zeros((3, len(choose.FEATURE_NAMES)))).shape == (3, 3)
    data = json.loads(choose.WEIGHTS_FILE.read_text(encoding="utf-8"))
    assert data["trained_on"] and all(name.startswith("heldout_") for name in data["trained_on"])
    # the sets quality is quoted on were never fitted on (README, Quality)
    held_out = {f"heldout_{s}" for s in ("i", "s", "t", "w", "x", "y", "ad", "ae")}
    assert not held_out & set(data["trained_on"])


def _stored(**change: object) -> str:
    """A small valid model's JSON with some of its fields changed (None: left out)."""
    data = json.loads(choose.fit([(np.eye(2, len(choose.FEATURE_NAMES)), np.array([1.0, 0.0]), np.array([0.0, 1.0]))] * 4,
                                 rounds=3).to_json(["heldout_test"]))
    trees = dict(data["trees"])
    for key, value in change.items():
        target = trees if key in trees else data
        if value is None:
            target.pop(key)
        else:
            target[key] = value
    data["trees"] = trees
    return json.dumps(data)


def test_a_small_stored_model_is_read_back():
    assert isinstance(choose.Trees.from_json(json.loads(_stored())), choose.Trees)


@pytest.mark.parametrize("content", [
    lambda: _stored(features=["rank"]),  # fitted for other features
    lambda: _stored(kind="linear"),
    lambda: _stored(threshold=[0.0]),  # fewer thresholds than nodes
    lambda: _stored(left=[10**6] * 3),  # children outside the node arrays
    lambda: _stored(value=["x"]),
    lambda: _stored(baseline=[0.0]),  # one class, not three
    lambda: _stored(roots=None),
    lambda: json.dumps({"features": choose.FEATURE_NAMES, "weights": [1.0] * len(choose.FEATURE_NAMES)}),  # old kind
    lambda: json.dumps([1, 2, 3]),
    lambda: "{not json",
], ids=["other-features", "kind", "short", "children", "strings", "classes", "no-roots", "linear", "list", "broken"])
def test_weights_that_do_not_fit_the_features_are_not_used(tmp_path, monkeypatch, content):
    stale = tmp_path / "w.json"
    stale.write_text(content(), encoding="utf-8")
    monkeypatch.setattr(choose, "WEIGHTS_FILE", stale)
    choose.weights.cache_clear()
    try:
        assert choose.weights() is None
        assert choose.choose(_rows(), choose.Flags(True, False, False, "sentence")) is None
    finally:
        choose.weights.cache_clear()


def _latest_only() -> np.ndarray:
    """Weights that value only a sentence's place in time (the latest wins; a little against the proposal, since the
    latest sentence's message may hold several candidates)."""
    w = np.zeros(len(choose.FEATURE_NAMES))
    w[choose.FEATURE_NAMES.index("time in window")] = 50.0
    w[choose.FEATURE_NAMES.index("proposed")] = -1.0
    return w


def test_ask_reads_its_answer_from_the_chosen_sentence(ask_store, embedder, monkeypatch):
    """Through `Asker`: every answered question logs its candidates; with weights that only value a sentence's
    place in time the answer comes from the latest candidate, with the learned choice off from the rule step's."""
    from tracecli.query.ask import Asker
    from tracecli.query.settings import AskSettings

    question = "Where is Alice travelling?"
    rule = Asker(ask_store, settings=AskSettings(learned_choice=False), embedder=embedder)
    rule.choice_log = []
    proposed = rule.ask(question, conversation_id=ALICE, store_answer=False)
    (rows, flags), = rule.choice_log
    assert len(rows) > 1 and sum(r.proposed for r in rows) == 1
    latest = max(rows, key=lambda r: (r.event.seq, r.event.sentence_idx))
    assert not latest.proposed  # else this question cannot tell the two apart

    w = _latest_only()
    learned = Asker(ask_store, settings=AskSettings(learned_choice=True), embedder=embedder)
    monkeypatch.setattr(choose, "weights", lambda: w)
    chosen = learned.ask(question, conversation_id=ALICE, store_answer=False)
    assert set(chosen.source_refs[:1]) <= {f"{ALICE}:{r}" for r in latest.event.source_refs} | set(latest.event.source_refs)
    assert chosen.source_refs[:1] != proposed.source_refs[:1]
    assert 0.0 < chosen.confidence <= 1.0
    # the two disagree: the rule step's sentence stays in the context, right after the chosen one's
    cited = [ref for item in chosen.context for ref in item.source_refs]
    assert chosen.context[0].source_refs[:1] == chosen.source_refs[:1]
    assert proposed.source_refs[0] in cited[: 1 + len(chosen.context[1].source_refs)]


def test_a_question_about_when_an_event_happened_is_left_to_the_rule_step(ask_store, embedder, monkeypatch):
    """The model was fitted on questions about what holds; "When did …?" asks when something happened, so even
    weights that would take the latest sentence are not consulted."""
    from tracecli.query.ask import Asker
    from tracecli.query.settings import AskSettings

    assert not choose.fitted_for("When did Alice get the kitten?") and not choose.fitted_for("  when did he move?")
    assert choose.fitted_for("When is Alice's flight now?") and choose.fitted_for("Where did Alice move?")
    from tracecli.query import ask as ask_module

    monkeypatch.setattr(choose, "weights", _latest_only)
    question = "When did Alice get the kitten?"
    learned = Asker(ask_store, settings=AskSettings(learned_choice=True), embedder=embedder)
    learned.choice_log = []
    res = learned.ask(question, conversation_id=ALICE, store_answer=False)
    assert not res.abstained and learned.choice_log == []
    monkeypatch.setattr(ask_module, "fitted_for", lambda q: True)  # as if the model were fitted on such questions
    learned.ask(question, conversation_id=ALICE, store_answer=False)
    assert learned.choice_log  # … it would have been put to the model


def test_ablating_the_choice_answers_from_the_rule_step(ask_store, embedder, monkeypatch):
    from tracecli.query.ask import Asker
    from tracecli.query.settings import AskSettings, check_ablations

    assert check_ablations(["choice"]) == ["choice"]
    question = "Where is Alice travelling?"
    rule = Asker(ask_store, settings=AskSettings(learned_choice=False), embedder=embedder)
    w = _latest_only()
    monkeypatch.setattr(choose, "weights", lambda: w)
    ablated = Asker(ask_store, settings=AskSettings(ablate=frozenset({"choice"})), embedder=embedder)
    learned = Asker(ask_store, settings=AskSettings(), embedder=embedder)
    own = rule.ask(question, conversation_id=ALICE, store_answer=False).source_refs[:1]
    assert ablated.ask(question, conversation_id=ALICE, store_answer=False).source_refs[:1] == own
    assert learned.ask(question, conversation_id=ALICE, store_answer=False).source_refs[:1] != own


def test_the_valid_end_of_a_revision_chain_is_never_replaced(ask_store, embedder, monkeypatch):
    """"Where is Alice moving?" is answered along the Oslo → Porto chain; weights that would take the latest sentence
    anywhere else leave it, and nothing is logged to learn from."""
    from tracecli.query.ask import Asker
    from tracecli.query.settings import AskSettings

    w = _latest_only()
    monkeypatch.setattr(choose, "weights", lambda: w)
    learned = Asker(ask_store, settings=AskSettings(), embedder=embedder)
    learned.choice_log = []
    res = learned.ask("Where is Alice moving?", conversation_id=ALICE, store_answer=False)
    assert res.support == "chain" and "Porto" in res.answer
    assert learned.choice_log == []
    assert not choose.replaceable("chain") and choose.replaceable("frame") and choose.replaceable("sentence")


def test_a_sentence_that_muses_on_an_unreal_condition_is_never_chosen(tmp_path, embedder, monkeypatch):
    """'If I ever switched to the baritone part I'd need lessons' states nothing that holds: with weights that value
    only a sentence's place in time (it is the latest) and its musing, the model still may not pick it."""
    from ask_fixtures import build_chat_db

    from tracecli.query.ask import Asker
    from tracecli.query.settings import AskSettings
    from tracecli.store import open_store

    db = build_chat_db(tmp_path / "m.db", [Path(__file__).parent / "fixtures" / "musing.json"], embedder)
    w = _latest_only()
    w[choose.FEATURE_NAMES.index("muses")] = 50.0
    monkeypatch.setattr(choose, "weights", lambda: w)
    with open_store(db) as store:
        asker = Asker(store, settings=AskSettings(learned_choice=True), embedder=embedder)
        asker.choice_log = []
        res = asker.ask("Which part does Ivo sing in the choir?", conversation_id="ivo-noor-musing", store_answer=False)
    (rows, _), = asker.choice_log
    assert any(r.muses and not r.proposed for r in rows)  # the musing sentence was a candidate
    assert "s2-m2" not in res.source_refs and not res.abstained


def test_a_musing_proposal_gives_way_to_a_candidate_that_states():
    # weights that want the proposal above all: when the proposal muses ("if I ever …"), a stating sentence is
    # chosen all the same; when every candidate muses, the choice is still made
    rows = _rows()
    for r in rows:
        r.muses = r.proposed
    w = np.zeros(len(choose.FEATURE_NAMES))
    w[choose.FEATURE_NAMES.index("proposed")] = 50.0
    flags = choose.flags_of(shape_of(QUESTION, ["Noor"], None), QUESTION, None, "sentence")
    picked, _ = choose.choose_stating(rows, flags, w)
    assert not picked.proposed and not picked.muses
    assert choose.choose(rows, flags, w)[0].proposed  # the plain choice would have taken it
    for r in rows:
        r.muses = True
    assert choose.choose_stating(rows, flags, w)[0].proposed


def test_a_proposal_that_states_a_frame_beside_its_musing_stands():
    # "I'm from Lyon, so if I ever opened a café I'd call it Café Lyon": the sentence muses, but its frame (the
    # origin) is said as a fact; its hedged frame (the brewery) would not be
    rows = _rows()
    for r in rows:
        r.muses = r.proposed
    proposal = next(r for r in rows if r.proposed)
    proposal.event = replace(proposal.event, value="Lyon", frame={"key": "be from", "type": "place", "hedged": False})
    w = np.zeros(len(choose.FEATURE_NAMES))
    w[choose.FEATURE_NAMES.index("proposed")] = 50.0
    flags = choose.flags_of(shape_of(QUESTION, ["Noor"], None), QUESTION, None, "sentence")
    assert choose.choose_stating(rows, flags, w)[0].proposed
    proposal.event = replace(proposal.event, frame={"key": "open", "type": "thing", "hedged": True})
    assert not choose.choose_stating(rows, flags, w)[0].proposed


def test_a_sentence_of_the_proposals_own_message_does_not_replace_it():
    # the model is fitted on messages (a candidate is right when its message is gold evidence), so it cannot tell
    # one sentence of the proposal's message from another: weights that want another sentence of that message get
    # the proposal; the same sentence in a message of its own is chosen
    rows = _rows()
    w = np.zeros(len(choose.FEATURE_NAMES))
    w[choose.FEATURE_NAMES.index("proposed")] = -50.0
    flags = choose.flags_of(shape_of(QUESTION, ["Noor"], None), QUESTION, None, "sentence")
    other = choose.choose(rows, flags, w)[0]
    assert not other.proposed and not other.same_message
    other.same_message = True
    assert choose.choose(rows, flags, w)[0].proposed


def test_a_chosen_sentence_that_only_says_the_proposals_answer_again_keeps_the_proposal():
    def read(text: str) -> Answer:
        return Answer(text=text, abstained=False)

    later = _ev("later", 9, "Pepper loves the cold though, he's a new dog")
    assert choose.restates(later, read(later.quote), read("Pepper"))
    assert not choose.restates(later, read(later.quote), read("Pep"))  # inside a longer word
    assert not choose.restates(later, read(later.quote), read("Biscuit"))
    assert not choose.restates(later, Answer(text="not enough evidence", abstained=True), read("Pepper"))
    # a sentence with a value of its own, or one that denies, says something new
    assert not choose.restates(_with(later, value="greyhound"), read(later.quote), read("Pepper"))
    assert not choose.restates(_with(later, negated=True), read(later.quote), read("Pepper"))
    # a sentence that names something besides the proposal's answer says something new
    rent = _ev("rent", 9, "£1,250, so up from the £1,100 I was paying before")
    assert not choose.restates(rent, read(rent.quote), read("£1,100"))
    # a proposal that is a clause rather than a value is no better an answer than the sentence that holds it
    assert not choose.restates(later, read(later.quote), read("he's a new dog"))


def _with(ev: EventNode, **change: object) -> EventNode:
    return replace(ev, **change)
