"""`tracecli eval locomo|updates|longmemeval` end to end, the judge against the scripted server, option parsing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from click.testing import Result
from llm_server import LLMServer, Scripted, json_reply, llm_server  # noqa: F401 (the fixture)
from typer.testing import CliRunner

from tracecli.commands import eval as eval_cmd
from tracecli.evaluate.judge import judge_answers, judge_states
from tracecli.providers.llm import LLMSettings, OpenAIChatModel

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
runner = CliRunner()

REPORT_KEYS = {"benchmark", "settings", "metrics", "systems", "summary", "cost", "notes", "items"}
ROW_KEYS = {"field", "group", "system", "n", "metrics"}
ITEM_KEYS = {"id", "conversation_id", "question", "gold", "groups", "answers", "scores", "evidence", "cited", "as_of",
             "answer_id", "latency_ms", "error"}
COST_KEYS = {"stages", "questions", "ask_latency_ms_median", "ask_latency_ms_p95", "context_words_mean",
             "llm_calls_total", "tokens_in_total", "tokens_out_total"}
STAGE_KEYS = {"stage", "seconds", "llm_calls", "tokens_in", "tokens_out", "cache_hits"}


def make_app() -> typer.Typer:
    app = typer.Typer(pretty_exceptions_enable=False, pretty_exceptions_show_locals=False, add_completion=False)

    @app.callback()
    def main() -> None:
        """Test app."""

    eval_cmd.register(app)
    eval_cmd.register(app)  # a second registration is a no-op
    return app


APP = make_app()


def invoke(*args: Any) -> Result:
    return runner.invoke(APP, [str(a) for a in args])


def one_json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    assert result.stdout.count("\n") == 1, result.stdout[:500]
    return json.loads(result.stdout)


def check_shape(data: dict[str, Any], benchmark: str) -> None:
    assert set(data) == REPORT_KEYS
    assert data["benchmark"] == benchmark
    assert set(data["cost"]) == COST_KEYS
    assert all(set(s) == STAGE_KEYS for s in data["cost"]["stages"])
    stages = [s["stage"] for s in data["cost"]["stages"]]
    assert stages[:3] == ["ingest", "build-graph", "compile-wiki"] and "ask" in stages
    assert all(set(r) == ROW_KEYS for r in data["summary"])
    assert all(set(it) == ITEM_KEYS for it in data["items"])
    assert set(data["settings"]["ask_settings"]) >= {"alpha", "beta", "gamma", "delta", "budget"}
    assert "git_commit" in data["settings"] and "embedder" in data["settings"]
    overall = [r for r in data["summary"] if r["field"] == "all"]
    assert {r["system"] for r in overall} == set(data["systems"])


# -- LoCoMo ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def locomo_run(locomo_dev: Path, embedder: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    out = tmp_path_factory.mktemp("locomo") / "report.md"
    result = invoke("eval", "locomo", locomo_dev, "--samples", "conv-26", "--limit", "5", "--baselines", "--json",
                    "--out", out)
    return one_json(result), out


def test_locomo_json_shape(locomo_run: tuple[Any, Path]) -> None:
    data, _ = locomo_run
    check_shape(data, "locomo")
    assert data["systems"] == ["tracecli", "w/o graph", "dense", "bm25", "rrf"]
    assert data["metrics"] == ["evidence_recall", "locomo_f1", "set_f1", "bleu1", "judge", "context_words"]
    assert len(data["items"]) == 5
    assert data["settings"]["samples"] == ["conv-26"] and data["settings"]["categories"] == [1, 2, 3, 4]
    assert data["cost"]["questions"] == 5
    groups = {r["group"] for r in data["summary"] if r["field"] == "category"}
    assert groups <= {"multi-hop", "temporal", "open-domain", "single-hop"}


def test_locomo_numbers_are_in_range(locomo_run: tuple[Any, Path]) -> None:
    data, _ = locomo_run
    for row in data["summary"]:
        m = row["metrics"]
        for key in ("evidence_recall", "locomo_f1", "set_f1", "bleu1"):
            assert m[key] is None or 0.0 <= m[key] <= 1.0, (row, key)
        assert m["judge"] is None  # no --judge
        assert 0.0 <= m["context_words"] <= 300.0
    for it in data["items"]:
        assert it["conversation_id"] == "conv-26"
        assert all(e.startswith("D") for e in it["evidence"])
        for system, scores in it["scores"].items():
            r = scores["evidence_recall"]
            assert r is None or 0.0 <= r <= 1.0
            assert isinstance(it["cited"][system], list)
        assert it["answer_id"] and it["answer_id"].startswith("ans_")


def test_locomo_markdown_report(locomo_run: tuple[Any, Path]) -> None:
    _, out = locomo_run
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# tracecli eval locomo")
    for needle in ("evidence recall", "flat RRF", "cost per stage", "ask.alpha", "git_commit", "budget_words"):
        assert needle in text, needle


# -- updates -----------------------------------------------------------------------------------


def test_updates_on_sample_gold(embedder: Any) -> None:
    data = one_json(invoke("eval", "updates", ROOT / "sample_conversations", "--questions",
                           ROOT / "sample_conversations" / "gold", "--baselines", "--limit", "10", "--json"))
    check_shape(data, "updates")
    assert data["systems"] == ["tracecli", "w/o graph", "dense_top1"]
    assert data["metrics"] == ["valid", "leakage", "net"]
    assert data["settings"]["format"] == "native"
    assert len(data["items"]) == 10
    # questions without conversation_id were matched to the conversation file of the same stem
    stems = {json.loads(p.read_text(encoding="utf-8"))["conversation_id"]: p.stem
             for p in (ROOT / "sample_conversations").glob("*.json")}
    for it in data["items"]:
        assert it["id"].split("#")[0] == stems[it["conversation_id"]]
    for it in data["items"]:
        for scores in it["scores"].values():
            assert scores["valid"] in (0.0, 1.0) and scores["leakage"] in (0.0, 1.0)
            assert scores["net"] == scores["valid"] - scores["leakage"]
    kinds = {r["group"] for r in data["summary"] if r["field"] == "kind"}
    assert kinds and kinds <= {"current", "as_of", "stable", "why"}
    for row in data["summary"]:
        assert 0.0 <= row["metrics"]["valid"] <= 1.0
        assert -1.0 <= row["metrics"]["net"] <= 1.0


def test_updates_on_locomo_format(embedder: Any) -> None:
    data = one_json(invoke("eval", "updates", ROOT / "benchmarks" / "data" / "updates_locomo.json", "--limit", "6",
                           "--json"))
    check_shape(data, "updates")
    assert data["settings"]["format"] == "locomo"
    assert {it["conversation_id"] for it in data["items"]} == {"amara-tomas-launch"}
    fields = {r["field"] for r in data["summary"]}
    assert {"kind", "revision"} <= fields


def test_updates_needs_questions_for_a_directory() -> None:
    result = invoke("eval", "updates", ROOT / "sample_conversations")
    assert result.exit_code == 2
    assert "--questions" in result.stderr


def test_updates_locomo_file_is_current() -> None:
    """benchmarks/data/updates_locomo.json is what make_updates_locomo.py writes."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_updates_locomo", ROOT / "benchmarks" / "make_updates_locomo.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    samples = mod.convert(mod.DEFAULT_DIR, mod.DEFAULT_QUESTIONS)
    on_disk = json.loads((ROOT / "benchmarks" / "data" / "updates_locomo.json").read_text(encoding="utf-8"))
    assert samples == on_disk
    qa = [q for s in on_disk for q in s["qa"]]
    assert any(q["outdated_answer"] for q in qa) and any(q["as_of"] for q in qa)


