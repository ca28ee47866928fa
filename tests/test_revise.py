"""Revision linking over frames: constructions, implicit restatements, and what must not link."""

from __future__ import annotations

import pytest

from tracecli.graph.link import EventRec
from tracecli.graph.revise import FrameRec, anaphora_edges, frame_edges, implicit_edges


def ev(eid: str, seq: int, value: str, subject: str = "Wren", negated: bool = False, quote: str = "") -> EventRec:
    return EventRec(id=eid, session_id="s", seq=seq, sentence_idx=0, time_anchor=f"2024-01-{seq:02d}", subject=subject,
                    speaker=subject, participants=[subject], topic_id=None, value=value, negated=negated,
                    quote=quote or value)


def statement(eid: str, seq: int, quote: str) -> EventRec:
    """A sentence of Wren's that states no frame value."""
    e = ev(eid, seq, "", quote=quote)
    e.value = None
    return e


def fr(e: EventRec, key: str, vtype: str, **kw) -> FrameRec:
    return FrameRec(ev=e, key=key, vtype=vtype, head=e.value.split()[-1].lower(), **kw)


def test_same_functional_key_different_value_is_an_implicit_revision() -> None:
    a, b = ev("a", 1, "Leeds"), ev("b", 5, "York")
    [edge] = implicit_edges([fr(a, "live in", "place"), fr(b, "live in", "place")], None)
    assert (edge.src, edge.dst) == ("b", "a") and "implicit" in edge.justification


def test_several_values_at_once_do_not_revise_without_a_novelty_cue() -> None:
    a, b = ev("a", 1, "pottery"), ev("b", 5, "baking")
    assert implicit_edges([fr(a, "love", "thing"), fr(b, "love", "thing")], None) == []
    assert len(implicit_edges([fr(a, "love", "thing"), fr(b, "love", "thing", novelty=True)], None)) == 1


def test_names_said_beside_a_noun_never_revise_each_other() -> None:
    # "my colleague Pilar" … "my new colleague Sam": one of several colleagues, not a replacement
    a, b = ev("a", 1, "Pilar"), ev("b", 5, "Sam")
    assert implicit_edges([fr(a, "colleague", "person", named=True),
                           fr(b, "colleague", "person", named=True, novelty=True)], None) == []
    assert len(implicit_edges([fr(a, "colleague", "person"), fr(b, "colleague", "person", novelty=True)], None)) == 1


def test_another_persons_fact_and_descriptions_never_revise() -> None:
    a, b = ev("a", 1, "Leeds"), ev("b", 5, "York", subject="Jonas")
    assert implicit_edges([fr(a, "live in", "place"), fr(b, "live in", "place")], None) == []
    c, d = ev("c", 1, "nurse"), ev("d", 5, "tired")
    assert implicit_edges([fr(c, "be", "thing"), fr(d, "be", "thing", novelty=True)], None) == []


def test_a_retraction_links_the_replacement_in_the_same_message_to_the_old_value() -> None:
    old = ev("old", 1, "Barclays")
    quit_ = ev("quit", 5, "Barclays", negated=True)
    new = ev("new", 5, "Monzo")
    frames = [fr(old, "work at", "org"),
              fr(quit_, "retract", "org", constructions=[{"name": "retract", "old": "Barclays", "old_head": "barclays", "new": ""}]),
              fr(new, "join", "org", verb="join")]
    edges = frame_edges(frames, [old, quit_, new], [], None)
    assert [(e.src, e.dst) for e in edges] == [("new", "old")]
    assert "construction: retract" in edges[0].justification


def test_the_replacement_is_read_after_the_retraction_in_its_message() -> None:
    # "big news about the car. no more leasing the Corsa, I bought a Yaris outright": the value said before the
    # retraction is not what replaced it
    old = ev("old", 1, "Corsa")
    before = ev("before", 5, "news")
    stop = ev("stop", 5, "Corsa", negated=True)
    new = ev("new", 5, "Yaris")
    stop.sentence_idx, new.sentence_idx = 1, 2
    frames = [fr(old, "lease", "name"), fr(before, "be", "name"),
              fr(stop, "retract", "name", constructions=[{"name": "retract", "old": "Corsa", "old_head": "corsa", "new": ""}]),
              fr(new, "buy", "name")]
    edges = frame_edges(frames, [old, before, stop, new], [], None)
    assert ("new", "old") in [(e.src, e.dst) for e in edges]
    assert ("before", "old") not in [(e.src, e.dst) for e in edges]


