"""Parser unit tests: every input format → ParsedConversations (no database)."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracecli.errors import BadInput
from tracecli.ingest.formats import (
    detect_format,
    load_document,
    parse_file,
    parse_locomo_date,
    parse_longmemeval_date,
    split_by_gap,
)
from tracecli.ingest.model import ParsedMessage
from tracecli.timeutil import iso, parse_iso

FIXTURES = Path(__file__).parent / "fixtures"


def _write(tmp_path: Path, name: str, data: object) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _flat(conv) -> list[ParsedMessage]:
    return [m for s in conv.sessions for m in s.messages]


# -- native --------------------------------------------------------------------------


def test_native_sessions_fixture() -> None:
    [conv] = parse_file(FIXTURES / "native_sessions.json")
    assert conv.conversation_id == "trip-planning"
    assert conv.source_format == "native"
    assert conv.namespace == "default"
    assert conv.participants == ["Alice", "Bob"]
    assert [s.source_id for s in conv.sessions] == ["first", "second"]
    # An explicit started_at wins; otherwise the first message's timestamp.
    assert [s.started_at for s in conv.sessions] == ["2024-03-01T08:55:00Z", "2024-04-10T16:30:00Z"]
    msgs = _flat(conv)
    assert [m.speaker for m in msgs] == ["Alice", "Bob", "Alice", "Bob"]
    assert [m.text for m in msgs] == [
        "I am moving to Lisbon in June.",
        "Lisbon! Will you keep the flat in Berlin?",
        "Change of plan: Porto instead of Lisbon.",
        "Porto has better wine anyway.",
    ]
    # +02:00 offsets are normalised to UTC with a Z.
    assert [m.timestamp for m in msgs] == [
        "2024-03-01T09:00:00Z",
        "2024-03-01T09:01:30Z",
        "2024-04-10T16:30:00Z",
        "2024-04-10T16:31:00Z",
    ]
    assert [m.source_ref for m in msgs] == ["m1", "m2", "m3", "m4"]


def test_native_flat_list_splits_at_default_gap() -> None:
    [conv] = parse_file(FIXTURES / "native_flat.json")
    assert conv.source_format == "native"
    assert conv.conversation_id == "native_flat"  # the file stem when the file names none
    assert conv.participants == ["Alice", "Bob"]  # order of first appearance
    # 08:00, 08:05, 11:00 (3 h gap: same session) | 20:00 (9 h gap), 20:02
    assert [len(s.messages) for s in conv.sessions] == [3, 2]
    assert [s.started_at for s in conv.sessions] == ["2024-05-01T08:00:00Z", "2024-05-01T20:00:00Z"]
    # Gap-split sessions are keyed by their first timestamp, so a longer file maps to the same ones.
    assert [s.source_id for s in conv.sessions] == ["t2024-05-01T08:00:00Z", "t2024-05-01T20:00:00Z"]
    assert [m.text for m in _flat(conv)][2:4] == ["Running ten minutes late, sorry.", "How was the dentist appointment?"]
    assert all(m.source_ref is None for m in _flat(conv))


@pytest.mark.parametrize(
    ("gap_hours", "sizes"),
    [(2.0, [2, 1, 2]), (4.0, [3, 2]), (10.0, [5]), (0.05, [1, 1, 1, 2]), (0.01, [1, 1, 1, 1, 1])],
)
def test_native_flat_list_custom_gap(gap_hours: float, sizes: list[int]) -> None:
    [conv] = parse_file(FIXTURES / "native_flat.json", gap_hours=gap_hours)
    assert [len(s.messages) for s in conv.sessions] == sizes
    assert len({s.source_id for s in conv.sessions}) == len(sizes)


def test_gap_must_exceed_the_limit_to_split() -> None:
    base = dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone.utc)
    stamps = [base, base + dt.timedelta(hours=4), base + dt.timedelta(hours=8, minutes=1)]
    msgs = [ParsedMessage("A", f"m{i}", iso(t)) for i, t in enumerate(stamps)]
    sessions = split_by_gap(msgs, 4.0)
    assert [[m.text for m in s.messages] for s in sessions] == [["m0", "m1"], ["m2"]]


@settings(max_examples=60, deadline=None)
@given(
    gaps=st.lists(st.integers(min_value=0, max_value=20 * 60), min_size=1, max_size=25),
    gap_hours=st.sampled_from([0.5, 1.0, 4.0, 6.0]),
)
def test_split_by_gap_properties(gaps: list[int], gap_hours: float) -> None:
    """Order is kept; a new session starts exactly where the silence exceeds the limit."""
    t = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    msgs = []
    for i, minutes in enumerate(gaps):
        t += dt.timedelta(minutes=minutes)
        msgs.append(ParsedMessage("A", f"m{i}", iso(t)))
    sessions = split_by_gap(msgs, gap_hours)
    assert [m for s in sessions for m in s.messages] == msgs
    expected_starts = [0] + [i for i in range(1, len(gaps)) if gaps[i] > gap_hours * 60]
    starts, n = [], 0
    for s in sessions:
        starts.append(n)
        n += len(s.messages)
    assert starts == expected_starts
    assert [s.started_at for s in sessions] == [msgs[i].timestamp for i in expected_starts]


def test_missing_timestamps_keep_order(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "undated.json",
        [{"speaker": "A", "text": f"message {i}"} for i in range(5)],
    )
    [conv] = parse_file(path)
    assert len(conv.sessions) == 1
    assert conv.sessions[0].source_id == "s1"
    assert conv.sessions[0].started_at is None
    assert [m.text for m in _flat(conv)] == [f"message {i}" for i in range(5)]
    assert all(m.timestamp is None for m in _flat(conv))


def test_missing_timestamps_in_sessions(tmp_path: Path) -> None:
    data = {
        "sessions": [
            {"messages": [{"speaker": "A", "text": "one"}, {"speaker": "B", "text": "two"}]},
            {"messages": [{"speaker": "A", "text": "three", "timestamp": ""}]},
        ]
    }
    [conv] = parse_file(_write(tmp_path, "s.json", data))
    assert [s.source_id for s in conv.sessions] == ["s1", "s2"]
    assert [s.started_at for s in conv.sessions] == [None, None]
    assert [m.text for m in _flat(conv)] == ["one", "two", "three"]


def test_extra_keys_are_ignored(tmp_path: Path) -> None:
    plain = {"conversation_id": "c", "sessions": [{"id": "s", "messages": [{"speaker": "A", "text": "hi", "timestamp": "2024-01-01T00:00:00Z"}]}]}
    extra = {
        "conversation_id": "c",
        "exported_by": "some tool",
        "version": 3,
        "sessions": [
            {
                "id": "s",
                "mood": "happy",
                "messages": [{"speaker": "A", "text": "hi", "timestamp": "2024-01-01T00:00:00Z", "likes": 4, "meta": {"x": [1]}}],
            }
        ],
    }
    assert parse_file(_write(tmp_path, "extra.json", extra)) == parse_file(_write(tmp_path, "plain.json", plain))


def test_role_and_content_keys_and_epoch_timestamps(tmp_path: Path) -> None:
    path = _write(tmp_path, "rc.json", {"messages": [{"role": "user", "content": "  hi there  ", "timestamp": 1700000000}]})
    [conv] = parse_file(path)
    [msg] = _flat(conv)
    assert (msg.speaker, msg.text, msg.timestamp) == ("user", "hi there", "2023-11-14T22:13:20Z")


# -- LoCoMo --------------------------------------------------------------------------


def test_locomo_fixture() -> None:
    [conv] = parse_file(FIXTURES / "locomo.json")
    assert conv.conversation_id == "conv-mini"
    assert conv.source_format == "locomo"
    assert conv.participants == ["Caroline", "Melanie"]
    # session_3_date_time has no session_3: date keys are not sessions.
    assert [s.source_id for s in conv.sessions] == ["session_1", "session_2"]
    assert [s.started_at for s in conv.sessions] == ["2023-05-08T13:56:00Z", "2024-01-01T00:05:00Z"]
    msgs = _flat(conv)
    assert [m.source_ref for m in msgs] == ["D1:1", "D1:2", "D2:1", "D2:2"]
    assert [m.speaker for m in msgs] == ["Caroline", "Melanie", "Melanie", "Caroline"]
    assert [m.timestamp for m in msgs] == ["2023-05-08T13:56:00Z"] * 2 + ["2024-01-01T00:05:00Z"] * 2
    assert msgs[0].text == "I went to a support group yesterday."
    # The image turn keeps its text and the caption.
    assert msgs[1].text == "That sounds powerful! [shares a photo: a photo of a painted sunset over a lake]"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", "2023-05-08T13:56:00Z"),
        ("12:05 am on 1 January, 2024", "2024-01-01T00:05:00Z"),
        ("12:30 pm on 3 March, 2023", "2023-03-03T12:30:00Z"),
        ("11:59 pm on 31 December, 2023", "2023-12-31T23:59:00Z"),
        ("9:00 AM on 2 June 2023", "2023-06-02T09:00:00Z"),
    ],
)
def test_parse_locomo_date(text: str, expected: str) -> None:
    assert parse_locomo_date(text) == expected


@pytest.mark.parametrize("text", ["13:56 pm on 8 May, 2023", "1:56 pm, 8 May 2023", "8 May 2023", "1:56 pm on 8 Mai, 2023"])
def test_parse_locomo_date_rejects_other_text(text: str) -> None:
    with pytest.raises(ValueError):
        parse_locomo_date(text)


def test_locomo_image_turn_with_empty_text(tmp_path: Path) -> None:
    data = [
        {
            "sample_id": "x",
            "conversation": {
                "speaker_a": "A",
                "speaker_b": "B",
                "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "", "blip_caption": "a dog on a beach"}],
            },
        }
    ]
    [conv] = parse_file(_write(tmp_path, "img.json", data))
    [msg] = _flat(conv)
    assert msg.text == "[shares a photo: a dog on a beach]"
    assert msg.timestamp is None  # no session date: allowed


def test_locomo_bad_session_date_names_the_key(tmp_path: Path) -> None:
    data = [{"sample_id": "x", "conversation": {"speaker_a": "A", "speaker_b": "B", "session_1_date_time": "soon", "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}]}}]
    with pytest.raises(BadInput, match=re.escape("bad_date.json: [0].conversation.session_1_date_time has an unknown date")):
        parse_file(_write(tmp_path, "bad_date.json", data))


def test_real_locomo_dev(locomo_dev: Path) -> None:
    convs = parse_file(locomo_dev)
    assert [c.conversation_id for c in convs] == ["conv-26", "conv-30"]
    assert [c.participants for c in convs] == [["Caroline", "Melanie"], ["Jon", "Gina"]]
    assert [len(c.sessions) for c in convs] == [19, 19]
    assert [sum(len(s.messages) for s in c.sessions) for c in convs] == [419, 369]
    for conv in convs:
        assert conv.source_format == "locomo"
        assert [s.source_id for s in conv.sessions] == [f"session_{n}" for n in range(1, 20)]
        starts = [s.started_at for s in conv.sessions]
        assert all(isinstance(t, str) and t.endswith("Z") for t in starts)
        assert starts == sorted(starts)
        for n, session in enumerate(conv.sessions, 1):
            refs = [m.source_ref for m in session.messages]
            assert all(re.fullmatch(rf"D{n}:\d+", r or "") for r in refs), refs
            assert refs[0] == f"D{n}:1"
            assert {m.timestamp for m in session.messages} == {session.started_at}
    assert convs[0].sessions[0].started_at == "2023-05-08T13:56:00Z"
    first = convs[0].sessions[0].messages
    assert (first[0].speaker, first[0].text) == ("Caroline", "Hey Mel! Good to see you! How have you been?")
    # Image turns carry their caption.
    assert "[shares a photo: a photo of a dog walking past a wall with a painting of a woman]" in first[4].text


# -- LongMemEval ---------------------------------------------------------------------


def test_longmemeval_fixture() -> None:
    convs = parse_file(FIXTURES / "longmemeval.json")
    assert [c.conversation_id for c in convs] == ["q-update-1", "q-single-2"]
    assert all(c.source_format == "longmemeval" for c in convs)
    assert all(c.participants == ["user", "assistant"] for c in convs)
    first, second = convs
    assert [s.source_id for s in first.sessions] == ["sess_a", "sess_b"]
    assert [s.started_at for s in first.sessions] == ["2023-05-20T02:21:00Z", "2023-05-27T14:05:00Z"]
    msgs = _flat(first)
    assert [m.speaker for m in msgs] == ["user", "assistant", "user", "assistant"]
    # The empty assistant turn is dropped; refs keep the turn index of the input.
    assert [m.source_ref for m in msgs] == ["sess_a:0", "sess_a:1", "sess_b:0", "sess_b:2"]
    assert msgs[2].text == "Update: I relocated to Porto this week."
    assert msgs[2].timestamp == "2023-05-27T14:05:00Z"
    assert [s.started_at for s in second.sessions] == ["2023-07-01T23:59:00Z"]
    assert [m.text for m in _flat(second)] == ["My cat Miso knocked over a plant.", "Cats love plants, sadly."]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2023/05/20 (Sat) 02:21", "2023-05-20T02:21:00Z"),
        ("2023/12/31 (Sun) 23:59", "2023-12-31T23:59:00Z"),
        ("2024/02/29 (Thu) 00:00", "2024-02-29T00:00:00Z"),
    ],
)
def test_parse_longmemeval_date(text: str, expected: str) -> None:
    assert parse_longmemeval_date(text) == expected


def test_longmemeval_length_mismatch(tmp_path: Path) -> None:
    data = json.loads((FIXTURES / "longmemeval.json").read_text())
    data[1]["haystack_dates"] = []  # falls back to no dates
    data[0]["haystack_session_ids"] = ["only-one"]
    with pytest.raises(BadInput, match=re.escape("lme.json: [0] haystack_sessions, haystack_session_ids and haystack_dates differ")):
        parse_file(_write(tmp_path, "lme.json", data))


# -- ChatGPT export ------------------------------------------------------------------


def test_chatgpt_follows_current_branch_and_skips_system_and_tool() -> None:
    [conv] = parse_file(FIXTURES / "chatgpt.json")
    assert conv.conversation_id == "chat-1"
    assert conv.source_format == "chatgpt"
    msgs = _flat(conv)
    assert [m.text for m in msgs] == [
        "What is the capital of Portugal?",
        "Lisbon.",
        "Tell me about Porto.",
        "Porto is famous for port wine.",
    ]
    assert [m.speaker for m in msgs] == ["user", "assistant", "user", "assistant"]
    assert [m.source_ref for m in msgs] == ["n1", "n2", "n3b", "n5"]
    assert msgs[0].timestamp == "2023-11-14T22:13:20Z"
    assert msgs[-1].timestamp == "2023-11-14T22:16:50Z"
    joined = " ".join(m.text for m in msgs)
    assert "Berlin" not in joined and "ChatGPT" not in joined and "search results" not in joined
    assert len(conv.sessions) == 1


def test_chatgpt_without_current_node_takes_latest_leaf(tmp_path: Path) -> None:
    data = json.loads((FIXTURES / "chatgpt.json").read_text())
    del data[0]["current_node"]
    [conv] = parse_file(_write(tmp_path, "export.json", data))
    assert [m.source_ref for m in _flat(conv)] == ["n1", "n2", "n3a", "n4a"]


# -- JSONL ---------------------------------------------------------------------------


def test_jsonl_fixture() -> None:
    convs = parse_file(FIXTURES / "messages.jsonl")
    assert [c.conversation_id for c in convs] == ["jl-1", "jl-2"]
    assert all(c.source_format == "jsonl" for c in convs)
    jl1, jl2 = convs
    assert [s.source_id for s in jl1.sessions] == ["a", "b"]
    assert [s.started_at for s in jl1.sessions] == ["2024-02-01T10:00:00Z", "2024-02-03T09:00:00Z"]
    assert [m.source_ref for m in _flat(jl1)] == ["x1", "x2", "x3"]
    assert jl1.participants == ["Alice", "Bob"]
    [msg] = _flat(jl2)
    assert (msg.speaker, msg.text, msg.timestamp, msg.source_ref) == ("user", "Remind me to water the plants.", None, "y1")


def test_jsonl_bad_line_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text('{"speaker": "A", "text": "one"}\n{"speaker": "B", "text": \n', encoding="utf-8")
    with pytest.raises(BadInput, match=re.escape("chat.jsonl: line 2 is not valid JSON")):
        parse_file(path)


# -- detection -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        ("native_sessions.json", "native"),
        ("native_flat.json", "native"),
        ("locomo.json", "locomo"),
        ("longmemeval.json", "longmemeval"),
        ("chatgpt.json", "chatgpt"),
        ("messages.jsonl", "jsonl"),
    ],
)
def test_auto_detection_by_content(tmp_path: Path, fixture: str, expected: str) -> None:
    # A neutral name: the extension must play no part.
    path = tmp_path / "input.data"
    shutil.copy(FIXTURES / fixture, path)
    text = path.read_text(encoding="utf-8")
    data, is_jsonl = load_document(path, text)
    assert detect_format(data, is_jsonl) == expected
    convs = parse_file(path)
    assert {c.source_format for c in convs} == {expected}
    assert convs == parse_file(path, expected)


@pytest.mark.parametrize("data", [{"foo": [1, 2]}, [1, 2, 3], [], "just text", [{"title": "x"}]])
def test_nothing_fits(tmp_path: Path, data: object) -> None:
    with pytest.raises(BadInput, match=re.escape("odd.json: no known format fits")):
        parse_file(_write(tmp_path, "odd.json", data))


def test_conversation_override_and_namespace() -> None:
    [conv] = parse_file(FIXTURES / "native_flat.json", conversation_id="renamed", namespace="alice")
    assert (conv.conversation_id, conv.namespace) == ("renamed", "alice")


def test_conversation_override_needs_one_conversation() -> None:
    with pytest.raises(BadInput, match="holds 2 conversations"):
        parse_file(FIXTURES / "longmemeval.json", conversation_id="one")


def test_unknown_format_name() -> None:
    with pytest.raises(BadInput, match="unknown format 'yaml'"):
        parse_file(FIXTURES / "native_flat.json", "yaml")


def test_parse_iso_round_trip() -> None:
    assert iso(parse_iso("2024-04-10T16:30:00Z")) == "2024-04-10T16:30:00Z"
