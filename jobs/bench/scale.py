"""The scale benchmark (`make bench-scale`, not part of `make test`): one large public repository indexed from
scratch in process (`semantica index`) and with Ray Data (`semantica index-batch`), then queried with the
index cut into 1, 8 and 32 shards.

    python -m jobs.bench scale --repo MIRROR/sympy+sympy/repo --name sympy/sympy --work DIR
        [--commit SHA] [--include 'sympy/core/*'] [--modes in_process ray] [--shards 1 8 32] [--queries 100]

Each build runs as a child process, measured from outside: wall time, chunks/s, peak RSS (the largest sum
over the child's process tree, sampled, since Ray's workers are its grandchildren; and the child's own,
sampled too), and the snapshot's size over the bytes of the files it indexed. Every mode
starts from an empty embedding cache of its own. The shard builds then reuse the in-process cache (only the
shards are rewritten) with `shards.max_partitions=N` and `shards.partition_chunks=1`, which cut the
snapshot into N path-hash partitions, one FAISS/Lucene/token shard each. The same `--queries` queries (half
symbol names, half a docstring's first words, drawn from the snapshot with a fixed seed) go through the full
in-process pipeline, answer cache and query-embedding memory cleared, late interaction off and on.

Results go to bench/results/scale/<repo>.json, written after every phase (a run cut short keeps what it
measured), with the load average beside every figure: the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from jobs.bench.stats import PERCENTILE_99, percentile
from jobs.bench.stats import write_result as save
from jobs.eval.instances import mirror_clone

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = REPO_ROOT / "bench" / "results" / "scale"
SEED = 13
QUERY_WORDS = 12  # a docstring's first words make one natural-language query
MIN_DOC_WORDS = 4
MIN_NAME_CHARS = 4
RSS_SAMPLE_S = 0.5
MB = 1024 * 1024
TOP_K = 10


@dataclass
class ChildRun:
    """What one measured child process did."""

    returncode: int
    wall_s: float
    peak_tree_rss_mb: float  # largest sum of RSS over the child and its descendants (sampled; >= the child's own)
    child_maxrss_mb: float  # the child process's own peak RSS, sampled (see `ChildMeter.run`)
    cpu_s: float  # user + system CPU of the child and the descendants it waited for (load-independent cost)
    stdout: str


class ChildMeter:
    """Runs a command as a child process, timing it and sampling its process tree's memory."""

    def __init__(self, log: Path) -> None:
        self.log = log

    def run(self, command: list[str], env: dict[str, str]) -> ChildRun:
        import psutil

        out_path = self.log.with_suffix(".stdout")
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(out_path, "w") as out, open(self.log, "a") as err:
            start = time.perf_counter()
            child = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=REPO_ROOT)
            peak, own = [0], [0]
            done = threading.Event()

            def sample() -> None:
                root = psutil.Process(child.pid)
                while not done.is_set():
                    try:
                        tree = [root, *root.children(recursive=True)]
                        own[0] = max(own[0], _rss(root))
                        peak[0] = max(peak[0], sum(_rss(p) for p in tree))
                    except psutil.Error:
                        pass
                    done.wait(RSS_SAMPLE_S)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            _, status, usage = os.wait4(child.pid, 0)
            child.returncode = os.waitstatus_to_exitcode(status)  # reaped here: keep Popen from waiting again
            wall = time.perf_counter() - start
            done.set()
            sampler.join()
        # the child's own peak is sampled: the kernel's ru_maxrss keeps the high-water mark of the process image before
        # exec, i.e. the launching process's RSS at fork (a large test runner made every child look that large)
        return ChildRun(child.returncode, round(wall, 1), round(max(peak[0], own[0]) / MB, 1), round(own[0] / MB, 1),
                        round(usage.ru_utime + usage.ru_stime, 1), out_path.read_text())


def _rss(process: Any) -> int:
    try:
        return int(process.memory_info().rss)
    except Exception:  # a worker that exited between listing and reading
        return 0


