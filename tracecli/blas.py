"""One BLAS thread for small matrix products (spaCy's parse, the numpy MiniLM port).

The matrices are small and OpenBLAS's extra worker threads busy-wait: on a
loaded 2-core machine one question took 1.3 s on two threads and 10 ms on
one. threadpoolctl is optional; without it BLAS keeps its defaults.
"""

from __future__ import annotations

import contextlib
from typing import Any

_CONTROLLER: Any = None  # None: not looked up yet; False: threadpoolctl is missing


def one_blas_thread() -> contextlib.AbstractContextManager[Any]:
    """A context in which BLAS runs on one thread (a no-op without threadpoolctl)."""
    return blas_threads(1)


def blas_threads(limit: int | None) -> contextlib.AbstractContextManager[Any]:
    """A context in which BLAS runs on at most `limit` threads (None: its defaults; a no-op without threadpoolctl)."""
    global _CONTROLLER
    if limit is None:
        return contextlib.nullcontext()
    if _CONTROLLER is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            _CONTROLLER = False
        else:
            _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=limit, user_api="blas") if _CONTROLLER else contextlib.nullcontext()
