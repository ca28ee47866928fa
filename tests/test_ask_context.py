"""The hybrid context of `ask` (TRACE §II-F): budget, atomic items, refs that exist, validity markers."""

from __future__ import annotations

from typing import Any

import pytest

pytest.register_assert_rewrite("ask_fixtures")

from ask_fixtures import (  # noqa: E402
    ALICE,
    CONTEXT_KINDS,
    LENA,
    MAYA,
    NO_EVIDENCE_QUESTION,
    conflict_ids,
    event_rows,
    expected_marker,
    jsonable,
    message_refs,
    note_texts,
    render_steps,
)

from tracecli.errors import BadInput, NotFound  # noqa: E402
from tracecli.text import count_tokens  # noqa: E402

pytest_plugins = ["ask_fixtures"]

# (question, conversation, as_of)
QUESTIONS: list[tuple[str, str | None, str | None]] = [
    ("Where is Alice moving?", None, None),
    ("What is Alice's cat called?", ALICE, None),
    ("Which company did Alice work for?", ALICE, "2024-08-20"),
    ("Why did Fernleaf pivot from a consumer app to selling to garden centres?", MAYA, None),
    ("When is Lena's spring concert?", LENA, None),
    ("What car did Omar end up buying?", None, None),
    ("What are Alice's hobbies?", ALICE, None),
]
BUDGETS = [20, 40, 100, 400]


@pytest.fixture(scope="module")
def runs(asker: Any) -> dict[tuple[str, str | None, str | None, int], Any]:
    out = {}
    for q, conv, as_of in QUESTIONS:
        for b in BUDGETS:
            out[(q, conv, as_of, b)] = asker.ask(q, conversation_id=conv, as_of=as_of, budget=b)
    return out


def test_budget_is_never_exceeded(runs: dict[tuple[str, str | None, str | None, int], Any]) -> None:
    for (q, _conv, _as_of, budget), res in runs.items():
        used = sum(count_tokens(it.text) for it in res.context)
        assert used <= budget, (q, budget, used)
        if budget >= 100:
            assert res.context, (q, budget)


def test_bigger_budget_never_gives_less_context(runs: dict[tuple[str, str | None, str | None, int], Any]) -> None:
    for q, conv, as_of in QUESTIONS:
        sizes = [sum(count_tokens(it.text) for it in runs[(q, conv, as_of, b)].context) for b in BUDGETS]
        assert sizes[-1] >= sizes[0], (q, sizes)
        answers = {runs[(q, conv, as_of, b)].answer for b in BUDGETS}
        assert len(answers) == 1, f"the budget shapes the context, not the answer: {answers}"


def test_items_are_atomic(runs: dict[tuple[str, str | None, str | None, int], Any], ask_store: Any) -> None:
    """Each note item is a stored note (maybe marked [OUTDATED], or [NOT YET] when said after the as-of date); each
    path item is its path rendered in full."""
    notes = note_texts(ask_store)
    for key, res in runs.items():
        data = jsonable(res)
        path_items = [it for it in data["context"] if it["kind"] == "path"]
        assert len(path_items) == len(data["paths"]), key
        for item, path in zip(path_items, data["paths"]):
            assert item["text"] == render_steps(path["steps"]), key
            assert item["score"] == path["score"]
        for item in data["context"]:
            assert item["kind"] in CONTEXT_KINDS
            if item["kind"] == "note":
                assert len(item["source_refs"]) == 1
                text = item["text"].removeprefix("[OUTDATED] ")
                if text.startswith("[NOT YET] "):  # said after the as-of date (its date is the note's own prefix)
                    text = text.removeprefix("[NOT YET] ")
                    assert key[2] is not None and text[1:11] > key[2], (key, item)
                assert text in notes[item["source_refs"][0]], (key, item)


def test_items_are_not_repeated(runs: dict[tuple[str, str | None, str | None, int], Any]) -> None:
    for key, res in runs.items():
        texts = [it.text for it in res.context]
        assert len(texts) == len(set(texts)), key
        steps = [tuple(s.event_id for s in p.steps) for p in res.paths]
        assert len(steps) == len(set(steps)), key


def test_refs_resolve_to_messages_of_the_conversation(runs: dict[tuple[str, str | None, str | None, int], Any], ask_store: Any) -> None:
    everywhere = message_refs(ask_store)
    for (q, conv, _as_of, _b), res in runs.items():
        refs = [*res.source_refs, *(r for it in res.context for r in it.source_refs)]
        assert refs, q
        for ref in refs:
            assert ref in everywhere, (q, ref)
            if conv is not None:
                assert conv in everywhere[ref], (q, conv, ref)
        for it in res.context:
            assert 1 <= len(it.source_refs) <= 3, (q, it)
            assert len(set(it.source_refs)) == len(it.source_refs)
        assert len(set(res.source_refs)) == len(res.source_refs)


def test_answer_refs_are_in_the_context(runs: dict[tuple[str, str | None, str | None, int], Any]) -> None:
    """With a normal budget, the messages the answer cites are among the context items' refs."""
    for (q, _conv, _as_of, budget), res in runs.items():
        if budget < 400 or res.abstained:
            continue
        in_context = {r for it in res.context for r in it.source_refs}
        assert set(res.source_refs) <= in_context, (q, res.source_refs)


def test_markers_follow_validity_at_the_question_date(runs: dict[tuple[str, str | None, str | None, int], Any], ask_store: Any) -> None:
    rows = event_rows(ask_store)
    conflicts = conflict_ids(ask_store)
    for key, res in runs.items():
        for path in res.paths:
            for st in path.steps:
                r = rows[st.event_id]
                assert st.validity == expected_marker(r, res.as_of, st.event_id in conflicts), (key, st)
                assert st.valid_until == r["valid_until"] and st.time == r["time_anchor"]


