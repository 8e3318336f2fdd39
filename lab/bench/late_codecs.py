"""Measurement script (not product code): golden-set NDCG@10 of late interaction with compressed token
vectors vs uncompressed MaxSim, on ONE index with the SAME candidates (only the document token
representation changes). Needs an index built with token_vectors.enabled=false whose on-the-fly token
cache holds the candidates' float16 token vectors (run the golden set once with late interaction on).
Usage: PYTHONPATH=. python lab/bench/late_codecs.py  (paths below). Results: lab/results/late_compression.json
"""
import json
from pathlib import Path

import numpy as np

from jobs.eval.golden import GoldenEval, load_golden_set
from semantica.config import load_config
from semantica.stores.token_vectors import TokenCodec, TokenProjection
from serving.pipeline import SearchPipeline
from serving.rerankers.late_interaction import maxsim

golden = load_golden_set("conf/golden/semantica.jsonl")
cfg = load_config(None, ["paths.index_root=/tmp/fast-eval/onthefly/index", "paths.cache_dir=/tmp/fast-eval/cache"])
root = Path("/tmp/fast-eval/cache/token_vectors")
# a projection fitted on this repository's tokens (the first 50k the indexer saw), per dim
sample = []
p = SearchPipeline(cfg)
late = p.stages.reranker("late_interaction").model
for d in sorted(late.cache.directory.glob("*/*.npy"))[:400]:
    sample.append(np.load(d).astype(np.float32))
sample = np.concatenate(sample)
print("fit sample tokens", len(sample), flush=True)
variants = {"uncompressed_fp16": None}
for dim in (32, 64, 96, 128, 192, 0):
    variants[f"d{dim or 384}_int8"] = TokenCodec(TokenProjection.fit(sample[:50000], dim), "int8")
variants["d128_fp16"] = TokenCodec(TokenProjection.fit(sample[:50000], 128), "float16")
for m in (32, 64, 96):
    variants[f"pq{m}"] = TokenCodec.fit(sample[:50000], 0, "pq", m)
results = {}
for name, codec in variants.items():
    pipe = SearchPipeline(cfg)
    rr = pipe.stages.reranker("late_interaction").model
    def scores(query, chunks, rr=rr, codec=codec):
        q = rr.query_tokens(query)
        docs = rr.document_tokens(chunks)
        out = {}
        for c in chunks:
            d = docs[c.content_sha]
            if codec is None:
                out[c.chunk_id] = maxsim(q, d)
            else:
                dd = codec.decode(*codec.encode(d))
                out[c.chunk_id] = maxsim(codec.projection.apply(q), dd)
        return out, set()
    rr._late_scores = scores
    rep = GoldenEval(pipe, "semantica/self").run(golden)
    bpt = codec.bytes_per_token() if codec else 384 * 2
    results[name] = {"bytes_per_token": bpt, **rep.overall, "by_intent": {i: v["NDCG@10"] for i, v in rep.by_intent.items()}}
    print(name, json.dumps(results[name]), flush=True)
Path("/tmp/fast-eval/sim.json").write_text(json.dumps(results, indent=1))
