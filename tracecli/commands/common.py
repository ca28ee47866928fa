"""What every command module shares: option shapes, the error guard (no imports of tracecli.cli, so no cycles)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from tracecli import render
from tracecli.errors import TraceError

F = TypeVar("F", bound=Callable[..., Any])

DbOpt = Annotated[
    Path,
    typer.Option("--db", envvar="TRACECLI_DB", help="The database file (env TRACECLI_DB).", show_default=True),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print only JSON on stdout (stable keys).")]
DEFAULT_DB = Path("tracecli.db")
# Kept in step with tracecli.scope (not imported here, so `--help` stays light).
DEFAULT_NAMESPACE = "default"
NamespaceOpt = Annotated[
    str,
    typer.Option(
        "--namespace", envvar="TRACECLI_NAMESPACE", show_default=True,
        help="Work in this namespace (user or agent) only; nothing of another namespace is read (env TRACECLI_NAMESPACE).",
    ),
]


def guarded(func: F) -> F:
    """Turn library errors into one line on stderr and the right exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except TraceError as exc:
            render.error_line(str(exc))
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            render.error_line("interrupted; nothing from the unfinished step was written")
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]
