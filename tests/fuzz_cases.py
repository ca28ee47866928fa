"""Fuzz groups shared by tests/test_fuzz.py and benchmarks/fuzz_report.py.

A group is a Hypothesis strategy and a check. The check runs one generated case through the library or
the CLI (Typer's CliRunner, in process) and raises AssertionError when tracecli misbehaves: a traceback,
an exit code other than 0/1/2, an error that is not one line, a refused input that changed the
database, or a terminal control character in what a command printed.

`Lab` holds what the checks share: a temporary folder and a small database (ingested, graph built,
wiki compiled) that each check copies before it writes.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import string
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

# -- values -----------------------------------------------------------------------------------------------------------

MARKUP = ["[/bold]", "[bold red]", "[/]", "[link=file:///etc/passwd]", "[/link]", "[", "]", "\\[", ":smile:", "[dim", "%", "_"]
CONTROLS = ["\x1b[2J", "\x1b]0;title\x07", "\x1b]8;;file:///etc/passwd\x07", "\x9b31m", "\x00", "\r", "\x7f", "\u202e",
            "\u2028", "\ufeff", "\x08", "\x1b", "\n", "\t"]
SURROGATES = ["\ud800", "\udcff"]
#: the characters that must never reach a terminal through a rendered view
TERMINAL_UNSAFE = tuple(c for c in "\x1b\x07\x9b\x00\x7f\x08\u202e")

#: any text: markup, control characters, random Unicode (no surrogates)
printable_hostile = st.lists(st.one_of(st.sampled_from(MARKUP + CONTROLS), st.text(max_size=6)), max_size=5).map("".join)
#: the same, sometimes with a lone surrogate (what bytes that are not UTF-8 in a command line become)
hostile_text = st.integers(0, 2).flatmap(
    lambda n: st.tuples(printable_hostile, st.sampled_from(SURROGATES)).map("".join) if n == 0 else printable_hostile)
#: printable text with markup and control characters, no surrogates: what a chat file may hold
chat_text = st.lists(st.one_of(st.sampled_from(MARKUP + CONTROLS), st.text(max_size=8)), min_size=1, max_size=5).map(
    "".join)
#: printable text with markup (ids, names: control characters there are refused, so they would test only that)
markup_text = st.lists(st.one_of(st.sampled_from(MARKUP), st.text(st.characters(categories=["L", "N", "P", "S", "Zs"]), max_size=6)),
                       min_size=1, max_size=4).map("".join).filter(lambda t: t.strip() != "")
words = st.lists(st.sampled_from(["Alice", "Bob", "moved", "to", "Porto", "cat", "Miso", "is", "now", "Oslo", "job"]),
                 min_size=1, max_size=8).map(" ".join)

KEYS = ["speaker", "text", "role", "content", "timestamp", "time", "id", "sessions", "messages", "conversation_id",
        "conversations", "namespace", "participants", "started_at", "conversation", "speaker_a", "speaker_b",
        "session_1", "session_1_date_time", "dia_id", "blip_caption", "sample_id", "question_id", "haystack_sessions",
        "haystack_session_ids", "haystack_dates", "mapping", "current_node", "message", "author", "parts",
        "create_time", "parent", "children", "session_id"]

leaf = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                 st.floats(allow_nan=True, allow_infinity=True), printable_hostile)
json_value = st.recursive(leaf, lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(st.one_of(st.sampled_from(KEYS), printable_hostile), children, max_size=5)),
    max_leaves=16)
#: any JSON value, sometimes holding a lone surrogate escape somewhere ("\ud800" in the file)
any_json = st.integers(0, 2).flatmap(lambda n: st.tuples(json_value, hostile_text).map(list) if n == 0 else json_value)

stamps = st.one_of(
    st.sampled_from(["2024-03-01T12:00:00Z", "2024-03-01 12:00 PST", "2024-03-01 12:00 IST", "12:00 GMT+3",
                     "9999-12-31T23:00:00-05:00", "0001-01-01T01:00:00+05:00", "March 2024", "12:00", "", "tomorrow",
                     "2024-02-30", "1:56 pm on 8 May, 2023", "2023/05/20 (Sat) 02:21"]),
    st.floats(allow_nan=True, allow_infinity=True), st.integers(min_value=-(2**64), max_value=2**64), printable_hostile,
    st.datetimes().map(lambda d: d.isoformat()), st.none(),
)


def sometimes(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly the well-formed value, one time in eight any JSON value in its place (a document has a dozen
    fields, so about a quarter of the documents are well-formed throughout)."""
    return st.integers(0, 7).flatmap(lambda n: json_value if n == 0 else good)


