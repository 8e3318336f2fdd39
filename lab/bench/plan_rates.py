"""Measure the rates `semantica plan` estimates with (the `plan:` block of conf/default.yaml).

    python -m lab.bench.plan_rates REPO [REPO ...] [--sample 256]

Indexes each repository into a scratch index root (the embedding cache is used, so this is cheap when
warm), then reports per language the chunks per KiB of source actually produced, the snapshot's bytes
on disk per chunk, and the encoder's cold throughput on a sample of those chunk texts (fixed batches,
no cache): the numbers to copy into `plan.chunks_per_kib`, `plan.index_bytes_per_chunk` and
`plan.embed_chunks_per_s`.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

from pipelines.discover import RepoSource
from pipelines.indexer import Indexer
from semantica.config import load_config
from semantica.layout import IndexLayout
from semantica.runtime.encoder import Encoder

KIB = 1024


def directory_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repos", nargs="+")
    parser.add_argument("--sample", type=int, default=256, help="chunk texts encoded to time the encoder")
    parser.add_argument("--cache-dir", default=os.environ.get("SEMANTICA_TEST_CACHE", ""))
    args = parser.parse_args()
    chunks_by_lang: Counter[str] = Counter()
    bytes_by_lang: Counter[str] = Counter()
    disk = chunks_total = 0
    texts: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        overrides = [f"paths.index_root={scratch}/index"] + ([f"paths.cache_dir={args.cache_dir}"] if args.cache_dir else [])
        config = load_config(None, overrides)
        for repo in args.repos:
            entries, _ = RepoSource(repo, None, config.discover).entries()
            for entry in entries:
                bytes_by_lang[entry.language] += entry.size
            summary = Indexer(config, progress=False).index(repo)
            paths = IndexLayout(config.paths.index_root).current(summary.repo)
            table = pq.read_table(paths.chunks, columns=["language", "content"]).to_pydict()
            chunks_by_lang.update(table["language"])
            texts.extend(table["content"][: args.sample])
            disk += directory_bytes(paths.root)
            chunks_total += len(table["language"])
        encoder = Encoder(config.encoder)
        sample = texts[: args.sample]
        encoder.encode(sample[:8])  # load and warm up
        start = time.perf_counter()
        encoder.encode(sample)
        seconds = time.perf_counter() - start
    rates = {lang: round(chunks_by_lang[lang] / (bytes_by_lang[lang] / KIB), 3)
             for lang in sorted(bytes_by_lang) if bytes_by_lang[lang]}
    total_kib = sum(bytes_by_lang.values()) / KIB
    print(json.dumps({
        "chunks_per_kib": {**rates, "default": round(chunks_total / total_kib, 3)},
        "index_bytes_per_chunk": round(disk / chunks_total),
        "embed_chunks_per_s": round(len(sample) / seconds, 1),
        "measured_on": {"repos": args.repos, "chunks": chunks_total, "kib": round(total_kib),
                        "encoded": len(sample), "load_average": os.getloadavg()},
    }, indent=1))


if __name__ == "__main__":
    main()
