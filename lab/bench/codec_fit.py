"""The token codec's pq fit on 2 and on 1 FAISS OpenMP threads, interleaved (a benchmark).

    python -m lab.bench.codec_fit [--tokens 3000] [--rounds 2]

Unit random vectors at the encoder's width, fitted as an index build fits them (`token_vectors.pq_m`,
`token_vectors.fit_iterations` from conf/default.yaml). Each round fits on 2 threads, then on 1; the load
average is recorded beside every fit, since the machine may be shared. Writes
lab/results/fast/codec_fit_threads.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS = REPO_ROOT / "lab" / "results" / "fast" / "codec_fit_threads.json"
ENCODER_WIDTH = 384  # all-MiniLM-L6-v2's token outputs
THREAD_COUNTS = (2, 1)


def main(argv: list[str] | None = None) -> int:
    from semantica.config import load_config
    from semantica.stores.token_vectors import Quantization, TokenCodec

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=3000, help="token vectors to fit on (a small first repository)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    settings = load_config(None, [], environ={}).token_vectors
    sample = np.random.default_rng(0).standard_normal((args.tokens, ENCODER_WIDTH)).astype(np.float32)
    sample /= np.linalg.norm(sample, axis=1, keepdims=True)
    fits: list[dict] = []
    for round_number in range(args.rounds):
        for threads in THREAD_COUNTS:
            load = round(os.getloadavg()[0], 2)
            start = time.perf_counter()
            codec = TokenCodec.fit(sample, settings.dim, Quantization.PQ, settings.pq_m, settings.fit_iterations, threads)
            fits.append({"round": round_number, "threads": threads, "seconds": round(time.perf_counter() - start, 2),
                         "load_before": load, "codec": codec.sha})
            print(json.dumps(fits[-1]), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"tokens": args.tokens, "pq_m": settings.pq_m,
                                          "iterations": settings.fit_iterations, "fits": fits}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
