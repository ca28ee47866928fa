"""The chat model client: structured output, validation, retries, cache, ledger, secrets."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pysqlite3.dbapi2 as sqlite3
import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from llm_server import (
    LLMServer,
    Scripted,
    chat_reply,
    closed_connection,
    error_reply,
    fenced_reply,
    invalid_json_reply,
    json_reply,
    prose_reply,
    rate_limited,
    running_server,
    schema_rejected,
    slow_reply,
)
from sqlite_utils import Database

from tracecli.errors import ProviderError
from tracecli.providers.llm import (
    LedgerTotal,
    LLMRequest,
    LLMSettings,
    NoneChatModel,
    OpenAIChatModel,
    ReplyInvalid,
    complete_or_fallback,
    get_chat_model,
    ledger_totals,
    parse_json_reply,
    redact_url,
    schema_error,
    validate_reply,
)
from tracecli.store import Store, open_store
from tracecli.store.migrations import migrations

SECRET = "sk-test-SECRET-123"

LABELS = ["event", "state", "claim"]
SCHEMA: dict[str, Any] = {
    "title": "labels",
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "minItems": 1,
            "maxItems": 5,
            "items": {
                "type": "object",
                "properties": {
                    "label": {"type": "string", "enum": LABELS},
                    "score": {"type": "number", "minimum": 0, "maximum": 1},
                },
                "required": ["label", "score"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["items"],
    "additionalProperties": False,
}
GOOD = {"items": [{"label": "event", "score": 0.9}, {"label": "state", "score": 0.2}]}
BAD = {"items": [{"label": "event", "score": 0.9}, {"label": "state", "score": 0.2}, {"label": "foo", "score": 0.1}]}
MESSAGES = [{"role": "system", "content": "Label things."}, {"role": "user", "content": "Alice moved to Paris."}]


@pytest.fixture(autouse=True)
def _clear_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("TRACECLI_") or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
def llm_server() -> Iterator[LLMServer]:
    with running_server() as server:
        yield server


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = open_store(tmp_path / "trace.db")
    yield s
    s.close()


class Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def make_model(
    server: LLMServer,
    store: Store | None = None,
    sleep: Sleeps | None = None,
    **overrides: Any,
) -> OpenAIChatModel:
    settings = LLMSettings(
        provider="openai",
        url=server.url,
        model="test-model",
        api_key=SECRET,
        timeout=overrides.pop("timeout", 2.0),
        **overrides,
    )
    return OpenAIChatModel(settings, store, sleep=sleep or Sleeps(), rng=random.Random(7))


def ledger(store: Store) -> list[dict[str, Any]]:
    return store.query("SELECT * FROM llm_ledger ORDER BY id")


# -- settings and registry ----------------------------------------------------------
def test_settings_default_to_none() -> None:
    s = LLMSettings.from_env()
    assert s.provider == "none"
    assert s.timeout == 30.0 and s.max_retries == 3 and s.concurrency == 4 and s.use_cache and s.temperature == 0
    model = get_chat_model(s)
    assert isinstance(model, NoneChatModel)
    assert model.is_available is False


def test_settings_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACECLI_LLM_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("TRACECLI_LLM_MODEL", "qwen")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    s = LLMSettings.from_env(timeout=5)
    assert (s.provider, s.url, s.model, s.api_key, s.timeout) == ("openai", "http://127.0.0.1:9/v1", "qwen", SECRET, 5)
    monkeypatch.setenv("TRACECLI_LLM_API_KEY", "sk-other")
    assert LLMSettings.from_env().api_key == "sk-other"
    assert LLMSettings.from_env(provider="none").provider == "none"
    model = get_chat_model(s)
    assert isinstance(model, OpenAIChatModel) and model.is_available
    model.close()


def test_settings_reject_bad_values() -> None:
    with pytest.raises(ProviderError):
        LLMSettings.from_env(concurrency=0)
    with pytest.raises(ProviderError):
        LLMSettings.from_env(timeout=0)
    with pytest.raises(TypeError):
        LLMSettings.from_env(colour="blue")


def test_unknown_provider_and_incomplete_openai() -> None:
    with pytest.raises(ProviderError, match="unknown LLM provider"):
        get_chat_model(LLMSettings(provider="bogus"))
    with pytest.raises(ProviderError, match="TRACECLI_LLM_URL"):
        get_chat_model(LLMSettings(provider="openai", model="m"))


def test_public_dict_and_repr_hide_key() -> None:
    s = LLMSettings(provider="openai", url="http://user:pw@127.0.0.1:8/v1?api-key=zz", model="m", api_key=SECRET)
    d = s.public_dict()
    assert d["api_key_set"] is True and "api_key" not in d
    assert d["url"] == "http://127.0.0.1:8/v1"
    assert SECRET not in repr(s) and SECRET not in json.dumps(d)
    assert LLMSettings().public_dict()["api_key_set"] is False
    assert redact_url(None) is None


def test_none_model_falls_back() -> None:
    model = NoneChatModel()
    r = model.complete(MESSAGES, SCHEMA, stage="extract")
    assert (r.ok, r.available, r.fallback, r.stage) == (False, False, True, "extract")
    assert complete_or_fallback(model, MESSAGES, SCHEMA, lambda: "det", stage="extract") == "det"
    assert [x.available for x in model.complete_many([MESSAGES, MESSAGES])] == [False, False]


# -- validator and parser ---------------------------------------------------------------
def test_schema_error_paths() -> None:
    assert schema_error(GOOD, SCHEMA) is None
    assert schema_error(BAD, SCHEMA) == "items[2].label: 'foo' is not one of ['event', 'state', 'claim']"
    assert schema_error({"items": []}, SCHEMA) == "items: [] should be non-empty"
    too_long = schema_error({"items": [GOOD["items"][0]] * 6}, SCHEMA)
    assert too_long is not None and too_long.startswith("items: ") and too_long.endswith("is too long")
    assert schema_error({"items": [{"label": "event"}]}, SCHEMA) == "items[0]: 'score' is a required property"
    assert (
        schema_error({"items": [{"label": "event", "score": 2}]}, SCHEMA)
        == "items[0].score: 2 is greater than the maximum of 1"
    )
    assert (
        schema_error({"items": [{"label": "event", "score": -1}]}, SCHEMA)
        == "items[0].score: -1 is less than the minimum of 0"
    )
    assert (
        schema_error({"items": [{"label": "event", "score": "0.5"}]}, SCHEMA)
        == "items[0].score: '0.5' is not of type 'number'"
    )
    assert (
        schema_error({"items": [{"label": "event", "score": 0.5, "x": 1}]}, SCHEMA)
        == "items[0]: Additional properties are not allowed ('x' was unexpected)"
    )
    assert schema_error([], SCHEMA) == "reply: [] is not of type 'object'"
    assert schema_error({"items": GOOD["items"], "more": 1}, SCHEMA) == "reply: Additional properties are not allowed ('more' was unexpected)"


def test_schema_error_types() -> None:
    assert schema_error(3, {"type": "integer"}) is None
    assert schema_error(3.0, {"type": "integer"}) is None
    assert schema_error(3.5, {"type": "integer"}) == "reply: 3.5 is not of type 'integer'"
    assert schema_error(True, {"type": "integer"}) == "reply: True is not of type 'integer'"
    assert schema_error(True, {"type": "number"}) is not None
    assert schema_error(None, {"type": "null"}) is None
    assert schema_error(None, {"type": ["string", "null"]}) is None
    assert schema_error(False, {"type": "boolean"}) is None
    assert schema_error(True, {"enum": [1]}) is not None
    assert schema_error(1, {"enum": [1, 2]}) is None
    assert schema_error(
        {"a": {"b": [1, "x"]}}, {"properties": {"a": {"properties": {"b": {"items": {"type": "integer"}}}}}}
    ) == "a.b[1]: 'x' is not of type 'integer'"


def test_schema_error_checks_every_keyword() -> None:
    """Keywords the old hand-written subset let through unchecked are checked now (issue 16)."""
    assert schema_error("x", {"type": "string", "pattern": "^ev_"}) == "reply: 'x' does not match '^ev_'"
    assert schema_error([1, 1], {"type": "array", "uniqueItems": True}) is not None
    assert schema_error(5, {"oneOf": [{"type": "string"}, {"type": "boolean"}]}) is not None
    assert schema_error({"a": 1}, {"type": "object", "propertyNames": {"pattern": "^b"}}) is not None
    assert schema_error("ev_1", {"type": "string", "pattern": "^ev_"}) is None


def test_schema_error_messages_stay_short() -> None:
    err = schema_error({"items": [GOOD["items"][0]] * 500}, SCHEMA)
    assert err is not None and err.endswith("is too long") and len(err) < 120


@hsettings(max_examples=60, deadline=None)
@given(
    items=st.lists(
        st.fixed_dictionaries({"label": st.sampled_from(LABELS), "score": st.floats(0, 1)}), min_size=1, max_size=5
    ),
    data=st.data(),
)
def test_schema_error_property(items: list[dict[str, Any]], data: st.DataObject) -> None:
    assert schema_error({"items": items}, SCHEMA) is None
    i = data.draw(st.integers(0, len(items) - 1))
    word = data.draw(st.text(min_size=1, max_size=8).filter(lambda w: w not in LABELS))
    broken = [dict(x) for x in items]
    broken[i]["label"] = word
    err = schema_error({"items": broken}, SCHEMA)
    assert err is not None and err.startswith(f"items[{i}].label: ")


def test_parse_json_reply_forms() -> None:
    assert parse_json_reply(json.dumps(GOOD)) == GOOD
    assert parse_json_reply(f"Here:\n```json\n{json.dumps(GOOD)}\n```\nbye") == GOOD
    assert parse_json_reply(f"```\n{json.dumps(GOOD)}\n```") == GOOD
    assert parse_json_reply('The answer is {"a": "} tricky {", "b": [1]} ok {"c": 2}') == {"a": "} tricky {", "b": [1]}
    assert parse_json_reply("list: [1, 2] done", {"type": "array"}) == [1, 2]
    with pytest.raises(ReplyInvalid):
        parse_json_reply("no json here")
    with pytest.raises(ReplyInvalid):
        parse_json_reply("   ")
    with pytest.raises(ReplyInvalid, match="items\\[2\\].label"):
        validate_reply(json.dumps(BAD), SCHEMA)


# -- structured output over HTTP ------------------------------------------------------------
def test_good_reply(llm_server: LLMServer, store: Store) -> None:
    llm_server.queue(json_reply(GOOD, prompt_tokens=40, completion_tokens=12))
    model = make_model(llm_server, store)
    r = model.complete(MESSAGES, SCHEMA, stage="extract")
    assert r.ok and r.value == GOOD and not r.fallback and not r.cache_hit
    assert (r.tokens_in, r.tokens_out, r.attempts) == (40, 12, 1)
    [req] = llm_server.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {SECRET}"
    assert req.body["model"] == "test-model" and req.body["temperature"] == 0
    assert req.response_format == {
        "type": "json_schema",
        "json_schema": {"name": "labels", "schema": SCHEMA, "strict": True},
    }
    assert req.messages == MESSAGES
    rows = ledger(store)
    assert [(x["stage"], x["tokens_in"], x["tokens_out"], x["ok"], x["fallback"], x["cache_hit"]) for x in rows] == [
        ("extract", 40, 12, 1, 0, 0)
    ]


@pytest.mark.parametrize("reply", [fenced_reply(GOOD), prose_reply(GOOD)])
def test_reply_wrapped_in_prose(llm_server: LLMServer, reply: Scripted) -> None:
    llm_server.queue(reply)
    r = make_model(llm_server).complete(MESSAGES, SCHEMA)
    assert r.ok and r.value == GOOD
    assert len(llm_server.requests) == 1


def test_no_schema_returns_text(llm_server: LLMServer) -> None:
    llm_server.queue(chat_reply("Paris.", usage=False))
    model = make_model(llm_server)
    r = model.complete([{"role": "user", "content": "Where?"}])
    assert r.ok and r.text == "Paris." and r.value is None and r.tokens_in == 0
    assert "response_format" not in llm_server.requests[0].body
    llm_server.queue(chat_reply("Lyon."))
    assert complete_or_fallback(model, [{"role": "user", "content": "Again?"}], None, lambda: "x") == "Lyon."


def test_invalid_json_retried_once_with_error(llm_server: LLMServer, store: Store) -> None:
    llm_server.queue(invalid_json_reply(), json_reply(GOOD))
    r = make_model(llm_server, store).complete(MESSAGES, SCHEMA, stage="extract")
    assert r.ok and r.value == GOOD
    assert len(llm_server.requests) == 2
    retry = llm_server.requests[1].messages
    assert retry[: len(MESSAGES)] == MESSAGES
    assert retry[-2]["role"] == "assistant"
    assert retry[-1]["role"] == "user" and "no JSON object" in retry[-1]["content"]
    assert (r.tokens_in, r.tokens_out) == (22, 14)  # both calls counted
    assert [(x["ok"], x["fallback"]) for x in ledger(store)] == [(1, 0)]


def test_schema_failure_retry_carries_path(llm_server: LLMServer) -> None:
    llm_server.queue(json_reply(BAD), json_reply(GOOD))
    r = make_model(llm_server).complete(MESSAGES, SCHEMA)
    assert r.ok and r.value == GOOD
    assert "items[2].label: 'foo' is not one of" in llm_server.requests[1].messages[-1]["content"]


def test_still_bad_falls_back_and_is_counted(llm_server: LLMServer, store: Store) -> None:
    llm_server.queue(json_reply(BAD), invalid_json_reply())
    model = make_model(llm_server, store)
    r = model.complete(MESSAGES, SCHEMA, stage="extract")
    assert (r.ok, r.fallback) == (False, True)
    assert r.error and "no JSON object" in r.error
    assert len(llm_server.requests) == 2  # exactly one corrective retry
    assert [(x["ok"], x["fallback"]) for x in ledger(store)] == [(0, 1)]
    assert store.query("SELECT COUNT(*) AS n FROM llm_cache")[0]["n"] == 0  # only valid replies are cached

    llm_server.queue(json_reply(BAD), json_reply(BAD))
    assert complete_or_fallback(model, MESSAGES, SCHEMA, lambda: {"items": []}, stage="extract") == {"items": []}
    [total] = ledger_totals(store)
    assert (total.stage, total.calls, total.fallbacks, total.cache_hits) == ("extract", 2, 2, 0)


def test_json_schema_rejected_downgrades_and_remembers(llm_server: LLMServer) -> None:
    llm_server.queue(schema_rejected(), json_reply(GOOD), json_reply(GOOD))
    model = make_model(llm_server)
    assert model.complete(MESSAGES, SCHEMA).ok
    assert model.response_format_mode == "json_object"
    assert model.complete(MESSAGES + [{"role": "user", "content": "again"}], SCHEMA).ok
    formats = [r.response_format for r in llm_server.requests]
    assert formats[0] is not None and formats[0]["type"] == "json_schema"
    assert formats[1:] == [{"type": "json_object"}, {"type": "json_object"}]
    # without server-side enforcement the schema goes into the system prompt
    system = llm_server.requests[1].messages[0]
    assert (
        system["role"] == "system" and system["content"].startswith("Label things.") and '"enum"' in system["content"]
    )


def test_json_object_rejected_too_sends_no_format(llm_server: LLMServer) -> None:
    llm_server.queue(schema_rejected(), error_reply(400, "no json mode"), json_reply(GOOD), json_reply(GOOD))
    model = make_model(llm_server)
    assert model.complete([{"role": "user", "content": "x"}], SCHEMA).value == GOOD
    assert model.response_format_mode == "none"
    assert "response_format" not in llm_server.requests[2].body
    assert llm_server.requests[2].messages[0]["role"] == "system"
    assert model.complete([{"role": "user", "content": "y"}], SCHEMA).ok
    assert len(llm_server.requests) == 4


def test_400_without_format_is_an_error(llm_server: LLMServer) -> None:
    llm_server.queue(error_reply(400, "context too long"))
    with pytest.raises(ProviderError, match="HTTP 400: context too long"):
        make_model(llm_server).complete([{"role": "user", "content": "x"}])
    assert len(llm_server.requests) == 1


# -- retries ------------------------------------------------------------------------------------
def test_500_then_success(llm_server: LLMServer, sleeps: Sleeps) -> None:
    llm_server.queue(error_reply(500), error_reply(503), json_reply(GOOD))
    r = make_model(llm_server, sleep=sleeps).complete(MESSAGES, SCHEMA)
    assert r.ok and r.attempts == 3
    assert len(llm_server.requests) == 3
    assert len(sleeps.calls) == 2
    # exponential backoff with jitter in [0.5, 1] of base * 2**n
    assert 0.25 <= sleeps.calls[0] <= 0.5 and 0.5 <= sleeps.calls[1] <= 1.0


def test_retries_exhausted(llm_server: LLMServer, sleeps: Sleeps, store: Store) -> None:
    llm_server.queue(*[error_reply(500)] * 3)
    model = make_model(llm_server, store, sleep=sleeps, max_retries=2)
    with pytest.raises(ProviderError, match="failed after 3 attempts \\(HTTP 500\\)"):
        model.complete(MESSAGES, SCHEMA, stage="answer")
    assert len(llm_server.requests) == 3 and len(sleeps.calls) == 2
    assert [(x["stage"], x["ok"], x["fallback"]) for x in ledger(store)] == [("answer", 0, 0)]
    [total] = ledger_totals(store)
    assert total.failures == 1


def test_retry_after_honoured(llm_server: LLMServer, sleeps: Sleeps) -> None:
    llm_server.queue(rate_limited(2), rate_limited("0.5"), json_reply(GOOD))
    r = make_model(llm_server, sleep=sleeps).complete(MESSAGES, SCHEMA)
    assert r.ok
    assert sleeps.calls == [2.0, 0.5]
    assert len(llm_server.requests) == 3


def test_retry_after_too_long_gives_up(llm_server: LLMServer, sleeps: Sleeps) -> None:
    llm_server.queue(rate_limited(3600))
    with pytest.raises(ProviderError, match="asks to wait 3600 s"):
        make_model(llm_server, sleep=sleeps).complete(MESSAGES, SCHEMA)
    assert sleeps.calls == []


def test_slow_reply_times_out_then_retries(llm_server: LLMServer, sleeps: Sleeps) -> None:
    llm_server.queue(slow_reply(GOOD, 0.8), json_reply(GOOD))
    r = make_model(llm_server, sleep=sleeps, timeout=0.3).complete(MESSAGES, SCHEMA)
    assert r.ok and r.attempts == 2
    assert len(sleeps.calls) == 1


def test_closed_connection_retried(llm_server: LLMServer, sleeps: Sleeps) -> None:
    llm_server.queue(closed_connection(), closed_connection(), json_reply(GOOD))
    r = make_model(llm_server, sleep=sleeps).complete(MESSAGES, SCHEMA)
    assert r.ok and len(llm_server.requests) == 3 and len(sleeps.calls) == 2


def test_connect_error_retried_then_clear_error(sleeps: Sleeps) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = LLMSettings(
        provider="openai", url=f"http://127.0.0.1:{port}/v1", model="m", api_key=SECRET, max_retries=2
    )
    with pytest.raises(ProviderError, match="failed after 3 attempts \\(ConnectError\\)") as exc:
        OpenAIChatModel(settings, sleep=sleeps).complete(MESSAGES)
    assert len(sleeps.calls) == 2
    assert SECRET not in str(exc.value)


@pytest.mark.parametrize("status", [401, 403])
def test_no_retry_on_auth_failure(llm_server: LLMServer, sleeps: Sleeps, status: int) -> None:
    llm_server.queue(error_reply(status, f"bad key {SECRET}"))
    with pytest.raises(ProviderError) as exc:
        make_model(llm_server, sleep=sleeps).complete(MESSAGES, SCHEMA)
    assert str(exc.value) == "LLM endpoint refused the API key"
    assert len(llm_server.requests) == 1 and sleeps.calls == []


def test_other_4xx_names_status_not_key(llm_server: LLMServer, sleeps: Sleeps) -> None:
    llm_server.queue(error_reply(404, f"model not found for key {SECRET}"))
    with pytest.raises(ProviderError) as exc:
        make_model(llm_server, sleep=sleeps).complete([{"role": "user", "content": "x"}])
    assert "HTTP 404" in str(exc.value) and SECRET not in str(exc.value) and "***" in str(exc.value)
    assert len(llm_server.requests) == 1


# -- cache and ledger ------------------------------------------------------------------------------
def test_cache_hit_makes_no_request(llm_server: LLMServer, store: Store) -> None:
    llm_server.queue(json_reply(GOOD))
    model = make_model(llm_server, store)
    first = model.complete(MESSAGES, SCHEMA, stage="extract")
    second = model.complete(MESSAGES, SCHEMA, stage="extract")
    assert first.value == second.value == GOOD
    assert (first.cache_hit, second.cache_hit) == (False, True)
    assert second.attempts == 0 and len(llm_server.requests) == 1
    [row] = store.query("SELECT * FROM llm_cache")
    assert row["model"] == "test-model" and json.loads(row["reply"]) == GOOD
    assert len(row["key"]) == len(row["schema_hash"]) == len(row["prompt_hash"]) == 64
    assert [x["cache_hit"] for x in ledger(store)] == [0, 1]

    # a different schema or different messages are different keys
    llm_server.queue(json_reply({"items": [{"label": "claim", "score": 1}]}))
    other = dict(SCHEMA, title="other")
    assert not model.complete(MESSAGES, other).cache_hit
    assert len(llm_server.requests) == 2

    # a second model on the same file reuses the cache
    again = make_model(llm_server, store).complete(MESSAGES, SCHEMA)
    assert again.cache_hit and len(llm_server.requests) == 2


def test_use_cache_false_bypasses_reading(llm_server: LLMServer, store: Store) -> None:
    llm_server.queue(json_reply(GOOD), json_reply(GOOD))
    model = make_model(llm_server, store, use_cache=False)
    assert not model.complete(MESSAGES, SCHEMA).cache_hit
    assert not model.complete(MESSAGES, SCHEMA).cache_hit
    assert len(llm_server.requests) == 2
    assert store.query("SELECT COUNT(*) AS n FROM llm_cache")[0]["n"] == 1


def test_ledger_rows_per_stage(llm_server: LLMServer, store: Store) -> None:
    llm_server.queue(
        json_reply(GOOD, prompt_tokens=10, completion_tokens=5),
        json_reply(GOOD, prompt_tokens=20, completion_tokens=6),
        json_reply(BAD),
        json_reply(BAD),
    )
    model = make_model(llm_server, store)
    model.complete(MESSAGES, SCHEMA, stage="extract")
    model.complete([{"role": "user", "content": "q"}], SCHEMA, stage="answer")
    model.complete(MESSAGES, SCHEMA, stage="extract")  # cache hit
    model.complete([{"role": "user", "content": "z"}], SCHEMA, stage="link")  # fallback
    assert len(ledger(store)) == 4
    totals = {t.stage: t for t in ledger_totals(store)}
    assert list(totals) == ["answer", "extract", "link"]
    assert totals["extract"] == LedgerTotal(
        stage="extract",
        calls=2,
        tokens_in=10,
        tokens_out=5,
        cache_hits=1,
        fallbacks=0,
        failures=0,
        mean_latency_ms=totals["extract"].mean_latency_ms,
    )
    assert totals["answer"].tokens_in == 20 and totals["answer"].calls == 1
    assert totals["link"].fallbacks == 1 and totals["link"].tokens_in == 22
    assert all(t.mean_latency_ms >= 0 for t in totals.values())
    assert all(r["created_at"].endswith("Z") for r in ledger(store))


def test_ledger_totals_empty(store: Store) -> None:
    assert ledger_totals(store) == []


def test_model_without_store(llm_server: LLMServer) -> None:
    llm_server.queue(json_reply(GOOD), json_reply(GOOD))
    model = make_model(llm_server)
    assert model.complete(MESSAGES, SCHEMA).ok
    assert not model.complete(MESSAGES, SCHEMA).cache_hit
    assert len(llm_server.requests) == 2


# -- concurrency ----------------------------------------------------------------------------------
def _echo(body: Any) -> Scripted:
    n = int(body["messages"][-1]["content"])
    reply = json_reply({"n": n}, prompt_tokens=n, completion_tokens=1)
    reply.delay = 0.01 * ((7 - n) % 7)  # later requests tend to finish first
    return reply


N_SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
    "additionalProperties": False,
}


def test_complete_many_preserves_order_and_limits_concurrency(llm_server: LLMServer, store: Store) -> None:
    llm_server.responder = _echo
    model = make_model(llm_server, store, concurrency=3)
    reqs = [LLMRequest([{"role": "user", "content": str(i)}], N_SCHEMA) for i in range(12)]
    results = model.complete_many(reqs, stage="batch")
    assert [r.value["n"] for r in results] == list(range(12))
    assert [r.tokens_in for r in results] == list(range(12))
    assert 1 < llm_server.max_in_flight <= 3
    assert len(llm_server.requests) == 12
    assert [t.calls for t in ledger_totals(store)] == [12]

    # a second run is all cache hits, mixed with new requests and per-request stages
    more = reqs[:2] + [LLMRequest([{"role": "user", "content": "40"}], N_SCHEMA, stage="other")]
    again = model.complete_many(more, stage="batch")
    assert [r.cache_hit for r in again] == [True, True, False]
    assert [r.value["n"] for r in again] == [0, 1, 40]
    assert {t.stage: t.calls for t in ledger_totals(store)} == {"batch": 14, "other": 1}


def test_complete_many_stops_after_provider_error(llm_server: LLMServer, store: Store) -> None:
    llm_server.queue(error_reply(401))
    model = make_model(llm_server, store, concurrency=1)
    llm_server.responder = _echo
    with pytest.raises(ProviderError, match="refused the API key"):
        model.complete_many([[{"role": "user", "content": str(i)}] for i in range(3)], stage="batch")
    assert len(llm_server.requests) == 1  # the queued requests were never sent
    assert [(r["stage"], r["ok"]) for r in ledger(store)] == [("batch", 0)]


# -- secrets --------------------------------------------------------------------------------------
def test_secret_never_leaks(llm_server: LLMServer, store: Store, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    model = make_model(llm_server, store)
    texts: list[str] = [repr(model), repr(model.settings), json.dumps(model.settings.public_dict())]
    llm_server.queue(json_reply(GOOD), json_reply(BAD), json_reply(BAD), error_reply(500), json_reply(GOOD))
    results = [
        model.complete(MESSAGES, SCHEMA, stage="a"),
        model.complete([{"role": "user", "content": "b"}], SCHEMA, stage="b"),
        model.complete([{"role": "user", "content": "c"}], SCHEMA, stage="c"),
    ]
    texts += [repr(r) for r in results]
    for reply in (error_reply(401, SECRET), error_reply(422, f"echo {SECRET}"), rate_limited(9999)):
        llm_server.queue(reply)
        with pytest.raises(ProviderError) as exc:
            model.complete([{"role": "user", "content": "d"}], SCHEMA, stage="d")
        texts += [str(exc.value), repr(exc.value)]
    for table in store.db.table_names():
        texts.append(repr(store.query(f"SELECT * FROM [{table}]")))
    texts.append(json.dumps([t.__dict__ for t in ledger_totals(store)]))
    texts.append(caplog.text)
    for text in texts:
        assert SECRET not in text
    assert store.query("SELECT COUNT(*) AS n FROM llm_ledger")[0]["n"] == 6


# -- the client with httpx's mock transport ------------------------------------------------------------
def test_mock_transport_sets_timeouts_and_key() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"choices": [{"message": {"content": json.dumps(GOOD)}}]})

    client = httpx.Client(transport=httpx.MockTransport(handler))
    settings = LLMSettings(provider="openai", url="http://llm.invalid/v1/", model="m", api_key=SECRET, timeout=7)
    model = get_chat_model(settings, client=client)
    r = model.complete(MESSAGES, SCHEMA)
    assert r.ok and r.value == GOOD and (r.tokens_in, r.tokens_out) == (0, 0)
    [req] = seen
    assert str(req.url) == "http://llm.invalid/v1/chat/completions"
    assert req.extensions["timeout"]["read"] == 7
    assert req.headers["authorization"] == f"Bearer {SECRET}"
    model.close()
    assert not client.is_closed  # the caller's client stays the caller's


def test_mock_transport_unusable_envelope_falls_back() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="<html>proxy page</html>")

    client = httpx.Client(transport=httpx.MockTransport(handler))
    settings = LLMSettings(provider="openai", url="http://llm.invalid/v1", model="m")
    r = OpenAIChatModel(settings, client=client).complete(MESSAGES, SCHEMA)
    assert (r.ok, r.fallback, r.attempts) == (False, True, 2)
    assert "Authorization" not in client.headers


# -- migration -------------------------------------------------------------------------------------
def _schema(path: Path) -> list[tuple[str, str, str]]:
    conn = sqlite3.connect(str(path))
    try:
        rows = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall()
        names = [r[0] for r in conn.execute("SELECT name FROM _sqlite_migrations ORDER BY id")]
    finally:
        conn.close()
    return [(t, n, s or "") for t, n, s in rows] + [("migration", n, "") for n in names]


def test_upgrade_from_m001_matches_blank(tmp_path: Path) -> None:
    blank = tmp_path / "blank.db"
    open_store(blank).close()
    old = tmp_path / "old.db"
    conn = sqlite3.connect(str(old), isolation_level=None)
    migrations.apply(Database(conn), stop_before="m002_llm")
    assert not Database(conn)["llm_cache"].exists()
    conn.close()
    upgraded = open_store(old)
    assert upgraded.has_table("llm_cache") and upgraded.has_table("llm_ledger")
    upgraded.close()
    assert _schema(old) == _schema(blank)
