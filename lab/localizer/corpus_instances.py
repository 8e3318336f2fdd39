"""Corpus commits as replay instances: a seeded sample of `--per-repo` commits of each named corpus repository, the
commit message as the query, its parent as the base commit, its changed files and functions as gold, so
`lab.localizer.mswe_replay` can measure a stage on repositories no shipped model trained on.

    python -m lab.localizer.corpus_instances --corpus bench/corpus --repo gorilla/mux --repo sindresorhus/ky \
        --per-repo 16 --seed 7 --out corpus_instances.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

from semantica.languages import language_of


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", required=True, help="the corpus directory (one <owner>+<name>.jsonl each)")
    parser.add_argument("--repo", action="append", required=True, help="owner/name (repeatable)")
    parser.add_argument("--per-repo", type=int, default=16)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--min-query-chars", type=int, default=0, help="keep messages of at least this many characters")
    parser.add_argument("--max-query-chars", type=int, default=0,
                        help="keep messages of at most this many characters (0: no bound)")
    parser.add_argument("--query-regex", default="", help="keep messages this regex matches (searched anywhere)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    wanted = re.compile(args.query_regex)
    rng = random.Random(args.seed)
    with Path(args.out).open("w") as out:
        for repo in args.repo:
            rows = [row for line in (Path(args.corpus) / f"{repo.replace('/', '+')}.jsonl").open()
                    if within(len((row := json.loads(line))["query"]), args.min_query_chars, args.max_query_chars)
                    and wanted.search(row["query"])]
            rng.shuffle(rows)
            for row in rows[: args.per_repo]:
                out.write(json.dumps({
                    "instance_id": f"{repo.replace('/', '__')}-{row['sha'][:10]}", "repo": row["repo"],
                    "base_commit": row["parent"], "problem_statement": row["query"], "gold_files": row["files"],
                    "gold_functions": row.get("functions", []), "language": language_of(row["files"][0])}) + "\n")
    return 0


def within(length: int, least: int, most: int) -> bool:
    """`least <= length <= most`, `most` 0 meaning no upper bound."""
    return length >= least and (not most or length <= most)


if __name__ == "__main__":
    raise SystemExit(main())
