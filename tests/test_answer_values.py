"""What the answer step says: never a value the question itself names, the full form of a value said in short
later, and the question's vector read as addressed to the person it names."""

from __future__ import annotations

from collections import defaultdict

from ask_fixtures import ALICE, ask_db, copy_db  # noqa: F401 (ask_db is a fixture)

from tracecli.query.answer import (Answer, Readers, _muses, _settled, answer_offline, echoes, extract_value, read_event,
                                   said_over)
from tracecli.query.paths import EventNode, Graph
from tracecli.query.settings import AskSettings
from tracecli.query.shape import addressed, shape_of


def _ev(eid: str, seq: int, quote: str, *, value: str | None = None, facet: str | None = None,
        frame: dict | None = None, subject: str = "Noor") -> EventNode:
    return EventNode(
        id=eid, conversation_id="c", session_id="s", type="state_change", subject=subject, description=quote,
        quote=quote, time_anchor=f"2024-0{min(seq, 9)}-01T10:00:00Z", event_time=None, event_time_granularity=None,
        seq=seq, sentence_idx=0, facet=facet, value=value, negated=False, confidence=0.8, validity=1.0,
        valid_until=None, topic_id=None, frame=frame, source_refs=[f"m{seq}"],
    )


def _graph(*events: EventNode) -> Graph:
    """The events in a graph, each sentence's events on one note (their message's, as `load_graph` reads them)."""
    by_note: dict[int, list[str]] = defaultdict(list)
    for e in events:
        e.note_rowids = e.note_rowids or [e.seq]
        by_note[e.note_rowids[0]].append(e.id)
    return Graph({e.id: e for e in events}, defaultdict(list), defaultdict(list), by_note, {})


def test_echoes_reads_whole_words():
    assert echoes("Which fencing club does Noor use?", "fencing")
    assert echoes("What role does Noor hold at the chess society?", "chess society")
    assert not echoes("Which fencing club does Noor use?", "Blade Hall")
    assert not echoes("Which fencing club does Noor use?", "clubbing")  # a word, not a prefix
    assert not echoes("Which gym does Noor use?", None)


def test_a_facet_value_the_question_names_is_not_the_answer():
    hobby = _ev("h", 1, "I've got really into fencing", value="fencing", facet="hobbies")
    question = "What are Noor's hobbies?"
    graph = _graph(hobby)
    shape = shape_of(question, ["Noor"], None)
    assert "hobbies" in shape.facets
    assert answer_offline(graph, shape, [(hobby, 0.8)], {}, 0.9, None, AskSettings(), question).text == "fencing"
    # asked about the hobby itself, the hobby's name is what the question is about, not its answer
    echo_q = "Which hobbies besides fencing does Noor have?"
    echo = answer_offline(graph, shape_of(echo_q, ["Noor"], None), [(hobby, 0.8)], {}, 0.9, None, AskSettings(), echo_q)
    assert echo.text != "fencing"


def test_a_value_said_in_short_later_is_answered_in_full():
    frame = {"key": "use", "type": "name", "head": "galaxy"}
    full = _ev("a", 2, "I'm using a Galaxy S9 phone now", value="Galaxy S9", frame=dict(frame, head="s9"))
    short = _ev("b", 5, "sent from my Galaxy phone", value="Galaxy", frame=frame)
    graph = _graph(full, short)
    question = "Which phone does Noor use?"
    ans = answer_offline(graph, shape_of(question, ["Noor"], None), [(short, 0.8), (full, 0.8)],
                         {"a": 0.8, "b": 0.8}, 0.9, None, AskSettings(), question)
    assert ans.text == "Galaxy S9"
    assert set(ans.source_refs) == {"m2", "m5"}  # the short mention and the statement that spells it out


def test_a_question_is_put_to_the_person_it_names():
    assert addressed("What is Noor's job?", "Noor") == "What is your job?"
    assert addressed("Where does Noor live now?", "Noor") == "Where does you live now?"
    assert addressed("Where does Noorah live?", "Noor") == "Where does Noorah live?"  # a whole name only


def test_before_x_is_what_a_construction_says_x_replaced():
    # no `updates` edge was drawn; the message that introduced the new value also retracted the old one
    frame = {"key": "drive", "type": "thing", "head": "transit"}
    first = _ev("a", 2, "I drive a Transit for work", value="Transit", frame=frame)
    other = _ev("o", 3, "I drive a hard bargain", value="hard bargain", frame=dict(frame, head="bargain"), subject="Ivo")
    sold = _ev("s", 5, "sold the Transit.", value="Transit",
               frame={"key": "retract", "type": "thing", "head": "transit",
                      "constructions": [{"name": "retract", "old": "the Transit", "old_head": "transit", "new": ""}]})
    sold.negated = True
    new = _ev("n", 5, "got a camper van instead", value="camper van", frame=dict(frame, key="get", head="van"))
    new.sentence_idx = 1
    school = _ev("k", 4, "I drive the kids to school in it", value="kids", frame=dict(frame, head="kid"))
    graph = _graph(first, other, school, sold, new)
    question = "What did Noor drive before the camper van?"
    relevance = {"a": 0.5, "o": 0.5, "k": 0.9, "s": 0.5, "n": 0.8}  # a closer sentence said before it, too
    ans = answer_offline(graph, shape_of(question, ["Noor", "Ivo"], None), [(school, 0.9), (new, 0.8), (first, 0.5)],
                         relevance, 0.9, None, AskSettings(), question)
    assert ans.text == "Transit" and "m2" in ans.source_refs


def test_before_x_is_the_sentence_a_revision_replaced_when_no_frame_holds_the_old_value():
    from tracecli.query.frame_answer import frame_answer
    from tracecli.query.paths import EdgeInfo

    # "planning a trip, thinking Lisbon in May" holds no frame; "Lisbon fell through … so it's Seville instead" was
    # linked to it by its words (an `updates` edge from the Seville statement)
    plan = _ev("p", 2, "my sister and I are planning a trip, thinking Lisbon in May.")
    seville = _ev("s", 5, "so it's Seville instead, same week", value="Seville",
                  frame={"key": "it", "type": "place", "head": "seville", "copular": True})
    graph = _graph(plan, seville)
    edge = EdgeInfo("s", "p", "updates", 0.92, None, "Maren: 'Seville' replaces 'Lisbon' (found by construction: ended)")
    graph.out["s"].append(edge)
    graph.into["p"].append(edge)
    question = "Which city was Noor planning to visit before Seville?"
    found = frame_answer(graph, shape_of(question, ["Noor"], None), question, {"p": 0.5, "s": 0.5}, None, ["Noor"])
    assert found is not None and found.event.id == "p" and found.support == "chain"
    shape = shape_of(question, ["Noor"], None)
    ans = answer_offline(graph, shape, [(plan, 0.6), (seville, 0.5)], {"p": 0.6, "s": 0.5}, 0.9, None, AskSettings(),
                         question)
    assert ans.text == "Lisbon" and "m2" in ans.source_refs


class _Recording:
    """The session embedder, recording every text it is asked to embed."""

    def __init__(self, inner) -> None:
        self.inner, self.id, self.dimension, self.texts = inner, inner.id, inner.dimension, []

    def embed_batch(self, texts):
        self.texts.extend(texts)
        return self.inner.embed_batch(texts)