@dataclass
class BuildSpec:
    """One build: which repository and commit, where the index and the embedding cache go, extra settings."""

    repo: str
    name: str
    commit: str
    include: list[str]
    index_root: Path
    cache_dir: Path
    overrides: list[str]


class BuildMode(Protocol):
    """A way to build a snapshot from the command line; its JSON summary of the one repository."""

    name: str

    def command(self, spec: BuildSpec) -> list[str]: ...

    def summary(self, stdout: str) -> dict[str, Any]: ...


def _settings(spec: BuildSpec, extra: list[str]) -> list[str]:
    """`--set` arguments: the cache directory, then `extra`, then the spec's own overrides (which win)."""
    sets = [f"paths.cache_dir={spec.cache_dir}", *extra, *spec.overrides]
    return [arg for value in sets for arg in ("--set", value)]


class InProcessBuild:
    """`semantica index`: discover, parse, embed and write in one process."""

    name = "in_process"

    def command(self, spec: BuildSpec) -> list[str]:
        include = [f"discover.include_globs={json.dumps(spec.include)}"] if spec.include else []
        return [sys.executable, "-m", "jobs.cli", "index", "--repo", spec.repo, "--name", spec.name, "--commit",
                spec.commit, "--index-root", str(spec.index_root), "--json",
                *_settings(spec, include)]

    def summary(self, stdout: str) -> dict[str, Any]:
        return json.loads(stdout)


class RayDataBuild:
    """`semantica index-batch`: the same repository as a one-entry manifest, parsed and embedded on Ray Data."""

    name = "ray"

    def command(self, spec: BuildSpec) -> list[str]:
        import yaml

        spec.index_root.mkdir(parents=True, exist_ok=True)
        manifest = spec.index_root.parent / f"{spec.index_root.name}-manifest.yaml"
        entry: dict[str, Any] = {"name": spec.name, "path": spec.repo, "commit": spec.commit}
        if spec.include:
            entry["include"] = spec.include
        manifest.write_text(yaml.safe_dump({"repos": [entry]}))
        return [sys.executable, "-m", "jobs.cli", "index-batch", "--manifest", str(manifest), "--index-root",
                str(spec.index_root), "--json", *_settings(spec, [])]

    def summary(self, stdout: str) -> dict[str, Any]:
        repos = json.loads(stdout)["repos"]
        return dict(repos[0])


MODES: dict[str, BuildMode] = {mode.name: mode for mode in (InProcessBuild(), RayDataBuild())}


def load() -> float:
    return round(os.getloadavg()[0], 2)


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def part_bytes(snapshot_dir: Path) -> dict[str, int]:
    """Bytes per top-level entry of a snapshot (vectors, tokens, lucene, ...): what the size is made of."""
    return {p.name: dir_bytes(p) if p.is_dir() else p.stat().st_size for p in sorted(snapshot_dir.iterdir())}


def corpus_size(repo: str, commit: str, paths: set[str]) -> dict[str, Any]:
    """Files, bytes and lines of what the snapshot indexed (the files it holds chunks of), Python apart."""
    listing = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "-l", commit], capture_output=True, text=True,
                             check=True).stdout
    sizes = {path: int(meta.split()[3]) for meta, path in (line.split("\t", 1) for line in listing.splitlines())
             if path in paths and meta.split()[3] != "-"}
    blobs = subprocess.run(["git", "-C", repo, "cat-file", "--batch"], capture_output=True, check=True,
                           input="".join(f"{commit}:{p}\n" for p in sorted(sizes)).encode()).stdout
    lines: dict[str, int] = {}
    at = 0
    for path in sorted(sizes):  # `cat-file --batch`: a header line, the content, a newline
        header_end = blobs.index(b"\n", at)
        size = int(blobs[at:header_end].split()[2])
        lines[path] = blobs[header_end + 1:header_end + 1 + size].count(b"\n")
        at = header_end + 1 + size + 1
    python = [p for p in sizes if p.endswith(".py")]
    return {"files": len(sizes), "bytes": sum(sizes.values()), "lines": sum(lines.values()),
            "python_files": len(python), "python_bytes": sum(sizes[p] for p in python),
            "python_lines": sum(lines[p] for p in python)}


