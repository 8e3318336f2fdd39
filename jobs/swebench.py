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
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from jobs.metrics import FILE_METRICS, FUNCTION_METRICS, Gold, Prediction, evaluate, per_instance_ranks
from jobs.mine import HitMiner, swebench_labeler
from semantica.config import Config
from semantica.encoder import Encoder

ALL_STRATEGIES = ("vector", "lexical", "symbol", "graph")
EVAL_K = 10  # hits/context size of each request; file/function lists go query.file_rank_depth deep
TOP_N = 50   # paths and functions written per instance
TABLE_FILE_METRICS = ("Acc@1", "Acc@3", "Acc@5", "Recall@5", "MRR")
TABLE_FUNCTION_METRICS = ("Acc@5", "Acc@10", "Recall@10", "MRR")
MAX_CONSECUTIVE_FAILURES = 5  # the same error this many times in a row is not about one instance: stop
FATAL_ERRORS = (ImportError, MemoryError)  # broken install or machine: every later instance would fail too


class EvalError(RuntimeError):
    """The benchmark input or a repository cannot be used; the message says what to fix."""


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


# -- instances and repositories ----------------------------------------------------------------


@dataclass
class Instance:
    """One benchmark instance (the fields of swebench_lite_dev.jsonl that the eval uses)."""

    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    gold_files: list[str] = field(default_factory=list)
    gold_functions: list[str] = field(default_factory=list)

    def gold(self) -> Gold:
        return Gold(self.repo, list(self.gold_files), list(self.gold_functions))


REQUIRED_FIELDS = ("instance_id", "repo", "base_commit", "problem_statement")


def load_instances(path: str | os.PathLike[str]) -> list[Instance]:
    """Read the instances JSONL; a malformed line or a missing field is an error naming the line."""
    file = Path(path)
    if not file.is_file():
        raise EvalError(f"instances file {file} does not exist")
    instances: list[Instance] = []
    seen: set[str] = set()
    for lineno, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise EvalError(f"{file}:{lineno}: not valid JSON ({exc.msg})") from None
        missing = [k for k in REQUIRED_FIELDS if not raw.get(k)]
        if missing:
            raise EvalError(f"{file}:{lineno}: missing field(s) {missing}")
        if raw["instance_id"] in seen:
            raise EvalError(f"{file}:{lineno}: duplicate instance_id {raw['instance_id']!r}")
        seen.add(raw["instance_id"])
        instances.append(Instance(
            instance_id=raw["instance_id"], repo=raw["repo"], base_commit=raw["base_commit"],
            problem_statement=raw["problem_statement"], gold_files=list(raw.get("gold_files") or []),
            gold_functions=list(raw.get("gold_functions") or []),
        ))
    return instances


def repo_candidates(repos_dir: str | os.PathLike[str], repo: str) -> list[Path]:
    """Where a clone of `owner/name` may live under `repos_dir`, in the order they are tried."""
    root = Path(repos_dir)
    owner, _, name = repo.partition("/")
    flat = f"{owner}+{name}" if name else owner
    name = name or owner
    return [root / flat / "repo", root / flat, root / f"{owner}__{name}", root / name, root / f"{name}.git"]


def is_git_repository(path: Path) -> bool:
    """A work tree (`.git` inside) or a bare repository (`HEAD` and `objects/`)."""
    return path.is_dir() and ((path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir()))


def find_repo(repos_dir: str | os.PathLike[str], repo: str) -> Path:
    """The clone of `repo` under `repos_dir`, or an EvalError listing every path tried."""
    tried = repo_candidates(repos_dir, repo)
    for path in tried:
        if is_git_repository(path):
            return path
    raise EvalError(f"no git clone of {repo} under {repos_dir}; tried: {', '.join(str(p) for p in tried)} "
                    f"(clone it with `git clone --bare https://github.com/{repo} {tried[0]}`)")


def commit_times(repo_path: Path, commits: Iterable[str]) -> dict[str, int]:
    """Committer timestamps of the given commits (unknown ones are missing from the result)."""
    times: dict[str, int] = {}
    for sha in dict.fromkeys(commits):
        proc = subprocess.run(["git", "-C", str(repo_path), "show", "-s", "--format=%ct", "--no-walk", sha],
                              capture_output=True, text=True, check=False)
        stamp = proc.stdout.strip()
        if proc.returncode == 0 and stamp.isdigit():
            times[sha] = int(stamp)
    return times


def order_instances(instances: Sequence[Instance], repo_paths: dict[str, Path]) -> list[Instance]:
    """Grouped by repository (first-seen order), oldest base commit first within a repository."""
    by_repo: dict[str, list[Instance]] = {}
    for inst in instances:
        by_repo.setdefault(inst.repo, []).append(inst)
    ordered: list[Instance] = []
    for repo, members in by_repo.items():
        times = commit_times(repo_paths[repo], (i.base_commit for i in members))
        members.sort(key=lambda i: (times.get(i.base_commit, sys.maxsize), i.instance_id))
        ordered.extend(members)
    return ordered


# -- output files --------------------------------------------------------------------------------


@dataclass(frozen=True)
class OutputPaths:
    """Every file one run writes, derived from `--out`: `runs/pred.jsonl` -> `runs/pred.<ablation>.jsonl` ..."""

    out: Path

    @property
    def stem(self) -> Path:
        return self.out.with_suffix("") if self.out.suffix == ".jsonl" else self.out

    def _with(self, suffix: str) -> Path:
        return self.stem.with_name(self.stem.name + suffix)

    def predictions(self, ablation: str) -> Path:
        return self._with(f".{ablation}.jsonl")

    def trec(self, ablation: str, level: str) -> Path:
        return self._with(f".{ablation}.{level}.trec")

    def qrels(self, level: str) -> Path:
        return self._with(f".{level}.qrels")

    @property
    def metrics(self) -> Path:
        return self._with(".metrics.json")

    @property
    def timings(self) -> Path:
        return self._with(".timings.jsonl")


