"""The sentence fallback reads a later restatement of the same fact as its newer version when asked for now."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

from ask_fixtures import ALICE, ask_db, copy_db  # noqa: F401 (ask_db is a fixture)

from tracecli.query.answer import RESTATEMENT_MARGIN, answer_offline
from tracecli.query.paths import EventNode, Graph
from tracecli.query.settings import AskSettings
from tracecli.query.shape import shape_of


def _ev(eid: str, seq: int, quote: str, subject: str = "Noor", anchor: str = "2024-01-01T10:00:00Z") -> EventNode:
    return EventNode(
        id=eid, conversation_id="c", session_id="s", type="state_change", subject=subject, description=quote,
        quote=quote, time_anchor=anchor, event_time=None, event_time_granularity=None, seq=seq, sentence_idx=0,
        facet=None, value=None, negated=False, confidence=0.6, validity=1.0, valid_until=None, topic_id=None,
        source_refs=[f"m{seq}"],
    )


OLD = _ev("e1", 1, "my choir meets in the church hall on tuesdays", anchor="2024-01-01T10:00:00Z")
NEW = _ev("e2", 9, "choir practice is in the library on thursdays these days", anchor="2024-05-01T10:00:00Z")
OTHER = _ev("e3", 12, "my choir meets in the old school", subject="Ivo", anchor="2024-06-01T10:00:00Z")


def _answer(question: str, ranked: list[tuple[EventNode, float]], as_of: str | None = None):
    events = [OLD, NEW, OTHER]
    graph = Graph({e.id: e for e in events}, defaultdict(list), defaultdict(list), {}, {})
    shape = shape_of(question, ["Noor", "Ivo"], None)
    return answer_offline(graph, shape, ranked, {}, 0.9, as_of, AskSettings(), question)


def test_asked_for_now_a_close_later_restatement_wins():
    ranked = [(OLD, 0.80), (NEW, 0.80 - RESTATEMENT_MARGIN / 2)]
    ans = _answer("Where does Noor's choir meet now?", ranked)
    assert ans.source_refs == ["m9"]
    assert "library" in ans.text


def test_without_a_now_cue_the_best_sentence_stays():
    ranked = [(OLD, 0.80), (NEW, 0.80 - RESTATEMENT_MARGIN / 2)]
    ans = _answer("Where does Noor's choir meet?", ranked)
    assert ans.source_refs == ["m1"]


def test_a_distant_or_other_persons_sentence_is_no_restatement():
    far = [(OLD, 0.80), (NEW, 0.80 - 2 * RESTATEMENT_MARGIN)]
    assert _answer("Where does Noor's choir meet now?", far).source_refs == ["m1"]
    other = [(OLD, 0.80), (OTHER, 0.80)]
    assert _answer("Where does Noor's choir meet now?", other).source_refs == ["m1"]


def test_as_of_a_date_takes_the_latest_restatement_said_by_then():
    ranked = [(OLD, 0.80), (NEW, 0.79)]
    assert _answer("Where did Noor's choir meet?", ranked, as_of="2024-02-01T00:00:00Z").source_refs == ["m1"]
    assert _answer("Where did Noor's choir meet?", ranked, as_of="2024-06-01T00:00:00Z").source_refs == ["m9"]


FIESTA = _ev("f1", 2, "I drive an old Fiesta to work", anchor="2024-01-02T10:00:00Z")
YARIS = _ev("y1", 7, "picked up the Yaris yesterday, so smooth", anchor="2024-04-02T10:00:00Z")


def _answer_cars(question: str, ranked: list[tuple[EventNode, float]]):
    graph = Graph({e.id: e for e in (FIESTA, YARIS)}, defaultdict(list), defaultdict(list), {}, {})
    return answer_offline(graph, shape_of(question, ["Noor"], None), ranked, {}, 0.9, None, AskSettings(), question)


def test_before_x_answers_from_what_was_said_before_x_was_first_mentioned():
    ranked = [(YARIS, 0.85), (FIESTA, 0.6)]  # the sentence about X itself matches the question best
    assert _answer_cars("What did Noor drive before she got the Yaris?", ranked).source_refs == ["m2"]
    # without "before X" the best sentence answers
    assert _answer_cars("What does Noor drive?", ranked).source_refs == ["m7"]


def test_before_cut_needs_a_statement_of_x():
    from tracecli.query.frame_answer import before_cut

    graph = Graph({e.id: e for e in (FIESTA, YARIS)}, defaultdict(list), defaultdict(list), {}, {})
    cut = before_cut(graph, "What did Noor drive before she got the Yaris?", ["Noor"])
    assert cut is not None and cut.seq == 7 and cut.words == {"yaris"}
    assert before_cut(graph, "What did Noor drive before the Corolla?", ["Noor"]) is None


def test_at_a_date_a_same_topic_restatement_said_by_then_is_the_newer_version():
    from tracecli.query.answer import Readers

    # NEW matches the question less well (0.65 < 0.80 − the 0.06 margin) but says the same thing in other words
    readers = Readers(sentence_sim=lambda evs: [0.5] * len(evs), value_fit=lambda p, vs: [0.0] * len(vs),
                      between=lambda ev, others: [0.7] * len(others))
    graph = Graph({e.id: e for e in (OLD, NEW, OTHER)}, defaultdict(list), defaultdict(list), {}, {})
    question = "Where did Noor's choir meet?"
    ranked = [(OLD, 0.80), (NEW, 0.65)]

    def refs(settings: AskSettings, as_of: str) -> list[str]:
        shape = shape_of(question, ["Noor", "Ivo"], None, as_of=dt.datetime.fromisoformat(as_of.replace("Z", "+00:00")))
        return answer_offline(graph, shape, ranked, {}, 0.9, as_of, settings, question, readers).source_refs

    assert refs(AskSettings(), "2024-06-01T00:00:00Z") == ["m9"]
    assert refs(AskSettings(restate_as_of=False), "2024-06-01T00:00:00Z") == ["m1"]
    assert refs(AskSettings(), "2024-02-01T00:00:00Z") == ["m1"]  # not yet said at that date


def test_before_x_without_a_chain_is_read_from_flat_evidence(ask_db, embedder, tmp_path, monkeypatch):
    """What held before X is read from the sentences as said (`AskSettings.before_flat`) unless a revision chain
    leads back from X: the answer step is then asked again over the graph without revision edges or validity."""
    import tracecli.query.ask as ask_mod
    from tracecli.store import open_store

    seen: list[tuple[bool, str]] = []
    real = ask_mod.answer_offline

    def spy(graph: Graph, *a, **k):
        ans = real(graph, *a, **k)
        revised = any(e.label == "updates" for edges in graph.out.values() for e in edges) \
            and any(ev.validity == 0.0 for ev in graph.events.values())
        seen.append((revised, ans.support))
        return ans

    monkeypatch.setattr(ask_mod, "answer_offline", spy)
    store = open_store(copy_db(ask_db, tmp_path / "a.db"), create=False)
    try:
        def reads(question: str, **settings: bool) -> list[tuple[bool, str]]:
            seen.clear()
            ask_mod.Asker(store, embedder=embedder, settings=AskSettings(**settings)).ask(
                question, conversation_id=ALICE, store_answer=False)
            return list(seen)

        # no chain back from Porto (a frame answer): read again over flat evidence
        assert [r for r, _ in reads("Where did Alice live before she moved to Porto?")] == [True, False]
        assert [r for r, _ in reads("Where did Alice live before she moved to Porto?", before_flat=False)] == [True]
        # the cat's renaming is a revision chain: followed back, not re-read
        assert reads("What was Alice's cat called before Mochi?") == [(True, "chain")]
        assert [r for r, _ in reads("Where does Alice live now?")] == [True]  # not a before-question
    finally:
        store.close()
