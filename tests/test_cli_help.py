"""Every command has help text, `--help` works, and the README lists every command."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from tracecli.cli import app

README = Path(__file__).resolve().parent.parent / "README.md"
COMMANDS = typer.main.get_command(app).commands  # type: ignore[attr-defined]
runner = CliRunner()


def test_there_are_commands() -> None:
    assert {"ingest", "stats"} <= set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_has_help(name: str) -> None:
    cmd = COMMANDS[name]
    assert (cmd.help or "").strip(), f"`tracecli {name}` has no help text"
    result = runner.invoke(app, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.stdout
    first_line = cmd.help.strip().splitlines()[0]
    # rich may re-wrap the line; compare its first words
    assert " ".join(first_line.split()[:4]) in " ".join(result.stdout.split())


def test_top_level_help_lists_every_command() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.stdout
    for name in COMMANDS:
        assert re.search(rf"\b{re.escape(name)}\b", result.stdout), name


def test_no_arguments_shows_help() -> None:
    result = runner.invoke(app, [])
    assert "Usage:" in result.output
    assert "Traceback" not in result.output


def test_module_entry_point() -> None:
    proc = subprocess.run([sys.executable, "-m", "tracecli.cli", "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "ingest" in proc.stdout


def test_readme_names_every_command() -> None:
    if not README.exists():
        pytest.skip("README.md does not exist yet")
    text = README.read_text(encoding="utf-8")
    missing = [name for name in COMMANDS if not re.search(rf"\b{re.escape(name)}\b", text)]
    assert not missing, f"README.md does not mention: {', '.join(missing)}"
