"""The Ray Data runner of the indexing driver: only what is Ray (tasks, the embedding actor pool).

`pipelines.indexer.Indexer` plans the work, resolves, writes and publishes; `RayRunner` runs its file
tasks on Ray Data:

    tasks -> `ray.data.from_items` -> `map_batches(parse_batch)` tasks (errors caught PER FILE)
    -> `map_batches(EmbedActor, compute=ActorPoolStrategy(size=ray.embed_actors))` (1 GPU per actor when
       the cluster has GPUs, fractional CPUs otherwise) -> outcomes back to the driver.

The Ray driver always runs in a freshly spawned process (`semantica.ray_runtime.run_in_fresh_process`):
Ray's signal handlers must never be installed in a process that runs the JVM (Lucene), which the
indexer's own process does when it writes shards. A local node binds to 127.0.0.1 only.

Cluster recipe (the driver runs on the head node; `paths.index_root` and `paths.cache_dir` must be on
storage every node sees when the cache is to be shared):

    ray job submit --address http://HEAD:8265 --working-dir . \\
        --runtime-env-json '{"env_vars": {"SEMANTICA_CONFIG": "conf/cluster.yaml"}}' \\
        -- semantica index-batch --manifest conf/repos.yaml --ray-address auto --json
"""

from __future__ import annotations

import json
import pickle
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from pipelines.embed import TokenSink
from pipelines.indexer import BatchSummary, Indexer
from pipelines.manifest import load_manifest
from pipelines.parse import FileParser
from pipelines.runner import FileOutcome, FileTask, embed_outcomes, embedding_cache, parse_tasks
from semantica.config import Config, config_from_dict, config_to_dict
from semantica.ray_runtime import run_in_fresh_process, start_ray
from semantica.schema import FileError

_TASK_FIELDS = ("repo", "repo_path", "commit", "include", "path", "blob_sha", "size", "language", "key")


def parse_batch(batch: Any, config_dict: dict[str, Any]) -> Any:
    """Ray Data batch fn (pandas): read + parse each file; a failing file becomes an error row."""
    import pandas as pd

    config = config_from_dict(config_dict)
    tasks = [FileTask(**{f: getattr(r, f) for f in _TASK_FIELDS if f != "include"}, include=json.loads(r.include))
             for r in batch.itertuples(index=False)]
    outcomes = parse_tasks(tasks, config, FileParser(config.chunk))
    out = batch.copy()
    out["parsed"] = [pickle.dumps(o.parsed, protocol=pickle.HIGHEST_PROTOCOL) if o.parsed is not None else b""
                     for o in outcomes]
    out["error"] = [json.dumps(o.error.to_row()) if o.error is not None else "" for o in outcomes]
    return pd.DataFrame(out)


def encoder_identity(config: Config) -> tuple[str, int]:
    """(model id, dim) without loading the weights: names the embedding cache directory (the runtime
    included, as the local runner's encoder names it)."""
    from semantica.encoder import encoder_identity as identity

    return identity(config.encoder)


class EmbedActor:
    """Ray Data actor: one encoder per actor (GPU when given one); cache misses only reach it."""

    def __init__(self, config_dict: dict[str, Any]) -> None:
        from pipelines.embed import ChunkEmbedder
        from semantica.encoder import shared_encoder

        self.config = config_from_dict(config_dict)
        self.model_id, self.dim = encoder_identity(self.config)
        self._encoder: Any = None
        self._shared = shared_encoder
        self.embedder = ChunkEmbedder(self._encode, self.dim, embedding_cache(self.config, self.model_id, self.dim),
                                      self.config.encoder.group_texts, self.config.encoder.cache_segment_vectors)

    def _encode(self, texts: list[str]) -> np.ndarray:
        if self._encoder is None:  # loaded on the first cache miss only
            self._encoder = self._shared(self.config.encoder)
        return self._encoder.encode(texts)

    def __call__(self, batch: Any) -> Any:
        outcomes = [FileOutcome(r, p, k, parsed=pickle.loads(b) if len(b) else None)
                    for r, p, k, b in zip(batch["repo"], batch["path"], batch["key"], batch["parsed"])]
        embed_outcomes(outcomes, self.embedder)
        batch = batch.copy()
        batch["vectors"] = [o.vectors.astype(np.float32).tobytes() for o in outcomes]
        batch["embedded"] = [o.embedded for o in outcomes]
        return batch


