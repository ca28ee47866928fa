"""The Memory Wiki in the answer path (issue 11, items 1 and 2): pages routed per question, the claims that hold at
the asked time as context items, and candidate answers from every evidence source with the winner shown by trace.

The conversation (tests/fixtures/wiki_routing.json) was written for these tests: Ines moves from one city to another
in June 2023 and changes team in November 2023."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ask_fixtures import build_chat_db
from typer.testing import CliRunner

from tracecli.cli import app
from tracecli.query.ask import Asker
from tracecli.query.candidates import PRIORS, Candidate, best_valid, gather, mark_winner
from tracecli.query.paths import EventNode, Graph, Step
from tracecli.query.paths import Path as TracePath
from tracecli.query.settings import AskSettings
from tracecli.query.shape import shape_of
from tracecli.store import open_store
from tracecli.wiki.route import ClaimRow, load_claim_rows

CHAT = Path(__file__).parent / "fixtures" / "wiki_routing.json"
CONV = "ines-tariq"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    return build_chat_db(tmp_path_factory.mktemp("route") / "r.db", [CHAT], embedder, wiki=True)


def _routed(db: Path, embedder: Any, question: str, as_of: str | None) -> list[ClaimRow]:
    with open_store(db) as s:
        asker = Asker(s, embedder=embedder)
        scope = asker._scope([CONV])
        qvec = np.asarray(embedder.embed_batch([question])[0], dtype=np.float32)
        shape = shape_of(question, scope.names, scope.now, None)
        assert shape.people == ["Ines"]
        note_cos = dict(zip(scope.note_rowids, (scope.note_matrix @ qvec).tolist()))
        return [c for c, _ in asker._routed_claims(scope, shape, question, qvec, as_of, note_cos, qvec)]


# -- claims and their time spans ----------------------------------------------------------------


def _row(status: str, said: str | None, ended: str | None) -> ClaimRow:
    return ClaimRow("c", "conv", "t", status, "q", ("m",), ("r",), said, ended, None, None)


def test_a_claim_holds_from_when_it_was_said_until_it_was_retired() -> None:
    row = _row("deprecated", "2023-02-01T00:00:00Z", "2023-06-01T00:00:00Z")
    assert not row.holds_at(None)  # deprecated: not current
    assert row.holds_at("2023-03-01T00:00:00Z")
    assert not row.holds_at("2023-01-01T00:00:00Z")  # not yet said
    assert not row.holds_at("2023-07-01T00:00:00Z")  # retired by then
    assert _row("active", "2023-02-01T00:00:00Z", None).holds_at(None)


def test_a_revised_claim_is_retired_at_the_revising_message(db: Path) -> None:
    with open_store(db) as s:
        rows = load_claim_rows(s, [CONV])
    old = [c for c in rows.values() if c.text == "Ines lives in Valencia."]
    new = [c for c in rows.values() if c.text == "Ines lives in Lisbon."]
    assert old and new, sorted(c.text for c in rows.values())
    assert new[0].predecessor_id == old[0].id and old[0].status == "deprecated"
    assert old[0].ended_at == new[0].said_at == "2023-06-12T20:03:00Z"
    assert new[0].refs == ("s2-m2",)


def test_routed_claims_hold_at_the_asked_time(db: Path, embedder: Any) -> None:
    now = {c.text for c in _routed(db, embedder, "Where does Ines live?", None)}
    assert "Ines lives in Lisbon." in now and "Ines lives in Valencia." not in now
    then = {c.text for c in _routed(db, embedder, "Where does Ines live?", "2023-03-01T00:00:00Z")}
    assert "Ines lives in Valencia." in then and "Ines lives in Lisbon." not in then


def test_a_question_naming_a_person_routes_only_their_claims(db: Path, embedder: Any) -> None:
    routed = _routed(db, embedder, "What does Ines teach at the school?", None)
    assert routed and {c.subject for c in routed} == {"Ines"}  # Tariq's teaching claim stays out


def test_claim_items_cite_exactly_their_claims_messages(db: Path, embedder: Any) -> None:
    with open_store(db) as s:
        by_text = {c.text: c for c in load_claim_rows(s, [CONV]).values()}
        seen = 0
        for q in ("Which team is Ines on?", "What does Tariq teach?", "Where does Ines live now?"):
            res = Asker(s, embedder=embedder).ask(q, conversation_id=CONV, store_answer=False)
            for item in res.context:
                if item.kind != "claim":
                    continue
                text = re.sub(r"^\[\d{4}-\d{2}-\d{2}\] ", "", item.text)
                claim = by_text.get(text)
                if claim is None:
                    continue  # a note replaced by its message's own claims (several texts in one item)
                seen += 1
                assert item.source_refs == list(claim.refs)
    assert seen, "a routed claim reaches the context"


def test_ablating_the_wiki_routes_no_claims(db: Path, embedder: Any) -> None:
    with open_store(db) as s:
        res = Asker(s, embedder=embedder, settings=AskSettings(ablate=frozenset({"wiki"}))).ask(
            "What does Tariq teach?", conversation_id=CONV, store_answer=False)
    assert not [c for c in res.context if c.kind == "claim"]


# -- candidates ---------------------------------------------------------------------------------


def test_every_answer_lists_its_candidates_and_the_winner_is_the_answer(db: Path, embedder: Any) -> None:
    with open_store(db) as s:
        res = Asker(s, embedder=embedder).ask("Where does Ines live now?", conversation_id=CONV, store_answer=False)
    assert "Lisbon" in res.answer
    won = [c for c in res.candidates if c.won]
    assert len(won) == 1 and won[0].event_id
    sources = {c.source for c in res.candidates}
    assert won[0].source in ("chain", "frame") and len(sources) > 1
    assert all(c.why for c in res.candidates)


def test_trace_shows_the_candidates_and_which_won(db: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(app, ["ask", "Where does Ines live now?", "--db", str(db), "--json"])
    assert out.exit_code == 0, out.output
    answer_id = json.loads(out.stdout)["answer_id"]
    traced = runner.invoke(app, ["trace", answer_id, "--db", str(db), "--json"])
    assert traced.exit_code == 0
    cands = json.loads(traced.stdout)["candidates"]
    assert sum(1 for c in cands if c["won"]) == 1
    table = runner.invoke(app, ["trace", answer_id, "--db", str(db)])
    assert "candidates" in table.stderr and "✓" in table.stderr


def _ev(eid: str, seq: int, quote: str, validity: float = 1.0) -> EventNode:
    return EventNode(
        id=eid, conversation_id="c", session_id="s", type="state_change", subject="Ines", description=quote,
        quote=quote, time_anchor=f"2024-0{seq}-01T10:00:00Z", event_time=None, event_time_granularity=None, seq=seq,
        sentence_idx=0, facet=None, value=None, negated=False, confidence=0.6, validity=validity, valid_until=None,
        topic_id=None, source_refs=[f"m{seq}"],
    )


def _gather(events: list[EventNode], answer: str, claims: list[str], fit: dict[str, float]) -> list[Candidate]:
    graph = Graph({e.id: e for e in events}, defaultdict(list), defaultdict(list), {}, {})
    ranked = [(e, fit[e.id]) for e in events]
    return gather(graph, "sentence", answer, ranked, [], claims, {e.id: 0.5 for e in events}, AskSettings(), None,
                  lambda evs: [fit[e.id] for e in evs])


def test_a_better_matched_current_claim_scores_above_the_sentence() -> None:
    weak, strong = _ev("e1", 1, "lots of spreadsheets lately"), _ev("e2", 2, "I'm on the payroll team")
    cands = _gather([weak, strong], "e1", ["e2"], {"e1": 0.2, "e2": 0.6})
    best = best_valid(cands)
    assert best is not None and best.event_id == "e2" and best.source == "claim"
    mark_winner(cands, best)
    assert [c.event_id for c in cands if c.won] == ["e2"] and "highest score" in best.why


def test_a_superseded_candidate_never_wins() -> None:
    stale, fresh = _ev("e1", 1, "I'm on the billing team", validity=0.0), _ev("e2", 2, "lots of spreadsheets")
    cands = _gather([stale, fresh], "e2", ["e1"], {"e1": 0.9, "e2": 0.1})
    best = best_valid(cands)
    assert best is not None and best.event_id == "e2"  # the answer's own event, though it scores lower
    mark_winner(cands, best)
    stale_c = next(c for c in cands if c.event_id == "e1")
    assert stale_c.status == "outdated" and not stale_c.won and "superseded" in stale_c.why


def test_choosing_by_evidence_replaces_a_weaker_sentence_answer(db: Path, embedder: Any) -> None:
    """With the setting on, the winner is always the answer's own event; off, the answer step's pick is ticked."""
    q = "Which team was Ines on in March 2023?"
    with open_store(db) as s:
        for on in (False, True):
            res = Asker(s, embedder=embedder, settings=AskSettings(choose_by_evidence=on)).ask(
                q, conversation_id=CONV, store_answer=False)
            [won] = [c for c in res.candidates if c.won]
            answer_event = won.event_id
            assert won.status == "valid"
            if not on:
                assert won.source in ("chain", "frame", "sentence")


def test_the_answer_steps_own_pick_is_always_listed() -> None:
    events = [_ev(f"e{i}", i, f"sentence {i}") for i in range(1, 10)]
    fit = {e.id: 0.9 - 0.05 * i for i, e in enumerate(events)}
    fit["e9"] = -0.5  # the answer's own event matches worst of all nine
    graph = Graph({e.id: e for e in events}, defaultdict(list), defaultdict(list), {}, {})
    ranked = [(e, fit[e.id]) for e in events[3:6]]  # sentences e4–e6
    paths = [TracePath([Step(f"e{i}")], []) for i in (7, 8, 2)]  # path end-points e7, e8 (e2 again)
    cands = gather(graph, "sentence", "e9", ranked, paths, ["e1", "e2", "e3"], {}, AskSettings(), None,
                   lambda evs: [fit[e.id] for e in evs])
    assert len(cands) == 8 and "e9" in {c.event_id for c in cands}  # nine proposed, the lowest kept


def test_typed_answers_outrank_every_sentence_level_candidate() -> None:
    assert min(PRIORS["chain"], PRIORS["frame"]) - max(PRIORS["claim"], PRIORS["path"], PRIORS["sentence"]) > 1.0


# -- routed claims in the context (issue 15): a share of the budget, scored by their own sentence -------------------


def _claim(cid: str, day: str, text: str, refs: tuple[str, ...]) -> ClaimRow:
    return ClaimRow(cid, "conv", text, "active", text, tuple(f"m-{r}" for r in refs), refs, f"{day}T10:00:00Z", None,
                    None, None, f"ev-{cid}")


def test_the_claim_section_keeps_its_share_one_claim_per_day_and_cites_exactly_each_claims_messages() -> None:
    asker = Asker(None, settings=AskSettings(claim_floor=0.3, claims_per_day=1))  # type: ignore[arg-type]
    routed = [
        (_claim("a", "2023-01-02", "Ines plays padel on Sundays.", ("r1",)), 0.8),
        (_claim("b", "2023-01-02", "Ines plays padel with her sister.", ("r2",)), 0.75),  # same day as a
        (_claim("c", "2023-03-04", "Ines joined a climbing gym.", ("r3",)), 0.7),
        (_claim("d", "2023-05-06", "Ines took up rowing on the river.", ("r4",)), 0.6),  # its message is cited
        (_claim("e", "2023-07-08", "Ines started a pottery class in town with two friends.", ("r5", "r6")), 0.5),
        (_claim("f", "2023-09-10", "Ines sings.", ("r7",)), 0.29),  # under the floor
    ]
    cited = {"m-r4"}
    section = asker._claim_section(routed, cited, budget=30)
    texts = [item.text for item, _ in section]
    assert texts == ["[2023-01-02] Ines plays padel on Sundays.", "[2023-03-04] Ines joined a climbing gym.",
                     "[2023-07-08] Ines started a pottery class in town with two friends."]
    assert [item.source_refs for item, _ in section] == [["r1"], ["r3"], ["r5", "r6"]]
    assert cited == {"m-r4", "m-r1", "m-r3", "m-r5", "m-r6"}
    assert sum(len(t.split()) for t in texts) <= 30
    # a smaller share takes fewer claims, and never more words than it holds
    small = asker._claim_section(routed, {"m-r4"}, budget=12)
    assert [c.id for _, c in small] == ["a", "c"]
    loose = Asker(None, settings=AskSettings(claims_per_day=2))._claim_section(routed, set(), budget=30)  # type: ignore[arg-type]
    assert [c.id for _, c in loose][:2] == ["a", "b"]  # two a day when allowed


def test_a_routed_claim_enters_the_context_with_exactly_its_messages_and_only_with_the_wiki(db: Path, embedder: Any) -> None:
    payroll = "Work changed too: Ines is on the payroll team now."
    assert _routed(db, embedder, "Which team is Ines on?", None)[0].text == payroll  # its own sentence answers best
    q = "Is Ines enjoying Lisbon?"  # answered from another message, so the claim is not already cited by the answer
    with open_store(db) as s:
        results = {name: Asker(s, embedder=embedder, settings=AskSettings(claim_floor=0.1, ablate=frozenset(off)))
                   .ask(q, conversation_id=CONV, store_answer=False) for name, off in (("on", ()), ("no wiki", ("wiki",)))}
    assert "s3-m2" not in results["on"].source_refs
    items = [c for c in results["on"].context if c.kind == "claim" and c.text.endswith(payroll)]
    assert len(items) == 1 and items[0].source_refs == ["s3-m2"] and items[0].text.startswith("[2023-11-20] ")
    kinds = [c.kind for c in results["on"].context]
    assert results["on"].context.index(items[0]) < kinds.index("note")  # routed claims lead the note section
    assert not [c for c in results["no wiki"].context if c.kind == "claim"]
