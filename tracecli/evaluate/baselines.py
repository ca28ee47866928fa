"""Flat turn-level retrieval baselines over the same notes: MiniLM dense, BM25 (FTS5), and both fused by RRF.

No graph, no validity, no wiki: the ranked notes themselves are the context,
cut at the same word budget as tracecli's context, so each figure can be read
as a ratio against tracecli. A flat retriever has no reader; where a benchmark
needs an answer, the baseline's answer is its top-1 note text (the raw top-1
row). The fair comparison — tracecli's own reader over the same flat evidence,
no edges, no revision validity — is the `w/o graph` row that `--baselines`
adds (`AskSettings.ablate`). As-of questions filter the flat notes by date too.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tracecli.query.retrieve import hybrid_search
from tracecli.store.db import Store

if TYPE_CHECKING:
    from tracecli.providers.embeddings import Embedder

BASELINES: dict[str, str] = {"dense": "dense", "bm25": "sparse", "rrf": "hybrid"}
BASELINE_LABELS: dict[str, str] = {
    "dense": "flat dense (MiniLM)",
    "bm25": "flat BM25 (FTS5)",
    "rrf": "flat dense+BM25 (RRF)",
}


@dataclass
class FlatResult:
    """One baseline's ranked notes for one question."""

    name: str
    items: list[tuple[str, list[str]]]  # (note text, [source ref]) best first
    latency_ms: float

    @property
    def top1(self) -> str:
        """The top-ranked note's text: the baseline's answer."""
        return self.items[0][0] if self.items else ""


def flat_search(store: Store, name: str, question: str, query_vec: np.ndarray, conversation_ids: Sequence[str],
                *, k: int = 40, rrf_k: int = 60, as_of: str | None = None) -> FlatResult:
    """Rank notes by one baseline (dense | bm25 | rrf); each item cites its one message.

    With `as_of` (an ISO time), notes said after it are left out, as tracecli leaves them out of an as-of answer."""
    if name not in BASELINES:
        raise ValueError(f"unknown baseline {name!r}; choose one of {', '.join(BASELINES)}")
    t = time.perf_counter()
    hits = hybrid_search(store, question, query_vec, conversation_ids, k_dense=k, k_sparse=k, rrf_k=rrf_k,
                         mode=BASELINES[name])
    if as_of is not None:
        hits = [h for h in hits if not h.timestamp or h.timestamp <= as_of]
    items = [(h.text, [h.source_ref or h.message_id]) for h in hits]
    return FlatResult(name, items, (time.perf_counter() - t) * 1000.0)


def embed_questions(embedder: Embedder, questions: Sequence[str], batch: int = 64) -> list[np.ndarray]:
    """Question vectors, embedded in batches (one model for the whole run)."""
    out: list[np.ndarray] = []
    for start in range(0, len(questions), batch):
        vecs = embedder.embed_batch(list(questions[start:start + batch]))
        out.extend(np.asarray(v, dtype=np.float32) for v in vecs)
    return out


def depth_for(budget: int) -> int:
    """How many notes to rank so that any budget can be filled (notes are rarely under 4 words)."""
    return max(40, budget // 4)


__all__ = ["BASELINES", "BASELINE_LABELS", "FlatResult", "depth_for", "embed_questions", "flat_search"]