DOCSTRING = re.compile(r'"""\s*([^"]+?)(?:\n\s*\n|""")')


def make_queries(snapshot: Any, count: int) -> list[str]:
    """Half identifiers (symbol names), half natural language (a docstring's first words), seeded."""
    rng = random.Random(SEED)
    names = sorted({s.name for s in snapshot.symbols if len(s.name) >= MIN_NAME_CHARS})
    docs = sorted({" ".join(m.group(1).split()[:QUERY_WORDS]) for c in snapshot.chunks
                   for m in [DOCSTRING.search(c.content)] if m and len(m.group(1).split()) >= MIN_DOC_WORDS})
    half = count // 2
    picked = rng.sample(names, min(half, len(names)))
    picked += rng.sample(docs, min(count - len(picked), len(docs)))
    return picked[:count]


def time_queries(config: Any, name: str, queries: list[str], late: bool) -> dict[str, Any]:
    """p50/p99 of new queries through the full pipeline (answer cache and query-embedding memory cleared), after
    one untimed pass over the same queries: the first shard count timed would otherwise pay the warm-up."""
    from semantica.api import SearchRequest
    from serving.pipeline import SearchPipeline

    pipeline = SearchPipeline(config)
    for query in queries:  # untimed pass: loads the snapshot, warms the JVM's JIT and the OS page cache
        pipeline.search(SearchRequest(query=query, repos=[name], k=TOP_K, late_interaction=late))
    ms: list[float] = []
    stages: dict[str, list[float]] = {}
    for query in queries:
        pipeline._cache.clear()
        pipeline.query_encoder._memory.clear()
        start = time.perf_counter()
        response = pipeline.search(SearchRequest(query=query, repos=[name], k=TOP_K, late_interaction=late))
        ms.append((time.perf_counter() - start) * 1000)
        for stage, value in response.timings_ms.items():  # where the time goes, per pipeline stage
            stages.setdefault(stage, []).append(value)
    return {"p50_ms": round(percentile(ms, 0.5), 1), "p99_ms": round(percentile(ms, PERCENTILE_99), 1), "n": len(ms),
            "stage_p50_ms": {k: round(percentile(v, 0.5), 2) for k, v in sorted(stages.items())}, "load": load()}