def test_a_retraction_with_nothing_said_instead_is_told_as_one() -> None:
    # "we're not Paper Lanterns anymore": the edge goes from the retraction itself and says so, not that
    # 'Paper Lanterns' replaces 'Paper Lanterns'
    old = ev("old", 1, "Paper Lanterns")
    not_ = ev("not", 5, "Paper Lanterns", negated=True)
    frames = [fr(old, "be", "name"),
              fr(not_, "retract", "name", constructions=[{"name": "negation", "old": "Paper Lanterns",
                                                          "old_head": "lanterns", "new": ""}])]
    [edge] = frame_edges(frames, [old, not_], [], None)
    assert (edge.src, edge.dst) == ("not", "old")
    assert "no longer 'Paper Lanterns'" in edge.justification and "replaces" not in edge.justification


def test_a_retracted_value_said_only_in_passing_is_found_in_the_subjects_own_sentence() -> None:
    said = statement("said", 1, "so fed up with Three, zero signal")
    cut = ev("cut", 4, "giffgaff")
    frames = [fr(cut, "ditch", "name", constructions=[{"name": "retract", "old": "Three", "old_head": "three", "new": "giffgaff"}])]
    [edge] = frame_edges(frames, [said, cut], [], None)
    assert (edge.src, edge.dst) == ("cut", "said")


def test_a_substituted_common_noun_is_found_in_a_statement_without_a_frame() -> None:
    # "the ibuprofen isn't doing much" holds no frame; "from ibuprofen to naproxen" names it as the old value
    said = statement("said", 1, "the ibuprofen isn't doing much for my back")
    new = ev("new", 4, "naproxen")
    frames = [fr(new, "switch to", "thing",
                 constructions=[{"name": "from_to", "old": "ibuprofen", "old_head": "ibuprofen", "new": "naproxen"}])]
    [edge] = frame_edges(frames, [said, new], [], None)
    assert (edge.src, edge.dst) == ("new", "said")
    # a retraction without a replacement does not reach into such a sentence ("just left the gym" is no change
    # of "the gym was packed"), nor does a substitution into a question
    gone = ev("gone", 4, "gym", negated=True)
    packed = statement("packed", 1, "the gym was packed tonight")
    retract = [fr(gone, "retract", "thing", constructions=[{"name": "retract", "old": "gym", "old_head": "gym", "new": ""}])]
    assert frame_edges(retract, [packed, gone], [], None) == []
    asked = statement("asked", 1, "why ibuprofen tho")
    assert frame_edges(frames, [asked, new], [], None) == []


def test_a_description_of_the_subject_is_not_the_old_value_it_mentions_in_passing() -> None:
    # "being a baker with early starts …" then "swapped my early with Tariq": the role is not what was swapped
    role = ev("role", 1, "baker", quote="being a baker with early starts is a juggle")
    role.frame = {"key": "be", "head": "baker"}
    swap = ev("swap", 4, "Tariq")
    frames = [fr(role, "be", "thing", copular=True),
              fr(swap, "swap", "person", constructions=[{"name": "exchange", "old": "my early", "old_head": "early",
                                                         "new": "Tariq"}])]
    assert [e for e in frame_edges(frames, [role, swap], [], None) if e.dst == "role"] == []
    # nor is a name said beside it ("my cat Pierogi thinks the evenings are hers" … "evenings are dead now")
    cat = ev("cat", 1, "Pierogi", quote="my cat Pierogi thinks the evenings are hers")
    cat.frame = {"key": "cat", "head": "pierogi"}
    dead = ev("dead", 4, "evenings", negated=True)
    frames = [fr(cat, "cat", "name"),
              fr(dead, "retract", "thing", constructions=[{"name": "ended", "old": "evenings", "old_head": "evening",
                                                           "new": ""}])]
    assert [e for e in frame_edges(frames, [cat, dead], [], None) if e.dst == "cat"] == []


