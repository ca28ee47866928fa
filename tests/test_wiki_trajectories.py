"""Trajectory matching: the deterministic score g (App. A.2), δ, the update rule, the LLM CONTINUE/NEW decision."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import httpx
import numpy as np
import pytest

from tracecli.providers.llm import LLMSettings, OpenAIChatModel
from tracecli.wiki.trajectories import (
    Features,
    MatchSettings,
    TrajectoryState,
    append_snapshot,
    check_match,
    decide,
    new_trajectory,
    prefilter,
    score,
)


def _unit(v: list[float]) -> np.ndarray:
    a = np.asarray(v, dtype=np.float32)
    return (a / np.linalg.norm(a)).astype(np.float32)


def _traj(tid: str, idx: int, vec: np.ndarray, kw: list[str], ents: list[str] = (), terms: list[str] = (),
          facets: list[str] = ()) -> TrajectoryState:
    return TrajectoryState(tid, idx, "sn", "sn", 1, Counter(kw), set(ents), set(terms), set(facets), vec.copy(), vec.copy(),
                           None, None)


def test_score_is_the_papers_formula() -> None:
    s = MatchSettings()
    v = _unit([1, 0, 0, 0])
    tv = _unit([1, 1, 0, 0])
    t = _traj("t", 0, tv, ["pottery", "class", "clay"], ["alice"], ["pottery"], ["alice|hobbies", "alice|hobbies=pottery"])
    f = Features(["pottery", "kiln"], ["alice"], ["pottery", "kiln"], ["alice|hobbies", "alice|hobbies=pottery"])
    g = score(f, v, t, s)
    cos = float(np.dot(v.astype(np.float64), tv.astype(np.float64)))
    j = 1 / 4  # {pottery} / {pottery, kiln, class, clay}
    expected = 0.60 * cos + 0.20 * cos + 0.20 * j + 0.08 + 0.06 + 0.04
    assert g.total == pytest.approx(expected, abs=1e-6)
    assert (g.entity_bonus, g.facet_bonus, g.continuity_bonus, g.penalty) == (0.08, 0.06, 0.04, 0.0)


def test_mismatch_penalties() -> None:
    s = MatchSettings()
    v = _unit([1, 0, 0])
    broad = score(Features(["kiln"], ["alice"], [], []), v, _traj("t", 0, v, ["train"], ["alice"]), s)
    assert broad.penalty == 0.10  # only the person in common
    lexical = score(Features(["train"], ["alice"], [], []), v, _traj("t", 0, v, ["train"], ["alice"]), s)
    assert lexical.penalty == 0.04  # shared words, nothing specific
    cap = score(Features([], [], [f"x{i}" for i in range(9)], []), v, _traj("t", 0, v, [], [], [f"x{i}" for i in range(9)]), s)
    assert cap.continuity_bonus == 0.14


def test_threshold_decides_continue_or_new() -> None:
    s = MatchSettings()
    v = _unit([1, 0, 0])
    near = _traj("near", 0, _unit([1, 0.05, 0]), ["a"], ["alice"], ["kiln"])
    f = Features(["a"], ["alice"], ["kiln"], [])
    d = decide(f, v, [near], s)
    assert d.trajectory_id == "near" and d.score is not None and d.score >= s.delta
    far = _traj("far", 0, _unit([0, 1, 0]), ["b"], ["alice"])
    d = decide(Features(["a"], ["alice"], [], []), v, [far], s)
    assert d.trajectory_id is None and d.score is not None and d.score < s.delta
    strict = MatchSettings(delta=2.0)
    assert decide(f, v, [near], strict).trajectory_id is None


def test_explicit_update_continues_its_trajectory() -> None:
    v = _unit([1, 0, 0])
    far = _traj("far", 0, _unit([0, 1, 0]), ["b"])
    assert decide(Features(["a"], [], [], []), v, [far], MatchSettings(), linked={"far"}).trajectory_id == "far"
    off = MatchSettings(continue_on_update=False)
    assert decide(Features(["a"], [], [], []), v, [far], off, linked={"far"}).trajectory_id is None


def test_prefilter_keeps_overlapping_candidates_up_to_the_cap() -> None:
    v = _unit([1, 0])
    trajs = [_traj(f"t{i}", i, v, ["shared"] if i % 2 else ["other"]) for i in range(80)]
    kept = prefilter(Features(["shared"], [], [], []), trajs, MatchSettings(), set())
    assert len(kept) == 32 and all(t.idx % 2 for t in kept)
    assert len(prefilter(Features(["nothing"], [], [], []), trajs, MatchSettings(), set())) == 80


def test_top_keywords_follow_appended_snapshots() -> None:
    t = new_trajectory("c", 0, "sn1", Features(["oslo", "flight", "trip"], [], [], []), _unit([1, 0]), None)
    assert t.top_keywords(2) == {"flight", "oslo"}  # ties alphabetical
    append_snapshot(t, "sn2", Features(["trip", "porto"], [], [], []), _unit([0, 1]), None)
    assert t.top_keywords(2) == {"trip", "flight"}  # trip now counts twice; the kept answer was replaced
    append_snapshot(t, "sn3", Features(["porto", "porto"], [], [], []), _unit([0, 1]), None)
    assert t.top_keywords(1) == {"porto"} and t.top_keywords(2) == {"porto", "trip"}


def test_new_and_append_keep_the_centroid() -> None:
    a, b = _unit([1, 0]), _unit([0, 1])
    t = new_trajectory("c", 0, "sn1", Features(["x"], [], [], []), a, "2024-01-01T00:00:00Z")
    append_snapshot(t, "sn2", Features(["x", "y"], [], ["k"], []), b, "2024-02-01T00:00:00Z")
    assert t.n_snapshots == 2 and t.latest_snapshot_id == "sn2" and t.keywords == Counter({"x": 2, "y": 1})
    assert np.allclose(t.centroid(), _unit([1, 1]))
    assert np.allclose(t.latest_vector, b) and t.last_at.startswith("2024-02")


def test_check_match_enforces_the_decision_rules() -> None:
    assert check_match({"decision": "CONTINUE", "selected_candidate": "T2", "rationale": "same move"}, 3) == (1, "same move")
    assert check_match({"decision": "NEW", "selected_candidate": None, "rationale": "other"}, 3) == (None, "other")
    assert check_match({"decision": "CONTINUE", "selected_candidate": "T4", "rationale": ""}, 3) is None
    assert check_match({"decision": "CONTINUE", "selected_candidate": None, "rationale": ""}, 3) is None
    assert check_match({"decision": "NEW", "selected_candidate": "T1", "rationale": ""}, 3) is None
    assert check_match("CONTINUE", 3) is None


def _mock_model(replies: list[Any], seen: list[dict[str, Any]]) -> OpenAIChatModel:
    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        content = replies.pop(0) if replies else "not json"
        text = content if isinstance(content, str) else json.dumps(content)
        return httpx.Response(200, json={"choices": [{"message": {"role": "assistant", "content": text}}]})

    settings = LLMSettings(provider="openai", url="http://llm.test/v1", model="m", max_retries=0)
    return OpenAIChatModel(settings, None, httpx.Client(transport=httpx.MockTransport(handler)))


def test_llm_decides_among_the_top_three() -> None:
    v = _unit([1, 0, 0])
    trajs = [_traj(f"t{i}", i, _unit([1, 0.2 * i, 0]), ["a"], ["alice"]) for i in range(5)]
    seen: list[dict[str, Any]] = []
    llm = _mock_model([{"decision": "CONTINUE", "selected_candidate": "T3", "rationale": "same trip"}], seen)
    d = decide(Features(["a"], ["alice"], [], []), v, trajs, MatchSettings(), llm=llm,
               describe=lambda tid: (f"summary of {tid}", "latest"), snapshot_text="Alice rebooked the trip.")
    assert d.llm_used and d.trajectory_id == d.candidates[2].trajectory_id
    prompt = seen[0]["messages"][-1]["content"]
    assert prompt.count(" summary: ") == 3 and "Alice rebooked the trip." in prompt
    seen.clear()
    llm = _mock_model([{"decision": "NEW", "selected_candidate": None, "rationale": "different"}], seen)
    near = [_traj("near", 0, _unit([1, 0.01, 0]), ["a"], ["alice"], ["kiln"])]
    d = decide(Features(["a"], ["alice"], ["kiln"], []), v, near, MatchSettings(), llm=llm, describe=lambda t: ("s", "l"))
    assert d.trajectory_id is None and d.llm_used


def test_unusable_llm_reply_falls_back_to_the_threshold() -> None:
    v = _unit([1, 0, 0])
    near = [_traj("near", 0, _unit([1, 0.01, 0]), ["a"], ["alice"], ["kiln"])]
    seen: list[dict[str, Any]] = []
    llm = _mock_model(["nope", {"decision": "MAYBE"}], seen)
    d = decide(Features(["a"], ["alice"], ["kiln"], []), v, near, MatchSettings(), llm=llm, describe=lambda t: ("s", "l"))
    assert d.trajectory_id == "near" and d.llm_fallback and not d.llm_used
    llm = _mock_model([{"decision": "CONTINUE", "selected_candidate": "T9", "rationale": "x"}], seen)
    d = decide(Features(["a"], ["alice"], ["kiln"], []), v, near, MatchSettings(), llm=llm, describe=lambda t: ("s", "l"))
    assert d.trajectory_id == "near" and d.llm_fallback
