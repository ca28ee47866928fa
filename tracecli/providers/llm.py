"""Chat models: an id, `is_available` and `complete(messages, schema)`.

`none` (the default) makes no network calls and tells callers to use their
deterministic implementation; `openai` talks to any OpenAI-compatible
`POST {base_url}/chat/completions` endpoint (OpenAI, Ollama, vLLM, llama.cpp
server) over httpx, with timeouts, retries with backoff, JSON-schema
structured output, validation of every field, one corrective retry, a cache
table and a per-stage ledger of every call.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import random
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast
from urllib.parse import urlsplit

import pysqlite3.dbapi2 as sqlite3

from tracecli.errors import ProviderError, StoreError
from tracecli.providers.jsonschema import ReplyInvalid, Schema, parse_json_reply, schema_error, validate_reply
from tracecli.jsonio import tree_problem
from tracecli.redact import redact_url
from tracecli.scope import Scope
from tracecli.text import has_surrogate
from tracecli.store.db import ASIDE_WAIT, Store, dumps, upsert_set, utc_now

if TYPE_CHECKING:
    # imported where a request is made: httpx costs ~70 ms at start-up, and the
    # offline `none` model (and `stats`, which reads the ledger) never use it
    import httpx

logger = logging.getLogger("tracecli.llm")

T = TypeVar("T")
Message = Mapping[str, Any]

# One lock for every store access from this module: SQLite connections are
# not thread-safe, and HTTP calls happen outside it.
_STORE_LOCK = threading.RLock()

# Response-format modes, best first; a server that rejects one with HTTP 400
# is asked again with the next.
_MODES = ("json_schema", "json_object", "none")

# A server asking us to wait longer than this is treated as unusable rather
# than stalling a build for minutes.
MAX_RETRY_AFTER = 120.0

#: The largest reply body read (bytes); a longer one is an unusable reply, never sent back to the model.
MAX_REPLY_BYTES = 1_000_000
#: The longest reply quoted back to the model in the corrective retry (characters).
MAX_ECHO_CHARS = 16_000
TIMEOUT_ENV, DEADLINE_ENV = "TRACECLI_LLM_TIMEOUT", "TRACECLI_LLM_DEADLINE"
#: Seconds one call may take, retries included, unless twice the request timeout is longer.
DEFAULT_DEADLINE = 60.0


# -- settings -----------------------------------------------------------------
@dataclass(frozen=True)
class LLMSettings:
    """Which chat model to use and how to call it; the API key never shows in repr."""

    provider: str = "none"
    url: str | None = None
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    temperature: float = 0.0
    max_tokens: int | None = None
    timeout: float = 30.0  # seconds one request may take
    max_retries: int = 3
    concurrency: int = 4
    use_cache: bool = True
    deadline: float | None = None  # seconds one call may take with its retries (default: DEFAULT_DEADLINE or 2 × timeout)
    max_reply_bytes: int = MAX_REPLY_BYTES

    @property
    def total_deadline(self) -> float:
        """Seconds after which one `complete` call gives up, retries and corrective retry included."""
        return self.deadline if self.deadline is not None else max(DEFAULT_DEADLINE, 2 * self.timeout)

    @classmethod
    def from_env(cls, **overrides: Any) -> LLMSettings:
        """Settings from TRACECLI_LLM_URL / _MODEL / _API_KEY (or OPENAI_API_KEY) / _TIMEOUT / _DEADLINE, then `overrides`."""
        url = os.environ.get("TRACECLI_LLM_URL") or None
        model = os.environ.get("TRACECLI_LLM_MODEL") or None
        key = os.environ.get("TRACECLI_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY") or None
        values: dict[str, Any] = {"url": url, "model": model, "api_key": key}
        for name, var in (("timeout", TIMEOUT_ENV), ("deadline", DEADLINE_ENV)):
            raw = (os.environ.get(var) or "").strip()
            if raw:
                try:
                    values[name] = float(raw)
                except ValueError:
                    raise ProviderError(f"{var}={raw!r} is not a number of seconds") from None
        unknown = set(overrides) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise TypeError(f"unknown LLM setting(s): {', '.join(sorted(unknown))}")
        values.update(overrides)
        if "provider" not in overrides:
            values["provider"] = "openai" if values["url"] and values["model"] else "none"
        settings = cls(**values)
        settings.check()
        return settings

    def check(self) -> None:
        """Raise ProviderError if the URL or a numeric setting cannot be used."""
        if not 0 < self.timeout <= 86400:  # also refuses nan and inf
            raise ProviderError(f"LLM timeout ({TIMEOUT_ENV}) must be between 0 and 86400 seconds, not {self.timeout}")
        if self.deadline is not None and not 0 < self.deadline <= 86400:
            raise ProviderError(f"LLM deadline ({DEADLINE_ENV}) must be between 0 and 86400 seconds, not {self.deadline}")
        if self.max_reply_bytes < 1:
            raise ProviderError(f"LLM max_reply_bytes must be 1 or more, not {self.max_reply_bytes}")
        if self.url is not None and not _is_http_url(self.url):
            raise ProviderError(f"TRACECLI_LLM_URL '{redact_url(self.url)}' is not an http(s) URL; write it like "
                                "http://localhost:11434/v1")
        if self.max_retries < 0:
            raise ProviderError(f"LLM max_retries must be 0 or more, not {self.max_retries}")
        if self.concurrency < 1:
            raise ProviderError(f"LLM concurrency must be 1 or more, not {self.concurrency}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ProviderError(f"LLM max_tokens must be 1 or more, not {self.max_tokens}")

    def public_dict(self) -> dict[str, Any]:
        """JSON-able settings with the key replaced by `api_key_set`."""
        return {
            "provider": self.provider,
            "url": redact_url(self.url),
            "model": self.model,
            "api_key_set": bool(self.api_key),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "timeout": self.timeout,
            "deadline": self.total_deadline,
            "max_retries": self.max_retries,
            "concurrency": self.concurrency,
            "use_cache": self.use_cache,
        }


def _is_http_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        return False


# -- results and requests -------------------------------------------------------
@dataclass
class LLMResult:
    """The outcome of one `complete` call; `value` is the validated JSON when a schema was given."""

    ok: bool
    value: Any = None
    text: str = ""
    model: str = ""
    stage: str = "misc"
    available: bool = True
    fallback: bool = False
    cache_hit: bool = False
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: float = 0.0
    attempts: int = 0
    error: str | None = None


@dataclass(frozen=True)
class LLMRequest:
    """One item of a `complete_many` batch; `stage` defaults to the batch's."""

    messages: Sequence[Message]
    schema: Schema | None = None
    stage: str | None = None


