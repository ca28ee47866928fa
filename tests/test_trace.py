"""`trace` (TRACE §II-G): replays exactly what `ask` returned, re-ranks its paths by the answer, shows the sources."""

from __future__ import annotations

from typing import Any

import pytest

pytest.register_assert_rewrite("ask_fixtures")

from ask_fixtures import ALICE, LENA, MAYA, NO_EVIDENCE_QUESTION, jsonable, message_refs  # noqa: E402

from tracecli.errors import NotFound  # noqa: E402
from tracecli.query.trace import TRACE_WEIGHTS, rerank_paths, trace_answer  # noqa: E402
from tracecli.text import content_words  # noqa: E402

pytest_plugins = ["ask_fixtures"]

CASES: list[tuple[str, str | None, str | None]] = [
    ("Where is Alice moving?", ALICE, None),
    ("Which company does Alice work for now?", None, None),
    ("Which company did Alice work for?", ALICE, "2024-08-20"),
    ("Why did Fernleaf pivot from a consumer app to selling to garden centres?", MAYA, None),
    ("When is Lena's spring concert?", LENA, None),
    (NO_EVIDENCE_QUESTION, None, None),
]


@pytest.fixture(scope="module")
def traced(asker: Any, ask_store: Any) -> list[tuple[dict[str, Any], Any]]:
    out = []
    for q, conv, as_of in CASES:
        res = asker.ask(q, conversation_id=conv, as_of=as_of)
        out.append((jsonable(res), trace_answer(ask_store, res.answer_id)))
    return out


def _path_key(p: dict[str, Any]) -> tuple[str, ...]:
    return tuple(s["event_id"] for s in p["steps"])


def test_trace_replays_the_answer(traced: list[tuple[dict[str, Any], Any]]) -> None:
    for asked, tr in traced:
        for key in ("answer_id", "question", "answer", "abstained", "plan", "as_of", "source_refs"):
            assert getattr(tr, key) == asked[key], key
        assert jsonable(tr.context) == asked["context"]
        assert tr.asked == asked, "the stored payload is exactly what ask returned"


def test_trace_paths_are_the_ask_paths_reranked(traced: list[tuple[dict[str, Any], Any]]) -> None:
    for asked, tr in traced:
        qw, aw = set(content_words(asked["question"])), set(content_words(asked["answer"]))
        relevant = [
            p for p in asked["paths"]
            if (qw | aw) & set(content_words(" ".join(s["description"] for s in p["steps"])))
        ]
        assert sorted(_path_key(p) for p in tr.paths) == sorted(_path_key(p) for p in relevant), asked["question"]
        by_key = {_path_key(p): p for p in asked["paths"]}
        for p in tr.paths:
            original = by_key[_path_key(p)]
            assert {k: v for k, v in p.items() if k not in ("trace_score", "trace_signals")} == original
            assert set(p["trace_signals"]) == {"as", "qs", "bonus"}
            sig = p["trace_signals"]
            want = (TRACE_WEIGHTS["as"] * sig["as"] + TRACE_WEIGHTS["qs"] * sig["qs"] + TRACE_WEIGHTS["pc"] * p["signals"]["pc"]
                    + TRACE_WEIGHTS["tc"] * p["signals"]["tc"] + TRACE_WEIGHTS["bonus"] * sig["bonus"])
            assert p["trace_score"] == pytest.approx(want, abs=1e-3)
        order = [(-p["trace_score"], -p["score"]) for p in tr.paths]
        assert order == sorted(order)


def test_trace_keeps_the_answer_path(traced: list[tuple[dict[str, Any], Any]]) -> None:
    asked, tr = traced[0]
    assert asked["answer"] == "Porto"
    mine = next(p for p in tr.paths if _path_key(p) == _path_key(asked["paths"][0]))
    assert [s["description"] for s in mine["steps"]] == ["Alice is moving to Oslo", "Alice is moving to Porto"]
    assert [s["validity"] for s in mine["steps"]] == ["outdated", "valid"]
    assert mine["trace_signals"] == {"as": 1.0, "qs": 1.0, "bonus": 1.0}
    assert mine in tr.paths[:3]
    assert "Porto" in " ".join(s["description"] for s in tr.paths[0]["steps"])


