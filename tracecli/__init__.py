"""tracecli: state-aware memory over long conversations, in one SQLite file."""

__version__ = "0.1.0"

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracecli.api import Memory


def __getattr__(name: str) -> Any:
    # imported on first use: `tracecli --help` and the fast read commands never pay for the facade's imports
    if name == "Memory":
        from tracecli.api import Memory

        return Memory
    raise AttributeError(f"module 'tracecli' has no attribute {name!r}")


__all__ = ["Memory", "__version__"]