def test_ask_ranks_by_the_question_put_to_the_participant_it_names(ask_db, embedder, tmp_path):
    from tracecli.query.ask import Asker
    from tracecli.store import open_store

    store = open_store(copy_db(ask_db, tmp_path / "a.db"), create=False)
    try:
        for flag in (True, False):
            rec = _Recording(embedder)
            Asker(store, embedder=rec, settings=AskSettings(address_named=flag)).ask(
                "What is Alice's favourite food?", conversation_id=ALICE, store_answer=False)
            assert ("What is your favourite food?" in rec.texts) is flag
            assert "What is Alice's favourite food?" in rec.texts  # retrieval reads the question as asked
            # a question naming nobody, or two people, is embedded as asked only
            rec.texts.clear()
            Asker(store, embedder=rec, settings=AskSettings(address_named=flag)).ask(
                "Did Alice and Bob agree on a city?", conversation_id=ALICE, store_answer=False)
            assert not any("you" in t for t in rec.texts)
    finally:
        store.close()


def test_before_x_reads_the_superseded_sentences_too():
    # what held before X is superseded now; a valid but unrelated sentence said before X must not win over it
    old = _ev("o", 1, "my choir meets in the church hall", value=None)
    old.validity = 0.0
    noise = _ev("t", 2, "I had toast for breakfast", value=None)
    new = _ev("n", 9, "choir is in the library now", value=None)
    graph = _graph(old, noise, new)
    question = "Where did Noor's choir meet before the library?"
    ans = answer_offline(graph, shape_of(question, ["Noor"], None), [(new, 0.8), (old, 0.7), (noise, 0.3)],
                         {"o": 0.7, "t": 0.3, "n": 0.8}, 0.9, None, AskSettings(), question)
    assert ans.source_refs == ["m1"]


def test_the_before_clause_is_left_out_of_what_is_ranked():
    from tracecli.query.shape import before_clause_dropped

    assert before_clause_dropped("What car did Noor have before the camper van?") == "What car did Noor have?"
    assert before_clause_dropped("Which team was Noor on before she moved to sales?") == "Which team was Noor on?"
    assert before_clause_dropped("Where does Noor live now?") == "Where does Noor live now?"
    assert before_clause_dropped("Before what?") == "Before what?"  # nothing would be left to rank by


def test_a_car_make_is_read_as_a_whole_word():
    from tracecli.graph.patterns import RULES

    cars = [r.regex for r in RULES if r.facet == "car"]

    def values(text: str) -> set[str]:
        return {m.group("value") for rx in cars for m in rx.finditer(text)}

    assert "MG4" in values("we just got an MG4 for the school run")  # the model number glued to the make
    assert "MG" not in values("we just got an MG4 for the school run")
    assert not values("we hired a Minivan for the trip")  # "Mini" inside another word names no car


def _readers(topic: float) -> Readers:
    """Readers whose sentence-to-sentence closeness is `topic` for every pair."""
    return Readers(sentence_sim=lambda evs: [0.5] * len(evs), value_fit=lambda phrase, vals: [0.0] * len(vals),
                   between=lambda ev, others: [topic] * len(others))


def _asked_after(first: EventNode, later: EventNode, question: str, later_score: float = 0.65):
    """answer(settings, topic): the answer to `question` when `first` ranks 0.7 and `later` `later_score`, with
    every pair of sentences `topic` close."""
    shape = shape_of(question, ["Noor"], None)
    args = (_graph(first, later), shape, [(first, 0.7), (later, later_score)], {first.id: 0.8, later.id: 0.7}, 0.9, None)

    def answer(settings: AskSettings | None = None, topic: float = 0.7):
        return answer_offline(*args, settings or AskSettings(), question, _readers(topic=topic))

    return answer


def test_a_later_sentence_on_the_same_topic_is_the_current_version():
    # no edge links the two statements; the later one matches the question less well but says the same kind of thing
    old = _ev("a", 1, "I take the 47 bus to work every day")
    new = _ev("b", 6, "the e-scooter has changed my life, work in 12 minutes")
    question = "How does Noor get to work now?"
    shape = shape_of(question, ["Noor"], None)
    ranked = [(old, 0.60), (new, 0.50)]
    args = (_graph(old, new), shape, ranked, {}, 0.9, None, AskSettings(), question)
    assert answer_offline(*args, _readers(topic=0.7)).source_refs == ["m6"]
    assert answer_offline(*args, _readers(topic=0.1)).source_refs == ["m1"]  # another topic: not a revision
    # asked about the state before something, the best match stands
    before_q = "How did Noor get to work before the e-scooter?"
    before = answer_offline(_graph(old, new), shape_of(before_q, ["Noor"], None), ranked, {}, 0.9, None,
                            AskSettings(), before_q, _readers(topic=0.7))
    assert before.source_refs == ["m1"]


def test_the_sentence_fallback_prefers_a_sentence_of_the_asked_type():
    vague = _ev("a", 1, "honestly the move has been the best decision of my life")
    placed = _ev("b", 2, "we finally settled in Lisbon after all that")
    question = "Where does Noor live?"
    shape = shape_of(question, ["Noor"], None)
    args = (_graph(vague, placed), shape)
    close = answer_offline(*args, [(vague, 0.62), (placed, 0.58)], {}, 0.9, None, AskSettings(), question)
    assert close.source_refs == ["m2"]  # a where-question wants a place: the sentence naming one
    far = answer_offline(*args, [(vague, 0.62), (placed, 0.40)], {}, 0.9, None, AskSettings(), question)
    assert far.source_refs == ["m1"]  # too far below the best to be moved up


def test_a_date_answers_only_a_when_question():
    race = _ev("r", 3, "signed up for the Harbour 10k in October", value="October 2024", facet="date:race")
    graph = _graph(race)
    which = "Which race is Noor training for?"
    assert extract_value(graph, race, shape_of(which, ["Noor"], None), which) == race.quote
    when = "When is Noor's race?"
    assert extract_value(graph, race, shape_of(when, ["Noor"], None), when) != race.quote


def test_a_question_put_to_the_person_is_answered_by_their_reply():
    # chat leaves off the question mark: the question became an event of the person asked
    asked = _ev("q", 3, "quick one for the form, what's your shirt size, the club is ordering kits")
    asked.speaker = "Ivo"
    reply = _ev("r", 4, "large, slim fit. they always come up small")
    reply.speaker = "Noor"
    later = _ev("l", 9, "got the new running shirt today")
    later.speaker = "Noor"
    question = "What is Noor's shirt size?"
    ans = answer_offline(_graph(asked, reply, later), shape_of(question, ["Noor"], None), [(asked, 0.7), (later, 0.6)],
                         {}, 0.9, None, AskSettings(), question)
    assert ans.source_refs[0] == "m4" and "large" in ans.text
    # a statement about the person by someone else is no question: it stands
    told = _ev("t", 3, "Noor told me your size is tiny")
    told.speaker = "Ivo"
    plain = answer_offline(_graph(told, reply), shape_of(question, ["Noor"], None), [(told, 0.7)], {}, 0.9, None,
                           AskSettings(), question)
    assert plain.source_refs == ["m3"]


