"""`make bench` (part): freshness-check cost and `semantica watch` one-file-change -> queryable time.

On a working tree of pytest-dev/pytest (cloned from the local mirror; this repository otherwise): index it
once (the caches persist in `--work`, so only the first run embeds everything), then
  1. time the freshness check of the clean tree (the cost every answer pays);
  2. start the watcher, append a uniquely named function to one file, and time until a search finds it;
     repeated, each on another file;
  3. commit a branch on which 1% of the files differ, index the base branch and then it (`index --ref`):
     the second branch's wall time, files parsed and chunks embedded, against the first (cold) index.
Results: bench/results/watch.json and a table on stdout.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from jobs.bench.stats import RESULTS_DIR, machine, percentile, write_result
from jobs.eval.instances import find_clone, mirrors_dir
from pipelines.sync import SyncResult
from pipelines.watch import RepoWatcher
from semantica.api import SearchRequest
from semantica.config import load_config
from semantica.layout import IndexLayout
from semantica.ondisk.branch_keys import branch_key
from semantica.snapshot import Snapshot
from serving.pipeline import SearchPipeline

REPO_ROOT = Path(__file__).resolve().parents[2]
PYTEST_REPO = "pytest-dev/pytest"
DEFAULT_WORK = REPO_ROOT / ".semantica" / "bench-watch"
NAME = "bench/watch"
CHANGED_FILES = ("src/_pytest/nodes.py", "src/_pytest/fixtures.py", "src/_pytest/main.py", "src/_pytest/runner.py",
                 "src/_pytest/python.py", "src/_pytest/config/__init__.py", "src/_pytest/monkeypatch.py",
                 "src/_pytest/reports.py", "src/_pytest/terminal.py", "src/_pytest/capture.py")
BRANCH = "bench-second-branch"
BRANCH_FRACTION = 0.01  # of the indexed files changed on the second branch
POLL_S = 0.05
WAIT_S = 120.0


def working_tree(work: Path) -> tuple[Path, str]:
    """A pytest working tree (fresh clone of the mirror, reset each run), else this repository."""
    tree = work / "pytest"
    mirrors = mirrors_dir()
    mirror = find_clone(mirrors, PYTEST_REPO) if mirrors else None
    if mirror is not None:
        if not tree.exists():
            subprocess.run(["git", "clone", "-q", "--shared", str(mirror), str(tree)], check=True)
        subprocess.run(["git", "-C", str(tree), "checkout", "-q", "--", "."], check=True)
        subprocess.run(["git", "-C", str(tree), "clean", "-qfd"], check=True)
        return tree, PYTEST_REPO
    return REPO_ROOT, "semantica (no pytest clone under $SEMANTICA_MIRRORS)"


def bench_freshness(snapshot: Snapshot, runs: int) -> dict[str, Any]:
    times = []
    for _ in range(runs):
        fresh = snapshot.freshness()
        assert fresh.stale is False, fresh.reason
        times.append(fresh.check_ms)
    return {"runs": runs, "p50_ms": round(statistics.median(times), 2), "p99_ms": round(percentile(times, 0.99), 2),
            "min_ms": round(min(times), 2)}


def bench_change(tree: Path, config: Any, repeats: int) -> dict[str, Any]:
    synced: list[SyncResult] = []
    arrived = threading.Event()

    def on_sync(result: SyncResult) -> None:
        synced.append(result)
        arrived.set()

    watcher = RepoWatcher(config, str(tree), NAME, on_sync=on_sync, on_error=lambda exc: print(exc, file=sys.stderr))
    pipeline = SearchPipeline(config)
    rows = []
    watcher.start()
    try:
        for path in CHANGED_FILES[:repeats]:
            target = tree / path
            if not target.exists():
                continue
            marker = f"bench_marker_{uuid.uuid4().hex[:10]}"
            arrived.clear()
            start = time.perf_counter()
            with target.open("a") as handle:
                handle.write(f"\n\ndef {marker}():\n    return 1\n")
            found_s = None
            while time.perf_counter() - start < WAIT_S:
                response = pipeline.search(SearchRequest(query=marker, k=1, strategies=["symbol"]))
                if response.hits and marker in response.hits[0].content:
                    found_s = time.perf_counter() - start
                    break
                time.sleep(POLL_S)
            arrived.wait(5)
            last = synced[-1] if synced else None
            rows.append({"file": path, "queryable_s": round(found_s, 3) if found_s else None,
                         "sync_s": last.seconds if last else None, "files_parsed": last.files_parsed if last else None,
                         "chunks_embedded": last.chunks_embedded if last else None,
                         "shards_linked": last.shards_linked if last else None,
                         "shards_written": last.shards_written if last else None,
                         "stage_seconds": last.stage_seconds if last else {}})
            print(f"  {path}: queryable after {rows[-1]['queryable_s']} s (sync {rows[-1]['sync_s']} s)", flush=True)
    finally:
        watcher.stop()
    values = [r["queryable_s"] for r in rows if r["queryable_s"] is not None]
    return {"debounce_ms": config.watch.debounce_ms, "changes": rows,
            "p50_s": round(statistics.median(values), 3) if values else None,
            "p90_s": round(percentile(values, 0.9), 3) if values else None,
            "max_s": round(max(values), 3) if values else None}


def make_branch(tree: Path, count: int) -> tuple[str, list[str]]:
    """Commit BRANCH: the base branch with `count` Python files changed (a function appended to each)."""
    git = ["git", "-C", str(tree), "-c", "user.name=bench", "-c", "user.email=bench@example.com",
           "-c", "commit.gpgsign=false"]
    base = subprocess.run([*git, "rev-parse", "--abbrev-ref", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()
    subprocess.run([*git, "branch", "-D", BRANCH], capture_output=True, check=False)  # a previous run's
    tracked = subprocess.run([*git, "ls-files", "*.py"], check=True, capture_output=True, text=True).stdout.split()
    step = max(1, len(tracked) // max(1, count))
    changed = tracked[::step][:count]
    subprocess.run([*git, "checkout", "-q", "-b", BRANCH], check=True)
    for number, path in enumerate(changed):
        with (tree / path).open("a") as handle:
            handle.write(f"\n\ndef bench_branch_only_{number}():\n    return {number}\n")
    subprocess.run([*git, "commit", "-qam", "bench: second branch"], check=True)
    subprocess.run([*git, "checkout", "-q", base], check=True)
    return base, changed


def bench_branch(tree: Path, config: Any, files: int, initial: SyncResult, initial_s: float) -> dict[str, Any]:
    """`index --ref BASE` then `index --ref BRANCH` (1% of files differ): what the second branch costs."""
    from pipelines.indexer import Indexer

    base, changed = make_branch(tree, max(1, round(files * BRANCH_FRACTION)))
    indexer = Indexer(config, progress=False)
    start = time.perf_counter()
    first = indexer.index(str(tree), branch_key(NAME, base), base)
    first_s = time.perf_counter() - start
    start = time.perf_counter()
    second = indexer.index(str(tree), branch_key(NAME, BRANCH), BRANCH)
    second_s = time.perf_counter() - start
    cold = initial.chunks_embedded == initial.chunks  # the initial index embedded everything: a true first cost
    row = {"files_changed_on_branch": len(changed), "base_ref_index_s": round(first_s, 2),
           "base_ref_files_parsed": first.files_parsed, "second_branch_index_s": round(second_s, 2),
           "second_branch_files_parsed": second.files_parsed, "second_branch_chunks_embedded": second.chunks_embedded,
           "second_branch_shards_written": second.shards_written, "second_branch_stage_seconds": second.seconds,
           "first_index_cold_s": round(initial_s, 2) if cold else None,
           "second_over_first": round(second_s / initial_s, 4) if cold else None}
    print(f"second branch ({len(changed)} files differ): {second_s:.2f} s, parsed {second.files_parsed}, embedded "
          f"{second.chunks_embedded}" + (f"; {row['second_over_first']:.1%} of the cold first index" if cold else
                                         " (first index was warm: no ratio)"), flush=True)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=str(DEFAULT_WORK), help="clone, index and caches (kept between runs)")
    parser.add_argument("--freshness-runs", type=int, default=50)
    parser.add_argument("--changes", type=int, default=len(CHANGED_FILES))
    parser.add_argument("--out", default=str(RESULTS_DIR / "watch.json"))
    parser.add_argument("--no-branch", action="store_true", help="skip the second-branch measurement")
    args = parser.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    tree, label = working_tree(work)
    config = load_config(None, [f"paths.index_root={work / 'index'}", f"paths.cache_dir={work / 'cache'}",
                                "late_interaction.enabled=false"])
    from pipelines.sync import RepoSyncer

    start = time.perf_counter()
    initial = RepoSyncer(config).sync(repo=NAME, path=str(tree), force=True)
    initial_s = time.perf_counter() - start
    print(f"indexed {label}: {initial.chunks} chunks in {initial_s:.1f} s (parsed {initial.files_parsed}, "
          f"embedded {initial.chunks_embedded})", flush=True)
    snapshot = Snapshot.open(IndexLayout(config.paths.index_root).current(NAME), config)
    files = len(snapshot.file_blobs.blobs)
    results = {"machine": machine(), "repo": label, "files": files, "chunks": initial.chunks,
               "initial_index_s": round(initial_s, 2), "initial_stage_seconds": initial.stage_seconds,
               "freshness_clean_tree": bench_freshness(snapshot, args.freshness_runs)}
    print(f"freshness check, clean tree of {files} files: {results['freshness_clean_tree']}", flush=True)
    results["one_file_change_to_queryable"] = bench_change(tree, config, args.changes)
    subprocess.run(["git", "-C", str(tree), "checkout", "-q", "--", "."], check=False)
    if not args.no_branch:
        results["second_branch"] = bench_branch(tree, config, files, initial, initial_s)
    write_result(results, Path(args.out))
    change = results["one_file_change_to_queryable"]
    print(f"one-file change -> queryable: p50 {change['p50_s']} s, p90 {change['p90_s']} s, max {change['max_s']} s "
          f"(debounce {change['debounce_ms']} ms); results in {args.out}")
    return 0

