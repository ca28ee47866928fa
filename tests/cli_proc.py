"""Run the installed `tracecli` console script in a fresh process, as a user's shell or a CI script does.

The command runs with the test's environment minus every provider variable (no network) and with
Hugging Face offline; PYTHONPATH is kept, so a worktree's code is what runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def tracecli_command() -> list[str]:
    """The console script next to this interpreter (what `pip install` put there), else `python -m tracecli.cli`."""
    script = Path(sys.executable).with_name("tracecli")
    if script.exists():
        return [str(script)]
    found = shutil.which("tracecli")
    return [found] if found else [sys.executable, "-m", "tracecli.cli"]


def cli_env(**extra: str) -> dict[str, str]:
    """The environment a subprocess gets: no provider variables, models offline, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACECLI_", "OPENAI_"))}
    env.pop("COLUMNS", None)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false", **extra)
    return env


def run_cli(*args: object, cwd: Path | None = None, timeout: float = 300, **env: str) -> subprocess.CompletedProcess[str]:
    """`tracecli ARGS` with stdout and stderr captured (both pipes: not a terminal)."""
    return subprocess.run([*tracecli_command(), *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env=cli_env(**env), timeout=timeout, check=False)


def run_shell(script: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """A bash script with `$TRACECLI` set to the console script and this interpreter's directory first on PATH
    (so `python` in a one-liner is the one that runs the tests)."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=cwd, timeout=timeout, check=False,
                          env=cli_env(TRACECLI=" ".join(tracecli_command()), PATH=path))


def error_line(proc: subprocess.CompletedProcess[str], code: int, *words: str) -> str:
    """The one line a failed command printed on stderr (exit `code`, nothing on stdout, no traceback)."""
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout == "", proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: "), lines[0]
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]