def test_a_frame_answer_gives_way_to_the_fact_said_again_later():
    # the frame layer read the old statement; the new one is a plain sentence no edge links to it
    frame = {"key": "read", "type": "name", "head": "piranesi"}
    old = _ev("o", 2, "I'm reading Piranesi for book club", value="Piranesi", frame=frame)
    new = _ev("n", 7, "book club moved on to Demon Copperhead, 500 pages, send help")
    answer = _asked_after(old, new, "Which book is Noor reading for book club now?", later_score=0.6)
    assert answer().source_refs == ["m7"]
    assert answer(topic=0.1).text == "Piranesi"  # another topic
    assert answer(AskSettings(frame_restate=False)).text == "Piranesi"


def test_a_retraction_is_answered_by_the_value_said_instead_in_the_same_message():
    quote = "handed in my notice at Halden Ltd, starting at Brightwell in May"
    gone = _ev("old", 4, quote, value="Halden Ltd", facet="employer", frame={"key": "work at", "type": "org"})
    gone.negated = True
    notice = _ev("n", 4, quote, value="notice", frame={"key": "hand in", "type": "thing"})
    new = _ev("new", 4, quote, value="Brightwell", frame={"key": "start at", "type": "org"})
    new.sentence_idx = 1
    other = _ev("x", 4, quote, value="Brightwell", frame={"key": "start at", "type": "org"}, subject="Sam")
    graph = _graph(gone, notice, new, other)
    question = "Who is Noor's employer now?"
    shape = shape_of(question, ["Noor", "Sam"], None)
    ranked = [(gone, 0.8), (notice, 0.7), (new, 0.7)]
    ans = answer_offline(graph, shape, ranked, {}, 0.9, None, AskSettings(), question)
    assert ans.text == "Brightwell" and ans.event_ids == ["new"]  # same person, same type; not "notice"
    new.frame = {"key": "start at", "type": "thing"}  # nothing of the retracted value's type said instead
    # the retraction is given as the sentence that made it (`tracecli.query.span`), which says what came instead
    assert answer_offline(graph, shape, ranked, {}, 0.9, None, AskSettings(), question).text == quote
    bare = AskSettings(span_retraction=False)
    assert answer_offline(graph, shape, ranked, {}, 0.9, None, bare, question).text == "Noor no longer: Halden Ltd"


def test_a_later_sentence_naming_the_frame_value_again_does_not_replace_it():
    frame = {"key": "play for", "type": "org", "head": "rovers"}
    joined = _ev("j", 3, "I'm playing for Bristol Rovers now", value="Bristol Rovers", frame=frame)
    mention = _ev("m", 8, "the physio at Rovers sorted my ankle out")
    question = "Who does Noor play for now?"
    answer = _asked_after(joined, mention, question)
    assert answer().text == "Bristol Rovers"
    # without the check the later mention was taken for a restatement with a new value
    assert answer(AskSettings(restate_new_value=False)).source_refs == ["m8"]
    # a later sentence that names the value but presents something as new still counts as the newer version
    moved = _ev("n", 9, "the Rovers season is over, I'm at Bath City now")
    assert _asked_after(joined, moved, question)().source_refs == ["m9"]


def test_a_sentence_naming_nothing_continues_into_the_value_said_next_in_its_message():
    said = _ev("s", 5, "the bike shed has a padlock now and I keep forgetting the code")
    code = _ev("c", 5, "so writing it down here: 8812.")
    code.sentence_idx = 1
    later = _ev("l", 5, "anyway, how was Porto?")
    later.sentence_idx = 2
    question = "What is the code of Noor's bike shed padlock?"
    shape = shape_of(question, ["Noor"], None)
    graph = _graph(said, code, later)
    ranked = [(said, 0.8), (later, 0.4)]
    ans = answer_offline(graph, shape, ranked, {}, 0.9, None, AskSettings(), question)
    assert "8812" in ans.text and ans.event_ids == ["c"]
    # without the step, a question that asks for a code still reads the one its sentence's message says (the typed
    # reading, `answer.asked_labels` CODE); one that asks for another kind of thing does not
    off = answer_offline(graph, shape, ranked, {}, 0.9, None, AskSettings(value_follows=False), question)
    assert "8812" in off.text
    said_pw = _ev("w", 5, "the wifi has a new password and I keep forgetting it")
    pw = _ev("x", 5, "so writing it down here: Bluefox77.")
    pw.sentence_idx = 1
    question = "What is the wifi password at Noor's flat?"
    shape = shape_of(question, ["Noor"], None)
    pw_graph = _graph(said_pw, pw)
    on = answer_offline(pw_graph, shape, [(said_pw, 0.8)], {}, 0.9, None, AskSettings(), question)
    assert "Bluefox77" in on.text
    off = answer_offline(pw_graph, shape, [(said_pw, 0.8)], {}, 0.9, None, AskSettings(value_follows=False), question)
    assert "Bluefox77" not in off.text
    question = "What is the code of Noor's bike shed padlock?"
    shape = shape_of(question, ["Noor"], None)
    # a sentence that names something specific is answered as it is
    named = _ev("p", 6, "my padlock code is 4410")
    assert "4410" in answer_offline(_graph(named, code), shape, [(named, 0.8)], {}, 0.9, None, AskSettings(), question).text


def test_a_sentence_naming_nothing_continues_into_the_same_persons_very_next_message():
    said = _ev("s", 5, "got the bike out and could not remember the lock combo for ages")
    code = _ev("c", 6, "it's 7731 btw, writing it here for future me")
    question = "What is the combination of Noor's bike lock?"
    shape = shape_of(question, ["Noor"], None)
    ans = answer_offline(_graph(said, code), shape, [(said, 0.8)], {}, 0.9, None, AskSettings(), question)
    assert "7731" in ans.text and ans.event_ids == ["c"]
    # not a message of someone else's, nor one that is not the very next
    other = _ev("o", 6, "it's 7731 isn't it", subject="Ivo")
    other.speaker = "Ivo"
    assert "7731" not in answer_offline(_graph(said, other), shape, [(said, 0.8)], {}, 0.9, None, AskSettings(),
                                        question).text
    late = _ev("c", 9, "it's 7731 btw")
    assert "7731" not in answer_offline(_graph(said, late), shape, [(said, 0.8)], {}, 0.9, None, AskSettings(),
                                        question).text


def test_a_person_who_asks_the_other_is_answered_by_what_they_say_of_their_own_soon_after():
    asked = _ev("q", 3, "quick question for the donor drive, what's your blood type")
    asked.speaker = "Noor"
    shrug = _ev("x", 4, "no clue honestly", subject="Ivo")
    shrug.speaker = "Ivo"
    own = _ev("o", 5, "I'm AB positive, they chase me down the street for it")
    own.speaker = "Noor"
    question = "What is Noor's blood type?"
    graph = _graph(asked, shrug, own)
    ans = answer_offline(graph, shape_of(question, ["Noor"], None), [(asked, 0.8)], {}, 0.9, None, AskSettings(),
                         question)
    assert "AB positive" in ans.text and ans.event_ids == ["o"]
    off = answer_offline(graph, shape_of(question, ["Noor"], None), [(asked, 0.8)], {}, 0.9, None,
                         AskSettings(asker_states=False), question)
    assert off.event_ids == ["q"]
    # a sentence that names the value is no question, whatever "when you …" it has
    wifi = _ev("w", 3, "changing the wifi at mine, so when you come over it's thistle-kettle-42")
    wifi.speaker = "Noor"
    question = "What is the wifi password at Noor's?"
    ans = answer_offline(_graph(wifi, shrug, own), shape_of(question, ["Noor"], None), [(wifi, 0.8)], {}, 0.9, None,
                         AskSettings(), question)
    assert ans.event_ids == ["w"]