# -- LongMemEval ---------------------------------------------------------------------------------


def test_longmemeval_fixture(embedder: Any) -> None:
    data = one_json(invoke("eval", "longmemeval", FIXTURES / "longmemeval_eval.json", "--baselines", "--json"))
    check_shape(data, "longmemeval")
    ids = {it["id"] for it in data["items"]}
    assert ids == {"lme-update-1", "lme-single-2", "lme-multi-3"}  # the _abs item is skipped
    types = {r["group"] for r in data["summary"] if r["field"] == "question_type"}
    assert types == {"knowledge-update", "single-session-user", "multi-session"}
    assert any("abstention" in n for n in data["notes"])
    assert "bleu1" not in data["metrics"]
    for row in data["summary"]:
        for key in ("evidence_recall", "session_recall", "locomo_f1", "set_f1"):
            v = row["metrics"][key]
            assert v is None or 0.0 <= v <= 1.0
    upd = next(it for it in data["items"] if it["id"] == "lme-update-1")
    assert upd["evidence"] == ["sess_u1:0", "sess_u3:0"]


def test_longmemeval_include_abstention(embedder: Any) -> None:
    data = one_json(invoke("eval", "longmemeval", FIXTURES / "longmemeval_eval.json", "--include-abstention",
                           "--types", "single-session-user", "--json"))
    assert {it["id"] for it in data["items"]} == {"lme-single-2", "lme-single-4_abs"}
    assert {r["group"] for r in data["summary"] if r["field"] == "question_type"} == {"single-session-user", "abstention"}


# -- the judge, against the scripted server ---------------------------------------------------------


def _judge_model(server: LLMServer, concurrency: int = 2, store: Any = None) -> OpenAIChatModel:
    return OpenAIChatModel(LLMSettings(provider="openai", url=server.url, model="judge-model", max_retries=0,
                                       concurrency=concurrency), store, sleep=lambda s: None)


def test_judge_averages_three_passes(llm_server: LLMServer) -> None:
    def respond(body: Any) -> Scripted:
        user = body["messages"][-1]["content"]
        # pass 3 of the second item disagrees: its score is 2/3
        if "Paris" in user:
            return json_reply({"reasoning": "same city", "label": "CORRECT"})
        if "Lyon" in user and "pass 3" in user:
            return json_reply({"reasoning": "different", "label": "WRONG"})
        if "Lyon" in user:
            return json_reply({"reasoning": "close enough", "label": "CORRECT"})
        return json_reply({"reasoning": "no", "label": "WRONG"})

    llm_server.responder = respond
    model = _judge_model(llm_server)
    run = judge_answers(model, [("Where?", "Paris", "Paris"), ("Where?", "Lyon", "Lyon"), ("Where?", "Nice", "Oslo")])
    assert run.error is None and run.calls == 9 and run.unusable == 0
    assert [v.score for v in run.verdicts] == [1.0, pytest.approx(2 / 3), 0.0]
    assert all(len(v.labels) == 3 for v in run.verdicts)
    body = llm_server.requests[0].body
    assert body["temperature"] == 0.0
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["properties"]["label"]["enum"] == ["CORRECT", "WRONG"]


