"""Add in-file hard negatives to commit pairs mined before `mine-pairs` wrote them.

    python -m lab.train.commit_negatives PAIRS_DIR OUT_DIR --repos-dir MIRRORS [--set pairs.commit_negatives=N]

Each commit row gets the negatives `PairMiner.in_file_negatives` picks today (the changed files read at the row's
parent, the unchanged functions BM25 ranks highest for the message), so old and new pairs train alike without
re-mining diffs. Docstring parts are copied as they are. Parts already under OUT_DIR are skipped (resumable).
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Sequence
from pathlib import Path

import polars as pl
from tqdm import tqdm

from jobs.eval.instances import find_repo
from jobs.train.pairs import COMMIT, PairMiner, check_corpus, write_part
from pipelines.discover import RepoSource
from semantica.config import is_train_override, load_config, load_train_config


def add_negatives(miner: PairMiner, part: Path, repo_path: str, target: Path) -> int:
    """`part` rewritten to `target` with each commit row's in-file negatives; returns the rows given any."""
    rows = pl.read_parquet(part).to_dicts()
    given = 0
    for row in tqdm(rows, desc=part.parent.name + "/" + part.name, disable=not miner.progress):
        if row["kind"] != COMMIT or not row["parent"]:
            continue
        at_parent = miner.functions_at(RepoSource(repo_path, row["parent"], miner.discover), set(row["path"].split(",")))
        row["negative_keys"], row["negative_documents"] = miner.in_file_negatives(
            row["query"], at_parent, set(row["positive_keys"]))
        given += bool(row["negative_keys"])
    write_part(target, rows)
    return given


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pairs", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--repos-dir", type=Path, required=True)
    parser.add_argument("--repo", action="append", default=[], help="only these repositories (owner/name)")
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    args = parser.parse_args(argv)
    pairs = load_train_config(None, [o for o in args.overrides if is_train_override(o)]).pairs
    miner = PairMiner(load_config(None, [o for o in args.overrides if not is_train_override(o)]), pairs, args.out,
                      progress=True)
    directories = sorted(d for d in args.pairs.iterdir() if d.is_dir())
    for directory in directories:
        repo = directory.name.replace("+", "/", 1)
        if args.repo and repo not in args.repo:
            continue
        check_corpus([repo])
        repo_path = str(find_repo(args.repos_dir, repo))
        for part in sorted(directory.glob("*.parquet")):
            target = args.out / directory.name / part.name
            if target.is_file():
                continue
            if part.name.startswith("commits-"):
                print(f"{repo} {part.name}: {add_negatives(miner, part, repo_path, target)} rows with negatives")
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(part, target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
