"""The history signal of each SWE-bench instance (or labelled corpus commit), for the history studies
(lab/eval/history_tune.py):

    python -m lab.eval.history_lists (--instances FILE | --corpus DIR [--per-repo N]) --repos-dir DIR --out DIR
        [--keep N] [--repo-filter OWNER/NAME ...] [--config FILE] [--set section.field=value ...]

For each instance the repository's bare clone is read at its base commit (first-parent ancestors only, through
the sha cache of semantica/stores/history), a BM25 index over those commits' messages answers the issue text, and
`OUT/<instance>.parquet` keeps the `keep` most similar commits: (rank, sha, score, author_time, subject, files),
files limited to those that exist at the base commit (lists mined when history also read functions have a
`functions` column too, ignored). `OUT/<instance>.priors.parquet` keeps the fix-frequency priors (kind "file",
key, changes, fixes, last_change_days). The
votes are a pure function of the stored commits (`semantica.stores.history.index.vote`), so the vote weights can be
replayed without git. A re-run skips written instances.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl

from jobs.eval.instances import Instance, find_repo, load_instances
from jobs.eval.mine import part_name
from lab.eval.history_corpus import corpus_instances
from pipelines.history.reader import HistoryReader
from semantica.config import HistoryConfig, load_config
from semantica.stores.history import CommitRecord, HistorySearcher
from semantica.stores.history.index import HistoryVotes, vote

SIMILAR_SCHEMA = {"rank": pl.Int64, "sha": pl.Utf8, "score": pl.Float64, "author_time": pl.Int64,
                  "subject": pl.Utf8, "files": pl.List(pl.Utf8)}
PRIOR_SCHEMA = {"kind": pl.Utf8, "key": pl.Utf8, "changes": pl.Int64, "fixes": pl.Int64,
                "last_change_days": pl.Float64}
META_SUFFIX = ".meta.json"
PRIORS_SUFFIX = ".priors.parquet"


class HistoryListMiner:
    """Writes each instance's similar past commits and priors under `out`."""

    def __init__(self, config: HistoryConfig, cache_path: str | Path, repos_dir: str | Path, out: str | Path,
                 keep: int = 100, log: Callable[[str], None] = print) -> None:
        self.config = config
        self.reader = HistoryReader(config, cache_path)
        self.repos_dir = repos_dir
        self.out = Path(out)
        self.keep = keep
        self.log = log
        self.tokens: dict[str, list[str]] = {}  # sha -> message tokens, shared by the snapshots of a run

    def mine(self, instances: Sequence[Instance]) -> int:
        self.out.mkdir(parents=True, exist_ok=True)
        done = 0
        for inst in instances:
            target = self.out / part_name(inst.instance_id)
            if target.is_file():
                continue
            started = time.perf_counter()
            history = self.reader.read(str(find_repo(self.repos_dir, inst.repo)), inst.base_commit)
            searcher = HistorySearcher(history, self.config, self.tokens)
            live = history.live_files or set()
            rows = []
            for rank, (record, score) in enumerate(searcher.index.similar(inst.problem_statement, self.keep), 1):
                rows.append({"rank": rank, "sha": record.sha, "score": score, "author_time": record.author_time,
                             "subject": record.display_subject(),
                             "files": [f for f in record.files if f in live]})
            priors = [{"kind": "file", "key": k, **vars(p)} for k, p in searcher.priors.files.items()]
            pl.DataFrame(priors, schema=PRIOR_SCHEMA).write_parquet(target.with_suffix(PRIORS_SUFFIX))
            meta = {"instance_id": inst.instance_id, "commit": history.commit, "as_of": history.commit_time,
                    "kept": len(history.records), "read_commits": history.read_commits,
                    "cached_commits": history.cached_commits, "dropped": history.dropped,
                    "seconds": round(time.perf_counter() - started, 2)}
            target.with_suffix(META_SUFFIX).write_text(json.dumps(meta))
            pl.DataFrame(rows, schema=SIMILAR_SCHEMA).write_parquet(target)
            done += 1
            self.log(f"{inst.instance_id}: {len(history.records)} commits kept, {history.read_commits} read, "
                     f"{meta['seconds']} s")
        return done


class MinedHistory:
    """Stored similar commits and priors of one instance, voting exactly as the live index does."""

    def __init__(self, directory: str | Path, instance_id: str) -> None:
        target = Path(directory) / part_name(instance_id)
        self.available = target.is_file()
        if not self.available:
            return
        meta = json.loads(target.with_suffix(META_SUFFIX).read_text())
        self.as_of = int(meta["as_of"])
        self.similar = [(CommitRecord(r["sha"], "", "", r["author_time"], r["subject"], r["files"]), r["score"])
                        for r in pl.read_parquet(target).sort("rank").iter_rows(named=True)]
        self.priors = pl.read_parquet(target.with_suffix(PRIORS_SUFFIX))

    def votes(self, config: HistoryConfig) -> HistoryVotes:
        return vote(self.similar, self.as_of, config)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--instances", metavar="FILE", help="instances JSONL")
    source.add_argument("--corpus", metavar="DIR", help="labelled-commit corpus (*.jsonl: repo, sha, parent, query, "
                                                       "files, functions); each commit is answered at its parent")
    parser.add_argument("--per-repo", type=int, default=40, metavar="N", help="with --corpus: commits per repository")
    parser.add_argument("--repos-dir", required=True, metavar="DIR", help="directory of bare clones")
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory")
    parser.add_argument("--keep", type=int, default=100, metavar="N", help="similar commits kept per instance")
    parser.add_argument("--repo-filter", action="extend", nargs="+", default=[], metavar="OWNER/NAME",
                        help="only instances of these repositories")
    parser.add_argument("--config", metavar="FILE")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE")
    args = parser.parse_args(argv)
    config = load_config(args.config, args.set)
    instances = corpus_instances(args.corpus, args.per_repo) if args.corpus else load_instances(args.instances)
    instances = [i for i in instances if not args.repo_filter or i.repo in args.repo_filter]
    cache = config.history.cache_file or str(Path(config.paths.cache_dir) / "history.sqlite")
    written = HistoryListMiner(config.history, cache, args.repos_dir, args.out, keep=args.keep).mine(instances)
    print(f"{written} instances written under {args.out} ({len(instances) - written} already there)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
