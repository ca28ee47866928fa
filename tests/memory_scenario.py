"""One conversation remembered in three turns, the third revising a plan: shared by the Memory and MCP tests."""

from __future__ import annotations

from typing import Any

CONVERSATION = "maya-tom"
QUESTION = "Where is Maya moving?"
OLD, NEW = "Valencia", "Bilbao"
REVISION_REF = "c3"  # the message that changes the plan

TURNS: list[list[dict[str, str]]] = [
    [
        {"id": "a1", "speaker": "Maya", "text": f"I'm moving to {OLD} in September, the lab offered me a post.",
         "timestamp": "2024-06-03T18:00:00Z"},
        {"id": "a2", "speaker": "Tom", "text": "That's great news, congratulations!", "timestamp": "2024-06-03T18:01:00Z"},
    ],
    [
        {"id": "b1", "speaker": "Tom", "text": "Did you find a flat yet?", "timestamp": "2024-06-20T12:00:00Z"},
        {"id": "b2", "speaker": "Maya", "text": "Not yet, I keep looking at listings every evening.",
         "timestamp": "2024-06-20T12:02:00Z"},
    ],
    [
        {"id": "c1", "speaker": "Tom", "text": "Any news about the post?", "timestamp": "2024-07-15T09:00:00Z"},
        {"id": "c2", "speaker": "Maya", "text": "Yes, big news actually.", "timestamp": "2024-07-15T09:01:00Z"},
        {"id": REVISION_REF, "speaker": "Maya", "text": f"Change of plan: forget {OLD}, I'm moving to {NEW} now.",
         "timestamp": "2024-07-15T09:02:00Z"},
    ],
]


def assert_revised(answer: dict[str, Any]) -> None:
    """The answer gives the revised city, not the old one, and cites the revising message."""
    assert not answer["abstained"], answer
    assert NEW in answer["answer"] and OLD not in answer["answer"], answer["answer"]
    assert REVISION_REF in answer["source_refs"], answer["source_refs"]
    assert answer["answer_id"].startswith("ans_")


def assert_traced(trace: dict[str, Any], answer: dict[str, Any]) -> None:
    """`trace` replays that answer down to the revising message."""
    assert trace["answer_id"] == answer["answer_id"]
    assert trace["answer"] == answer["answer"]
    cited = {m.get("source_ref"): m.get("text", "") for m in trace["messages"]}
    assert NEW in cited.get(REVISION_REF, ""), cited


def assert_forgotten(receipt: dict[str, Any], after: dict[str, Any]) -> None:
    """Forgetting the revising message removes it: the old plan is current again."""
    assert not receipt["dry_run"]
    assert len(receipt["message_ids"]) == 1
    assert NEW not in after["answer"] and REVISION_REF not in after["source_refs"], after
    assert OLD in after["answer"], after["answer"]
