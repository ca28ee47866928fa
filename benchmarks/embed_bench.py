"""Bulk embedding of short chat messages with the packaged MiniLM weights: which way is fastest on this machine?

Each way runs in a fresh process (so its imports and model loading are counted apart from the embedding):
torch through sentence-transformers on length-sorted chunks (what ingest did before issue 19), and the numpy port
(`tracecli.providers.minilm_np`) on one or on all BLAS threads. Every way's vectors are compared with torch's
(minimum cosine). Prints a table.

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
        for label, way in WAYS.items():
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
    print("| way | load (imports + weights) | embed wall | embed CPU | texts/s | min cosine vs torch |")
    print("| --- | --- | --- | --- | --- | --- |")
    for label, way, r in rows:
        cos = float(np.min(np.sum(vectors[way] * ref, axis=1)))
        print(f"| {label} | {r['load_s']:.2f} s | {r['embed_s']:.2f} s | {r['embed_cpu_s']:.2f} s | "
              f"{len(texts) / r['embed_s']:,.0f} | {cos:.6f} |")


if __name__ == "__main__":
    main()