class ChatModel(Protocol):
    """What every chat model offers.

    A model that caches replies also reads a `scope` attribute (a
    `tracecli.scope.Scope`, set by callers through `llm_scope`) to keep its
    cache apart per namespace.
    """

    id: str
    scope: Scope | None

    @property
    def is_available(self) -> bool:
        """False when callers must use their deterministic implementation."""
        ...

    def complete(self, messages: Sequence[Message], schema: Schema | None = None, *, stage: str = "misc") -> LLMResult:
        """One chat completion, validated against `schema` when given."""
        ...

    def complete_many(
        self, requests: Sequence[LLMRequest | Sequence[Message]], *, stage: str = "misc"
    ) -> list[LLMResult]:
        """Many completions, results in input order."""
        ...


def _as_request(item: LLMRequest | Sequence[Message], stage: str) -> LLMRequest:
    if isinstance(item, LLMRequest):
        return item if item.stage else dataclasses.replace(item, stage=stage)
    return LLMRequest(messages=item, stage=stage)


# -- the offline model ----------------------------------------------------------
class NoneChatModel:
    """No LLM configured: every call reports `available=False` so callers fall back."""

    id = "none"

    def __init__(self, settings: LLMSettings | None = None) -> None:
        self.settings = settings or LLMSettings()
        self.scope: Scope | None = None  # accepted like the caching models' and ignored

    @property
    def is_available(self) -> bool:
        """Always False: there is no model to call."""
        return False

    def complete(self, messages: Sequence[Message], schema: Schema | None = None, *, stage: str = "misc") -> LLMResult:
        """Return an unavailable result without any network call."""
        return LLMResult(
            ok=False, model=self.id, stage=stage, available=False, fallback=True, error="no LLM configured"
        )

    def complete_many(
        self, requests: Sequence[LLMRequest | Sequence[Message]], *, stage: str = "misc"
    ) -> list[LLMResult]:
        """One unavailable result per request."""
        reqs = [_as_request(r, stage) for r in requests]
        return [self.complete(r.messages, r.schema, stage=r.stage or stage) for r in reqs]

    def close(self) -> None:
        """Nothing to release."""

    def __repr__(self) -> str:
        return "NoneChatModel()"


