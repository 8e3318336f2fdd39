"""Indexing speed and golden-set quality of config variants, each built from empty caches (a benchmark).

    python -m lab.bench.golden_variants --work DIR [--variant NAME=section.field=value,...]... [--plugin MODULE]...
        [--out FILE]

Each variant indexes the golden set's labelled files of this working tree (`conf/golden/semantica.jsonl`)
into its own fresh index and cache, then scores the golden set with late interaction on and off, and without
any chunk model (lexical, symbol and graph retrievers, no late interaction: what the build buys). Reported
per variant: chunks/s, the driver's stage seconds, NDCG@10 (and the other golden metrics) and the load
average before and after; variants run one after the other, so compare chunks/s only at similar loads and
read the stage seconds (codec fit, forward pass) as the code's share. The variant `base` (no overrides)
always runs first and is the reference. `--plugin` imports a lab plug-in first and runs its `install()` if it has
one (for example `lab.plugins.static_encoder`, which a variant then names through `encoder.model_path`).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
GOLDEN_SET = REPO_ROOT / "conf" / "golden" / "semantica.jsonl"
RESULTS = REPO_ROOT / "lab" / "results" / "fast" / "golden_variants.json"
NAME = "semantica/golden"
LATE = {"late_on": True, "late_off": False}
NO_CHUNK_MODEL = ("lexical", "symbol", "graph")  # the retrievers that read no chunk vector


def golden_files(golden_set: Path) -> list[str]:
    """Every file a golden query labels (the files its symbols live in too)."""
    from jobs.eval.golden import load_golden_set

    files = {item.split("::")[0] for q in load_golden_set(golden_set) for item in q.items()}
    return sorted(files)


def parse_variant(text: str) -> tuple[str, list[str]]:
    name, _, overrides = text.partition("=")
    return name, [o for o in overrides.split(",") if o]


def run_variant(work: Path, name: str, overrides: list[str], files: list[str]) -> dict[str, Any]:
    from jobs.eval.golden import GoldenEval, load_golden_set
    from pipelines.indexer import Indexer
    from semantica.config import load_config
    from serving.pipeline import SearchPipeline

    root = work / name
    config = load_config(None, [f"paths.index_root={root / 'index'}", f"paths.cache_dir={root / 'cache'}",
                                "discover.include_globs=" + json.dumps(files), *overrides], environ={})
    indexer = Indexer(config, progress=False)
    indexer.runner.identity()  # the encoder loads (and exports once) outside the timing
    entry: dict[str, Any] = {"variant": name, "overrides": overrides, "load_before": round(os.getloadavg()[0], 2),
                             "effective": {"encoder": asdict(config.encoder), "token_vectors": asdict(config.token_vectors)}}
    start = time.perf_counter()
    summary = indexer.index(str(REPO_ROOT), NAME)
    wall = time.perf_counter() - start
    entry.update(chunks=summary.chunks, wall_s=round(wall, 1), chunks_per_s=round(summary.chunks / wall, 2),
                 stage_s=summary.seconds, load_after_index=round(os.getloadavg()[0], 2))
    queries = load_golden_set(GOLDEN_SET)
    pipeline = SearchPipeline(config)
    for label, late in LATE.items():
        report = GoldenEval(pipeline, NAME, late_interaction=late).run(queries)
        entry[label] = {k: round(v, 4) for k, v in report.overall.items()}
        entry[f"{label}_ndcg_by_intent"] = {i: round(m["NDCG@10"], 4) for i, m in report.by_intent.items()}
        entry[f"{label}_top5"] = [row["top"] for row in report.queries]
    report = GoldenEval(pipeline, NAME, strategies=NO_CHUNK_MODEL, late_interaction=False).run(queries)
    entry["no_chunk_model"] = {k: round(v, 4) for k, v in report.overall.items()}
    entry["load_after"] = round(os.getloadavg()[0], 2)
    return entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="one index and cache per variant go here")
    parser.add_argument("--variant", action="append", default=[], help="NAME=section.field=value,... (repeatable)")
    parser.add_argument("--plugin", action="append", default=[], help="a lab plug-in module to import first")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    for module in args.plugin:
        plugin = importlib.import_module(module)
        if hasattr(plugin, "install"):  # a plug-in that routes rather than registers
            plugin.install()
    variants = [("base", []), *(parse_variant(v) for v in args.variant)]
    files = golden_files(GOLDEN_SET)
    out: dict[str, Any] = {"command": "python -m lab.bench.golden_variants " + " ".join(sys.argv[1:] if argv is None else argv),
                           "files": len(files), "cpus": os.cpu_count(), "variants": []}
    for name, overrides in variants:
        out["variants"].append(run_variant(args.work, name, overrides, files))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1) + "\n")
    base = out["variants"][0]
    for entry in out["variants"][1:]:
        entry["vs_base"] = {"chunks_per_s": round(entry["chunks_per_s"] / max(base["chunks_per_s"], 1e-9), 3),
                            **{f"{label} NDCG@10 points": round((entry[label]["NDCG@10"] - base[label]["NDCG@10"]) * 100, 2)
                               for label in LATE}}
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps([{k: v for k, v in e.items() if not k.endswith("_top5")} for e in out["variants"]], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
