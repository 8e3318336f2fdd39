"""SWE-bench Lite code localization: index each instance's repo at `base_commit`, query with the issue.

`SwebenchEval.run` indexes every instance's repository snapshot straight from git objects (the
indexer's caches reuse parsed files and vectors of unchanged blobs, so instances are processed grouped
by repository in commit-date order), asks the same question under each ablation over that one index,
and appends one line per instance to each ablation's prediction file:

    {"instance_id", "files": [top paths], "functions": [top "path::Qualified.name"],
     "file_scores": [...], "function_scores": [...]}

(the score lists are extra; readers of the benchmark format use the first three keys). At the end it
writes TREC run files and qrels, `<stem>.metrics.json` (LocAgent metrics per ablation, overall and
per repository) and returns the ablation table. A restart skips instances already written to every
asked ablation's file; `<stem>.timings.jsonl` keeps index and query seconds per instance.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from jobs.eval.instances import EvalError, Instance, find_repo, order_instances
from jobs.eval.metrics import Prediction, evaluate, per_instance_ranks
from jobs.eval.mine import HitMiner, swebench_labeler
from jobs.eval.outputs import OutputPaths, read_jsonl, repair_jsonl, write_qrels, write_trec_run
from jobs.eval.tables import ablation_table
from semantica.config import Config
from semantica.feature_schema import FEATURE_STRATEGIES
from semantica.runtime.encoder import Encoder

ALL_STRATEGIES = FEATURE_STRATEGIES  # the four built-in retrievers that fusion features describe
EVAL_K = 10  # hits/context size of each request; file/function lists go query.file_rank_depth deep
TOP_N = 50   # paths and functions written per instance
MAX_CONSECUTIVE_FAILURES = 5  # the same error this many times in a row is not about one instance: stop
FATAL_ERRORS = (ImportError, MemoryError)  # broken install or machine: every later instance would fail too


@dataclass(frozen=True)
class Ablation:
    """Which retrievers and rerankers one run uses (`None` = as configured)."""

    name: str
    strategies: tuple[str, ...]
    late_interaction: bool | None
    cross_encoder: bool | None = None
    description: str = ""


ABLATIONS: dict[str, Ablation] = {a.name: a for a in (
    Ablation("lexical", ("lexical",), False, False, "BM25 over code-aware tokens only"),
    Ablation("vector", ("vector",), False, False, "dense retrieval only"),
    Ablation("lexical+vector", ("lexical", "vector"), False, False, "weighted RRF of lexical and vector"),
    Ablation("full", ALL_STRATEGIES, True, None, "all four retrievers + late interaction"),
    Ablation("full-no-graph", ("vector", "lexical", "symbol"), True, None, "full without the graph retriever"),
    Ablation("full-no-late", ALL_STRATEGIES, False, None, "all four retrievers, no late interaction"),
)}


def parse_ablations(names: Sequence[str] | None) -> list[Ablation]:
    """Ablations by name, in the given order (default: all); a clear error for an unknown one."""
    if not names:
        return list(ABLATIONS.values())
    unknown = [n for n in names if n not in ABLATIONS]
    if unknown:
        raise EvalError(f"unknown ablation(s) {unknown}; choose from {list(ABLATIONS)}")
    return [ABLATIONS[n] for n in dict.fromkeys(names)]



@dataclass
class InstanceTiming:
    """What one instance cost (a line of `<stem>.timings.jsonl`)."""

    instance_id: str
    repo: str
    index_s: float = 0.0
    index_reused: bool = False
    index_stages: dict[str, float] = field(default_factory=dict)
    files: int = 0
    chunks: int = 0
    chunks_embedded: int = 0
    files_parsed: int = 0
    query_s: dict[str, float] = field(default_factory=dict)
    degraded: dict[str, list] = field(default_factory=dict)
    error: str = ""


@dataclass
class EvalResult:
    """Metrics per ablation plus what the run did."""

    metrics: dict[str, Any]
    table: str
    paths: OutputPaths
    done: int = 0
    skipped: int = 0
    failed: list[str] = field(default_factory=list)
    wall_s: float = 0.0


class SwebenchEval:
    """Runs the localization benchmark with the in-process indexer and search pipeline.

    `indexer_factory` / `pipeline_factory` build the indexing and search components from the config
    (tests inject a small encoder through them); by default `Indexer` and `SearchPipeline`.
    """

    def __init__(self, config: Config, repos_dir: str | os.PathLike[str], out: str | os.PathLike[str],
                 ablations: Sequence[Ablation] | None = None, encoder_factory: Callable[[], Encoder] | None = None,
                 progress: bool = True, log: Callable[[str], None] | None = None,
                 miner: HitMiner | None = None) -> None:
        self.config = config
        self.miner = miner
        self.repos_dir = Path(repos_dir)
        self.paths = OutputPaths(Path(out))
        self.ablations = list(ABLATIONS.values() if ablations is None else ablations)
        self.encoder_factory = encoder_factory
        self.progress = progress
        self.log = log or (lambda msg: tqdm.write(msg, file=sys.stderr))
        self._indexer: Any = None
        self._pipeline: Any = None

    # lazily built so that `--help`, scoring and argument errors stay fast
    @property
    def indexer(self) -> Any:
        if self._indexer is None:
            from pipelines.indexer import Indexer

            self._indexer = Indexer(self.config, encoder_factory=self.encoder_factory, progress=False)
        return self._indexer

    @property
    def pipeline(self) -> Any:
        if self._pipeline is None:
            from serving.pipeline import SearchPipeline

            self._pipeline = SearchPipeline(self.config, encoder_factory=self.encoder_factory)
        return self._pipeline

    def run(self, instances: Sequence[Instance], score_over: Sequence[Instance] | None = None) -> EvalResult:
        """Predict `instances` (skipping done ones), then score every instance of `score_over` (default:
        `instances`) that has predictions, so runs split by repository into one --out add up."""
        start = time.perf_counter()
        if not instances:
            raise EvalError("no instance to run (check --repo-filter / --limit)")
        repo_paths = {repo: find_repo(self.repos_dir, repo) for repo in dict.fromkeys(i.repo for i in instances)}
        self.paths.stem.parent.mkdir(parents=True, exist_ok=True)
        done_ids = {a.name: {r.get("instance_id") for r in repair_jsonl(self.paths.predictions(a.name))}
                    for a in self.ablations}
        repair_jsonl(self.paths.timings)
        ordered = order_instances(instances, repo_paths)
        todo = [i for i in ordered if any(i.instance_id not in done_ids[a.name] for a in self.ablations)
                or self._to_mine(i)]
        skipped = len(ordered) - len(todo)
        if skipped:
            self.log(f"resuming: {skipped} instance(s) already done, {len(todo)} to go")
        failed: list[str] = []
        handles = {a.name: self.paths.predictions(a.name).open("a", encoding="utf-8") for a in self.ablations}
        timings = self.paths.timings.open("a", encoding="utf-8")
        last_snapshot: tuple[str, str] | None = None
        streak: list[str] = []
        try:
            bar = tqdm(todo, desc="swebench", unit="inst", file=sys.stderr, disable=not self.progress,
                       dynamic_ncols=True, mininterval=1.0)
            for inst in bar:
                bar.set_postfix_str(inst.instance_id, refresh=False)
                wanted = [a for a in self.ablations if inst.instance_id not in done_ids[a.name]]
                timing = InstanceTiming(inst.instance_id, inst.repo)
                try:
                    if last_snapshot == (inst.repo, inst.base_commit):
                        timing.index_reused = True
                    else:
                        last_snapshot = None
                        previous = self._current_snapshot(inst.repo)
                        self._index(inst, repo_paths[inst.repo], timing)
                        last_snapshot = (inst.repo, inst.base_commit)
                        _release(previous)
                    for ablation in wanted:
                        row = self._query(inst, ablation, timing)
                        handles[ablation.name].write(json.dumps(row, ensure_ascii=False) + "\n")
                        handles[ablation.name].flush()
                    if self._to_mine(inst):
                        self._mine(inst, timing)
                except FATAL_ERRORS:
                    raise
                except Exception as exc:  # one broken instance must not sink a long run
                    timing.error = f"{type(exc).__name__}: {exc}"
                    failed.append(inst.instance_id)
                    self.log(f"{inst.instance_id}: FAILED {timing.error}")
                timings.write(json.dumps(timing.__dict__, ensure_ascii=False) + "\n")
                timings.flush()
                streak = streak + [timing.error] if timing.error else []
                if len(streak) >= MAX_CONSECUTIVE_FAILURES and len(set(streak[-MAX_CONSECUTIVE_FAILURES:])) == 1:
                    raise EvalError(f"{MAX_CONSECUTIVE_FAILURES} instances in a row failed with the same error, "
                                    f"stopping (fix it and re-run; done instances are kept): {streak[-1]}")
                if not timing.error:
                    self.log(_timing_line(timing))
            bar.close()
        finally:
            for handle in handles.values():
                handle.close()
            timings.close()
        metrics = self.score(score_over or instances) if self.ablations else {"ablations": {}, "instances": 0}
        return EvalResult(metrics=metrics, table=ablation_table(metrics), paths=self.paths,
                          done=len(todo) - len(failed), skipped=skipped, failed=failed,
                          wall_s=round(time.perf_counter() - start, 1))

    def _to_mine(self, inst: Instance) -> bool:
        return self.miner is not None and not self.miner.done(inst.instance_id)

    def _mine(self, inst: Instance, timing: InstanceTiming) -> None:
        """Log the instance's fused hits with gold labels and its retriever lists (`jobs/eval/mine.py`)."""
        assert self.miner is not None
        started = time.perf_counter()
        labeler = swebench_labeler(inst.gold_files, inst.gold_functions, self.miner.config)
        self.miner.mine(self.pipeline, inst.instance_id, inst.problem_statement, inst.repo, "swebench", labeler)
        timing.query_s["mine"] = round(time.perf_counter() - started, 3)

    def _current_snapshot(self, repo: str) -> Any:
        """The snapshot the search pipeline has open for `repo`, if any (to release it once replaced)."""
        if self._pipeline is None:
            return None
        try:
            return self._pipeline.snapshots.get(repo)
        except Exception:  # nothing published yet
            return None

    def _index(self, inst: Instance, repo_path: Path, timing: InstanceTiming) -> None:
        started = time.perf_counter()
        summary = self.indexer.index(str(repo_path), inst.repo, inst.base_commit)
        timing.index_s = round(time.perf_counter() - started, 3)
        timing.index_stages = dict(summary.seconds)
        timing.files, timing.chunks = summary.files, summary.chunks
        timing.chunks_embedded, timing.files_parsed = summary.chunks_embedded, summary.files_parsed

    def _query(self, inst: Instance, ablation: Ablation, timing: InstanceTiming) -> dict:
        from semantica.api import SearchRequest

        request = SearchRequest(query=inst.problem_statement, repos=[inst.repo], k=EVAL_K,
                                strategies=list(ablation.strategies), late_interaction=ablation.late_interaction,
                                cross_encoder=ablation.cross_encoder)
        started = time.perf_counter()
        response = self.pipeline.search(request)
        timing.query_s[ablation.name] = round(time.perf_counter() - started, 3)
        if response.degraded:
            timing.degraded[ablation.name] = response.degraded
            self.log(f"{inst.instance_id} [{ablation.name}] degraded: "
                     + "; ".join(f"{d['stage']}: {d['error']}" for d in response.degraded))
        files = response.files[:TOP_N]
        functions = response.functions[:TOP_N]
        return {"instance_id": inst.instance_id, "files": [f["path"] for f in files],
                "functions": [f["function"] for f in functions],
                "file_scores": [f["score"] for f in files], "function_scores": [f["score"] for f in functions]}

    def score(self, instances: Sequence[Instance]) -> dict[str, Any]:
        """Metrics of every ablation's prediction file; also writes TREC runs, qrels and metrics.json."""
        write_qrels(self.paths.qrels("files"), instances, "files")
        write_qrels(self.paths.qrels("functions"), instances, "functions")
        gold = {i.instance_id: i.gold() for i in instances}
        report: dict[str, Any] = {"instances": 0, "ablations": {}, "per_instance": {}}
        for ablation in self.ablations:
            pred_path = self.paths.predictions(ablation.name)
            rows = [r for r in read_jsonl(pred_path) if r.get("instance_id") in gold]
            rows = list({r["instance_id"]: r for r in rows}.values())
            for level in ("files", "functions"):
                write_trec_run(self.paths.trec(ablation.name, level), rows, level, f"semantica-{ablation.name}")
            preds = {r["instance_id"]: Prediction(r.get("files") or [], r.get("functions") or []) for r in rows}
            result = evaluate(preds, gold)
            result["by_language"] = by_language(preds, gold, instances)
            result["description"] = ablation.description
            result["predictions"] = str(pred_path)
            report["ablations"][ablation.name] = result
            report["per_instance"][ablation.name] = per_instance_ranks(preds, gold)
            report["instances"] = max(report["instances"], result["instances"])
        report["timings"] = summarize_timings(read_jsonl(self.paths.timings), {i.instance_id for i in instances})
        self.paths.metrics.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return report