# -- hashing ---------------------------------------------------------------------
def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cache_key(
    model: str, schema: Schema | None, messages: Sequence[Message], namespace: str | None = None
) -> tuple[str, str, str]:
    """(key, schema_hash, prompt_hash) for the cache table; the key includes the namespace when there is one."""
    schema_json = dumps(schema) if schema is not None else "null"
    messages_json = dumps([dict(m) for m in messages])
    parts = [model, schema_json, messages_json] + ([{"namespace": namespace}] if namespace is not None else [])
    return _sha(dumps(parts)), _sha(schema_json), _sha(messages_json)


# -- the OpenAI-compatible client ---------------------------------------------------
class _Retryable(Exception):
    def __init__(self, reason: str, delay: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.delay = delay


class _FormatRejected(Exception):
    pass


class _Unusable(Exception):
    """A reply that is no chat completion we can use (too large); the corrective retry does not quote it."""


@dataclass
class _Prepared:
    messages: list[dict[str, Any]]
    schema: Schema | None
    stage: str
    key: str
    schema_hash: str
    prompt_hash: str
    started: float
    cached: LLMResult | None = None
    scope: Scope | None = None
    cached_conversations: list[str] = field(default_factory=list)


@dataclass
class _Outcome:
    result: LLMResult
    error: ProviderError | None = None


class OpenAIChatModel:
    """Any OpenAI-compatible chat completions endpoint, with cache and ledger when given a store.

    The store is only touched on the calling thread (its SQLite connection
    belongs to the thread that opened it); `complete_many` runs the HTTP calls
    on worker threads and records their results back on the caller's.

    `scope` (set by the caller, see `tracecli.scope.llm_scope`) says whose text
    the prompts carry: cache keys include its namespace, so a reply is never
    served across namespaces, and cache rows record its conversations.
    """

    def __init__(
        self,
        settings: LLMSettings,
        store: Store | None = None,
        client: httpx.Client | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        backoff_base: float = 0.5,
        backoff_cap: float = 20.0,
    ) -> None:
        if not settings.url or not settings.model:
            raise ProviderError("the openai chat model needs TRACECLI_LLM_URL and TRACECLI_LLM_MODEL")
        settings.check()
        self.settings = settings
        self.url = settings.url.rstrip("/")
        self.model = settings.model
        self.id = f"openai:{settings.model}"
        self.store = store
        import httpx

        self._owns_client = client is None
        self._client = client or httpx.Client(timeout=self._timeout())
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._rng_lock = threading.Lock()
        self._backoff_base = backoff_base
        self._backoff_cap = backoff_cap
        self._mode = _MODES[0]
        self.scope: Scope | None = None

    @property
    def is_available(self) -> bool:
        """True: an endpoint is configured (whether it answers is `doctor`'s question)."""
        return True

    @property
    def response_format_mode(self) -> str:
        """The structured-output mode that last worked: json_schema, json_object or none."""
        return self._mode

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self.model!r}, url={redact_url(self.url)!r})"

    def close(self) -> None:
        """Close the HTTP client if this model created it."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> OpenAIChatModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public calls -----------------------------------------------------------
    def complete(self, messages: Sequence[Message], schema: Schema | None = None, *, stage: str = "misc") -> LLMResult:
        """One chat completion; with `schema`, the reply is parsed, validated and retried once if bad."""
        prep = self._prepare(LLMRequest(messages, schema, stage), stage)
        outcome = _Outcome(prep.cached) if prep.cached else self._fetch(prep)
        return self._finish(prep, outcome)

    def complete_many(
        self, requests: Sequence[LLMRequest | Sequence[Message]], *, stage: str = "misc"
    ) -> list[LLMResult]:
        """Many completions on `concurrency` worker threads; results in input order."""
        preps = [self._prepare(_as_request(r, stage), stage) for r in requests]
        outcomes: list[_Outcome | None] = [_Outcome(p.cached) if p.cached else None for p in preps]
        todo = [i for i, o in enumerate(outcomes) if o is None]
        # After one unusable-endpoint error the queued requests are skipped
        # rather than each paying its own retries against a dead endpoint.
        abort = threading.Event()

        def work(prep: _Prepared) -> _Outcome | None:
            if abort.is_set():
                return None
            outcome = self._fetch(prep)
            if outcome.error is not None:
                abort.set()
            return outcome

        if todo:
            workers = min(self.settings.concurrency, len(todo))
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tracecli-llm") as pool:
                futures = {i: pool.submit(work, preps[i]) for i in todo}
                for i, fut in futures.items():
                    outcomes[i] = fut.result()
        # The store is touched only here, on the calling thread: the store's
        # connection belongs to the thread that opened it.
        results: list[LLMResult] = []
        first_error: ProviderError | None = None
        for prep, outcome in zip(preps, outcomes, strict=True):
            if outcome is None:
                continue  # skipped after an error; never sent, so not in the ledger
            try:
                results.append(self._finish(prep, outcome))
            except ProviderError as exc:
                first_error = first_error or exc
        if first_error:
            raise first_error
        return results

    # -- stages of one call -------------------------------------------------------
    def _prepare(self, req: LLMRequest, default_stage: str) -> _Prepared:
        msgs = [dict(m) for m in req.messages]
        scope = self.scope
        namespace = scope.namespace if scope is not None else None
        key, schema_hash, prompt_hash = cache_key(self.model, req.schema, msgs, namespace)
        prep = _Prepared(
            msgs, req.schema, req.stage or default_stage, key, schema_hash, prompt_hash, time.perf_counter(),
            scope=scope,
        )
        if self.store is not None and self.settings.use_cache:
            with _STORE_LOCK:
                row = self.store.execute(
                    "SELECT reply, conversation_ids FROM llm_cache WHERE key = ? AND namespace IS NOT DISTINCT FROM ?", (key, namespace)
                ).fetchone()
            if row is not None:
                text = row[0]
                prep.cached_conversations = _json_ids(row[1])
                try:
                    value = validate_reply(text, req.schema) if req.schema is not None else None
                except ReplyInvalid:
                    return prep  # a stale entry for a changed validator: ask again
                prep.cached = LLMResult(
                    ok=True, value=value, text=text, model=self.model, stage=prep.stage, cache_hit=True
                )
        return prep

    def _fetch(self, prep: _Prepared) -> _Outcome:
        prep.started = time.perf_counter()  # latency excludes time queued for a worker
        result = LLMResult(ok=False, model=self.model, stage=prep.stage)
        deadline_at = time.monotonic() + self.settings.total_deadline
        try:
            text, value, problem = self._attempt(prep.messages, prep.schema, result, deadline_at)
            if problem is not None:
                retry = list(prep.messages)
                if text and len(text) <= MAX_ECHO_CHARS:
                    retry.append({"role": "assistant", "content": text})
                retry.append(
                    {
                        "role": "user",
                        "content": (
                            f"That reply was not valid: {problem}. Reply again with only a JSON "
                            "value that matches the schema, and nothing else."
                            if prep.schema is not None
                            else f"That reply was not usable: {problem}. Please answer again."
                        ),
                    }
                )
                text, value, problem = self._attempt(retry, prep.schema, result, deadline_at)
            result.text, result.value = text, value
            if problem is None:
                result.ok = True
            else:
                result.fallback, result.error = True, problem
                logger.info("LLM reply for stage %s unusable after one retry: %s", prep.stage, problem)
            return _Outcome(result)
        except ProviderError as exc:
            result.error = str(exc)
            return _Outcome(result, exc)

    def _attempt(
        self, messages: list[dict[str, Any]], schema: Schema | None, result: LLMResult, deadline_at: float
    ) -> tuple[str, Any, str | None]:
        """One request and its check: (text, validated value, problem or None)."""
        try:
            text = self._chat(messages, schema, result, deadline_at)
        except _Unusable as exc:
            return "", None, str(exc)
        if text is None:
            return "", None, "the endpoint's reply is not a chat completion"
        if has_surrogate(text):  # not Unicode: it could be neither sent back nor stored
            return "", None, "the reply holds a lone surrogate, which is not Unicode"
        if schema is None:
            return text, None, None
        try:
            value = validate_reply(text, schema)
        except ReplyInvalid as exc:
            return text, None, str(exc)
        problem = tree_problem(value)
        return (text, value, None) if problem is None else (text, None, f"the reply's JSON: {problem}")

    def _finish(self, prep: _Prepared, outcome: _Outcome) -> LLMResult:
        result = outcome.result
        result.latency_ms = (time.perf_counter() - prep.started) * 1000.0
        if self.store is not None:
            try:
                self._record(self.store, prep, result)
            except (StoreError, sqlite3.OperationalError) as exc:
                # the cache and the ledger are records: a busy or read-only file costs them, not the reply
                logger.info("LLM reply for stage %s not recorded: %s", prep.stage, exc)
        if outcome.error is not None:
            raise outcome.error
        return result

    def _record(self, store: Store, prep: _Prepared, result: LLMResult) -> None:
        """Cache the reply and add the call to the ledger (inside the caller's transaction, or briefly waiting for one)."""
        scope = prep.scope
        conversations = sorted(set(scope.conversation_ids)) if scope is not None else []
        with _STORE_LOCK, store.transaction(wait=ASIDE_WAIT):
            if result.ok and not result.cache_hit:
                store.execute(
                    "INSERT INTO llm_cache(key, model, schema_hash, prompt_hash, reply, created_at, namespace, conversation_ids) "
                    "VALUES (?,?,?,?,?,?,?,?) " + upsert_set("key", ("model", "schema_hash", "prompt_hash", "reply", "created_at",
                                                                     "namespace", "conversation_ids")),
                    (prep.key, self.model, prep.schema_hash, prep.prompt_hash, result.text, utc_now(),
                     scope.namespace if scope is not None else None, dumps(conversations)),
                )
            elif result.cache_hit and not set(conversations) <= set(prep.cached_conversations):
                # the same prompt from another conversation of the namespace: `forget` of either drops it
                merged = sorted(set(conversations) | set(prep.cached_conversations))
                store.execute("UPDATE llm_cache SET conversation_ids = ? WHERE key = ?", (dumps(merged), prep.key))
            store.execute(
                "INSERT INTO llm_ledger(stage, model, tokens_in, tokens_out, latency_ms, cache_hit, fallback, ok, created_at) "
                "VALUES (?,?,?,?,?,?,?,?,?)",
                (result.stage, self.model, result.tokens_in, result.tokens_out, round(result.latency_ms, 3),
                 int(result.cache_hit), int(result.fallback), int(result.ok), utc_now()),
            )

    # -- HTTP ----------------------------------------------------------------------
    def _timeout(self, remaining: float | None = None) -> httpx.Timeout:
        import httpx

        t = self.settings.timeout if remaining is None else max(0.001, min(self.settings.timeout, remaining))
        return httpx.Timeout(t, connect=min(t, 10.0))

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.settings.api_key:
            headers["Authorization"] = f"Bearer {self.settings.api_key}"
        return headers

    def _body(self, messages: list[dict[str, Any]], schema: Schema | None, mode: str) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "temperature": self.settings.temperature}
        if self.settings.max_tokens is not None:
            body["max_tokens"] = self.settings.max_tokens
        if schema is not None and mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": _schema_name(schema), "schema": dict(schema), "strict": True},
            }
        elif schema is not None and mode == "json_object":
            body["response_format"] = {"type": "json_object"}
        if schema is not None and mode != "json_schema":
            # Without server-side enforcement the model must read the schema.
            messages = _with_schema_hint(messages, schema)
        body["messages"] = messages
        return body

    def _chat(self, messages: list[dict[str, Any]], schema: Schema | None, result: LLMResult,
              deadline_at: float) -> str | None:
        """One logical request: format downgrades and transient-error retries included."""
        mode = self._mode if schema is not None else "none"
        while True:
            try:
                text = self._post_with_retries(self._body(messages, schema, mode), result, deadline_at)
            except _FormatRejected:
                mode = _MODES[_MODES.index(mode) + 1]
                logger.info("LLM endpoint rejected response_format; trying %s", mode)
                continue
            if schema is not None and mode != self._mode:
                self._mode = mode
            return text

    def _post_with_retries(self, body: dict[str, Any], result: LLMResult, deadline_at: float) -> str | None:
        attempt = 0
        while True:
            remaining = deadline_at - time.monotonic()
            if remaining <= 0:
                raise self._late()
            result.attempts += 1
            try:
                return self._post_once(body, result, deadline_at)
            except _Retryable as exc:
                if attempt >= self.settings.max_retries:
                    raise ProviderError(
                        f"LLM endpoint {redact_url(self.url)} failed after {attempt + 1} attempts ({exc.reason})"
                    ) from None
                delay = exc.delay if exc.delay is not None else self._backoff(attempt)
                if time.monotonic() + delay >= deadline_at:
                    raise self._late(exc.reason) from None
                logger.info("LLM request failed (%s); retrying in %.2f s", exc.reason, delay)
                self._sleep(delay)
                attempt += 1

    def _late(self, reason: str | None = None) -> ProviderError:
        why = f"; last: {reason}" if reason else ""
        return ProviderError(f"LLM endpoint {redact_url(self.url)} gave no usable reply within "
                             f"{self.settings.total_deadline:g} s ({DEADLINE_ENV}){why}")

    def _backoff(self, attempt: int) -> float:
        with self._rng_lock:
            jitter = 0.5 + self._rng.random() / 2
        return float(min(self._backoff_cap, self._backoff_base * 2.0**attempt) * jitter)

    def _post_once(self, body: dict[str, Any], result: LLMResult, deadline_at: float) -> str | None:
        """One HTTP request: the reply's content, or None if the body is not a chat completion."""
        import httpx

        url = f"{self.url}/chat/completions"
        try:
            with self._client.stream("POST", url, json=body, headers=self._headers(),
                                     timeout=self._timeout(deadline_at - time.monotonic())) as resp:
                status = resp.status_code
                raw = self._read_capped(resp, deadline_at)
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            raise _Retryable(type(exc).__name__) from None
        except httpx.InvalidURL:
            raise ProviderError(f"LLM URL {redact_url(self.url)} is not a valid URL") from None
        except httpx.HTTPError as exc:
            raise ProviderError(
                f"LLM endpoint {redact_url(self.url)} cannot be reached ({type(exc).__name__})"
            ) from None
        if status in (401, 403):
            raise ProviderError("LLM endpoint refused the API key")
        if status == 429:
            delay = _retry_after(resp.headers.get("Retry-After"))
            if delay is not None and delay > MAX_RETRY_AFTER:
                raise ProviderError(
                    f"LLM endpoint {redact_url(self.url)} is rate-limiting and asks to wait {delay:.0f} s; try later"
                )
            raise _Retryable("HTTP 429", delay)
        if status >= 500:
            raise _Retryable(f"HTTP {status}")
        if status == 400 and "response_format" in body:
            raise _FormatRejected()
        if status >= 400:
            detail = self._scrub(_error_detail(raw))
            raise ProviderError(
                f"LLM endpoint {redact_url(self.url)} answered HTTP {status}" + (f": {detail}" if detail else "")
            )
        try:
            payload = json.loads(raw)
        except (ValueError, RecursionError):
            return None
        if not isinstance(payload, dict):
            return None
        usage = payload.get("usage") or {}
        if isinstance(usage, dict):
            result.tokens_in += _int(usage.get("prompt_tokens"))
            result.tokens_out += _int(usage.get("completion_tokens"))
        try:
            content = payload["choices"][0]["message"].get("content")
        except (KeyError, IndexError, TypeError, AttributeError):
            return None
        # null content (e.g. a refusal or only tool calls) is an empty reply
        return content if isinstance(content, str) else ""

    def _read_capped(self, resp: httpx.Response, deadline_at: float) -> bytes:
        """The body, read until `max_reply_bytes` or the deadline: _Unusable past the one, _Retryable past the other."""
        cap = self.settings.max_reply_bytes
        declared = resp.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > cap:
            raise _Unusable(f"the reply is {int(declared):,} bytes; at most {cap:,} are read")
        chunks: list[bytes] = []
        size = 0
        for chunk in resp.iter_bytes():
            size += len(chunk)
            if size > cap:
                raise _Unusable(f"the reply is larger than {cap:,} bytes")
            if time.monotonic() > deadline_at:
                raise _Retryable("the reply was still arriving at the deadline")
            chunks.append(chunk)
        return b"".join(chunks)

    def _scrub(self, text: str) -> str:
        key = self.settings.api_key
        return text.replace(key, "***") if key else text