def test_a_sentence_naming_the_value_and_stating_another_of_its_kind_is_a_new_version():
    joined = _ev("j", 3, "I volunteer with the Litter Crew on Sundays", value="Litter Crew",
                 frame={"key": "volunteer with", "type": "org", "head": "crew"})
    moved = _ev("t", 8, "the Litter Crew wound down for winter so I've started at the Repair Cafe",
                value="Repair Cafe", frame={"key": "start at", "type": "org", "head": "cafe"})
    answer = _asked_after(joined, moved, "Who does Noor volunteer with on Sundays now?")
    assert answer().source_refs == ["m8"]
    # the same sentence stating nothing else of that kind only refers to the Litter Crew
    moved.value, moved.frame = None, None
    assert answer().text == "Litter Crew"


def test_a_frame_said_as_new_is_preferred_when_the_state_now_is_asked():
    from tracecli.query.frame_answer import frame_answer

    old = _ev("o", 2, "I play squash with my brother", value="squash", frame={"key": "play", "type": "thing", "head": "squash"})
    new = _ev("n", 6, "I play Padelia now, way more fun", value="Padelia",
              frame={"key": "play", "type": "name", "head": "padelia", "novelty": True})
    relevance = {"o": 0.80, "n": 0.76}
    graph = _graph(old, new)

    def asked(question: str, bonus: float):
        found = frame_answer(graph, shape_of(question, ["Noor"], None), question, relevance, None, ["Noor"],
                             novelty_bonus=bonus)
        return found.event.value if found else None

    assert asked("What does Noor play now?", 0.08) == "Padelia"
    assert asked("What does Noor play now?", 0.0) == "squash"
    assert asked("What did Noor play before?", 0.08) == "squash"  # not for a question about the past


def test_a_later_sentence_said_as_new_is_a_restatement_within_a_wider_margin():
    old = _ev("o", 2, "my choir meets in the church hall")
    new = _ev("n", 7, "the choir meets in the library now, the hall flooded")
    plain = _ev("p", 7, "the choir meets in the library, the hall flooded")
    question = "Where does Noor's choir meet now?"
    # 0.25 below the best: beyond the same-topic margin (0.2), within the margin for a sentence said as new (0.3)
    assert _asked_after(old, new, question, later_score=0.45)().source_refs == ["m7"]
    assert _asked_after(old, plain, question, later_score=0.45)().source_refs == ["m2"]
    off = _asked_after(old, new, question, later_score=0.45)(AskSettings(restate_novel_margin=0.0))
    assert off.source_refs == ["m2"]


def test_a_question_put_to_the_named_person_is_answered_by_their_reply():
    # the parse made Sam's question an event of Sam, the one asking; the user asks about Noor
    asking = _ev("q", 3, "btw what's your locker number, I keep forgetting", subject="Sam")
    asking.speaker = "Sam"
    reply = _ev("r", 4, "118, top row by the door")
    reply.speaker = "Noor"
    question = "What is Noor's locker number?"
    shape = shape_of(question, ["Noor", "Sam"], None)
    args = (_graph(asking, reply), shape, [(asking, 0.8), (reply, 0.5)], {}, 0.9, None)
    assert answer_offline(*args, AskSettings(), question).source_refs == ["m4"]
    assert answer_offline(*args, AskSettings(reply_to_named=False), question).source_refs == ["m3"]
    # asked about Sam, Sam's own question is no question put to Sam
    about_sam = "What is Sam's locker number?"
    sam = shape_of(about_sam, ["Noor", "Sam"], None)
    assert answer_offline(_graph(asking, reply), sam, [(asking, 0.8)], {}, 0.9, None, AskSettings(),
                          about_sam).source_refs == ["m3"]


def _said(eid: str, seq: int, quote: str, idx: int = 0, *, value: str | None = None) -> EventNode:
    ev = _ev(eid, seq, quote, value=value)
    ev.sentence_idx, ev.speaker = idx, "Noor"
    return ev


def test_a_later_message_naming_the_value_with_a_change_answers_instead():
    first = _said("a", 1, "all my money's with Northbank, have been for years", value="Northbank")
    closed = _said("b", 4, "finally closed the Northbank account.")
    now = _said("c", 4, "everything's with Tallyho Bank, the app is great", 1)
    graph = _graph(first, closed, now)
    assert said_over(graph, first, "Northbank", None) is now
    assert said_over(graph, first, "Northbank", "2024-02-01T00:00:00Z") is None  # not yet said by then
    question = "Which bank does Noor use?"
    shape = shape_of(question, ["Noor"], None)
    args = (graph, shape, [(first, 0.8)], {}, 0.9, None)
    ans = answer_offline(*args, AskSettings(), question)
    assert "Tallyho" in ans.text and ans.source_refs[0] == "m4"
    assert "Tallyho" not in answer_offline(*args, AskSettings(said_over=False), question).text


def test_a_later_mention_without_a_change_or_of_the_same_value_answers_nothing():
    first = _said("a", 1, "all my money's with Northbank, have been for years", value="Northbank")
    mention = _said("b", 4, "the Northbank app crashed again.")
    other = _said("c", 4, "had to queue at the Tallyho branch for my mum", 1)
    assert said_over(_graph(first, mention, other), first, "Northbank", None) is None
    # "from X to Y" tells the change within the sentence that names the value
    moved = _said("d", 6, "bumped the savings from £200 to £350 a month")
    rule = _said("e", 2, "new rule: £200 into savings every month", value="£200")
    assert said_over(_graph(rule, moved), rule, "£200", None) is moved


def test_an_as_of_question_is_answered_by_a_frame_said_by_then_when_the_facet_comes_later():
    early = _ev("a", 1, "I'm at Halden Ltd doing the payroll", value="Halden Ltd",
                frame={"key": "work at", "type": "org", "head": "ltd"})
    later = _ev("b", 5, "started at Brightwell this week", value="Brightwell", facet="employer")
    question = "Who was Noor working for at that point?"
    as_of = "2024-03-01T00:00:00Z"
    shape = shape_of(question, ["Noor"], None)
    args = (_graph(early, later), shape, [(early, 0.8), (later, 0.7)], {"a": 0.8, "b": 0.7}, 0.9, as_of)
    assert answer_offline(*args, AskSettings(), question).text == "Halden Ltd"
    assert answer_offline(*args, AskSettings(known_later_frame=False), question).abstained
    # with no frame said by then, the facet known only later still means nothing is known by then
    args = (_graph(later), shape, [(later, 0.7)], {"b": 0.7}, 0.9, as_of)
    assert answer_offline(*args, AskSettings(), question).abstained


