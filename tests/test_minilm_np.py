"""The numpy port of all-MiniLM-L6-v2 gives sentence-transformers' vectors without torch."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tracecli.errors import ProviderError
from tracecli.providers import embeddings, minilm_np
from tracecli.providers.embeddings import MINILM_DIM, MINILM_ID, NUMPY_MAX_FOR_TORCH, MiniLMEmbedder

LONG_WORDS = " ".join(f"word{i}" for i in range(400))  # well past 256 tokens
TEXTS = [
    "where is Alice going now?",
    "Tokyo",
    "",
    "   ",
    ".",
    "OK",
    "Alice moved from Leeds to Lisbon in March 2024 and started at Brightwave on 29 April.",
    "WHY IS EVERYTHING IN CAPITALS?!",
    "Ünïcödé café naïve façade — “curly quotes” and ‘single’ ones… São Paulo, Zürich, Kraków",
    "Japan got pushed again 😭 Third time lucky 🎉👍🏽🇯🇵",
    "😂" * 300,
    "日本語のテキストと中文字符，還有한국어도 있어요",
    "Привет, как дела? Ελληνικά κείμενα. עברית. العربية",
    "tabs\tand\nnewlines\r\nand  double  spaces",
    "def f(x):\n    return x ** 2  # code, symbols: <>&{}[]|\\^~`",
    "https://example.com/path?q=1&r=2 mail me at a.b@example.org",
    "1234567890 3.14159 2024-02-04T10:34:53Z 18/10/2024",
    LONG_WORDS,
    LONG_WORDS + " and a different tail that lies beyond the cut",
    "The quick brown fox jumps over the lazy dog. " * 60,
    "supercalifragilisticexpialidocious " * 3 + "x" * 150,
]


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


@pytest.fixture(scope="module")
def both(embedder: MiniLMEmbedder) -> tuple[np.ndarray, np.ndarray]:
    """The same texts through sentence-transformers/torch and through the numpy port."""
    return embedder.embed_torch(TEXTS), embedder.embed_numpy(TEXTS)


def test_numpy_path_matches_sentence_transformers(both: tuple[np.ndarray, np.ndarray]) -> None:
    torch_vecs, np_vecs = both
    assert np_vecs.shape == torch_vecs.shape == (len(TEXTS), MINILM_DIM)
    assert np_vecs.dtype == np.float32
    cos = _cos(torch_vecs, np_vecs)
    worst = int(np.argmin(cos))
    assert cos.min() >= 1 - 1e-4, f"text {worst} ({TEXTS[worst][:40]!r}): cosine {cos[worst]}"
    np.testing.assert_allclose(np.linalg.norm(np_vecs, axis=1), 1.0, atol=1e-5)


def test_long_texts_are_cut_at_256_tokens_like_sentence_transformers(both: tuple[np.ndarray, np.ndarray]) -> None:
    model = minilm_np.load()
    assert model.config.max_seq_length == 256
    ids = model.tokenize([LONG_WORDS, "Tokyo", ""])
    assert len(ids[0]) == 256 and ids[0][0] == 101 and ids[0][-1] == 102  # [CLS] … [SEP]
    assert ids[2] == [101, 102]
    torch_vecs, np_vecs = both
    a, b = TEXTS.index(LONG_WORDS), TEXTS.index(LONG_WORDS) + 1
    # the two texts differ only after the cut, so both paths must see the same input
    np.testing.assert_allclose(np_vecs[a], np_vecs[b], atol=1e-6)
    np.testing.assert_allclose(torch_vecs[a], torch_vecs[b], atol=1e-6)


def test_batching_and_padding_do_not_change_vectors(both: tuple[np.ndarray, np.ndarray]) -> None:
    _, batched = both
    model = minilm_np.load()
    alone = np.stack([model.encode([t])[0] for t in TEXTS])
    assert _cos(batched, alone).min() >= 1 - 1e-5
    assert model.encode([]).shape == (0, MINILM_DIM)


def _routed(monkeypatch: pytest.MonkeyPatch, emb: MiniLMEmbedder) -> list[str]:
    calls: list[str] = []
    monkeypatch.setattr(emb, "embed_numpy", lambda texts: calls.append("numpy") or np.zeros((len(texts), 384), np.float32))
    monkeypatch.setattr(emb, "embed_torch", lambda texts: calls.append("torch") or np.zeros((len(texts), 384), np.float32))
    return calls


def test_default_embedder_never_uses_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    emb = MiniLMEmbedder()
    calls = _routed(monkeypatch, emb)
    emb.embed_batch(["q"])
    embeddings.embedding_path(emb, 50_000)(["s"] * 3)
    assert calls == ["numpy", "numpy"]


def test_torch_embedder_routes_by_count_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embeddings, "_MINILM_MODEL", None)  # as in a fresh process: torch not loaded
    monkeypatch.setattr(embeddings, "_CACHE", {})
    emb = embeddings.get_embedder("minilm-torch")
    assert isinstance(emb, MiniLMEmbedder)
    assert (emb.id, emb.dimension) == (MINILM_ID, MINILM_DIM)  # one model id whichever path runs
    calls = _routed(monkeypatch, emb)
    emb.embed_batch(["q"])
    emb.embed_batch(["s"] * NUMPY_MAX_FOR_TORCH)
    emb.embed_batch(["s"] * (NUMPY_MAX_FOR_TORCH + 1))
    emb.embed_batch(["s"] * 7)  # torch being loaded now changes nothing: the path depends on the count
    assert calls == ["numpy", "numpy", "torch", "numpy"]
    assert emb.embed_batch([]).shape == (0, MINILM_DIM)


def test_an_ingest_takes_one_path_for_all_its_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    emb = MiniLMEmbedder(numpy_bulk_max=10)
    calls = _routed(monkeypatch, emb)
    for total in (10, 11):
        embed = embeddings.embedding_path(emb, total)
        for _ in range(3):
            embed(["chunk"] * 4)  # small chunks of a big total stay on the big total's path
    assert calls == ["numpy"] * 3 + ["torch"] * 3


def test_embedding_path_falls_back_to_embed_batch() -> None:
    class Plain:
        id, dimension = "plain", 2

        def embed_batch(self, texts: list[str]) -> np.ndarray:
            return np.ones((len(texts), 2), np.float32)

    assert embeddings.embedding_path(Plain(), 5000)(["a", "b", "c"]).shape == (3, 2)


def test_chunks_keep_padding_small() -> None:
    lengths = [2, 2, 256, 5, 9, 256, 7]
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    chunks = minilm_np._chunks(order, lengths)
    assert sorted(i for c in chunks for i in c) == list(range(len(lengths)))
    assert all(len(c) <= minilm_np.CHUNK for c in chunks)
    assert [lengths[i] for i in chunks[-1]] == [256, 256]  # the long ones never pad the short ones


def _config_copy(tmp_path: Path) -> Path:
    src = minilm_np.model_dir()
    for rel in ("config.json", "sentence_bert_config.json", "modules.json", "tokenizer_config.json", "1_Pooling/config.json"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src / rel, tmp_path / rel)
    return tmp_path


def test_config_is_read_from_the_package(tmp_path: Path) -> None:
    cfg = minilm_np.BertConfig.from_dir(_config_copy(tmp_path))
    assert (cfg.hidden_size, cfg.num_heads, cfg.num_layers, cfg.max_seq_length) == (384, 12, 6, 256)
    assert cfg.do_lower_case is False  # lower-casing happens in tokenizer.json's normaliser


def test_a_model_packaged_differently_is_refused(tmp_path: Path) -> None:
    path = _config_copy(tmp_path)
    pooling = path / "1_Pooling" / "config.json"
    cfg = json.loads(pooling.read_text())
    cfg.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    pooling.write_text(json.dumps(cfg))
    with pytest.raises(ProviderError, match="mean pooling"):
        minilm_np.BertConfig.from_dir(path)


def test_two_processes_give_the_same_bits(monkeypatch) -> None:
    """A big call shares its chunks with a forked helper process; every chunk is still one forward pass on
    one BLAS thread, so the vectors are bit for bit those of one process."""
    import os

    import numpy as np

    model = minilm_np.load()
    words = "the cat moved to Lisbon last spring because the rent in Porto went up again".split()
    texts = [" ".join(words[: 1 + (i * 7) % len(words)]) + f" {i}" for i in range(300)]
    monkeypatch.setenv(minilm_np.PROCESSES_ENV, "1")
    alone = model.encode(texts)
    monkeypatch.setenv(minilm_np.PROCESSES_ENV, "2")
    shared = model.encode(texts)
    helper = model._helper()
    assert helper is not None and helper.apply(os.getpid) != os.getpid()  # a second process did take part
    assert np.array_equal(alone, shared)
    # the two halves balance the work (rows × padded length)
    ids = model.tokenize(texts)
    parts = minilm_np._chunks(sorted(range(len(ids)), key=lambda i: len(ids[i])), [len(x) for x in ids])
    mine, theirs = minilm_np._share(parts, ids)
    cost = [sum(len(p) * max(len(ids[i]) for i in p) for p in half) for half in (mine, theirs)]
    assert sorted(sum(mine + theirs, [])) == list(range(len(texts))) and abs(cost[0] - cost[1]) <= 0.1 * sum(cost)


def test_cache_sized_blocks_give_the_same_bits(monkeypatch) -> None:
    """GELU and the attention's softmax run on cache-sized blocks; the vectors are bit for bit those of one
    block per array (the whole batch at once), for short texts and for texts cut at 256 tokens."""
    model = minilm_np.load()
    texts = TEXTS + [f"{w} " * (5 + i * 11) for i, w in enumerate(("rent", "Lisbon", "badminton", "promotion"))]
    monkeypatch.setenv(minilm_np.PROCESSES_ENV, "1")
    # the blocks are real: a 256-token text's attention scores (12 heads × 256²) span several blocks
    assert minilm_np.BLOCK_FLOATS < 12 * 256 * 256 and minilm_np.GELU_ROWS < 256
    blocked = model.encode(texts)
    monkeypatch.setattr(minilm_np, "BLOCK_FLOATS", 1 << 40)
    monkeypatch.setattr(minilm_np, "GELU_ROWS", 1 << 40)
    whole = model.encode(texts)
    assert np.array_equal(blocked, whole)


def test_long_texts_are_shared_from_two_chunks_short_ones_from_eight() -> None:
    """A call goes to the helper process when its chunks are many (8) or, from two chunks, when they hold
    enough work: two chunks of page-length texts do, a question or a session's few short snapshots do not."""
    def parts_of(lengths: list[int]) -> tuple[list[list[int]], list[list[int]]]:
        ids = [[0] * n for n in lengths]
        return minilm_np._chunks(sorted(range(len(ids)), key=lambda i: len(ids[i])), lengths), ids

    assert minilm_np._worth_sharing(*parts_of([256] * 20))  # two chunks of wiki pages
    assert not minilm_np._worth_sharing(*parts_of([256] * 16))  # one chunk: nothing to share
    assert not minilm_np._worth_sharing(*parts_of([24] * 40))  # three chunks of short messages
    assert minilm_np._worth_sharing(*parts_of([24] * 130))  # nine chunks of them, as before


def test_mapped_weights_equal_safetensors_own_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """The weights are read through a memory map of model.safetensors: the same names, dtypes, shapes and
    values as `safetensors.numpy.load_file`, and a model built from either embeds to the same bits."""
    from safetensors.numpy import load_file

    path = minilm_np.model_dir() / "model.safetensors"
    ours, theirs = minilm_np._map_safetensors(path), load_file(str(path))
    assert ours.keys() == theirs.keys() and len(ours) > 90
    for name, value in theirs.items():
        assert ours[name].dtype == value.dtype and ours[name].shape == value.shape, name
        assert np.array_equal(ours[name], value), name
    monkeypatch.setenv(minilm_np.PROCESSES_ENV, "1")  # no helper process for these throwaway models
    mapped = minilm_np.MiniLMNumpy()
    monkeypatch.setattr(minilm_np, "_map_safetensors", lambda p: load_file(str(p)))
    read = minilm_np.MiniLMNumpy()
    texts = TEXTS[:12]
    assert np.array_equal(mapped.encode(texts), read.encode(texts))
    assert np.array_equal(mapped.encode_each([[t] for t in texts])[3], read.encode([texts[3]]))