def _json_ids(text: str | None) -> list[str]:
    try:
        value = json.loads(text or "[]")
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff
    return max(0.0, seconds)


def _error_detail(raw: bytes) -> str:
    try:
        payload = json.loads(raw)
        err = payload.get("error") if isinstance(payload, dict) else None
        msg = err.get("message") if isinstance(err, dict) else err
        text = str(msg) if msg else ""
    except (ValueError, RecursionError):
        text = raw[:2000].decode("utf-8", "replace")
    text = " ".join(text.split())
    return text[:200]


def _schema_name(schema: Schema) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", str(schema.get("title") or "reply")).strip("_")
    return (name or "reply")[:64]


def _with_schema_hint(messages: list[dict[str, Any]], schema: Schema) -> list[dict[str, Any]]:
    hint = "Reply with only a JSON value (no prose, no code fence) that matches this JSON schema:\n" + json.dumps(
        schema, sort_keys=True
    )
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system" and isinstance(out[0].get("content"), str):
        out[0]["content"] = f"{out[0]['content']}\n\n{hint}"
    else:
        out.insert(0, {"role": "system", "content": hint})
    return out


# -- registry ----------------------------------------------------------------------
ChatModelFactory = Callable[[LLMSettings, Store | None, "httpx.Client | None"], "NoneChatModel | OpenAIChatModel"]