def optional_keys(required: dict[str, Any], optional: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({k: sometimes(v) for k, v in required.items()},
                                 optional={k: sometimes(v) for k, v in optional.items()})


ident = st.one_of(st.text(string.ascii_letters + string.digits + "-_:", min_size=1, max_size=6), st.integers(0, 99))
native_message = optional_keys({"speaker": st.sampled_from(["Alice", "Bob"]), "text": words},
                               {"timestamp": stamps, "id": ident})
native_doc = st.one_of(
    optional_keys({"messages": st.lists(native_message, min_size=1, max_size=4)}, {"conversation_id": ident, "namespace": chat_text}),
    optional_keys({"sessions": st.lists(optional_keys({"messages": st.lists(native_message, min_size=1, max_size=3)},
                                                      {"id": ident, "started_at": stamps}), min_size=1, max_size=3)},
                  {"conversation_id": ident, "participants": st.lists(st.sampled_from(["Alice", "Bob"]))}),
    st.lists(native_message, min_size=1, max_size=4),
)
locomo_turn = optional_keys({"speaker": st.sampled_from(["Alice", "Bob"]), "text": words}, {"dia_id": ident, "blip_caption": words})
locomo_doc = st.lists(optional_keys({"conversation": optional_keys(
    {"speaker_a": st.just("Alice"), "speaker_b": st.just("Bob"), "session_1": st.lists(locomo_turn, min_size=1, max_size=4)},
    {"session_1_date_time": st.one_of(st.just("1:56 pm on 8 May, 2023"), stamps)})}, {"sample_id": ident}), min_size=1, max_size=2)
lme_turn = optional_keys({"role": st.sampled_from(["user", "assistant"]), "content": words}, {})
lme_doc = st.lists(optional_keys({"question_id": ident, "haystack_sessions": st.lists(st.lists(lme_turn, min_size=1, max_size=3), min_size=1, max_size=2)},
                                 {"haystack_session_ids": st.lists(ident, min_size=1, max_size=2),
                                  "haystack_dates": st.lists(st.one_of(st.just("2023/05/20 (Sat) 02:21"), stamps), min_size=1, max_size=2)}),
                   min_size=1, max_size=2)


@st.composite
def chatgpt_doc(draw: Any) -> list[dict[str, Any]]:
    n = draw(st.integers(1, 4))
    mapping: dict[str, Any] = {}
    for i in range(n):
        message = draw(optional_keys(
            {"author": optional_keys({"role": st.sampled_from(["user", "assistant", "system"])}, {}),
             "content": optional_keys({"parts": st.lists(words, min_size=1, max_size=2)}, {})},
            {"create_time": st.one_of(st.floats(1.6e9, 1.8e9), stamps), "id": ident}))
        mapping[f"n{i}"] = draw(optional_keys({"message": st.just(message)},
                                              {"parent": st.just(f"n{i - 1}" if i else None),
                                               "children": st.just([f"n{i + 1}"] if i + 1 < n else []), "id": st.just(f"n{i}")}))
    return [draw(optional_keys({"mapping": st.just(mapping)}, {"current_node": st.just(f"n{n - 1}"), "conversation_id": ident}))]


jsonl_doc = st.lists(optional_keys({"speaker": st.sampled_from(["Alice", "Bob"]), "text": words},
                                   {"conversation_id": ident, "session_id": ident, "timestamp": stamps, "id": ident}),
                     min_size=1, max_size=5)

FORMAT_DOCS: dict[str, st.SearchStrategy[Any]] = {
    "native": native_doc, "locomo": locomo_doc, "longmemeval": lme_doc, "chatgpt": chatgpt_doc(), "jsonl": jsonl_doc}


# -- the lab ------------------------------------------------------------------------------------------------------------


class Lab:
    """A temporary folder and a small built database the checks copy; made once per run."""

    BASE_CONVERSATION = {
        "conversation_id": "base", "participants": ["Alice", "Bob"],
        "messages": [
            {"id": "m1", "speaker": "Alice", "text": "I'm moving to Oslo in May.", "timestamp": "2024-01-08T10:00:00Z"},
            {"id": "m2", "speaker": "Bob", "text": "Nice! Is your cat Miso coming too?", "timestamp": "2024-01-08T10:01:00Z"},
            {"id": "m3", "speaker": "Alice", "text": "Forget Oslo, I'm moving to Porto now.", "timestamp": "2024-03-12T09:00:00Z"},
            {"id": "m4", "speaker": "Bob", "text": "Porto is lovely. Miso will like the sun.", "timestamp": "2024-03-12T09:02:00Z"},
        ],
    }

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root or tempfile.mkdtemp(prefix="tracecli-fuzz-"))
        self._n = 0
        self.base_db = self.root / "base.db"
        src = self.root / "base.json"
        src.write_text(json.dumps(self.BASE_CONVERSATION), encoding="utf-8")
        for args in (["ingest", src], ["build-graph"], ["compile-wiki"]):
            result = cli(*args, "--db", self.base_db)
            assert result.exit_code == 0, result.output
        self.answer_id = json.loads(cli("ask", "Where is Alice moving?", "--db", self.base_db, "--json").stdout)["answer_id"]
        self.base_bytes = self.base_db.read_bytes()

    def path(self, name: str) -> Path:
        """A path in a new folder of its own (the folder exists, the file does not)."""
        self._n += 1
        folder = self.root / f"case{self._n}"
        folder.mkdir()
        return folder / name

    def write_json(self, name: str, value: Any) -> Path:
        path = self.path(name)
        path.write_text(json.dumps(value), encoding="utf-8")
        return path

    def db_copy(self) -> Path:
        path = self.path("trace.db")
        shutil.copyfile(self.base_db, path)
        return path

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def cli(*args: Any, env: dict[str, str] | None = None) -> Any:
    from typer.testing import CliRunner

    from tracecli.cli import app

    return CliRunner().invoke(app, [str(a) for a in args], env=env)


