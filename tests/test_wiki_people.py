"""Wiki pages a person would keep: whose fact a claim is, value phrases, plain facts, history, Obsidian export.

The conversation is written for these tests (invented people, places and values): each speaker states
things about themselves and about the other ("you work at …", "your knee …"), so a page that took its
facts from the session or the trajectory instead of the statement would carry the other person's facts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from test_wiki_common import ingest
from typer.testing import CliRunner

from tracecli.graph.build import build_graph
from tracecli.store import open_store
from tracecli.wiki import compile_wiki, get_page

CID = "ines-tomasz"
CONVERSATION = {
    "conversation_id": CID,
    "participants": ["Ines", "Tomasz"],
    "sessions": [
        {"id": "s1", "started_at": "2023-03-02T19:00:00Z", "messages": [
            ("Ines", "Congrats on the new job! So you work at the harbour authority now?"),
            ("Tomasz", "Yes, I started at the harbour authority on Monday. How is your knee doing?"),
            ("Ines", "My knee is still swollen after the fall. I'm allergic to peanuts, so the hospital food was a gamble. "
                     "I work at the bakery on Quay Street."),
            ("Tomasz", "Your knee will heal. Your job at the bakery must be hard with it."),
            ("Ines", "My favourite band is Velvet Orchard. My locker code at the pool is K7-2291. My dog Noodle is lovely and lazy."),
            ("Tomasz", "My hobbies are rowing and chess. I live in Gdynia."),
            ("Ines", "My weekends are lovely and lazy. You work at the harbour authority, so your weekends are busy."),
            ("Tomasz", "You bake bread at dawn, so you need lazy weekends."),
        ]},
        {"id": "s2", "started_at": "2023-09-10T19:00:00Z", "messages": [
            ("Tomasz", "Big news: I moved to Sopot last week."),
            ("Ines", "Lovely! Noodle says hi. I quit the bakery and I work at the library now."),
        ]},
    ],
}


def _native(conv: dict[str, Any]) -> dict[str, Any]:
    out = dict(conv, sessions=[])
    for s in conv["sessions"]:
        day = s["started_at"][:11]
        msgs = [{"id": f"{s['id']}-m{n}", "speaker": who, "text": text, "timestamp": f"{day}19:{n:02d}:00Z"}
                for n, (who, text) in enumerate(s["messages"], 1)]
        out["sessions"].append({"id": s["id"], "started_at": s["started_at"], "messages": msgs})
    return out


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    tmp = tmp_path_factory.mktemp("people")
    src = tmp / "conv.json"
    src.write_text(json.dumps(_native(CONVERSATION)), encoding="utf-8")
    path = tmp / "trace.db"
    store = open_store(path)
    try:
        ingest(store, [src], embedder)
        build_graph(store)
        compile_wiki(store, embedder=embedder)
        store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        store.close()
    return path


@pytest.fixture
def store(db: Path) -> Any:
    s = open_store(db, create=False)
    yield s
    s.close()


def _section(md: str, name: str) -> str:
    return md.split(f"## {name}", 1)[1].split("\n## ", 1)[0] if f"## {name}" in md else ""


def _cited(md: str) -> list[str]:
    return re.findall(r"\(claim (cl_[0-9a-f]{10});", _section(md, "Key facts"))


# -- whose fact ----------------------------------------------------------------------------------------------


def test_a_page_never_carries_another_persons_fact(store: Any) -> None:
    for person, other in (("Ines", "Tomasz"), ("Tomasz", "Ines")):
        md = get_page(store, person.lower(), CID).markdown
        cited = _cited(md)
        assert cited, person
        subjects = {r[0] for r in store.execute(
            f"SELECT subject FROM claims WHERE id IN ({','.join('?' * len(cited))})", cited)}
        assert subjects == {person}, (person, subjects)
        assert other not in _section(md, "Key facts") and other not in _section(md, "Items / counts"), person
    ines = get_page(store, "ines", CID).markdown
    tomasz = get_page(store, "tomasz", CID).markdown
    # what each said about the other ("you work at …", "your knee …") is on the other's page
    assert "harbour authority" not in ines and "harbour authority" in _section(tomasz, "Key facts")
    assert "knee" not in tomasz and "knee" in _section(ines, "Key facts")
    assert "Ines bakes bread" in _section(ines, "Key facts")


def test_plainly_stated_facts_appear_on_the_persons_page(store: Any) -> None:
    facts = _section(get_page(store, "ines", CID).markdown, "Key facts")
    for fact in ("Ines is allergic to peanuts", "Ines's favourite band is Velvet Orchard",
                 "Ines's locker code at the pool is K7-2291"):
        assert fact in facts, fact
    # each fact carries its quote as a block quote under the bullet
    assert "  > I'm allergic to peanuts, so the hospital food was a gamble." in facts


def test_no_revision_crosses_from_one_person_to_another(store: Any) -> None:
    rows = store.execute(
        "SELECT n.subject, o.subject, o.text, n.text FROM claim_ops op JOIN claims n ON n.id = op.claim_id "
        "JOIN claims o ON o.id = op.target_id WHERE op.op = 'REVISE' AND op.conversation_id = ?", (CID,)).fetchall()
    assert rows  # Gdynia → Sopot at least
    assert all(new == old for new, old, *_ in rows), rows
    # Ines's "you work at the harbour authority" is Tomasz's employer; it retires nothing of hers
    retired = [r[0] for r in store.execute(
        "SELECT c.text FROM claims c WHERE c.subject = 'Ines' AND c.status = 'deprecated' AND c.conversation_id = ?",
        (CID,))]
    assert not any("harbour" in t for t in retired)
    harbour = store.execute("SELECT subject, status FROM claims WHERE facet = 'employer' AND item LIKE '%harbour%'").fetchall()
    assert harbour and all(r == ("Tomasz", "active") for r in harbour), harbour


# -- value phrases -------------------------------------------------------------------------------------------


def test_inventory_items_are_value_phrases(store: Any) -> None:
    items = _section(get_page(store, "ines", CID).markdown, "Items / counts")
    assert "Ines's pets (1 current): dog Noodle" in items
    assert not re.search(r"pets[^\n]*: [^\n]*\bdog, Noodle", items)
    tomasz = _section(get_page(store, "tomasz", CID).markdown, "Items / counts")
    assert "Tomasz's hobbies (2 current): rowing, chess" in tomasz


def test_an_adjective_pair_is_no_hobby_list(store: Any) -> None:
    items = {r[0] for r in store.execute("SELECT item FROM claims WHERE conversation_id = ? AND facet = 'hobbies'", (CID,))}
    assert items >= {"rowing", "chess"}
    assert not items & {"lovely", "lazy", "lovely and lazy"}
    # the sentence itself is kept as Ines's claim
    texts = [r[0] for r in store.execute("SELECT text FROM claims WHERE subject = 'Ines'")]
    assert "Ines's weekends are lovely and lazy." in texts


# -- history -------------------------------------------------------------------------------------------------


def test_changes_show_as_a_dated_history_with_quotes(store: Any) -> None:
    history = _section(get_page(store, "tomasz", CID).markdown, "History")
    lines = history.strip().splitlines()
    assert lines[0] == "- **Tomasz · home**"
    old = lines.index("  - 2023-03-02 · Tomasz lives in Gdynia. — s1-m6")
    new = lines.index("  - 2023-09-10 · Tomasz lives in Sopot. _(current)_ — s2-m1")
    assert old < new
    assert lines[old + 1] == "    > I live in Gdynia." and lines[new + 1] == "    > Big news: I moved to Sopot last week."
    # a retraction closes a thread with the retracting quote; a value cut after "on" is the whole value phrase
    ines = _section(get_page(store, "ines", CID).markdown, "History").strip().splitlines()
    start = ines.index("- **Ines · employer**")
    assert ines[start + 1: start + 5] == [
        "  - 2023-03-02 · Ines works at bakery on Quay Street. — s1-m3", "    > I work at the bakery on Quay Street.",
        "  - 2023-09-10 · no longer holds — s2-m2", "    > I quit the bakery and I work at the library now."]
    assert "Tomasz" not in "\n".join(ines)


# -- Obsidian export -----------------------------------------------------------------------------------------


def _front_matter(text: str) -> dict[str, Any]:
    assert text.startswith("---\n"), text[:40]
    block = text.split("\n---\n", 1)[0].splitlines()[1:]
    return {k: json.loads(v) for k, v in (line.split(": ", 1) for line in block)}


def _invoke(*args: Any, env: dict[str, str] | None = None) -> Any:
    from tracecli.cli import app

    return CliRunner().invoke(app, [str(a) for a in args], env=env)


def test_export_writes_an_obsidian_vault(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "vault"
    result = _invoke("wiki", "export", out, "--conversation", CID, "--db", db, "--json")
    assert result.exit_code == 0, result.output
    files = json.loads(result.stdout)["files"]
    kinds = {f["kind"] for f in files}
    assert kinds == {"page", "claim"}
    folder = out / CID
    notes = {p.stem: p for p in folder.rglob("*.md")}
    assert len(notes) == len(files)
    page = (folder / "tomasz.md").read_text(encoding="utf-8")
    fm = _front_matter(page)
    assert fm["title"] == "Tomasz" and fm["type"] == "entity" and fm["conversation"] == CID and fm["trajectories"]
    assert "](" not in page.split("\n---\n", 1)[1]  # no markdown links left: wiki links only
    links = re.findall(r"\[\[([^\]|]+)(?:\|[^\]]*)?\]\]", "".join(p.read_text(encoding="utf-8") for p in notes.values()))
    assert links and all(target in notes for target in links), [t for t in links if t not in notes]
    # page → claim → person: the Sopot claim's note quotes its message and links back to Tomasz's page
    sopot = re.search(r"Tomasz lives in Sopot\. \(claim \[\[(cl_[0-9a-f]{10})\]\]", page)
    assert sopot
    note = notes[sopot.group(1)].read_text(encoding="utf-8")
    meta = _front_matter(note)
    assert meta["status"] == "active" and meta["subject"] == "Tomasz" and meta["source_refs"] == ["s2-m1"]
    assert meta["predecessor"] and meta["predecessor"] in notes
    assert "> Big news: I moved to Sopot last week." in note and "> — s2-m1 (m_" in note and "2023-09-10" in note
    assert "About [[tomasz|Tomasz]]" in note and "Replaces [[" in note
    # topic pages link the people they are about
    assert any("[[tomasz|Tomasz]]" in p.read_text(encoding="utf-8") or "[[ines|Ines]]" in p.read_text(encoding="utf-8")
               for name, p in notes.items() if name not in ("ines", "tomasz") and not name.startswith("cl_"))


@pytest.mark.parametrize("target", ["a-file", "a-file/below"])
def test_export_to_a_place_that_is_no_folder_is_one_line_exit_2(db: Path, tmp_path: Path, target: str) -> None:
    (tmp_path / "a-file").write_text("keep me", encoding="utf-8")
    before = db.read_bytes()
    result = _invoke("wiki", "export", tmp_path / target, "--db", db)
    assert result.exit_code == 2, result.output
    err = result.stderr.strip()
    assert err.startswith("error:") and "\n" not in err and "a-file" in err and "Traceback" not in result.output
    assert (tmp_path / "a-file").read_text(encoding="utf-8") == "keep me" and db.read_bytes() == before


# -- claims history ------------------------------------------------------------------------------------------


def test_claims_history_finds_a_possessive_and_agrees_on_status(db: Path) -> None:
    result = _invoke("claims", "history", "Tomasz's homes", "--db", db, "--json")
    assert result.exit_code == 0, result.output
    chain = next(c for c in json.loads(result.stdout)["chains"] if c["fact"] == "Tomasz|residence")
    by_text = {s["text"]: s for s in chain["steps"]}
    old = by_text["Tomasz lives in Gdynia."]
    assert old["status"] == "deprecated" and old["op_status"] == "active"
    assert by_text["Tomasz lives in Sopot."]["status"] == "active"
    table = _invoke("claims", "history", "Tomasz's homes", "--db", db, env={"COLUMNS": "250"})
    assert table.exit_code == 0
    row = next(line for line in table.output.splitlines() if old["claim_id"] in line)
    cells = [c.strip() for c in re.split(r"[│┃]", row)]
    assert any(c.startswith("deprecated") for c in cells) and "active" not in cells, row
    dogs = _invoke("claims", "history", "Ines's dogs", "--db", db, "--json")
    assert dogs.exit_code == 0 and any(c["fact"] == "Ines|pet_name:dog" for c in json.loads(dogs.stdout)["chains"])


# -- whose statement: the parse ------------------------------------------------------------------------------


@pytest.mark.parametrize("sentence, value, expected", [
    ("You moved to Sopot last week.", None, ("Tomasz", "person")),
    ("My knee is still swollen.", None, ("Ines", "holder")),
    ("Your job at the bakery must be hard.", None, ("Tomasz", "holder")),
    ("Moved to Sopot last week.", None, ("Ines", "dropped")),
    ("It was pouring all day.", None, (None, "other")),
    ("My brother Mateo is getting married in Lagos on 5 May.", "5 May 2026", ("Ines", "relative")),
    ("Tomasz started at the harbour authority.", None, ("Tomasz", "person")),
])
def test_statement_subject_reads_whose_fact_it_is(sentence: str, value: str | None, expected: tuple[Any, str]) -> None:
    from tracecli.graph.frames import statement_subject
    from tracecli.graph.nlp import DocCache

    doc = DocCache().parse([sentence])[0]
    assert statement_subject(doc, "Ines", "Tomasz", ["Ines", "Tomasz"], value=value) == expected