CHAT_MODELS: dict[str, ChatModelFactory] = {
    "none": lambda settings, store, client: NoneChatModel(settings),
    "openai": lambda settings, store, client: OpenAIChatModel(settings, store, client),
}


def get_chat_model(
    settings: LLMSettings | None = None, store: Store | None = None, client: httpx.Client | None = None
) -> NoneChatModel | OpenAIChatModel:
    """The chat model named by `settings.provider` (from the environment when None)."""
    settings = settings or LLMSettings.from_env()
    if settings.provider not in CHAT_MODELS:
        raise ProviderError(f"unknown LLM provider '{settings.provider}'; choose one of {', '.join(CHAT_MODELS)}")
    model: NoneChatModel | OpenAIChatModel = CHAT_MODELS[settings.provider](settings, store, client)
    return model


def complete_or_fallback(
    model: ChatModel,
    messages: Sequence[Message],
    schema: Schema | None,
    fallback: Callable[[], T],
    *,
    stage: str = "misc",
) -> T:
    """The validated reply (JSON value, or text without a schema), else `fallback()`."""
    if not model.is_available:
        return fallback()
    result = model.complete(messages, schema, stage=stage)
    if not result.ok:
        return fallback()
    return cast(T, result.value if schema is not None else result.text)


# -- ledger ------------------------------------------------------------------------
@dataclass
class LedgerTotal:
    """Per-stage totals of LLM calls, for `tracecli stats`."""

    stage: str
    calls: int
    tokens_in: int
    tokens_out: int
    cache_hits: int
    fallbacks: int
    failures: int
    mean_latency_ms: float


