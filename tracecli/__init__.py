"""tracecli: state-aware memory over long conversations, in one SQLite file."""

__version__ = "0.1.0"
