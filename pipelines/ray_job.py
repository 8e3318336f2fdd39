"""The Ray Data indexing job: many repositories, one pipeline, one snapshot per repository.

    manifest (YAML) -> per repo: resolve path (bare clone for a url) -> discover (driver, `RepoSource`)
    -> parse-cache / embedding-cache lookup (driver): files with nothing new are assembled in the driver
    -> `ray.data.from_items(file rows)` -> `map_batches(parse)` tasks (errors caught PER FILE -> FileError rows)
    -> `map_batches(EmbedActor, compute=ActorPoolStrategy(size=ray.embed_actors))` (1 GPU per actor when the
       cluster has GPUs, fractional CPUs otherwise) -> rows streamed back to the driver, grouped by repo
    -> `GraphResolver` + `SnapshotWriter` + `IndexLayout.publish` per repo (driver).

The stage classes are the ones `pipelines.indexer.RepoIndexer` strings together in one process. One
repository failing (bad path, unreachable url, write error) is reported with its reason and does not
stop the others. When every file is already in the parse and embedding caches, Ray is not even
started: re-running on unchanged repositories costs discovery + write + publish.

Cluster recipe (the driver runs on the head node; `paths.index_root` and `paths.cache_dir` must be on
storage every node sees when the cache is to be shared):

    ray job submit --address http://HEAD:8265 --working-dir . \\
        --runtime-env-json '{"env_vars": {"SEMANTICA_CONFIG": "conf/cluster.yaml"}}' \\
        -- semantica index-batch --manifest conf/repos.yaml --ray-address auto --json

Manifest format (`conf/repos.yaml`): a list (or `{repos: [...]}`) of
`{name, path | url, commit | branch, include: [globs], exclude: [globs]}`.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import os
import pickle
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from pipelines.discover import FileEntry, RepoSource, repo_name_from_path
from pipelines.embed import ChunkEmbedder, EmbeddingCache
from pipelines.indexer import EMBEDDINGS_DIR, PARSE_CACHE_FILE, IndexSummary, peak_rss_mb, record_source
from pipelines.parse import FileParser, GraphResolver, ParsedFile
from pipelines.parse_cache import ParseCache
from pipelines.write import SnapshotContent, SnapshotWriter
from semantica.config import Config, config_from_dict, config_to_dict
from semantica.layout import IndexLayout
from semantica.schema import FileError

CLONES_DIR = "clones"
ERROR_SAMPLES = 20
STATUS_OK = "ok"
STATUS_FAILED = "failed"
ERROR_KEY_PREFIX = "error\x00"  # parse-cache keys of files whose bytes cannot be indexed (RepoIndexer never asks)
CACHEABLE_ERROR_STAGE = "discover"
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class ManifestError(ValueError):
    """The repos manifest is malformed; the message says which entry and what to fix."""


@dataclass
class RepoSpec:
    """One manifest entry."""

    name: str
    path: str = ""
    url: str = ""
    commit: str = ""
    branch: str = ""
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)


@dataclass
class RepoResult(IndexSummary):
    """One repository's outcome in the batch summary: the indexer's summary plus a status."""

    status: str = STATUS_FAILED
    reason: str = ""


@dataclass
class BatchSummary:
    """What `semantica index-batch` did; exit code 0 only when every repo is ok."""

    repos: list[RepoResult]
    seconds: float = 0.0
    ray_used: bool = False
    ray_address: str = ""
    files_through_ray: int = 0
    peak_rss_mb: float = 0.0

    @property
    def ok(self) -> bool:
        return all(r.status == STATUS_OK for r in self.repos)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


# -- manifest ----------------------------------------------------------------------------------


def load_manifest(path: str | Path) -> list[RepoSpec]:
    """Parse and check the YAML manifest (a list, or a mapping with `repos:`)."""
    file = Path(path)
    if not file.exists():
        raise ManifestError(f"manifest {path} does not exist")
    raw = yaml.safe_load(file.read_text()) or []
    if isinstance(raw, dict):
        raw = raw.get("repos", [])
    if not isinstance(raw, list) or not raw:
        raise ManifestError(f"{path}: expected a non-empty list of repositories (or `repos:` holding one)")
    specs: list[RepoSpec] = []
    known = {f.name for f in dataclasses.fields(RepoSpec)}
    for number, item in enumerate(raw):
        where = f"{path}: repos[{number}]"
        if not isinstance(item, dict):
            raise ManifestError(f"{where}: expected a mapping with name and path or url, got {item!r}")
        unknown = sorted(set(item) - known)
        if unknown:
            raise ManifestError(f"{where}: unknown key(s) {unknown}; known: {sorted(known)}")
        if bool(item.get("path")) == bool(item.get("url")):
            raise ManifestError(f"{where}: give exactly one of `path` and `url`")
        if item.get("commit") and item.get("branch"):
            raise ManifestError(f"{where}: give at most one of `commit` and `branch`")
        for key in ("include", "exclude"):
            if not isinstance(item.get(key, []), list):
                raise ManifestError(f"{where}: `{key}` must be a list of globs")
        values = {k: (str(v) if k not in ("include", "exclude") else [str(g) for g in v]) for k, v in item.items()
                  if v is not None}
        if not values.get("name"):
            values["name"] = _default_name(values)
        specs.append(RepoSpec(**values))
    names = [s.name for s in specs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ManifestError(f"{path}: repository names must be unique; duplicated: {duplicates}")
    return specs


def _default_name(values: dict[str, Any]) -> str:
    if values.get("path"):
        return repo_name_from_path(values["path"]) if Path(values["path"]).exists() else Path(values["path"]).name
    parts = [p for p in re.split(r"[:/]", values["url"].rstrip("/")) if p]
    tail = [p.removesuffix(".git") for p in parts[-2:]]
    return "/".join(tail)


def resolve_repo_path(spec: RepoSpec, cache_dir: Path, timeout_s: float) -> str:
    """The local git directory of a spec: its path, or a bare clone of its url (fetched if present)."""
    if spec.path:
        return spec.path
    target = cache_dir / CLONES_DIR / f"{_SAFE.sub('_', spec.name)}.git"
    target.parent.mkdir(parents=True, exist_ok=True)
    if (target / "HEAD").exists():
        cmd = ["git", "-C", str(target), "fetch", "--prune", "origin", "+refs/heads/*:refs/heads/*"]
    else:
        cmd = ["git", "clone", "--bare", "--quiet", spec.url, str(target)]
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=timeout_s, check=False,
                              env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"cloning {spec.url} timed out after {timeout_s:.0f}s") from None
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise RuntimeError(f"cannot clone {spec.url}: {detail[-1] if detail else 'git failed'}")
    return str(target)


def excluded(path: str, globs: list[str]) -> bool:
    name = path.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(path, g) or fnmatch.fnmatchcase(name, g) for g in globs)


# -- the distributed stages (module level so Ray can ship them) -----------------------------------

_SOURCES: dict[tuple[str, str, str], RepoSource] = {}


def _source(repo_path: str, commit: str, discover: dict[str, Any], config: Config) -> RepoSource:
    key = (repo_path, commit, json.dumps(discover, sort_keys=True))
    if key not in _SOURCES:
        cfg = dataclasses.replace(config.discover, **discover)
        _SOURCES[key] = RepoSource(repo_path, commit or None, cfg)
    return _SOURCES[key]


def parse_batch(batch: Any, config_dict: dict[str, Any]) -> Any:
    """Ray Data batch fn (pandas): read + parse each file; a failing file becomes an error row."""
    import pandas as pd

    config = config_from_dict(config_dict)
    parser = FileParser(config.chunk)
    out: dict[str, list[Any]] = {"repo": [], "path": [], "key": [], "parsed": [], "error": []}

    def emit(row: Any, parsed: ParsedFile | None, error: FileError | None) -> None:
        out["repo"].append(row.repo)
        out["path"].append(row.path)
        out["key"].append(row.key)
        out["parsed"].append(pickle.dumps(parsed, protocol=pickle.HIGHEST_PROTOCOL) if parsed is not None else b"")
        out["error"].append(json.dumps(error.to_row()) if error is not None else "")

    for (repo_path, commit, discover_json), group in batch.groupby(["repo_path", "commit", "discover"], sort=False):
        rows = list(group.itertuples(index=False))
        try:
            source = _source(repo_path, commit, json.loads(discover_json), config)
            entries = [FileEntry(r.path, r.blob_sha, int(r.size), r.language) for r in rows]
            items = list(source.read(entries))
        except Exception as exc:  # the whole group cannot be read: every file gets the reason
            for row in rows:
                emit(row, None, FileError(row.repo, row.path, "read", f"{type(exc).__name__}: {exc}"))
            continue
        for row, item in zip(rows, items):
            if isinstance(item, FileError):
                emit(row, None, dataclasses.replace(item, repo=row.repo))
                continue
            try:
                emit(row, parser.parse(row.repo, item), None)
            except Exception as exc:  # one bad file must not abort the job
                emit(row, None, FileError(row.repo, row.path, "parse", f"{type(exc).__name__}: {exc}"))
    return pd.DataFrame(out)


def encoder_identity(config: Config) -> tuple[str, int]:
    """(model id, dim) without loading the weights: names the embedding cache directory."""
    from transformers import AutoConfig

    from semantica.encoder import resolve_model_path

    path = resolve_model_path(config.encoder.model_path)
    dim = int(AutoConfig.from_pretrained(str(path)).hidden_size)
    return config.encoder.model_id or path.name, dim


class EmbedActor:
    """Ray Data actor: one encoder per actor (GPU when given one); cache misses only reach it."""

    def __init__(self, config_dict: dict[str, Any]) -> None:
        from semantica.encoder import shared_encoder

        self.config = config_from_dict(config_dict)
        self.model_id, self.dim = encoder_identity(self.config)
        self._encoder: Any = None
        self._shared = shared_encoder
        cache = EmbeddingCache(Path(self.config.paths.cache_dir) / EMBEDDINGS_DIR, self.model_id, self.dim,
                               self.config.encoder.max_length)
        self.embedder = ChunkEmbedder(self._encode, self.dim, cache, self.config.encoder.batch_size,
                                      self.config.encoder.cache_segment_vectors)

    def _encode(self, texts: list[str]) -> np.ndarray:
        if self._encoder is None:  # loaded on the first cache miss only
            self._encoder = self._shared(self.config.encoder)
        return self._encoder.encode(texts)

    def __call__(self, batch: Any) -> Any:
        parsed = [pickle.loads(p) if len(p) else None for p in batch["parsed"]]
        chunks = [c for p in parsed if p is not None for c in p.chunks]
        vectors = np.zeros((0, self.dim), dtype=np.float32)
        seen = set(self.embedder.cache.get_many([c.content_sha for c in chunks]))
        if chunks:
            vectors, _ = self.embedder.embed(chunks)
        blobs: list[bytes] = []
        embedded: list[int] = []
        offset = 0
        for p in parsed:
            n = len(p.chunks) if p is not None else 0
            blobs.append(vectors[offset : offset + n].astype(np.float32).tobytes())
            new = {c.content_sha for c in (p.chunks if p is not None else [])} - seen
            seen |= new
            embedded.append(len(new))
            offset += n
        batch = batch.copy()
        batch["vectors"] = blobs
        batch["embedded"] = embedded
        return batch


# -- the driver --------------------------------------------------------------------------------


@dataclass
class _RepoWork:
    spec: RepoSpec
    result: RepoResult
    source: RepoSource | None = None
    entries: list[FileEntry] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    parsed: dict[str, ParsedFile] = field(default_factory=dict)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    source_record: dict[str, Any] = field(default_factory=dict)  # semantica.source.SourceRecord (freshness)
    excluded: list[str] = field(default_factory=list)  # paths the manifest's `exclude` dropped


class BatchIndexer:
    """Indexes every repository of a manifest (Ray Data for new work) and publishes one snapshot each."""

    def __init__(self, config: Config, ray_address: str | None = None,
                 log: Callable[[str], None] | None = None) -> None:
        self.config = config
        self.ray_address = ray_address if ray_address is not None else config.ray.address
        self.layout = IndexLayout(config.paths.index_root)
        self.cache_dir = Path(config.paths.cache_dir)
        self.writer = SnapshotWriter(config)
        self.resolver = GraphResolver()
        self.log = log or (lambda message: None)

    def run(self, specs: list[RepoSpec]) -> BatchSummary:
        start = time.perf_counter()
        works = [self._discover(spec) for spec in specs]
        live = [w for w in works if w.source is not None]
        model_id, dim = encoder_identity(self.config)
        embed_cache = EmbeddingCache(self.cache_dir / EMBEDDINGS_DIR, model_id, dim, self.config.encoder.max_length)
        parse_cache = ParseCache(self.cache_dir / PARSE_CACHE_FILE)
        todo = self._lookup_caches(live, parse_cache, embed_cache)
        summary = BatchSummary(repos=[w.result for w in works], ray_address=self.ray_address or "local")
        if todo:
            summary.ray_used = True
            summary.files_through_ray = len(todo)
            self._run_ray(live, todo, parse_cache)
        for work in live:
            if work.result.reason:  # failed inside the Ray stage
                continue
            self._publish(work, model_id, dim)
        parse_cache.close()
        summary.seconds = round(time.perf_counter() - start, 3)
        summary.peak_rss_mb = round(peak_rss_mb(), 1)
        return summary

    # -- driver stages ---------------------------------------------------------------------------

    def _discover(self, spec: RepoSpec) -> _RepoWork:
        work = _RepoWork(spec=spec, result=RepoResult(repo=spec.name))
        t0 = time.perf_counter()
        try:
            path = resolve_repo_path(spec, self.cache_dir, self.config.ray.clone_timeout_s)
            discover = dataclasses.replace(self.config.discover, include_globs=list(spec.include))
            source = RepoSource(path, spec.commit or spec.branch or None, discover)
            work.source_record = record_source(source, spec.commit or spec.branch or None, self.config).to_dict()
            entries, errors = source.entries()
        except Exception as exc:  # this repo fails; the others go on
            work.result.reason = f"{type(exc).__name__}: {exc}"
            self.log(f"{spec.name}: failed: {work.result.reason}")
            return work
        work.source = source
        work.entries = [e for e in entries if not excluded(e.path, spec.exclude)]
        work.excluded = [e.path for e in entries if excluded(e.path, spec.exclude)]
        work.errors = [dataclasses.replace(e, repo=spec.name) for e in errors]
        work.result.commit = source.commit or "worktree"
        work.result.seconds["discover"] = round(time.perf_counter() - t0, 3)
        self.log(f"{spec.name}: {len(work.entries)} files to index")
        return work

    def _lookup_caches(self, works: list[_RepoWork], parse_cache: ParseCache,
                       embed_cache: EmbeddingCache) -> list[dict[str, Any]]:
        """Files already parsed with every chunk already embedded are done here; the rest -> Ray rows."""
        rows: list[dict[str, Any]] = []
        for work in works:
            assert work.source is not None
            keys = {e.path: ParseCache.key(work.spec.name, e.path, e.blob_sha) for e in work.entries}
            cached = parse_cache.get_many(list(keys.values()) + [ERROR_KEY_PREFIX + k for k in keys.values()])
            discover_json = json.dumps({"include_globs": list(work.spec.include)}, sort_keys=True)
            for entry in work.entries:
                parsed = cached.get(keys[entry.path])
                known_error = cached.get(ERROR_KEY_PREFIX + keys[entry.path])
                if isinstance(known_error, FileError):  # same blob, same verdict (binary, not UTF-8, ...)
                    work.errors.append(dataclasses.replace(known_error, repo=work.spec.name))
                    work.result.files_reused += 1
                    continue
                if parsed is not None:
                    found = embed_cache.get_many([c.content_sha for c in parsed.chunks])
                    if len(found) == len({c.content_sha for c in parsed.chunks}):
                        work.parsed[entry.path] = parsed
                        work.vectors[entry.path] = _stack([found[c.content_sha] for c in parsed.chunks],
                                                          embed_cache.dim)
                        work.result.files_reused += 1
                        work.result.chunks_reused += len(parsed.chunks)
                        continue
                rows.append({"repo": work.spec.name, "repo_path": work.source.repo_path,
                             "commit": work.source.commit or "", "discover": discover_json,
                             "path": entry.path, "blob_sha": entry.blob_sha, "size": entry.size,
                             "language": entry.language, "key": keys[entry.path]})
        return rows

    def _run_ray(self, works: list[_RepoWork], rows: list[dict[str, Any]], parse_cache: ParseCache) -> None:
        by_name = {w.spec.name: w for w in works}
        involved = sorted({r["repo"] for r in rows})
        t0 = time.perf_counter()
        try:
            outcome = self._collect_with_timeout(rows)
        except Exception as exc:  # Ray itself failed: every repo with work in the job fails with the reason
            for name in involved:
                by_name[name].result.reason = f"ray job failed: {type(exc).__name__}: {exc}"
            return
        fresh: dict[str, Any] = {}
        for row in outcome:
            work = by_name[row["repo"]]
            if row["error"]:
                error = FileError.from_row(json.loads(row["error"]))
                work.errors.append(error)
                if error.stage == CACHEABLE_ERROR_STAGE:  # decided by the blob's bytes alone
                    fresh[ERROR_KEY_PREFIX + row["key"]] = error
                continue
            parsed: ParsedFile = pickle.loads(row["parsed"])
            fresh[row["key"]] = parsed
            work.parsed[row["path"]] = parsed
            dim = self._dim_of(row["vectors"], len(parsed.chunks))
            work.vectors[row["path"]] = np.frombuffer(row["vectors"], dtype=np.float32).reshape(-1, dim) \
                if parsed.chunks else np.zeros((0, 0), dtype=np.float32)
            work.result.files_parsed += 1
            work.result.chunks_embedded += int(row["embedded"])
        parse_cache.put_many(fresh)
        elapsed = round(time.perf_counter() - t0, 3)
        for name in involved:
            by_name[name].result.seconds["ray"] = elapsed

    @staticmethod
    def _dim_of(blob: bytes, n: int) -> int:
        return (len(blob) // 4) // n if n else 0

    def _collect_with_timeout(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Run the dataset in a thread so a job starved of resources times out instead of hanging."""
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["rows"] = list(self._dataset_rows(rows))
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
                box["error"] = exc

        thread = threading.Thread(target=target, name="ray-index-job", daemon=True)
        thread.start()
        thread.join(self.config.ray.job_timeout_s)
        if thread.is_alive():
            raise TimeoutError(f"the Ray Data job did not finish in ray.job_timeout_s={self.config.ray.job_timeout_s}s "
                               "(starved of resources? check `ray status` and the num_cpus settings)")
        if "error" in box:
            raise box["error"]
        return box["rows"]

    def _dataset_rows(self, rows: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        import ray

        started_here = False
        if not ray.is_initialized():
            started_here = True
            if self.ray_address:
                ray.init(address=self.ray_address, log_to_driver=False)
            else:
                ray.init(num_cpus=self.config.ray.num_cpus, include_dashboard=False, log_to_driver=False)
        try:
            yield from self._pipeline(ray, rows)
        finally:
            if started_here:
                ray.shutdown()

    def _pipeline(self, ray: Any, rows: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        rc = self.config.ray
        resources = ray.cluster_resources()
        if resources.get("CPU", 0) < rc.actor_num_cpus:
            raise RuntimeError(f"the Ray cluster has {resources.get('CPU', 0)} CPUs, fewer than "
                               f"ray.actor_num_cpus={rc.actor_num_cpus}")
        gpus = 1 if resources.get("GPU", 0) >= 1 else 0
        config_dict = config_to_dict(self.config)
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        ds = ray.data.from_items(rows, override_num_blocks=max(1, min(len(rows), 4 * max(1, rc.num_cpus))))
        ds = ds.map_batches(parse_batch, fn_kwargs={"config_dict": config_dict}, batch_format="pandas",
                            batch_size=rc.parse_batch_size, num_cpus=rc.actor_num_cpus)
        embed_options: dict[str, Any] = {"num_gpus": 1} if gpus else {"num_cpus": rc.actor_num_cpus}
        ds = ds.map_batches(EmbedActor, fn_constructor_kwargs={"config_dict": config_dict}, batch_format="pandas",
                            batch_size=rc.embed_batch_size,
                            compute=ray.data.ActorPoolStrategy(size=max(1, rc.embed_actors)), **embed_options)
        for row in ds.iter_rows():
            yield dict(row)

    def _publish(self, work: _RepoWork, model_id: str, dim: int) -> None:
        result, spec = work.result, work.spec
        assert work.source is not None
        order = [e.path for e in work.entries if e.path in work.parsed]
        parsed = [work.parsed[p] for p in order]
        snapshot_id = ""
        try:
            t0 = time.perf_counter()
            edges = self.resolver.resolve(parsed)
            result.seconds["resolve"] = round(time.perf_counter() - t0, 3)
            chunks = [c for p in parsed for c in p.chunks]
            blocks = [work.vectors[p] for p in order if len(work.parsed[p].chunks)]
            vectors = np.concatenate(blocks).astype(np.float32) if blocks else np.zeros((0, dim), dtype=np.float32)
            if len(vectors) != len(chunks):
                raise RuntimeError(f"{len(vectors)} vectors for {len(chunks)} chunks")
            symbols = [s for p in parsed for s in p.symbols]
            errors = work.errors
            result.files, result.chunks, result.symbols = len(parsed), len(chunks), len(symbols)
            result.edges, result.errors = len(edges), len(errors)
            result.error_samples = [{"path": e.path, "stage": e.stage, "reason": e.reason}
                                    for e in errors[:ERROR_SAMPLES]]
            snapshot_id, paths = self.layout.begin(spec.name, work.source.commit or "")
            t0 = time.perf_counter()
            content = SnapshotContent(repo=spec.name, commit=work.source.commit or "", chunks=chunks,
                                      vectors=vectors, symbols=symbols, edges=edges, errors=errors,
                                      model_id=model_id, stats={"seconds": result.seconds, "job": "ray"},
                                      files={e.path: e.blob_sha for e in work.entries},
                                      skipped=[e.path for e in work.errors] + work.excluded,
                                      source=work.source_record)
            self.writer.write(paths, content)
            result.seconds["write"] = round(time.perf_counter() - t0, 3)
            t0 = time.perf_counter()
            final = self.layout.publish(spec.name, snapshot_id, self.config.index.keep_snapshots)
            result.seconds["publish"] = round(time.perf_counter() - t0, 3)
        except Exception as exc:  # this repo fails; the previous snapshot stays current
            if snapshot_id:
                self.layout.discard(spec.name, snapshot_id)
            result.reason = f"{type(exc).__name__}: {exc}"
            self.log(f"{spec.name}: failed: {result.reason}")
            return
        result.status, result.snapshot_id, result.snapshot_path = STATUS_OK, snapshot_id, str(final)
        self.log(f"{spec.name}: published {snapshot_id} ({result.chunks} chunks, {result.errors} errors)")


def _stack(vectors: list[np.ndarray], dim: int) -> np.ndarray:
    return np.stack(vectors).astype(np.float32) if vectors else np.zeros((0, dim), dtype=np.float32)


def run_batch(config: Config, manifest: str | Path, ray_address: str | None = None,
              log: Callable[[str], None] | None = None) -> BatchSummary:
    """Load the manifest and index every repository in it."""
    return BatchIndexer(config, ray_address, log).run(load_manifest(manifest))