def test_a_facet_stated_later_was_known_by_then_when_its_value_was_named_or_it_is_given_up():
    question = "Who was Noor working for at that point?"
    as_of = "2024-03-01T00:00:00Z"
    shape = shape_of(question, ["Noor"], None)
    # "Halden can wait" a month before names the employer the later facet states
    named = _ev("a", 1, "ha, Halden can wait, it's my birthday")
    later = _ev("b", 5, "had my review at Halden today, all good", value="Halden", facet="employer")
    args = (_graph(named, later), shape, [(named, 0.8), (later, 0.7)], {"a": 0.8, "b": 0.7}, 0.9, as_of)
    ans = answer_offline(*args, AskSettings(), question)
    assert not ans.abstained and "Halden" in ans.text
    # a later retraction ("quit Halden") says the value held before it
    quit_ = _ev("q", 5, "I quit Halden today", value="Halden", facet="employer")
    quit_.negated = True
    other = _ev("o", 1, "payroll week, send snacks")
    args = (_graph(other, quit_), shape, [(other, 0.8), (quit_, 0.7)], {"o": 0.8, "q": 0.7}, 0.9, as_of)
    assert not answer_offline(*args, AskSettings(), question).abstained


def test_before_x_is_never_answered_by_what_came_after_x():
    fiesta = _ev("a", 1, "I drive an old Fiesta to work", value="Fiesta", facet="car")
    corsa = _ev("b", 3, "the Corsa's mine now, my brother sold it to me cheap", value="Corsa", facet="car")
    niro = _ev("c", 6, "traded the Corsa in for a Kia Niro", value="Kia Niro", facet="car")
    question = "What did Noor drive before the Corsa?"
    shape = shape_of(question, ["Noor"], None)
    args = (_graph(fiesta, corsa, niro), shape, [(niro, 0.8), (corsa, 0.7), (fiesta, 0.6)],
            {"a": 0.6, "b": 0.7, "c": 0.8}, 0.9, None)
    assert "Fiesta" in answer_offline(*args, AskSettings(), question).text
    # the facet's newest value, said after the Corsa, was the answer before
    assert "Niro" in answer_offline(*args, AskSettings(before_first=False), question).text


def test_a_frame_of_another_kind_gives_way_to_a_sentence_holding_the_asked_type():
    painted = _ev("p", 2, "also painting the kitchen sage green this weekend, very cottagecore", value="kitchen sage",
                  frame={"key": "paint", "type": "thing", "head": "sage"})
    question = "What colour was Noor's kitchen painted?"
    shape = shape_of(question, ["Noor"], None)
    args = (_graph(painted), shape, [(painted, 0.8)], {"p": 0.8}, 0.9, None)
    assert "sage green" in answer_offline(*args, AskSettings(), question).text
    # the frame layer alone refuses: what Noor painted is a thing, not a colour
    assert answer_offline(*args, AskSettings(refusal_typed=False), question).abstained


def test_an_occupation_question_is_answered_by_a_role_never_by_another_frame():
    place = _ev("w", 2, "I work at Easton these days, ten minutes on the bike", value="Easton",
                frame={"key": "work at", "type": "place", "head": "easton"})
    from tracecli.query.frame_answer import frame_answer

    question = "What does Noor do for work?"
    shape = shape_of(question, ["Noor"], None)

    def found(roles_only: bool):
        return frame_answer(_graph(place), shape, question, {"w": 0.8}, None, ["Noor"], roles_only=roles_only)

    assert found(True) is None  # the sentence reader answers instead
    assert found(False) is not None and found(False).event is place


def test_a_noun_the_question_word_determines_asks_for_a_job_only_in_its_first_sense():
    from tracecli.query.frame_answer import asks_role

    assert asks_role("What job does Noor have?") and asks_role("What is Noor's profession?")
    assert asks_role("What does Noor do for work?")
    assert not asks_role("What sport does Noor play these days?")  # a sport; its occupation sense is its second


def test_when_a_habit_happens_is_the_time_the_sentence_names_not_the_day_it_was_said():
    # the entity reader cuts "Saturday mornings" to "Saturday" and "every other Sunday" to "other Sunday"
    for quote, want in [("off to pottery, it's Saturday mornings at the new studio", "Saturday mornings"),
                        ("so my slot's Saturday at 10 now instead of thursdays", "Saturday at 10"),
                        ("swimming is every other Sunday now btw", "every other Sunday"),
                        ("it's Friday 30th, we do the last Friday of the month now", "the last Friday of the month")]:
        ev = _ev("a", 3, quote)
        question = "When does Noor go these days?"
        ans = answer_offline(_graph(ev), shape_of(question, ["Noor"], None), [(ev, 0.8)], {"a": 0.8}, 0.9, None,
                             AskSettings(), question)
        assert ans.text == want, quote
    # a date the sentence names and the graph did not resolve is that date, not the day the message was sent
    exam = _ev("e", 3, "stats exam is on 14 March")
    assert extract_value(_graph(exam), exam, shape_of("When is Noor's exam?", ["Noor"], None), "When is Noor's exam?") \
        == "14 March"


def test_a_who_question_moves_up_a_sentence_naming_someone_from_a_wider_margin():
    vague = _ev("v", 3, "haha yes, the big one is finally sorting my banking.")
    named = _ev("n", 5, "I've moved everything over to Monzo, closed the old account yesterday")
    question = "Who does Noor bank with?"
    ranked = [(vague, 0.75), (named, 0.62)]  # 0.13 apart: outside the usual typed margin, inside the who margin
    ask = lambda settings: answer_offline(_graph(vague, named), shape_of(question, ["Noor"], None), ranked,  # noqa: E731
                                         {"v": 0.75, "n": 0.62}, 0.9, None, settings, question).text
    assert ask(AskSettings()) == "Monzo"
    assert ask(AskSettings(who_margin=0.0)) != "Monzo"


def test_a_facet_answer_gives_way_to_the_best_sentence_said_later_naming_something_else():
    old = _ev("f", 2, "the Fiesta failed its MOT again", value="Fiesta", facet="car")
    question = "What car does Noor drive?"
    shape = shape_of(question, ["Noor"], None)
    assert "car" in shape.facets

    def ask(top: EventNode, settings: AskSettings = AskSettings()) -> str:
        ranked = [(top, 0.8), (old, 0.7)]
        return answer_offline(_graph(old, top), shape, ranked, {"f": 0.7, top.id: 0.8}, 0.9, None, settings,
                              question).text

    later = _ev("y", 6, "took the Yaris up to my mum's yesterday, so smooth on the motorway")
    assert "Yaris" in ask(later)
    assert ask(later, AskSettings(top_later=False)) == "Fiesta"
    # not when the later sentence names the answer's value, muses, or comes first
    assert ask(_ev("m", 6, "the Fiesta is making a noise like a kettle")) == "Fiesta"
    assert ask(_ev("h", 6, "if I ever got a Yaris I'd never drive anything else")) == "Fiesta"
    assert ask(_ev("e", 1, "took the Yaris up to my mum's yesterday")) == "Fiesta"


def test_a_name_said_beside_a_noun_answers_only_a_question_about_that_noun():
    named = _ev("p", 4, "my colleague Pilar went down to four days too", value="Pilar",
                frame={"key": "colleague", "type": "person", "head": "pilar", "named": True})
    days = _ev("d", 3, "four-day week approved, Fridays off from october")
    graph = _graph(named, days)
    ranked = [(named, 0.8), (days, 0.75)]
    question = "What is the name of Noor's colleague?"
    ans = answer_offline(graph, shape_of(question, ["Noor"], None), ranked, {"p": 0.8, "d": 0.75}, 0.9, None,
                         AskSettings(), question)
    assert ans.text == "Pilar"
    question = "Which day does Noor have off?"  # the name's sentence says "days" but the name is no day
    ranked = [(days, 0.8), (named, 0.78)]
    ans = answer_offline(graph, shape_of(question, ["Noor"], None), ranked, {"p": 0.78, "d": 0.8}, 0.9, None,
                         AskSettings(), question)
    assert "Pilar" not in ans.text and ans.event_ids == ["d"]