def held(result: Any, codes: tuple[int, ...] = (0, 1, 2), *, rendered: bool = True) -> None:
    """The command ended as a user may expect: no traceback, a known exit code, one error line, nothing unsafe shown."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert result.exit_code in codes, (result.exit_code, result.output[-2000:])
    if result.exit_code == 2:
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    if rendered:  # JSON escapes them, views remove them: neither stream carries one raw
        assert not any(c in result.output for c in TERMINAL_UNSAFE), repr(result.output[-500:])


# -- the groups ---------------------------------------------------------------------------------------------------------

#: A check: runs one case, raises AssertionError when tracecli misbehaved, else names the outcome ("exit 2").
Check = Callable[["Lab", Any], "str | None"]


@dataclasses.dataclass
class Group:
    """A fuzz group: its name (the report's row), a strategy and a check of one case."""

    name: str
    strategy: st.SearchStrategy[Any]
    check: Check
    examples: int  # how many cases the test suite tries (the report may try more)


def _random_json(lab: Lab, value: Any) -> str:
    """Any JSON value through every format's parser."""
    read = sum(_parse_only(fmt)(lab, value) == "read" for fmt in FORMAT_DOCS)
    return f"read by {read} of {len(FORMAT_DOCS)} formats" if read else "refused by every format"


def _input_file(lab: Lab, fmt: str, doc: Any) -> Path:
    """The generated document as an input file of the format (JSON Lines for jsonl)."""
    path = lab.path("input.jsonl" if fmt == "jsonl" else "input.json")
    if fmt == "jsonl" and isinstance(doc, list):
        path.write_text("\n".join(json.dumps(r) for r in doc) + "\n", encoding="utf-8")
    else:
        path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _parse_only(fmt: str) -> Check:
    """The parser reads the document or refuses it with one line naming the file (as the format and as auto)."""
    def check(lab: Lab, doc: Any) -> str:
        from tracecli.errors import BadInput
        from tracecli.ingest import parse_file

        path = _input_file(lab, fmt, doc)
        outcome = []
        for chosen in (fmt, "auto"):
            try:
                parse_file(path, chosen)
                outcome.append("read")
            except BadInput as exc:
                assert str(exc).startswith(path.name) and "\n" not in str(exc), str(exc)
                outcome.append("refused")
        return outcome[0]
    return check


def _ingest(fmt: str) -> Check:
    """`tracecli ingest` of the document into a built database: stored, or refused in one line with the file unchanged."""
    def check(lab: Lab, doc: Any) -> str:
        src = _input_file(lab, fmt, doc)
        db = lab.db_copy()
        result = cli("ingest", src, "--format", fmt, "--db", db)
        held(result, (0, 2))
        if result.exit_code == 2:
            assert db.read_bytes() == lab.base_bytes, "a refused ingest changed the database"
        return f"exit {result.exit_code}"
    return check


def _db_bytes(lab: Lab, case: tuple[str, bytes, int, list[str]]) -> str:
    """A command on random bytes, an SQLite header with junk, or a built database with bytes overwritten."""
    kind, data, offset, args = case
    db = lab.path("fuzz.db")
    if kind == "random":
        raw = data
    elif kind == "header":
        raw = b"SQLite format 3\x00" + data
    else:  # a real database with bytes overwritten somewhere past the first page
        base = lab.base_bytes
        at = 4096 + offset % max(1, len(base) - 4096)
        raw = base[:at] + data + base[at + len(data):]
    db.write_bytes(raw)
    if "{file}" in args:
        src = db.with_name("input.json")
        src.write_text(json.dumps(Lab.BASE_CONVERSATION), encoding="utf-8")
        args = [str(src) if a == "{file}" else a for a in args]
    result = cli(*args, "--db", db)
    held(result)
    if kind != "mutated":
        assert result.exit_code == 2 and db.read_bytes() == raw, "a file that is no tracecli database was changed"
    return f"{kind}: exit {result.exit_code}"


DB_COMMANDS = [["stats"], ["ask", "Where is Alice moving?"], ["trace", "ans_x"], ["export"], ["audit"], ["wiki", "list"],
               ["graph", "export", "--format", "dot"], ["claims", "history", "Porto"], ["ingest", "{file}"], ["build-graph"],
               ["forget", "message", "m1"]]
db_cases = st.tuples(st.sampled_from(["random", "header", "mutated", "mutated"]), st.binary(min_size=1, max_size=64),
                     st.integers(0, 2**20), st.sampled_from(DB_COMMANDS))


def _hostile_conversation(lab: Lab, case: dict[str, Any]) -> str:
    """A conversation whose every text field is hostile, through ingest, the builds and the reading commands."""
    src = lab.write_json("hostile.json", {
        "conversation_id": case["cid"], "namespace": case["namespace"],
        "sessions": [{"id": case["sid"], "messages": [
            {"id": f"{case['mid']}{i}", "speaker": case["speakers"][i % len(case["speakers"])], "text": text,
             "timestamp": f"2024-03-0{i + 1}T10:00:00Z"} for i, text in enumerate(case["texts"])]}]})
    db = lab.path("trace.db")
    ingest = cli("ingest", src, "--db", db)
    held(ingest, (0, 2))
    if ingest.exit_code != 0:
        return "refused by ingest"
    ns = json.loads(cli("stats", "--db", db, "--json").stdout)["conversations"][0]["namespace"]
    for args in (["build-graph"], ["compile-wiki"], ["stats"], ["ask", case["question"]], ["claims", "history", case["query"]],
                 ["graph", "export", "--format", "dot"], ["wiki", "list"], ["audit"], ["export"]):
        held(cli(*args, "--namespace", ns, "--db", db) if args[0] not in ("stats", "export") else cli(*args, "--db", db))
    asked = cli("ask", case["question"], "--namespace", ns, "--db", db, "--json")
    held(asked)
    if asked.exit_code in (0, 1):
        held(cli("trace", json.loads(asked.stdout)["answer_id"], "--namespace", ns, "--db", db))
    held(cli("wiki", "export", lab.path("wiki"), "--namespace", ns, "--db", db))
    return "through every command"


hostile_cases = st.fixed_dictionaries({
    "cid": markup_text, "namespace": markup_text, "sid": markup_text, "mid": markup_text,
    "speakers": st.lists(chat_text, min_size=1, max_size=2), "texts": st.lists(st.one_of(chat_text, words), min_size=1, max_size=4),
    "question": chat_text, "query": chat_text,
})


def _hostile_arguments(lab: Lab, case: tuple[list[str], str]) -> str:
    """Hostile text in every argument of the reading commands (and ask), on the built database."""
    template, value = case
    args = [value if a == "{v}" else a for a in template]
    if "{answer}" in args:
        args[args.index("{answer}")] = lab.answer_id
    result = cli(*args, "--db", lab.base_db)
    held(result)
    return f"exit {result.exit_code}"


ARG_TEMPLATES = [["ask", "{v}"], ["ask", "Where is Alice?", "--as-of", "{v}"], ["ask", "Where is Alice?", "--conversation", "{v}"],
                 ["ask", "Where is Alice?", "--namespace", "{v}"], ["trace", "{v}"], ["trace", "{answer}", "--namespace", "{v}"],
                 ["claims", "history", "{v}"], ["graph", "show", "{v}"], ["wiki", "show", "{v}"], ["wiki", "list", "--type", "{v}"],
                 ["graph", "export", "--conversation", "{v}"], ["audit", "--conversation", "{v}"], ["export", "--conversation", "{v}"],
                 ["forget", "speaker", "{v}", "--dry-run"], ["stats"]]
argument_cases = st.tuples(st.sampled_from(ARG_TEMPLATES), hostile_text)


def _timestamps(lab: Lab, value: Any) -> str:
    """Input timestamps and --as-of dates are read as UTC or refused with ValueError, nothing else."""
    from tracecli.timeutil import parse_timestamp, parse_user_date

    outcome = "refused"
    for parse in (parse_timestamp, parse_user_date):
        try:
            out = parse(value)  # type: ignore[arg-type]
        except ValueError:
            continue
        except (AttributeError, TypeError):
            if parse is parse_user_date and not isinstance(value, str):
                continue  # parse_user_date takes text (the CLI only passes text)
            raise
        if isinstance(out, str):
            assert out.endswith("Z") and len(out) == 20, out
            outcome = "read"
    return outcome


def _llm_replies(lab: Lab, case: tuple[int, bytes, str]) -> str:
    """Whatever an OpenAI-compatible server answers, `complete` returns a result or raises ProviderError."""
    import httpx

    from tracecli.errors import ProviderError
    from tracecli.providers.llm import LLMSettings, OpenAIChatModel

    status, body, ctype = case

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=body, headers={"Content-Type": ctype})

    settings = LLMSettings(provider="openai", url="http://llm.invalid/v1", model="m", api_key="sk-fuzz-secret",
                           max_retries=1, max_reply_bytes=4096)
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        model = OpenAIChatModel(settings, client=client, sleep=lambda s: None)
        try:
            result = model.complete([{"role": "user", "content": "hi"}], schema)
        except ProviderError as exc:
            assert "sk-fuzz-secret" not in str(exc)
            return "provider error"
    assert result.ok or result.fallback or result.error
    return "usable reply" if result.ok else "unusable reply"