def test_trace_events_cover_the_paths(traced: list[tuple[dict[str, Any], Any]], ask_store: Any) -> None:
    for asked, tr in traced:
        ids = list(dict.fromkeys(s["event_id"] for p in asked["paths"] for s in p["steps"]))
        assert [e["id"] for e in tr.events] == ids
        for e in tr.events:
            assert "missing" not in e
            assert e["validity_marker"] == ("valid" if e["validity"] >= 1 else "partial" if e["validity"] > 0 else "outdated")
            for edge in e["edges"]:
                assert e["id"] in (edge["src"], edge["dst"])
                assert edge["label"] not in ("member_of", "next")


def test_trace_messages_are_the_cited_ones(traced: list[tuple[dict[str, Any], Any]], ask_store: Any) -> None:
    refs = message_refs(ask_store)
    for asked, tr in traced:
        cited = list(dict.fromkeys([*asked["source_refs"], *(r for it in asked["context"] for r in it["source_refs"])]))
        assert [m.get("ref") for m in tr.messages] == cited
        for m in tr.messages:
            assert "missing" not in m and m["text"]
            assert m["conversation_id"] in refs[m["ref"]]


def test_trace_of_an_abstention(traced: list[tuple[dict[str, Any], Any]]) -> None:
    asked, tr = traced[-1]
    assert tr.abstained and tr.answer == "not enough evidence" and tr.source_refs == []


def test_trace_twice_is_the_same_and_writes_nothing(asker: Any, ask_store: Any) -> None:
    res = asker.ask("What is Alice's cat called?", conversation_id=ALICE)
    before = ask_store.query("SELECT COUNT(*) AS n FROM answers")[0]["n"]
    one, two = trace_answer(ask_store, res.answer_id), trace_answer(ask_store, res.answer_id)
    assert jsonable(one) == jsonable(two)
    assert ask_store.query("SELECT COUNT(*) AS n FROM answers")[0]["n"] == before
    assert ask_store.query("SELECT answer FROM answers WHERE id = ?", (res.answer_id,))[0]["answer"] == "Mochi"


def test_unknown_answer_id(ask_store: Any) -> None:
    with pytest.raises(NotFound, match="ans_nope"):
        trace_answer(ask_store, "ans_nope")


def test_rerank_filters_paths_without_overlap() -> None:
    def path(desc: str, pc: float = 1.0) -> dict[str, Any]:
        return {"score": 0.5, "signals": {"ns": 0.5, "pc": pc, "tc": 1.0, "uv": 1.0},
                "steps": [{"event_id": desc, "description": desc, "time": None, "validity": "valid",
                           "valid_until": None, "relation_to_next": None}]}

    out = rerank_paths("Where is Alice moving?", "Porto", [path("Bob likes tea"), path("Alice is moving to Porto"), path("Alice lives in Leeds")])
    assert [p["steps"][0]["description"] for p in out] == ["Alice is moving to Porto", "Alice lives in Leeds"]
    top = out[0]
    # AS = 1 (porto), QS = 2/2 (alice, moving), bonus = 1
    assert top["trace_signals"] == {"as": 1.0, "qs": 1.0, "bonus": 1.0}
    assert top["trace_score"] == pytest.approx(0.35 + 0.25 + 0.2 + 0.1 + 0.1)
    assert out[1]["trace_signals"] == {"as": 0.0, "qs": 0.5, "bonus": 0.0}


def test_trace_shows_the_cited_message_when_refs_repeat_across_conversations(asker: Any, ask_store: Any) -> None:
    res = asker.ask("What is Alice's favourite band?")
    # with several conversations in scope, refs are qualified so they never collide
    assert res.answer == "Khruangbin" and res.source_refs == [f"{ALICE}:s2-m16"]
    msg = trace_answer(ask_store, res.answer_id).messages[0]
    assert msg["conversation_id"] == ALICE and "Khruangbin" in msg["text"]