def test_a_sentence_that_only_muses_gives_way_to_one_that_states():
    muse = _ev("m", 7, "if I ever moved south it would be Bristol. purely hypothetically")
    fact = _ev("f", 2, "born and bred in Inverness, it's basically the law")
    question = "Where does Noor come from?"
    shape = shape_of(question, ["Noor"], None)
    assert shape.facets[0] == "hometown"
    args = (_graph(muse, fact), shape, [(muse, 0.8), (fact, 0.75)], {"m": 0.8, "f": 0.75}, 0.9, None)
    assert "Inverness" in answer_offline(*args, AskSettings(), question).text
    assert "Bristol" in answer_offline(*args, AskSettings(unhedged_first=False), question).text
    # far below the best, a statement does not move up
    args = (_graph(muse, fact), shape, [(muse, 0.8), (fact, 0.5)], {"m": 0.8, "f": 0.5}, 0.9, None)
    assert "Bristol" in answer_offline(*args, AskSettings(), question).text
    # a real condition, or one about the listener, states what it says
    assert not _muses(_ev("r", 3, "I'm usually in coach C seat 42 if I'm lucky"))
    assert not _muses(_ev("l", 3, "the code is 4417 btw if you ever need to borrow it"))
    assert _muses(_ev("p", 3, "random, but if I ever did a PhD it'd be in Melbourne"))


def test_growing_up_somewhere_asks_where_someone_is_from():
    for question in ("Where did Noor grow up?", "Where does Noor come from?", "Where is Noor's hometown?"):
        assert shape_of(question, ["Noor"], None).facets[0] == "hometown", question


def test_with_no_frame_said_by_then_a_sentence_naming_a_value_of_the_asked_type_answers():
    # "Where was Noor living?" as of March, the residence facet stated only in May: a sentence said by then that
    # names a place is read (the sentence fallback); one that names nothing of that type leaves it unknown
    early = _ev("a", 1, "the flat in Bristol is freezing this winter")
    later = _ev("b", 5, "moved to Leeds last week", value="Leeds", facet="residence")
    question = "Where was Noor living at that point?"
    as_of = "2024-03-01T00:00:00Z"
    shape = shape_of(question, ["Noor"], None)
    args = (_graph(early, later), shape, [(early, 0.8), (later, 0.7)], {"a": 0.8, "b": 0.7}, 0.9, as_of)
    answered = answer_offline(*args, AskSettings(), question)
    assert not answered.abstained and "Bristol" in answered.text and answered.source_refs == ["m1"]
    assert answer_offline(*args, AskSettings(later_only_sentences=False), question).abstained
    vague = _ev("c", 1, "the flat is freezing this winter")
    args = (_graph(vague, later), shape, [(vague, 0.8), (later, 0.7)], {"c": 0.8, "b": 0.7}, 0.9, as_of)
    assert answer_offline(*args, AskSettings(), question).abstained


def test_a_sentence_that_tells_a_change_answers_with_the_value_it_changed_to():
    told = {"constructions": [{"name": "from_to", "old": "first Thursday", "new": "other Sunday",
                               "old_head": "thursday"}], "key": "change from", "type": "date", "head": "thursday"}
    ev = _ev("a", 3, "book club's changed from the first Thursday of the month to every other Sunday", frame=told)
    graph = _graph(ev)
    now = "When does Noor's book club meet these days?"
    assert read_event(graph, ev, shape_of(now, ["Noor"], None), 0.9, now, AskSettings()).text == "every other Sunday"
    # asked what held before, the sentence's old value is the answer
    before = "When did Noor's book club meet before it changed?"
    said = read_event(graph, ev, shape_of(before, ["Noor"], None), 0.9, before, AskSettings()).text
    assert "Thursday" in said and "Sunday" not in said
    # the construction may sit on another event of the same sentence than the one the answer was read from
    moved = {"constructions": [{"name": "from_to", "old": "Eastfield", "new": "Riverside", "old_head": "eastfield"}],
             "key": "move to", "type": "place", "head": "riverside"}
    a = _ev("b", 4, "the party's moved me from Eastfield to Riverside. they reckon I've a better shot there", frame=moved)
    b = _ev("c", 4, "the party's moved me from Eastfield to Riverside. they reckon I've a better shot there",
            frame={"key": "have", "type": "thing", "head": "shot"})
    ward = "Which ward is Noor standing in?"
    answer = Answer(text="Eastfield", abstained=False, event_ids=["c"], source_refs=["m4"], method="sentence")
    assert _settled(answer, _graph(a, b), shape_of(ward, ["Noor"], None), ward, AskSettings(), None).text == "Riverside"
    # a reading that stops inside the change, the old value and part of the new, is the new value too
    slot = {"constructions": [{"name": "from_to", "old": "sunday nights", "new": "friday evenings", "old_head": "night"}],
            "key": "move to", "type": "date", "head": "evening"}
    c = _ev("d", 5, "they've moved me from sunday nights to friday evenings, new lad wanted the late slot", frame=slot)
    when = "When is Noor's radio show on these days?"
    cut = Answer(text="sunday nights to friday", abstained=False, event_ids=["d"], source_refs=["m5"], method="sentence")
    assert _settled(cut, _graph(c), shape_of(when, ["Noor"], None), when, AskSettings(), None).text == "friday evenings"


def test_a_place_is_read_from_whole_words_only():
    # "Bay" is a place name, but not the "Bay" inside "eBay": the sentence is the answer, not a place cut from a word
    where = "Where does Noor sell her clothes now?"
    ev = _ev("a", 3, "I sell everything on eBay now, the fees are fine")
    assert read_event(_graph(ev), ev, shape_of(where, ["Noor"], None), 0.9, where, AskSettings()).text != "Bay"
    moved = _ev("b", 4, "we moved the stall to Leeds market last year")
    said = read_event(_graph(moved), moved, shape_of(where, ["Noor"], None), 0.9, where, AskSettings()).text
    assert "Leeds" in said


def test_a_name_is_read_without_its_possessive_ending():
    # the entity reader takes "Dr Okafor's" as one person; the answer is the name
    shape = shape_of("Who is Noor's dentist now?", ["Noor"], None)
    ev = _ev("d", 2, "dentist tomorrow. Dr Okafor's.")
    assert extract_value(_graph(ev), ev, shape, "Who is Noor's dentist now?") == "Dr Okafor"


def test_a_question_asking_with_a_stranded_preposition_matches_that_predicate():
    from tracecli.query.frame_answer import frame_answer, question_key

    assert question_key("Where is Noor from?") == "be from"
    assert question_key("What town is Noor from originally?") == "be from"
    assert question_key("Who does Noor live with?") == "live with"
    assert question_key("Where does Noor live?") is None
    origin = _ev("o", 2, "I'm from Lyon, the winters here are nothing", value="Lyon",
                 frame={"key": "be from", "type": "place", "head": "lyon", "copular": True})
    placed = _ev("p", 7, "I'm in Leeds now", value="Leeds",
                 frame={"key": "be in", "type": "place", "head": "leeds", "copular": True, "novelty": True})
    question = "Where is Noor from?"
    found = frame_answer(_graph(origin, placed), shape_of(question, ["Noor"], None), question,
                         {"o": 0.5, "p": 0.5}, None, ["Noor"])
    assert found is not None and found.event.value == "Lyon"  # not the later placement