def test_outdated_note_marker(runs: dict[tuple[str, str | None, str | None, int], Any], ask_store: Any) -> None:
    """A note is marked [OUTDATED] exactly when every fact (facet) event read from it is outdated at the question date."""
    rows = event_rows(ask_store)
    facts_of: dict[str, list[str]] = {}
    for text, eid in ask_store.execute(
        "SELECT n.text, en.event_id FROM notes n JOIN event_notes en ON en.note_id = n.id"
    ):
        facts_of.setdefault(text, []).append(eid)
    marked = 0
    for key, res in runs.items():
        for it in res.context:
            if it.kind == "path":
                # a note whose message was distilled into events is shown as its event, with the event's marker
                marked += "[OUTDATED" in it.text
                continue
            if it.kind != "note":
                continue
            text = it.text.removeprefix("[OUTDATED] ")
            facts = [rows[e] for e in facts_of.get(text, []) if rows[e]["facet"]]
            all_old = bool(facts) and all(expected_marker(r, res.as_of, False) == "outdated" for r in facts)
            assert it.text.startswith("[OUTDATED] ") == all_old, (key, it.text)
            marked += all_old
    assert marked >= 1


def test_path_scores_agree_with_their_signals(runs: dict[tuple[str, str | None, str | None, int], Any]) -> None:
    """Ranked paths (all but the answer's own path, which leads the list) carry S = .4NS + .3PC + .15TC + .15UV."""
    for key, res in runs.items():
        for path in res.paths[1:]:
            s = path.signals
            assert path.score == pytest.approx(0.4 * s["ns"] + 0.3 * s["pc"] + 0.15 * s["tc"] + 0.15 * s["uv"], abs=2e-4), key


def test_answer_path_score_agrees_with_its_signals(asker: Any) -> None:
    res = asker.ask("Where is Alice moving?")
    first = res.paths[0]
    s = first.signals
    assert first.score == pytest.approx(0.4 * s["ns"] + 0.3 * s["pc"] + 0.15 * s["tc"] + 0.15 * s["uv"], abs=2e-4)


def test_current_answer_path_leads_the_context(asker: Any) -> None:
    res = asker.ask("Where is Alice moving?", conversation_id=ALICE)
    assert res.answer == "Porto" and res.source_refs == ["s3-m6"]
    first = res.context[0]
    assert first.kind == "path"
    assert first.text == ("Alice is moving to Oslo (2024-01-08) [OUTDATED until 2024-03-12] —updated by→ "
                          "Alice is moving to Porto (2024-03-12) [valid]")
    assert first.source_refs == ["s1-m9", "s3-m6"]


def test_as_of_turns_the_old_version_valid(asker: Any) -> None:
    res = asker.ask("Where is Alice moving?", conversation_id=ALICE, as_of="2024-02-01")
    assert res.answer == "Oslo" and res.as_of == "2024-02-01T23:59:59Z"
    assert "s3-m6" not in res.source_refs
    text = " ".join(it.text for it in res.context if it.kind == "path")
    assert "Alice is moving to Oslo (2024-01-08) [valid]" in text


@pytest.mark.parametrize(("question", "as_of"), [("What is Alice's cat called?", "2024-01-10"), ("Where is Alice moving?", "2020-01-01")])
def test_nothing_said_yet_abstains(asker: Any, question: str, as_of: str) -> None:
    res = asker.ask(question, conversation_id=ALICE, as_of=as_of)
    assert res.abstained and res.source_refs == []


def test_no_evidence_abstains(asker: Any) -> None:
    res = asker.ask(NO_EVIDENCE_QUESTION)
    assert res.abstained and res.answer == "not enough evidence"
    assert res.source_refs == []


def test_every_plan_is_reachable(asker: Any) -> None:
    plans = {asker.ask(q, conversation_id=c).plan for q, c in [
        ("When is Lena's spring concert?", LENA), ("What is Alice's favourite band?", ALICE),
        ("Why did Sam get an e-bike instead of a car?", MAYA), ("What is Bob's dog called?", ALICE)]}
    assert plans == {"temporal", "preference", "multi-hop", "factual"}


def test_answers_are_stored_for_trace(asker: Any, ask_store: Any) -> None:
    res = asker.ask("What is Bob's dog called?", conversation_id=ALICE)
    row = ask_store.query("SELECT * FROM answers WHERE id = ?", (res.answer_id,))[0]
    assert (row["question"], row["answer"], row["abstained"], row["plan"], row["conversation_id"]) == (
        res.question, "Pepper", 0, res.plan, ALICE)
    items = ask_store.query("SELECT rank, kind, text FROM answer_items WHERE answer_id = ? ORDER BY rank", (res.answer_id,))
    assert [(i["kind"], i["text"]) for i in items] == [(it.kind, it.text) for it in res.context]
    unsaved = asker.ask("What is Bob's dog called?", conversation_id=ALICE, store_answer=False)
    assert not ask_store.query("SELECT 1 FROM answers WHERE id = ?", (unsaved.answer_id,))
    assert unsaved.answer_id != res.answer_id


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"question": ""}, BadInput, "empty"),
        ({"question": "   "}, BadInput, "empty"),
        ({"question": "Where?", "budget": 5}, BadInput, "budget"),
        ({"question": "Where?", "as_of": "the day after never"}, BadInput, "as-of"),
        ({"question": "Where?", "conversation_id": "nope"}, NotFound, "nope"),
    ],
)
def test_bad_input(asker: Any, kwargs: dict[str, Any], error: type[Exception], words: str) -> None:
    question = kwargs.pop("question")
    with pytest.raises(error, match=words):
        asker.ask(question, **kwargs)
