"""Fit the per-language chunk rates `semantica plan` estimates with (`plan.chunk_rates` in conf/default.yaml).

    python -m lab.bench.plan_chunk_fit --fit REPO [REPO ...] --check REPO [REPO ...] [--out FILE]

Each repository is read at HEAD (bare mirrors work) through indexing's own discovery and parser: the files
`plan` lists and the chunks `index` stores for them (`FileParser`, the same count a build publishes). On the
`--fit` repositories, one non-negative least-squares line per language over their files,
chunks = per_file + per_kib * KiB + per_function * functions (functions: `pipelines.plan.function_count`);
a language with fewer than `MIN_FILES_TO_FIT` files gets no row (the `default` line, fitted on every file). On the `--check` repositories
(never the fit ones), `IndexPlanner`'s estimate with those rates against the parsed count.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from pipelines.manifest import RepoSpec, open_spec
from pipelines.parse import FileParser
from pipelines.plan import DEFAULT_RATE, KIB, RATE_TERMS, IndexPlanner, function_count
from pipelines.source_files import SourceFile
from semantica.config import load_config

MIN_FILES_TO_FIT = 5
DIGITS = 3


def file_rows(config, repo: str) -> list[tuple[str, float, int, int]]:  # noqa: ANN001
    """(language, KiB, functions, chunks) of every file `index` would parse at HEAD."""
    opened = open_spec(RepoSpec(name=repo, path=repo, commit="HEAD"), config.discover, Path(config.paths.cache_dir),
                       config.ray.clone_timeout_s)
    sizes = {e.path: e.size for e in opened.entries}
    parser = FileParser(config.chunk)
    return [(item.language, sizes[item.path] / KIB, function_count(item.path, item.text),
             len(parser.parse("fit", item).chunks))
            for item in opened.source.read(opened.entries) if isinstance(item, SourceFile)]


def line(rows: list[tuple[str, float, int, int]]) -> dict[str, float]:
    chunks = np.array([r[3] for r in rows], dtype=float)
    design = np.array([[1.0, r[1], r[2]] for r in rows])
    solution, _ = nnls(design, chunks)
    return {term: round(float(v), DIGITS) for term, v in zip(RATE_TERMS, solution) if v}


def fit(rows: list[tuple[str, float, int, int]]) -> dict[str, dict[str, float]]:
    by_language: dict[str, list[tuple[str, float, int, int]]] = defaultdict(list)
    for row in rows:
        by_language[row[0]].append(row)
    rates = {language: line(found) for language, found in sorted(by_language.items()) if len(found) >= MIN_FILES_TO_FIT}
    rates[DEFAULT_RATE] = line(rows)
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", nargs="+", required=True)
    parser.add_argument("--check", nargs="*", default=[])
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    config = load_config(None, [])
    fit_rows = [row for repo in args.fit for row in file_rows(config, repo)]
    rates = fit(fit_rows)
    planner = IndexPlanner(replace(config, plan=replace(config.plan, chunk_rates=rates)))
    checks = []
    for repo in args.check:
        parsed = sum(r[3] for r in file_rows(config, repo))
        estimate = planner.plan(RepoSpec(name=repo, path=repo, commit="HEAD")).estimate.chunks
        checks.append({"repo": repo, "parsed_chunks": parsed, "estimate": estimate,
                       "error_pct": round(100 * (estimate - parsed) / parsed, 1)})
    result = {"chunk_rates": rates, "fit_on": args.fit, "fit_files": len(fit_rows), "checks": checks}
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