class ScaleBench:
    """The phases in order: a fresh build per mode, then the shard builds and their queries."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.work: Path = args.work
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
        self.out: dict[str, Any] = {"command": "python -m jobs.bench scale " + " ".join(args.argv), "repo": args.name,
                                    "commit": args.commit, "include": args.include, "cpus": os.cpu_count(),
                                    "builds": [], "shards": []}

    def say(self, message: str) -> None:
        print(f"{time.strftime('%H:%M:%S', time.gmtime())} load {load()}: {message}", file=sys.stderr, flush=True)

    def spec(self, label: str, cache: str, overrides: list[str]) -> BuildSpec:
        return BuildSpec(self.args.repo, self.args.name, self.args.commit, self.args.include,
                         self.work / label / "index", self.work / cache / "cache", [*self.args.set, *overrides])

    def build(self, mode: BuildMode, spec: BuildSpec) -> dict[str, Any]:
        self.say(f"{mode.name} build into {spec.index_root}")
        entry: dict[str, Any] = {"mode": mode.name, "load_before": load(), "fresh_cache": not spec.cache_dir.exists()}
        run = ChildMeter(spec.index_root.parent / "build.log").run(mode.command(spec), self.env)
        if run.returncode != 0:
            raise SystemExit(f"{mode.name} build failed (exit {run.returncode}); see {spec.index_root.parent}/build.log")
        summary = mode.summary(run.stdout)
        snapshot_dir = Path(summary["snapshot_path"])
        entry.update(wall_s=run.wall_s, chunks=summary["chunks"], chunks_embedded=summary["chunks_embedded"],
                     chunks_per_s=round(summary["chunks"] / max(run.wall_s, 1e-9), 2),
                     peak_tree_rss_mb=run.peak_tree_rss_mb, child_maxrss_mb=run.child_maxrss_mb, cpu_s=run.cpu_s,
                     cpu_ms_per_chunk=round(1000 * run.cpu_s / max(summary["chunks"], 1), 1),
                     stage_s=summary.get("seconds", {}), load_after=load(), snapshot_path=str(snapshot_dir),
                     index_bytes=dir_bytes(snapshot_dir), index_bytes_by_part=part_bytes(snapshot_dir))
        self.say(f"{mode.name}: {entry['chunks']} chunks in {run.wall_s} s, peak {run.peak_tree_rss_mb} MB")
        return entry

    def snapshot(self, spec: BuildSpec) -> Any:
        from semantica.layout import IndexLayout
        from semantica.snapshot import Snapshot

        config = self.config(spec)
        return Snapshot.open(IndexLayout(str(spec.index_root)).current(self.args.name), config)

    def config(self, spec: BuildSpec) -> Any:
        from semantica.config import load_config

        return load_config(None, [f"paths.index_root={spec.index_root}", f"paths.cache_dir={spec.cache_dir}",
                                  *spec.overrides], environ={})

    def run(self) -> dict[str, Any]:
        args, out = self.args, self.out
        for mode in args.modes:
            entry = self.build(MODES[mode], self.spec(mode, mode, []))
            if "corpus" not in out:
                snapshot = self.snapshot(self.spec(mode, mode, []))
                out["corpus"] = corpus_size(args.repo, args.commit, set(snapshot.chunks_by_path))
                out["queries"] = make_queries(snapshot, args.queries)
            entry["index_over_corpus"] = round(entry["index_bytes"] / max(out["corpus"]["bytes"], 1), 2)
            out["builds"].append(entry)
            save(out, args.out)
        for count in args.shards:
            spec = self.spec(f"shards-{count}", args.modes[0],
                             [f"shards.max_partitions={count}", "shards.partition_chunks=1"])
            entry = self.build(MODES[InProcessBuild.name], spec)
            snapshot = self.snapshot(spec)
            entry.update(shards=count, index_over_corpus=round(entry["index_bytes"] / max(out["corpus"]["bytes"], 1), 2),
                         shards_built={"faiss": len(snapshot.shard_paths("faiss")),
                                       "lucene": len(snapshot.shard_paths("lucene"))})
            out["shards"].append(entry)
            save(out, args.out)
            for late in (False, True):
                self.say(f"{count} shards: {len(out['queries'])} queries, late interaction {'on' if late else 'off'}")
                entry[f"query_late_{'on' if late else 'off'}"] = time_queries(self.config(spec), args.name,
                                                                              out["queries"], late)
                save(out, args.out)
        return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobs.bench scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", default=None, help="a git repository (bare is fine); default: sympy under $SEMANTICA_MIRRORS")
    parser.add_argument("--name", default="sympy/sympy")
    parser.add_argument("--commit", default="HEAD")
    parser.add_argument("--include", nargs="*", default=[], help="only paths matching these globs (a partial run)")
    parser.add_argument("--work", type=Path, required=True, help="index roots and embedding caches go here")
    parser.add_argument("--modes", nargs="+", choices=sorted(MODES), default=[InProcessBuild.name, RayDataBuild.name],
                        help="fresh builds to measure; the first one's cache feeds the shard builds")
    parser.add_argument("--shards", type=int, nargs="*", default=[1, 8, 32])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--set", action="append", default=[], help="section.field=value, for every build and query")
    parser.add_argument("--out", type=Path, default=None, help="default: bench/results/scale/<repo name>.json")
    args = parser.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else argv
    args.repo = args.repo or str(mirror_clone("sympy/sympy"))
    args.commit = subprocess.run(["git", "-C", args.repo, "rev-parse", args.commit], capture_output=True, text=True,
                                 check=True).stdout.strip()
    args.out = args.out or RESULTS_DIR / f"{args.name.replace('/', '+')}.json"
    result = ScaleBench(args).run()
    print(json.dumps(result, indent=1))
    return 0