def read_jsonl(path: Path) -> list[dict]:
    """Complete, valid JSON lines of a file (a torn last line from a crash is ignored)."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def repair_jsonl(path: Path) -> list[dict]:
    """Keep only the valid lines (rewriting the file when a crash left a torn one) and return them."""
    rows = read_jsonl(path)
    if path.exists():
        text = path.read_text(encoding="utf-8")
        if (text and not text.endswith("\n")) or sum(1 for line in text.splitlines() if line.strip()) != len(rows):
            path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return rows


def load_predictions(path: str | os.PathLike[str]) -> dict[str, Prediction]:
    """`{"instance_id", "files", "functions"}` lines -> Prediction per id (the last line wins)."""
    file = Path(path)
    if not file.is_file():
        raise EvalError(f"prediction file {file} does not exist")
    preds: dict[str, Prediction] = {}
    for row in read_jsonl(file):
        if "instance_id" not in row:
            continue
        preds[row["instance_id"]] = Prediction(list(row.get("files") or []), list(row.get("functions") or []))
    return preds


def _trec_docid(item: str) -> str:
    return item.replace("%", "%25").replace(" ", "%20").replace("\t", "%09")


def write_trec_run(path: Path, rows: Iterable[dict], level: str, run_name: str) -> None:
    """`qid Q0 docid rank score run`, scores made strictly decreasing so trec_eval keeps our order."""
    key, score_key = ("files", "file_scores") if level == "files" else ("functions", "function_scores")
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            items = row.get(key) or []
            scores = row.get(score_key) or []
            previous = float("inf")
            for rank, item in enumerate(items, 1):
                score = float(scores[rank - 1]) if rank - 1 < len(scores) else 1.0 / rank
                score = min(score, previous - 1e-6) if previous != float("inf") else score
                previous = score
                handle.write(f"{row['instance_id']} Q0 {_trec_docid(item)} {rank} {score:.6f} {run_name}\n")


def write_qrels(path: Path, instances: Iterable[Instance], level: str) -> None:
    """`qid 0 docid 1` per gold item (functions with `.__init__` kept as in the gold)."""
    with path.open("w", encoding="utf-8") as handle:
        for inst in instances:
            for item in (inst.gold_files if level == "files" else inst.gold_functions):
                handle.write(f"{inst.instance_id} 0 {_trec_docid(item)} 1\n")


# -- the run -------------------------------------------------------------------------------------


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
        """Log the instance's fused hits with gold labels for learning-to-rank (`jobs/mine.py`)."""
        assert self.miner is not None
        started = time.perf_counter()
        labeler = swebench_labeler(inst.gold_files, inst.gold_functions, self.config.ltr_train)
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
        from serving.pipeline import SearchRequest

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
            result["description"] = ablation.description
            result["predictions"] = str(pred_path)
            report["ablations"][ablation.name] = result
            report["per_instance"][ablation.name] = per_instance_ranks(preds, gold)
            report["instances"] = max(report["instances"], result["instances"])
        report["timings"] = summarize_timings(read_jsonl(self.paths.timings), {i.instance_id for i in instances})
        self.paths.metrics.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return report


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


def score_predictions(instances: Sequence[Instance], pred_path: str | os.PathLike[str],
                      missing_as_empty: bool = False) -> dict[str, Any]:
    """Metrics of one existing prediction file (`semantica eval score`)."""
    gold = {i.instance_id: i.gold() for i in instances}
    preds = load_predictions(pred_path)
    unknown = sorted(set(preds) - set(gold))
    result = evaluate(preds, gold, missing_as_empty=missing_as_empty)
    result["unknown_ids"] = unknown
    return result


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def ablation_table(report: dict[str, Any], repo: str | None = None) -> str:
    """Markdown table, one row per ablation (percentages; `n` = instances with gold at that level)."""
    header = (["ablation"] + [f"file {m}" for m in TABLE_FILE_METRICS] + ["n"]
              + [f"func {m}" for m in TABLE_FUNCTION_METRICS] + ["n"])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, result in report["ablations"].items():
        scores = result["overall"] if repo is None else result["by_repo"].get(repo)
        if scores is None:
            continue
        lines.append("| " + " | ".join(
            [name] + [_pct(scores["file"][m]) for m in TABLE_FILE_METRICS] + [str(scores["file"]["n"])]
            + [_pct(scores["function"][m]) for m in TABLE_FUNCTION_METRICS] + [str(scores["function"]["n"])]
        ) + " |")
    return "\n".join(lines)


def level_table(result: dict[str, Any], file_metrics: Sequence[str] = FILE_METRICS,
                function_metrics: Sequence[str] = FUNCTION_METRICS) -> str:
    """Markdown table for one prediction file: overall then one row per repository."""
    header = ["scope"] + [f"file {m}" for m in file_metrics] + ["n"] + [f"func {m}" for m in function_metrics] + ["n"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    rows = [("overall", result["overall"])] + list(result["by_repo"].items())
    for scope, scores in rows:
        lines.append("| " + " | ".join(
            [scope] + [_pct(scores["file"][m]) for m in file_metrics] + [str(scores["file"]["n"])]
            + [_pct(scores["function"][m]) for m in function_metrics] + [str(scores["function"]["n"])]
        ) + " |")
    return "\n".join(lines)
