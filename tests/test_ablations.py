"""The wiki's claims in the answer path, and `--ablate` switching parts off (issue 11, items 1 and 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ask_fixtures import build_chat_db
from typer.testing import CliRunner

from tracecli.cli import app
from tracecli.query.ask import Asker
from tracecli.query.settings import AskSettings
from tracecli.store import open_store

ROOT = Path(__file__).resolve().parent.parent
CHAT = ROOT / "sample_conversations" / "update_heavy.json"
ODD = Path(__file__).parent / "fixtures" / "open_domain.json"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    return build_chat_db(tmp_path_factory.mktemp("abl") / "a.db", [CHAT, ODD], embedder, wiki=True)


def _ask(db: Path, embedder: Any, question: str, conversation: str, *parts: str) -> Any:
    with open_store(db) as s:
        return Asker(s, embedder=embedder, settings=AskSettings(ablate=frozenset(parts))).ask(
            question, conversation_id=conversation, store_answer=False)


QUESTION = "What did Alice say about the wedding?"


def test_claim_items_cite_exactly_their_claims_message(db: Path, embedder: Any) -> None:
    res = _ask(db, embedder, QUESTION, "alice-bob-plans")
    claims = [c for c in res.context if c.kind == "claim"]
    assert claims, "the wiki's claims reach the context"
    with open_store(db) as s:
        for item in claims:
            assert len(item.source_refs) == 1
            ref = item.source_refs[0]
            mid = s.execute("SELECT id FROM messages WHERE conversation_id = 'alice-bob-plans' AND source_ref = ?",
                            (ref,)).fetchone()[0]
            texts = [t for (t, m) in s.execute("SELECT text, source_message_ids FROM claims") if json.loads(m) == [mid]]
            assert texts and any(t in item.text for t in texts), item.text


def test_ablating_the_wiki_removes_claim_items(db: Path, embedder: Any) -> None:
    res = _ask(db, embedder, QUESTION, "alice-bob-plans", "wiki")
    assert not [c for c in res.context if c.kind == "claim"]


def test_ablating_paths_removes_path_items(db: Path, embedder: Any) -> None:
    full = _ask(db, embedder, "Where is Alice moving?", "alice-bob-plans")
    assert any(c.kind == "path" for c in full.context) and full.paths
    cut = _ask(db, embedder, "Where is Alice moving?", "alice-bob-plans", "paths")
    assert not any(c.kind == "path" for c in cut.context) and not cut.paths


def test_ablating_frames_changes_a_frame_only_answer(db: Path, embedder: Any) -> None:
    q = "What is Wren's gym locker code?"
    full = _ask(db, embedder, q, "wren-jonas")
    assert "Quixotic-7731" in full.answer and full.support in ("frame", "chain")
    cut = _ask(db, embedder, q, "wren-jonas", "frames")
    assert cut.support != full.support


def test_cli_ablate_flag_and_bad_part(db: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(app, ["ask", QUESTION, "--db", str(db), "--conversation", "alice-bob-plans", "--json",
                             "--ablate", "wiki"])
    assert ok.exit_code in (0, 1), ok.output
    assert not [c for c in json.loads(ok.stdout)["context"] if c["kind"] == "claim"]
    bad = runner.invoke(app, ["ask", QUESTION, "--db", str(db), "--ablate", "everything"])
    assert bad.exit_code == 2 and "--ablate" in bad.output


def test_eval_prints_an_ablation_row_per_part(embedder: Any) -> None:
    result = CliRunner().invoke(app, ["eval", "updates", str(ROOT / "sample_conversations"), "--questions",
                                      str(ROOT / "sample_conversations" / "gold"), "--limit", "4", "--json",
                                      "--ablate", "paths", "--ablate", "frames"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["systems"] == ["tracecli", "w/o paths", "w/o frames"]
    assert data["settings"]["ablations"] == ["paths", "frames"]
    overall = {r["system"] for r in data["summary"] if r["field"] == "all"}
    assert overall == set(data["systems"])
    assert all(set(it["scores"]) == set(data["systems"]) for it in data["items"])


def test_without_the_graph_the_reader_sees_no_edges_and_no_revision_validity(db: Path, embedder: Any) -> None:
    full = _ask(db, embedder, "Where is Alice moving?", "alice-bob-plans")
    assert full.support == "chain" and "Porto" in full.answer
    flat = _ask(db, embedder, "Where is Alice moving?", "alice-bob-plans", "graph")
    assert flat.support != "chain" and not flat.paths
    assert not any(c.kind == "path" or "[OUTDATED]" in c.text for c in flat.context)


def test_flat_baselines_leave_out_what_was_said_after_the_as_of_date(db: Path, embedder: Any) -> None:
    import numpy as np

    from tracecli.evaluate.baselines import flat_search

    q = "Where is Alice moving?"
    vec = np.asarray(embedder.embed_batch([q])[0], dtype=np.float32)
    with open_store(db) as s:
        every = flat_search(s, "rrf", q, vec, ["alice-bob-plans"], k=40)
        early = flat_search(s, "rrf", q, vec, ["alice-bob-plans"], k=40, as_of="2024-02-15T00:00:00Z")
        refs = {r for _, refs in early.items for r in refs}
        times = dict(s.execute("SELECT source_ref, timestamp FROM messages WHERE conversation_id = 'alice-bob-plans'"))
    assert len(early.items) < len(every.items) and early.items
    assert all(times[r] <= "2024-02-15T00:00:00Z" for r in refs)


def test_the_ratio_column_compares_with_flat_systems_only() -> None:
    from tracecli.evaluate.report import result_tables
    from tracecli.evaluate.results import OVERALL, EvalReport, GroupRow

    systems = ["tracecli", "w/o frames", "w/o graph", "dense"]
    scores = {"tracecli": 0.6, "w/o frames": 0.9, "w/o graph": 0.4, "dense": 0.3}
    rows = [GroupRow("all", OVERALL, s, 10, {"evidence_recall": v}) for s, v in scores.items()]
    report = EvalReport("locomo", {}, ["evidence_recall"], systems, rows, None)  # type: ignore[arg-type]
    table = result_tables(report)[0]
    assert table.columns[-1] == "tracecli ÷ best flat"
    assert table.rows[-1][-1] == "1.50×"  # 0.6 / 0.4 (w/o graph), not / 0.9 (an ablation row)


@pytest.mark.parametrize("query", ["Alice's cat", "Alice’s cats", "alice cat"])
def test_claims_history_matches_possessives_and_inflections(db: Path, query: str) -> None:
    from tracecli.wiki.lifecycle import claim_history

    with open_store(db) as s:
        chains = claim_history(s, query, "alice-bob-plans")
    assert chains and any("cat" in st.text.lower() for ch in chains for st in ch.steps)