def by_language(preds: dict[str, Prediction], gold: dict[str, Any], instances: Sequence[Instance]) -> dict[str, Any]:
    """Overall file/function means per instance language (Multi-SWE-bench reports by language)."""
    groups: dict[str, list[str]] = {}
    for inst in instances:
        if inst.instance_id in preds:
            groups.setdefault(inst.language, []).append(inst.instance_id)
    return {language: {"instances": len(ids), **evaluate({i: preds[i] for i in ids}, {i: gold[i] for i in ids})["overall"]}
            for language, ids in sorted(groups.items())}


def _release(snapshot: Any) -> None:
    """Close the Lucene readers of a replaced snapshot (its directory is pruned; the JVM would keep
    the deleted files open and mapped until exit). Only shards that were opened are touched."""
    if snapshot is None:
        return
    for shard in snapshot.__dict__.get("lucene_shards", []):  # a cached_property, present once opened
        try:
            shard.close()
        except Exception:  # already closed or JVM gone: nothing to release
            pass


def _timing_line(t: InstanceTiming) -> str:
    index = "index reused" if t.index_reused else (
        f"index {t.index_s:.1f}s ({t.files} files, {t.chunks} chunks, {t.chunks_embedded} embedded)")
    queries = ", ".join(f"{name} {s:.1f}s" for name, s in t.query_s.items())
    return f"{t.instance_id}: {index}; query {queries}"