@pytest.mark.parametrize("quote, old, head", [
    ("still on Wolf Hall, page 200 of 600", "Wolf Hall, sorry Hilary", "hall"),  # a phrase run on past the name
    ("my allotment in Ashford is all brambles", "Ashford allotment", "allotment"),  # said by its capitalised word
])
def test_a_retracted_name_is_found_in_a_statement_without_a_frame(quote: str, old: str, head: str) -> None:
    said = statement("said", 1, quote)
    cut = ev("cut", 4, old.split(",")[0], negated=True)
    frames = [fr(cut, "retract", "name", constructions=[{"name": "retract", "old": old, "old_head": head, "new": ""}])]
    [edge] = frame_edges(frames, [said, cut], [], None)
    assert edge.dst == "said"


def test_a_name_said_in_passing_is_not_replaced_by_a_common_noun_of_its_message() -> None:
    # "Rocket is snoring on the sofa" … "Rocket got rehomed!! I cried at the bus stop": the bus stop did not
    # replace the dog; the edge goes from the retraction itself
    said = statement("said", 1, "Rocket is snoring on the sofa")
    gone = ev("gone", 4, "Rocket", negated=True)
    stop = ev("stop", 4, "bus stop")
    stop.sentence_idx = 1
    frames = [fr(gone, "retract", "thing", constructions=[{"name": "ended", "old": "Rocket", "old_head": "rocket", "new": ""}]),
              fr(stop, "cry at", "thing")]
    [edge] = frame_edges(frames, [said, gone, stop], [], None)
    assert (edge.src, edge.dst) == ("gone", "said")


def test_a_short_retracted_name_is_never_found_in_a_sentence_that_does_not_name_it() -> None:
    # "I sold the MG": a name too short to search by its words must not match any sentence at all
    other = statement("other", 1, "the garden is a total mess this spring")
    cut = ev("cut", 4, "MG", negated=True)
    frames = [fr(cut, "retract", "name", constructions=[{"name": "retract", "old": "MG", "old_head": "mg", "new": ""}])]
    assert frame_edges(frames, [other, cut], [], None) == []


def test_a_retraction_ends_every_earlier_statement_of_the_value() -> None:
    first, again = ev("first", 1, "spin"), ev("again", 3, "spin")
    quit_ = ev("quit", 6, "spin", negated=True)
    new = ev("new", 6, "boxing")
    frames = [fr(first, "do", "thing"), fr(again, "love", "thing"),
              fr(quit_, "retract", "thing", constructions=[{"name": "retract", "old": "spin", "old_head": "spin", "new": ""}]),
              fr(new, "start", "thing", verb="start", novelty=True)]
    edges = frame_edges(frames, [first, again, quit_, new], [], None)
    assert {(e.src, e.dst) for e in edges if "construction" in e.justification} == {("new", "again"), ("new", "first")}


def test_an_exchange_parsed_with_the_new_value_inside_the_old_phrase() -> None:
    # "swapped Tesco for Aldi": the small parser can hang "for Aldi" under "Tesco"
    old = statement("old", 1, "the Tesco delivery was late again")
    new = ev("new", 5, "Aldi")
    frames = [fr(new, "swap for", "org", constructions=[{"name": "exchange", "old": "Tesco for Aldi", "old_head": "tesco",
                                                         "new": "Aldi"}])]
    [edge] = frame_edges(frames, [old, new], [], None)
    assert (edge.src, edge.dst) == ("new", "old")


def test_path_walks_start_from_one_event_per_sentence() -> None:
    from types import SimpleNamespace

    from tracecli.query.ask import _one_per_sentence

    def node(eid: str, seq: int, sent: int) -> SimpleNamespace:
        return SimpleNamespace(id=eid, session_id="s1", seq=seq, sentence_idx=sent)

    ranked = [(node("a", 1, 0), 0.9), (node("b", 1, 0), 0.8), (node("c", 1, 1), 0.7), (node("d", 2, 0), 0.6)]
    assert _one_per_sentence(ranked, 20) == ["a", "c", "d"]  # 'b' is another frame of a's sentence
    assert _one_per_sentence(ranked, 2) == ["a", "c"]