def _outcome(row: dict[str, Any]) -> FileOutcome:
    outcome = FileOutcome(row["repo"], row["path"], row["key"])
    if row["error"]:
        outcome.error = FileError.from_row(json.loads(row["error"]))
        return outcome
    outcome.parsed = pickle.loads(row["parsed"])
    n = len(outcome.parsed.chunks)
    blob = row["vectors"]
    outcome.vectors = np.frombuffer(blob, dtype=np.float32).reshape(n, (len(blob) // 4) // n) if n \
        else np.zeros((0, 0), dtype=np.float32)
    outcome.embedded = int(row["embedded"])
    return outcome


def _pipeline(ray: Any, config: Config, rows: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    rc = config.ray
    resources = ray.cluster_resources()
    if resources.get("CPU", 0) < rc.actor_num_cpus:
        raise RuntimeError(f"the Ray cluster has {resources.get('CPU', 0)} CPUs, fewer than "
                           f"ray.actor_num_cpus={rc.actor_num_cpus}")
    gpus = 1 if resources.get("GPU", 0) >= 1 else 0
    config_dict = config_to_dict(config)
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


def ray_driver(config_dict: dict[str, Any], address: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Ray driver (runs in its own process): start Ray, run the dataset with a deadline, stop Ray."""
    import ray

    config = config_from_dict(config_dict)
    start_ray(config.ray, address or None)
    try:
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["rows"] = list(_pipeline(ray, config, rows))
            except BaseException as exc:  # noqa: BLE001 - re-raised below
                box["error"] = exc

        thread = threading.Thread(target=target, name="ray-index-job", daemon=True)
        thread.start()
        thread.join(config.ray.job_timeout_s)
        if thread.is_alive():
            raise TimeoutError(f"the Ray Data job did not finish in ray.job_timeout_s={config.ray.job_timeout_s}s "
                               "(starved of resources? check `ray status` and the num_cpus settings)")
        if "error" in box:
            raise box["error"]
        return [{k: v for k, v in row.items() if k in ("repo", "path", "key", "parsed", "error", "vectors",
                                                          "embedded")} for row in box["rows"]]
    finally:
        ray.shutdown()


class RayRunner:
    """Runs the indexer's file tasks on Ray Data, from a Ray driver in its own process."""

    remote = True

    def __init__(self, config: Config, address: str | None = None) -> None:
        self.config = config
        self.address = address if address is not None else config.ray.address

    def identity(self) -> tuple[str, int]:
        return encoder_identity(self.config)

    def run(self, tasks: list[FileTask], tokens: TokenSink | None = None) -> list[FileOutcome]:
        """Token vectors are not collected remotely: the indexer fills them from its own encoder."""
        rows = [{f: getattr(t, f) for f in _TASK_FIELDS} for t in tasks]
        for row in rows:  # Ray Data columns must be uniform: globs travel as one string
            row["include"] = json.dumps(row["include"])
        timeout = self.config.ray.job_timeout_s + self.config.ray.startup_timeout_s
        out = run_in_fresh_process(ray_driver, config_to_dict(self.config), self.address or "", rows,
                                   timeout_s=timeout)
        return [_outcome(row) for row in out]


def run_batch(config: Config, manifest: str | Path, ray_address: str | None = None,
              log: Callable[[str], None] | None = None) -> BatchSummary:
    """Load the manifest and index every repository in it with the Ray runner."""
    return Indexer(config, RayRunner(config, ray_address), log=log).run(load_manifest(manifest))