def summarize_timings(rows: Sequence[dict], ids: set[str]) -> dict[str, Any]:
    """Per-repository mean index and query seconds (the last timing line of each instance counts for indexing)."""
    latest: dict[str, dict] = {}
    for row in rows:  # the last line of an instance wins, but query times add up over its lines (a resumed
        if row.get("instance_id") in ids and not row.get("error"):  # run may only mine, or run one ablation)
            earlier = latest.get(row["instance_id"], {}).get("query_s") or {}
            latest[row["instance_id"]] = {**row, "query_s": {**earlier, **(row.get("query_s") or {})}}
    by_repo: dict[str, dict[str, Any]] = {}
    for row in latest.values():
        agg = by_repo.setdefault(row["repo"], {"instances": 0, "index_s": 0.0, "query_s": {}, "chunks": 0})
        agg["instances"] += 1
        agg["index_s"] += row.get("index_s", 0.0)
        agg["chunks"] = max(agg["chunks"], row.get("chunks", 0))
        for name, seconds in (row.get("query_s") or {}).items():
            agg["query_s"][name] = agg["query_s"].get(name, 0.0) + seconds
    for agg in by_repo.values():
        n = agg["instances"]
        agg["mean_index_s"] = round(agg.pop("index_s") / n, 2)
        agg["mean_query_s"] = {k: round(v / n, 2) for k, v in agg.pop("query_s").items()}
        agg["max_chunks"] = agg.pop("chunks")
    return {"by_repo": by_repo, "failed": sorted(r["instance_id"] for r in rows
                                                  if r.get("error") and r["instance_id"] not in latest)}