def ledger_totals(store: Store) -> list[LedgerTotal]:
    """LLM calls aggregated per stage, ordered by stage."""
    if not store.has_table("llm_ledger"):
        return []
    with _STORE_LOCK:
        rows = store.query(
            "SELECT stage, COUNT(*) AS calls, COALESCE(SUM(tokens_in), 0) AS tokens_in, "
            "COALESCE(SUM(tokens_out), 0) AS tokens_out, COALESCE(SUM(cache_hit), 0) AS cache_hits, "
            "COALESCE(SUM(fallback), 0) AS fallbacks, "
            "COALESCE(SUM(CASE WHEN ok = 0 AND fallback = 0 THEN 1 ELSE 0 END), 0) AS failures, "
            "COALESCE(AVG(latency_ms), 0.0) AS mean_latency_ms "
            "FROM llm_ledger GROUP BY stage ORDER BY stage"
        )
    return [
        LedgerTotal(
            stage=r["stage"],
            calls=int(r["calls"]),
            tokens_in=int(r["tokens_in"]),
            tokens_out=int(r["tokens_out"]),
            cache_hits=int(r["cache_hits"]),
            fallbacks=int(r["fallbacks"]),
            failures=int(r["failures"]),
            mean_latency_ms=round(float(r["mean_latency_ms"]), 3),
        )
        for r in rows
    ]


__all__ = [
    "CHAT_MODELS",
    "ChatModel",
    "LLMRequest",
    "LLMResult",
    "LLMSettings",
    "LedgerTotal",
    "NoneChatModel",
    "OpenAIChatModel",
    "ReplyInvalid",
    "cache_key",
    "complete_or_fallback",
    "get_chat_model",
    "ledger_totals",
    "parse_json_reply",
    "redact_url",
    "schema_error",
    "validate_reply",
]