def _chat_body(value: Any) -> bytes:
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": value}}]}).encode()


llm_cases = st.tuples(
    st.sampled_from([200, 200, 200, 400, 401, 404, 429, 500, 503]),
    st.one_of(st.binary(max_size=200), json_value.map(lambda v: json.dumps(v).encode()),
              st.one_of(json_value.map(json.dumps), hostile_text, st.just("x" * 5000)).map(_chat_body),
              json_value.map(lambda v: _chat_body(json.dumps({"answer": v}))),
              st.text().map(lambda t: _chat_body(json.dumps({"answer": t})))),
    st.sampled_from(["application/json", "text/plain", ""]),
)

GROUPS = [
    *[Group(f"ingest {fmt} (parse)", doc, _parse_only(fmt), 60) for fmt, doc in FORMAT_DOCS.items()],
    Group("random JSON (parse, every format)", any_json, _random_json, 60),
    *[Group(f"ingest {fmt} (CLI)", doc, _ingest(fmt), 10) for fmt, doc in FORMAT_DOCS.items()],
    Group("--db bytes", db_cases, _db_bytes, 60),
    Group("hostile text fields (pipeline)", hostile_cases, _hostile_conversation, 4),
    Group("hostile arguments", argument_cases, _hostile_arguments, 60),
    Group("timestamps", stamps, _timestamps, 200),
    Group("LLM replies", llm_cases, _llm_replies, 80),
]

__all__ = ["GROUPS", "Group", "Lab", "cli", "held"]
