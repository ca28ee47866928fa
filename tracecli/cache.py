"""Files that are expensive and deterministic to rebuild from installed packages, kept between processes.

Each is built on first use from what is installed (never downloaded) under a name that carries a hash of
everything it depends on, so a package upgrade or a rule change picks a new file. The directory is
$TRACECLI_CACHE_DIR, else $XDG_CACHE_HOME/tracecli, else ~/.cache/tracecli; when it cannot be written the
caller just rebuilds per process.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

#: environment variable: where tracecli keeps these files
CACHE_ENV = "TRACECLI_CACHE_DIR"


def cache_dir() -> Path:
    """$TRACECLI_CACHE_DIR, else $XDG_CACHE_HOME/tracecli, else ~/.cache/tracecli."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tracecli"


def cache_file(kind: str, key: object, suffix: str = "txt") -> Path:
    """The file for `kind` built from inputs `key` (anything with a stable repr)."""
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:16]
    return cache_dir() / f"{kind}-{digest}.{suffix}"


def read_cached(path: Path) -> str | None:
    """The file's text, or None when it is not there (or unreadable)."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def write_cached(path: Path, text: str) -> bool:
    """Write atomically (a concurrent reader sees all of it or nothing); False when it cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        return False
    return True
