"""tracecli.commands.common: progress for logs, one-line usage errors, the shared chat model (no subprocess here;
tests/test_cli_scripts.py runs the installed command)."""

from __future__ import annotations

from typer.testing import CliRunner

from tracecli.cli import app
from tracecli.commands.common import LogProgress, chat_model

runner = CliRunner()


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_log_progress_writes_a_line_per_stage_every_few_seconds_and_at_the_end() -> None:
    lines: list[str] = []
    clock = Clock()
    log = LogProgress(lines.append, interval=5.0, clock=clock)
    log("embed", 0, 10)
    for done in range(1, 10):
        clock.now += 1.0
        log("embed", done, 10)
    clock.now += 0.5
    log("embed", 10, 10)
    log("embed", 10, 10)  # repeated: nothing new
    assert lines == ["embed: 0/10", "embed: 5/10 (5s)", "embed: 10/10 done in 9.5s"]


def test_log_progress_starts_again_for_a_new_stage_or_round() -> None:
    lines: list[str] = []
    log = LogProgress(lines.append, clock=Clock())
    log("build", 10, 10)  # one call that is already complete: one line
    log("build", 1, 4)  # the next conversation counts again
    log("build", 4, 4)
    log("wiki", 2, 2)
    assert lines == ["build: 10/10 done", "build: 1/4", "build: 4/4 done in 0.0s", "wiki: 2/2 done"]


def test_usage_errors_are_one_line_through_the_runner_too() -> None:
    result = runner.invoke(app, ["stats", "--nope"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "error: tracecli stats: No such option: --nope (see 'tracecli stats --help')"]


def test_version_through_the_runner() -> None:
    from tracecli import __version__

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout == f"tracecli {__version__}\n"


def test_chat_model_is_offline_without_configuration(tmp_path: object) -> None:
    model = chat_model(None)  # type: ignore[arg-type]
    assert model.id == "none" and not model.is_available