def test_a_retraction_asked_what_holds_now_is_answered_by_what_replaced_it():
    from dataclasses import replace as _replace

    from tracecli.query.answer import _instead_of_retraction
    from tracecli.query.paths import EdgeInfo

    said = _ev("s", 2, "leg day at the climbing wall today btw.")
    quit_ = _replace(_ev("q", 5, "also I quit the climbing wall.", value="the climbing wall"), negated=True)
    swim = _ev("w", 5, "I've taken up rowing at the lake instead", value="rowing")
    graph = _graph(said, quit_, swim)
    edge = EdgeInfo("w", "s", "updates", 0.9, None, "Noor: 'rowing' replaces 'the climbing wall'")
    graph.out["w"].append(edge)
    graph.into["s"].append(edge)
    assert _instead_of_retraction(graph, quit_, "How does Noor keep fit these days?", None).id == "w"
    # asked what came before, the retraction stays; a statement that retracts nothing is itself
    assert _instead_of_retraction(graph, quit_, "What did Noor do before rowing?", None).id == "q"
    assert _instead_of_retraction(graph, said, "How does Noor keep fit these days?", None).id == "s"


def test_an_option_turned_down_is_put_after_a_sentence_that_states():
    from tracecli.query.answer import _turned_down, _unhedged_first

    down = _ev("c", 3, "I thought about tap dancing for a week but nah, too many people stamping")
    assert _turned_down(down) and not _muses(down)  # (the learned choice's feature keeps its fitted meaning)
    assert not _turned_down(_ev("m", 3, "I moved to Leeds in May but no regrets"))
    assert not _turned_down(_ev("n", 3, "my peanut allergy nearly finished me off at that wedding"))
    # a sentence that states something besides the option turned down states it
    assert not _turned_down(_ev("s", 3, "moved the blog to Ghost last week. thought about Medium but nah"))
    assert not _turned_down(_ev("t", 3, "The Owls. someone wanted The Badgers but nah, we voted it down"))
    assert not _turned_down(_ev("u", 3, "I thought about going green but nah, the plum took two hours"))
    stated = _ev("w", 4, "I go rowing on the lake now")
    assert [e.id for e, _ in _unhedged_first([(down, 0.8), (stated, 0.75)], 0.1)] == ["w", "c"]


def test_the_name_of_a_relation_is_not_replaced_by_the_next_name_said():
    son = _ev("f", 2, "my daughter Ines scored one", value="Ines", facet="family:daughter",
              frame={"key": "daughter", "type": "person", "head": "ines", "named": True})
    later = _ev("j", 6, "a girl called Maud scored twice, she's 9 and runs like a hare")
    question = "What is the name of Noor's daughter?"

    def ask(answer_ev: EventNode) -> str:
        return answer_offline(_graph(answer_ev, later), shape_of(question, ["Noor"], None), [(later, 0.8), (answer_ev, 0.7)],
                              {answer_ev.id: 0.7, "j": 0.8}, 0.9, None, AskSettings(), question).text

    assert ask(son) == "Ines"
    # the same answer as a plain facet value of another kind is replaced as before
    assert ask(_ev("c", 2, "my car Ines scored one", value="Ines", facet="car")) != "Ines"


def test_a_language_asked_for_is_read_from_the_sentence_but_not_the_one_it_retracts():
    from dataclasses import replace as _replace

    from tracecli.query.answer import asked_labels

    quote = "I quit German btw. doing Portuguese instead, we're going to Faro in june"
    quit_ = _replace(_ev("q", 4, quote, value="German", facet="employer"), negated=True)
    trip = _ev("t", 4, quote, value="Faro", frame={"key": "go to", "type": "place", "head": "faro"})
    question = "Which language is Noor learning at the moment?"
    shape = shape_of(question, ["Noor"], None)
    labels = asked_labels(shape, question)
    assert labels is not None and "NORP" in labels
    assert extract_value(_graph(quit_, trip), trip, shape, question, labels) == "Portuguese"


def _sentence(eid: str, seq: int, idx: int, quote: str, **kw) -> EventNode:
    ev = _ev(eid, seq, quote, **kw)
    ev.sentence_idx = idx
    return ev


def test_a_retraction_told_old_first_is_answered_by_the_sentence_that_says_the_new_value():
    from tracecli.query.answer import _instead_of_retraction

    ended = {"key": "retract", "type": "org", "constructions": [{"name": "retract", "old": "Vodacell", "new": ""}]}
    left = _sentence("l", 5, 0, "mobile news: I've left Vodacell.", value="Vodacell", frame=ended)
    now = _sentence("n", 5, 1, "I'm on Skylink now, nine pounds a month")
    aside = _sentence("a", 5, 2, "anyway how was the gig")
    graph = _graph(left, now, aside)
    assert _instead_of_retraction(graph, left, "Which network is Noor's phone on now?", None).id == "n"
    assert _instead_of_retraction(graph, left, "Which network was Noor's phone on in May?", "2024-06-01").id == "n"
    # asked what came before, the retraction stays
    assert _instead_of_retraction(graph, left, "Which network was Noor on before Skylink?", None).id == "l"
    # a sentence that only negates something ends nothing, and a later sentence not said as new is no replacement
    cant = _sentence("c", 6, 0, "can't, I'm covering weekend shifts at the Anchor", frame={
        "key": "do", "type": "thing", "constructions": [{"name": "negation", "old": "weekend shifts", "new": ""}]})
    then = _sentence("t", 6, 1, "I'm knackered every night now after work")
    assert _instead_of_retraction(_graph(cant, then), cant, "Where does Noor work weekends?", None).id == "c"
    stale = _sentence("s", 7, 1, "the Vodacell shop was rude to me")
    assert _instead_of_retraction(_graph(left, stale), left, "Which network is Noor on now?", None).id == "l"


def test_a_place_or_person_the_message_leaves_is_not_read_as_the_answer():
    ended = {"key": "retract", "type": "place", "constructions": [{"name": "retract", "old": "Leeds", "new": ""}]}
    moved = _ev("m", 4, "we moved out of Leeds in June and we're renting in York now", value="Leeds", frame=ended)
    graph = _graph(moved)
    where = "Where does Noor live now?"
    assert extract_value(graph, moved, shape_of(where, ["Noor"], None), where) == "York"
    before = "Where did Noor live before York?"
    assert extract_value(graph, moved, shape_of(before, ["Noor"], None), before) == "Leeds"
    parted = {"key": "retract", "type": "person", "constructions": [{"name": "retract", "old": "Gordon", "new": ""}]}
    coach = _ev("p", 5, "Gordon and I have parted ways, I train with Sarah Jones now", value="Gordon", frame=parted)
    who = "Who coaches Noor now?"
    assert extract_value(_graph(coach), coach, shape_of(who, ["Noor"], None), who) == "Sarah Jones"