def test_it_is_y_now_revises_the_earlier_statement_on_the_same_topic() -> None:
    # "they moved the stats exam!! it's now 2 April": the topic (stats exam) is said in the earlier statement
    old = ev("old", 1, "14 March", quote="my stats exam is on 14 March, pray for me")
    other = ev("other", 2, "9 May", quote="dentist on 9 May, ugh")
    new = ev("new", 5, "2 April", quote="it's now 2 April")
    new.session_id = old.session_id
    moved = statement("moved", 5, "they moved the stats exam!!")
    frames = [fr(old, "be on", "date"), fr(other, "be on", "date"), fr(new, "it", "date", copular=True, novelty=True)]
    [edge] = anaphora_edges(frames, [old, other, moved, new])
    assert (edge.src, edge.dst) == ("new", "old") and "anaphora" in edge.justification
    # without a topic the two share, or without "now", nothing is drawn
    assert anaphora_edges(frames, [old, other, new]) == []
    frames[-1] = fr(new, "it", "date", copular=True)
    assert anaphora_edges(frames, [old, other, moved, new]) == []


def test_a_role_told_as_new_succeeds_the_persons_earlier_role() -> None:
    # "I was treasurer at the club" … "I'm captain now": two roles of one person, the later told as new
    a, b = ev("a", 1, "treasurer"), ev("b", 5, "captain")
    [edge] = implicit_edges([fr(a, "be", "thing"), fr(b, "be", "thing", novelty=True)], None)
    assert (edge.src, edge.dst) == ("b", "a")
    # without the novelty mark two roles are two descriptions ("I'm a mum and a nurse" said apart)
    assert implicit_edges([fr(a, "be", "thing"), fr(b, "be", "thing")], None) == []
    # nor does a role said as a bare noun phrase ("nice coach, very patient") hold what a later role revises
    assert implicit_edges([fr(a, "be", "thing", bare=True), fr(b, "be", "thing", novelty=True)], None) == []
    assert len(implicit_edges([fr(a, "be", "thing"), fr(b, "be", "thing", novelty=True, bare=True)], None)) == 1
    # nor is a state a role: "I'm tired now" revises no role
    c = ev("c", 6, "tired")
    assert implicit_edges([fr(a, "be", "thing"), fr(c, "be", "thing", novelty=True)], None) == []


def test_where_someone_is_from_is_not_revised_by_where_they_are_placed() -> None:
    a, b = ev("a", 1, "Lyon"), ev("b", 5, "the ward")
    assert implicit_edges([fr(a, "be from", "place", copular=True),
                           fr(b, "be in", "place", copular=True, novelty=True)], None) == []
    c = ev("c", 7, "the clinic")  # two placements of the same kind still revise each other
    assert len(implicit_edges([fr(b, "be in", "place", copular=True),
                               fr(c, "be at", "place", copular=True, novelty=True)], None)) == 1


def _embed(table: dict[str, list[float]]):
    import numpy as np

    return lambda texts: np.array([table[t] for t in texts], dtype=float)


def test_two_names_of_one_kind_of_thing_revise_by_value_similarity() -> None:
    # "I need a new grip on the Babolat Pure Drive" … "the Wilson Blade is unreal": no shared key, but the two names
    # are close in the embedding (a stand-in for MiniLM here); a name of another kind of thing is not
    old, new, other = ev("a", 1, "Babolat Pure Drive"), ev("b", 5, "Wilson Blade"), ev("c", 3, "Leeds Library")
    embed = _embed({"Babolat Pure Drive": [1.0, 0.1, 0.0], "Wilson Blade": [0.9, 0.2, 0.0], "Leeds Library": [0.0, 0.1, 1.0]})
    frames = [fr(old, "grip on", "name"), fr(other, "be at", "org"), fr(new, "be unreal", "name")]
    [edge] = implicit_edges(frames, embed)
    assert (edge.src, edge.dst) == ("b", "a") and "value similarity" in edge.justification
    # a place is close to its language and its people: never linked this way
    lisbon, portuguese = ev("d", 1, "Lisbon"), ev("e", 5, "Portuguese")
    embed = _embed({"Lisbon": [1.0, 0.0], "Portuguese": [0.95, 0.1]})
    assert implicit_edges([fr(lisbon, "live in", "place"), fr(portuguese, "speak", "name")], embed) == []