def test_judge_survives_bad_replies_and_a_dead_endpoint(llm_server: LLMServer) -> None:
    from llm_server import error_reply, invalid_json_reply

    llm_server.queue(invalid_json_reply(), invalid_json_reply())  # first pass unusable even after the retry
    llm_server.responder = lambda body: json_reply({"reasoning": "ok", "label": "CORRECT"})
    run = judge_answers(_judge_model(llm_server, concurrency=1), [("q", "a", "a")])
    assert run.unusable == 1 and run.verdicts[0].score == 1.0 and len(run.verdicts[0].labels) == 2

    llm_server.responder = lambda body: error_reply(500, "down")
    run = judge_answers(_judge_model(llm_server), [("q", "a", "a")])
    assert run.error and run.verdicts[0].score is None


def test_state_judge(llm_server: LLMServer) -> None:
    def respond(body: Any) -> Scripted:
        user = body["messages"][-1]["content"]
        label = "CURRENT" if "System answer: Porto" in user else "OUTDATED" if "System answer: Oslo" in user else "WRONG"
        return json_reply({"reasoning": "r", "label": label})

    llm_server.responder = respond
    run = judge_states(_judge_model(llm_server), [("Where?", "Porto", ["Oslo"], "Porto"), ("Where?", "Porto", ["Oslo"], "Oslo")])
    assert (run.verdicts[0].score, run.verdicts[0].leak) == (1.0, 0.0)
    assert (run.verdicts[1].score, run.verdicts[1].leak) == (0.0, 1.0)


def test_judge_without_llm_is_a_usage_error(locomo_dev: Path) -> None:
    result = invoke("eval", "locomo", locomo_dev, "--judge", "--limit", "1")
    assert result.exit_code == 2
    assert "--judge needs an LLM endpoint" in result.stderr


def test_longmemeval_with_judge(embedder: Any, llm_server: LLMServer, tmp_path: Path) -> None:
    """The library run with an offline pipeline and the judge on the scripted server."""
    from tracecli.evaluate.longmemeval import run_longmemeval
    from tracecli.store import open_store

    llm_server.responder = lambda body: json_reply({"reasoning": "r", "label": "CORRECT"})
    store = open_store(tmp_path / "lme.db")
    try:
        report = run_longmemeval(store, FIXTURES / "longmemeval_eval.json", judge=True, limit=1, embedder=embedder,
                                 llm=None, judge_model=_judge_model(llm_server, store=store))
        ledger = store.query("SELECT stage, COUNT(*) AS n FROM llm_ledger GROUP BY stage")
    finally:
        store.close()
    assert report.items[0].scores["tracecli"]["judge"] == 1.0
    overall = report.row("all", "overall", "tracecli")
    assert overall is not None and overall.metrics["judge"] == 1.0
    assert report.settings["judge"] == "openai:judge-model"
    assert ledger == [{"stage": "eval-judge", "n": 3}]
    assert any(s.stage == "eval-judge" and s.llm_calls == 3 for s in report.cost.stages)


# -- option parsing -------------------------------------------------------------------------------


def test_list_options_take_several_values(tmp_path: Path) -> None:
    f = tmp_path / "data.json"
    f.write_text("[]")
    args = ["--categories", "1", "2", "3", "--samples", "conv-26", "conv-30", str(f), "--limit", "5"]
    assert eval_cmd.join_list_options(args) == ["--categories", "1,2,3", "--samples", "conv-26,conv-30", str(f),
                                                "--limit", "5"]
    assert eval_cmd.join_list_options(["--categories", "1,2", "--categories", "4"]) == ["--categories", "1,2",
                                                                                          "--categories", "4"]
    assert eval_cmd.split_values(["1,2", "4", "5 3"]) == ["1", "2", "4", "5", "3"]


def test_bad_category_is_exit_2(locomo_dev: Path) -> None:
    result = invoke("eval", "locomo", locomo_dev, "--categories", "1", "9", "--limit", "1")
    assert result.exit_code == 2
    assert "not a LoCoMo category" in result.stderr


def test_missing_file_is_exit_2(tmp_path: Path) -> None:
    result = invoke("eval", "locomo", tmp_path / "nope.json")
    assert result.exit_code == 2
    assert "no such file" in result.stderr


def test_unknown_sample_is_exit_2(locomo_dev: Path) -> None:
    result = invoke("eval", "locomo", locomo_dev, "--samples", "conv-99", "--limit", "1")
    assert result.exit_code == 2
    assert "no sample 'conv-99'" in result.stderr