def test_a_sentence_about_the_asked_noun_continues_past_a_span_of_time_into_the_value():
    said = _sentence("s", 5, 0, "found the locker code at last after a month of guessing.")
    code = _sentence("c", 5, 1, "3390.")
    question = "What is the code of Noor's gym locker?"
    shape = shape_of(question, ["Noor"], None)
    ans = answer_offline(_graph(said, code), shape, [(said, 0.8)], {}, 0.9, None, AskSettings(), question)
    assert "3390" in ans.text and ans.event_ids == ["c"]
    # a sentence that does not name the asked noun keeps the date as its value ("from March" is what it says)
    role = _sentence("r", 6, 0, "so that's settled, I'm treasurer of the club from March.")
    aside = _sentence("x", 6, 1, "Kemi is moving to Spain in April")
    asked = "What role does Noor hold at the club now?"
    got = answer_offline(_graph(role, aside), shape_of(asked, ["Noor"], None), [(role, 0.8)], {}, 0.9, None,
                         AskSettings(), asked)
    assert got.event_ids == ["r"]


def test_a_place_is_answered_with_the_noun_it_locates():
    where = "Where does Noor live now?"
    shape = shape_of(where, ["Noor"], None)
    flat = _ev("f", 3, "found a room on Alder Lane in Leeds, moving in on saturday")
    assert extract_value(_graph(flat), flat, shape, where) == "a room on Alder Lane in Leeds"
    # a place on a verb, a person or a time it locates: the place alone
    for quote in ("we moved to Leeds last week", "my sister in Leeds is visiting", "we had a lovely week in Leeds"):
        ev = _ev("p", 4, quote)
        assert extract_value(_graph(ev), ev, shape, where) == "Leeds"


def test_a_retraction_is_answered_by_the_next_sentence_taking_something_up():
    from tracecli.query.answer import _instead_of_retraction

    ended = {"key": "retract", "type": "org", "constructions": [{"name": "retract", "old": "Brightline", "new": ""}]}
    notice = _sentence("n", 5, 0, "I handed in my notice at Brightline.", value="Brightline", frame=ended)
    start = _sentence("s", 5, 1, "starting at Kestrel Games in May, thirty people and they finish at five")
    assert _instead_of_retraction(_graph(notice, start), notice, "Where does Noor work now?", None).id == "s"
    # a verb of changing that is negated takes nothing up
    stay = _sentence("t", 5, 1, "not starting anywhere till Kestrel Games replies")
    assert _instead_of_retraction(_graph(notice, stay), notice, "Where does Noor work now?", None).id == "n"


def test_a_question_asking_for_a_time_is_not_answered_by_a_frame_of_another_type():
    from tracecli.query.frame_answer import asked_types, frame_answer

    assert asked_types("Which day does Noor do the school run now?") == {"date"}
    assert asked_types("Which vets does Noor take the cat to?") is None
    swap = _ev("s", 3, "I swapped school-run days with Ilse, I'm on Fridays now", value="Ilse",
               frame={"key": "swap with", "type": "person", "head": "ilse"})
    day = _ev("d", 3, "I swapped school-run days with Ilse, I'm on Fridays now", value="Fridays",
              frame={"key": "be on", "type": "date", "head": "friday"})
    for question, want in (("Which day does Noor do the school run now?", "d"), ("Who did Noor swap days with?", "s")):
        got = frame_answer(_graph(swap, day), shape_of(question, ["Noor"], None), question, {"s": 0.9, "d": 0.3},
                           None, ["Noor"])
        assert got is not None and got.event.id == want


def test_a_clipped_job_name_is_a_role_said_of_oneself():
    from tracecli.graph.lexicon import is_clipped_role
    from tracecli.query.frame_answer import frame_answer, holds_role

    assert is_clipped_role("physio") and is_clipped_role("admin")  # physiotherapist, administrator
    assert not is_clipped_role("pescatarian") and not is_clipped_role("teacher")  # not a clipping; known to WordNet
    assert not is_clipped_role("proud")  # an adjective WordNet knows, not a clipped "Proudhon"
    assert holds_role({"key": "say as", "head": "physio", "type": "thing"})
    assert not holds_role({"key": "say as", "head": "pescatarian", "type": "thing"})
    assert not holds_role({"key": "see", "head": "physio", "type": "thing"})  # no identity frame
    said = _ev("r", 4, "as a physio I'd say get it checked", value="physio",
               frame={"key": "say as", "type": "thing", "head": "physio"})
    question = "What does Noor do for a living?"
    got = frame_answer(_graph(said), shape_of(question, ["Noor"], None), question, {"r": 0.6}, None, ["Noor"])
    assert got is not None and got.event is said


def test_a_typed_value_the_message_sets_aside_gives_way_to_one_it_goes_on_to():
    aside = {"key": "retract", "type": "name", "constructions": [{"name": "ended", "old": "Dutch", "new": ""}]}
    hold = _sentence("h", 5, 0, "Dutch is on hold.", value="Dutch", frame=aside)
    then = _sentence("t", 5, 1, "work is sending me to Lisbon so it's Portuguese now")
    question = "Which language is Noor learning these days?"
    shape = shape_of(question, ["Noor"], None)
    assert extract_value(_graph(hold, then), hold, shape, question, ("LANGUAGE", "NORP")) == "Portuguese"
    # with nothing else named, the sentence's own value is still read
    assert extract_value(_graph(hold), hold, shape, question, ("LANGUAGE", "NORP")) == "Dutch"


def test_a_facet_value_of_another_kind_than_the_asked_noun_is_not_the_answer():
    from tracecli.query.answer import _other_kind

    sport = _ev("p", 3, "swapped the treadmill for reformer pilates", value="reformer pilates", facet="sport")
    assert _other_kind("Which football club does Noor support?", sport)  # a sport is no club
    assert not _other_kind("What sport does Noor do these days?", sport)  # the facet's own noun
    diet = _ev("d", 3, "I've been veggie for years", value="vegetarian", facet="diet")
    assert not _other_kind("What kind of diet does Noor follow?", diet)  # "kind of diet" asks for a diet
    assert not _other_kind("Where does Noor live?", sport)  # no noun asked for
    # and the answer step reads on past it
    club = _ev("c", 2, "Hartley Rovers till I die", value=None)
    question = "Which football club does Noor support?"
    ans = answer_offline(_graph(sport, club), shape_of(question, ["Noor"], None), [(club, 0.8), (sport, 0.7)],
                         {"c": 0.8, "p": 0.7}, 0.9, None, AskSettings(), question)
    assert "pilates" not in ans.text


def test_the_noun_asked_for_is_read_through_a_noun_of_sorts_and_a_place_noun_asks_for_a_place():
    from tracecli.graph.lexicon import answer_class
    from tracecli.query.frame_answer import asked_noun, asked_types

    assert asked_noun("What kind of diet does Noor follow?") == "diet"
    assert asked_noun("Which model of car does Noor drive now?") == "car"
    assert asked_noun("What brand of trainers does Noor run in?") == "trainer"
    assert [answer_class(w) for w in ("town", "suburb", "county")] == ["place"] * 3
    # WordNet files these under location in general: not a named place
    assert [answer_class(w) for w in ("position", "area", "mountain")] == [None] * 3
    assert "place" in (asked_types("Which town does Noor live in now?") or ()) and \
        "thing" not in (asked_types("Which town does Noor live in now?") or ())
