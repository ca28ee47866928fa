"""Writing a command's `--out` file: whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path

from tracecli.errors import BadInput


def write_out(path: str | Path, data: str | bytes) -> None:
    """Write `data` to `path` through a temporary file renamed into place.

    BadInput (exit 2) when `path` is a directory or cannot be written; the temporary file is removed
    then, and an existing file at `path` is left as it was.
    """
    path = Path(path)
    if path.is_dir():
        raise BadInput(f"{path}: is a directory; give --out a file name")
    tmp = path.with_name(path.name + ".tmp")
    try:
        if isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            tmp.write_text(data, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise BadInput(f"cannot write {path}: {exc.strerror or exc}") from None
