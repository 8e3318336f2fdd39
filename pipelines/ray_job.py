"""The Ray Data runner of the indexing driver: only what is Ray (tasks, the embedding actor pool).

`pipelines.indexer.Indexer` plans the work, resolves, writes and publishes; `RayRunner` runs its file
tasks on Ray Data:

    tasks -> `ray.data.from_items` -> `map_batches(parse_batch)` tasks (`ray.parse_num_cpus` each; errors caught
       PER FILE; a task that already carries its parse is not parsed again)
    -> `map_batches(EmbedActor, compute=ActorPoolStrategy(...))` (`ray.embed_actors` actors, or 0: autoscaled up
       to one per GPU; 1 GPU per actor when the cluster has GPUs, `ray.actor_num_cpus` otherwise; up to
       `ray.embed_tasks_in_flight` batches queued on each: chunk vectors, token vectors and the dense function
       channel's vectors) -> outcomes back to the driver.

The two maps ask for different resources, so Ray Data runs them as two streaming operators (parse beside the
encoder) instead of fusing the parse into the actor's call (`stage_options`). With `index.dense_later` the indexer
first runs the parse map alone (`RayRunner.parse`), publishes the first snapshot, then runs both maps over the
parsed tasks: two Ray jobs, each starting its own driver.

The Ray driver always runs in a freshly spawned process (`semantica.runtime.ray_runtime.run_in_fresh_process`):
Ray's signal handlers must never be installed in a process that runs the JVM (Lucene), which the
indexer's own process does when it writes shards. A local node binds to 127.0.0.1 only.

Cluster recipe (the driver runs on the head node; `paths.index_root` and `paths.cache_dir` must be on
storage every node sees when the cache is to be shared):

    ray job submit --address http://HEAD:8265 --working-dir . \\
        --runtime-env-json '{"env_vars": {"SEMANTICA_CONFIG": "conf/cluster.yaml"}}' \\
        -- semantica index-batch --manifest conf/repos.yaml --ray-address auto --json
"""

from __future__ import annotations

import contextlib
import io
import json
import pickle
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from pipelines.embed import ChunkEmbedder, TokenSink
from pipelines.function_vectors import STORED_DTYPE, FileFunctions
from pipelines.indexer import BatchSummary, Indexer
from pipelines.manifest import load_manifest
from pipelines.parse import FileParser, ParsedFile
from pipelines.progress import ProgressFile, ProgressWatcher, StageProgress
from pipelines.runner import (
    FileOutcome,
    FileTask,
    embed_outcomes,
    embedding_cache,
    encode_functions,
    function_pass,
    parse_tasks,
)
from pipelines.token_cache import TokenVectorBuilder, new_token_builder
from semantica.config import Config, RayConfig, config_from_dict, config_to_dict
from semantica.runtime.encoder import encoder_identity, shared_encoder
from semantica.runtime.ray_runtime import run_in_fresh_process, start_ray
from semantica.schema import FileError

OPTIMIZED_PHYSICAL_PLAN = "Physical Plan (Optimized)"  # the section of Ray Data's explain text that ran
_OUTCOME_COLUMNS = ("repo", "path", "key", "parsed", "parsed_now", "error", "vectors", "embedded", "tokens_encoded",
                    "function_keys", "function_shas", "function_vectors", "functions_encoded")
_TASK_FIELDS = ("repo", "repo_path", "commit", "include", "path", "blob_sha", "size", "language", "key")


def parse_batch(batch: Any, config_dict: dict[str, Any]) -> Any:
    """Ray Data batch fn (pandas): read + parse each file whose row carries no parse yet (the driver's, from its
    parse cache or a first `index.dense_later` phase); a failing file becomes an error row."""
    import pandas as pd

    config = config_from_dict(config_dict)
    tasks = [FileTask(**{f: getattr(r, f) for f in _TASK_FIELDS if f != "include"}, include=json.loads(r.include),
                      parsed=pickle.loads(r.parsed) if len(r.parsed) else None)
             for r in batch.itertuples(index=False)]
    outcomes = parse_tasks(tasks, config, FileParser(config.chunk))
    out = batch.copy()
    out["parsed"] = [_pickled(o.parsed) for o in outcomes]
    out["parsed_now"] = [o.parsed_now for o in outcomes]
    out["chunks"] = [len(o.parsed.chunks) if o.parsed is not None else 0 for o in outcomes]  # for progress
    out["error"] = [json.dumps(o.error.to_row()) if o.error is not None else "" for o in outcomes]
    return pd.DataFrame(out)


def _pickled(parsed: ParsedFile | None) -> bytes:
    return pickle.dumps(parsed, protocol=pickle.HIGHEST_PROTOCOL) if parsed is not None else b""


class EmbedActor:
    """Ray Data actor: one encoder per actor (GPU when given one); cache misses only reach it. The dense function
    channel's encoder runs here too (`pipelines.function_vectors`), on the same device, into the shared cache.

    With `make_tokens` it also makes the chunks' token vectors (late interaction), from the same forward pass
    when they are stored at the embedding's length, compresses them with the codec the driver fitted and
    writes them into the shared token cache, where the driver's builder finds them: the head node encodes
    nothing."""

    def __init__(self, config_dict: dict[str, Any], make_tokens: bool = False) -> None:
        self.config = config_from_dict(config_dict)
        self.model_id, self.dim = encoder_identity(self.config.encoder)
        self._encoder: Any = None
        self._shared = shared_encoder
        tokens = new_token_builder(self.config, self.model_id, self.dim) if make_tokens else None
        self.tokens = tokens if tokens is not None and tokens.codec is not None else None  # no codec: the driver fills
        shared_pass = self.tokens is not None and \
            self.config.late_interaction.doc_max_length == self.config.encoder.max_length
        self.embedder = ChunkEmbedder(self._encode, self.dim, embedding_cache(self.config, self.model_id, self.dim),
                                      self.config.encoder.group_texts, self.config.encoder.cache_segment_vectors,
                                      encode_with_tokens=self._encode_with_tokens if shared_pass else None,
                                      token_sink=self.tokens if shared_pass else None)
        self.functions = function_pass(self.config)

    def _loaded(self) -> Any:
        if self._encoder is None:  # loaded on the first cache miss only
            self._encoder = self._shared(self.config.encoder)
        return self._encoder

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self._loaded().encode(texts)

    def _encode_with_tokens(self, texts: list[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        return self._loaded().encode_with_tokens(texts)

    def _encode_tokens(self, texts: list[str]) -> list[np.ndarray]:
        return self._loaded().encode_tokens(texts, self.config.late_interaction.doc_max_length)

    def __call__(self, batch: Any) -> Any:
        outcomes = [FileOutcome(r, p, k, parsed=pickle.loads(b) if len(b) else None)
                    for r, p, k, b in zip(batch["repo"], batch["path"], batch["key"], batch["parsed"])]
        new_tokens = self._tokens_missing(outcomes)
        embed_outcomes(outcomes, self.embedder)
        encode_functions(outcomes, self.functions)
        if self.tokens is not None:  # chunks whose sentence vector was cached but whose tokens were not
            self.tokens.fill([c for o in outcomes if o.parsed is not None for c in o.parsed.chunks],
                             self._encode_tokens, self.config.encoder.group_texts)
            self.tokens.flush()  # one segment in the shared cache per batch
        batch = batch.copy()
        batch["vectors"] = [o.vectors.astype(np.float32).tobytes() for o in outcomes]
        batch["embedded"] = [o.embedded for o in outcomes]
        batch["tokens_encoded"] = new_tokens
        found = [o.functions for o in outcomes]
        batch["function_keys"] = [json.dumps(f.keys if f is not None else None) for f in found]
        batch["function_shas"] = [json.dumps(f.shas if f is not None else None) for f in found]
        batch["function_vectors"] = [f.vectors.astype(STORED_DTYPE).tobytes() if f is not None else b"" for f in found]
        batch["functions_encoded"] = [o.functions_encoded for o in outcomes]
        return batch

    def _tokens_missing(self, outcomes: list[FileOutcome]) -> list[int]:
        """Per file, how many of its chunks this batch makes token vectors for (each content counted once)."""
        counts, counted = [], set()
        for outcome in outcomes:
            shas = {c.content_sha for c in outcome.parsed.chunks} if outcome.parsed is not None else set()
            new = {s for s in shas - counted if self.tokens is not None and not self.tokens.has(s)}
            counted |= new
            counts.append(len(new))
        return counts


def _outcome(row: dict[str, Any]) -> FileOutcome:
    """A row back from the driver as the task's outcome: parsed only (`embed` off), else with every model pass's."""
    outcome = FileOutcome(row["repo"], row["path"], row["key"], parsed_now=bool(row["parsed_now"]))
    if row["error"]:
        outcome.error = FileError.from_row(json.loads(row["error"]))
        return outcome
    outcome.parsed = pickle.loads(row["parsed"])
    if "vectors" not in row:
        return outcome
    n = len(outcome.parsed.chunks)
    blob = row["vectors"]
    outcome.vectors = np.frombuffer(blob, dtype=np.float32).reshape(n, (len(blob) // 4) // n) if n \
        else np.zeros((0, 0), dtype=np.float32)
    outcome.embedded = int(row["embedded"])
    outcome.tokens_encoded = int(row.get("tokens_encoded", 0))
    keys, shas = json.loads(row["function_keys"]), json.loads(row["function_shas"])
    if keys is not None:  # the channel is on: every parsed file has a (possibly empty) list
        rows = np.frombuffer(row["function_vectors"], dtype=STORED_DTYPE)
        outcome.functions = FileFunctions(keys, shas, rows.reshape(len(keys), -1) if keys else rows.reshape(0, 0))
        outcome.functions_encoded = int(row["functions_encoded"])
    return outcome


def embed_pool(embed_actors: int, resources: dict[str, float]) -> dict[str, int]:
    """`ActorPoolStrategy` arguments for the embedding actors: a fixed pool of `embed_actors`, or (0) a pool Ray Data
    scales from one actor up to one per GPU of the cluster, adding actors while the pool's measured utilisation is over
    Ray Data's scale-up threshold and input remains; one on a cluster without GPUs, where an actor's encoder already runs
    on every core of its node."""
    if embed_actors > 0:
        return {"size": embed_actors}
    gpus = int(resources.get("GPU", 0))
    return {"min_size": 1, "max_size": gpus} if gpus > 1 else {"size": 1}


def embed_strategy(rc: RayConfig, resources: dict[str, float]) -> dict[str, int]:
    """`ActorPoolStrategy` arguments: the pool (`embed_pool`) and the batches queued on each actor, so the next
    batch's blocks are fetched while the encoder runs."""
    return {**embed_pool(rc.embed_actors, resources), "max_tasks_in_flight_per_actor": rc.embed_tasks_in_flight}


def stage_options(rc: RayConfig, gpus: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The parse tasks' and the embed actors' resource requests. Ray Data fuses a task map into the actor map after
    it when their requests are equal (then a parse runs inside the actor's call and never beside its encoder): the
    parse tasks ask for `ray.parse_num_cpus`, the actors for a GPU or `ray.actor_num_cpus`."""
    embed: dict[str, Any] = {"num_gpus": 1} if gpus else {"num_cpus": rc.actor_num_cpus}
    return {"num_cpus": rc.parse_num_cpus}, embed


def index_dataset(ray: Any, config: Config, rows: list[dict[str, Any]], make_tokens: bool, embed: bool = True) -> Any:
    """The Ray Data plan: parse tasks, then (`embed`) the embed actor pool, two streaming operators."""
    rc = config.ray
    resources = ray.cluster_resources()
    needed = max(rc.actor_num_cpus, rc.parse_num_cpus)
    if resources.get("CPU", 0) < needed:
        raise RuntimeError(f"the Ray cluster has {resources.get('CPU', 0)} CPUs, fewer than ray.actor_num_cpus="
                           f"{rc.actor_num_cpus} or ray.parse_num_cpus={rc.parse_num_cpus}")
    gpus = 1 if resources.get("GPU", 0) >= 1 else 0
    config_dict = config_to_dict(config)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    parse_options, embed_options = stage_options(rc, gpus)
    ds = ray.data.from_items(rows, override_num_blocks=max(1, min(len(rows), 4 * max(1, rc.num_cpus))))
    ds = ds.map_batches(parse_batch, fn_kwargs={"config_dict": config_dict}, batch_format="pandas",
                        batch_size=rc.parse_batch_size, **parse_options)
    if not embed:
        return ds
    pool = ray.data.ActorPoolStrategy(**embed_strategy(rc, resources))
    return ds.map_batches(EmbedActor, fn_constructor_kwargs={"config_dict": config_dict, "make_tokens": make_tokens},
                          batch_format="pandas", batch_size=rc.embed_batch_size, compute=pool, **embed_options)


def _pipeline(ray: Any, config: Config, rows: list[dict[str, Any]], make_tokens: bool,
              embed: bool) -> Iterator[dict[str, Any]]:
    for row in index_dataset(ray, config, rows, make_tokens, embed).iter_rows():
        yield dict(row)


def plan_driver(config_dict: dict[str, Any], address: str, rows: list[dict[str, Any]]) -> str:
    """The optimized physical plan of the dataset `ray_driver` runs (Ray Data's `explain` text), without running it:
    which operators Ray Data fused. Runs in its own process like the driver."""
    import ray

    config = config_from_dict(config_dict)
    start_ray(config.ray, address or None)
    try:
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            index_dataset(ray, config, rows, make_tokens=False).explain()
        return text.getvalue()[text.getvalue().index(OPTIMIZED_PHYSICAL_PLAN):]
    finally:
        ray.shutdown()


def ray_driver(config_dict: dict[str, Any], address: str, rows: list[dict[str, Any]],
               make_tokens: bool = False, progress_path: str = "", embed: bool = True) -> list[dict[str, Any]]:
    """The Ray driver (runs in its own process): start Ray, run the dataset (without the embed actors when `embed`
    is off) with a deadline, stop Ray. As rows come back it writes the files and chunks done to `progress_path` (a
    `ProgressFile` the parent's bars follow)."""
    import ray

    config = config_from_dict(config_dict)
    start_ray(config.ray, address or None)
    try:
        box: dict[str, Any] = {}

        def target() -> None:
            counts = ProgressFile(progress_path) if progress_path else None
            try:
                done = []
                for row in _pipeline(ray, config, rows, make_tokens, embed):
                    done.append(row)
                    if counts is not None:
                        counts.add(1, int(row.get("chunks", 0)))
                if counts is not None:
                    counts.flush()
                box["rows"] = done
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
        return [{k: v for k, v in row.items() if k in _OUTCOME_COLUMNS} for row in box["rows"]]
    finally:
        ray.shutdown()


def task_rows(tasks: list[FileTask]) -> list[dict[str, Any]]:
    """The dataset's input rows: one per task (Ray Data columns must be uniform: globs travel as one string)."""
    rows = [{f: getattr(t, f) for f in _TASK_FIELDS} for t in tasks]
    for row, task in zip(rows, tasks):
        row["include"] = json.dumps(row["include"])
        row["parsed"] = _pickled(task.parsed)  # the workers embed it without parsing the file again
    return rows


class RayRunner:
    """Runs the indexer's file tasks on Ray Data, from a Ray driver in its own process."""

    remote = True

    def __init__(self, config: Config, address: str | None = None) -> None:
        self.config = config
        self.address = address if address is not None else config.ray.address

    def identity(self) -> tuple[str, int]:
        return encoder_identity(self.config.encoder)

    def run(self, tasks: list[FileTask], tokens: TokenSink | None = None) -> list[FileOutcome]:
        """The workers make the token vectors too when `tokens` is the indexer's `TokenVectorBuilder`: its codec
        is fitted here first when the cache has none yet, the workers compress with it into the shared cache,
        and the builder reads what they wrote."""
        builder = tokens if isinstance(tokens, TokenVectorBuilder) else None
        if builder is not None and builder.codec is None:
            self._fit_codec(tasks, builder)
        outcomes = self._drive(tasks, make_tokens=builder is not None and builder.codec is not None, embed=True)
        if builder is not None:
            builder.refresh()
        return outcomes

    def parse(self, tasks: list[FileTask]) -> list[FileOutcome]:
        """The parse tasks alone on Ray Data (a dataset without the embed actors): `index.dense_later`'s first
        phase, whose parses `run` then ships to the embed actors."""
        return self._drive(tasks, make_tokens=False, embed=False)

    def _drive(self, tasks: list[FileTask], make_tokens: bool, embed: bool) -> list[FileOutcome]:
        """Run the dataset from a Ray driver in a fresh process, with a bar per stage following its rows."""
        rows = task_rows(tasks)
        timeout = self.config.ray.job_timeout_s + self.config.ray.startup_timeout_s
        files = StageProgress("ray" if embed else "ray parse", "files", len(rows))
        chunks = StageProgress("embed" if embed else "parse", "chunks")
        with tempfile.TemporaryDirectory(prefix="semantica-progress-") as folder:
            counts = Path(folder) / "counts"
            with ProgressWatcher(counts, files, chunks):  # the driver's rows as Ray Data hands them back
                out = run_in_fresh_process(ray_driver, config_to_dict(self.config), self.address or "", rows,
                                           make_tokens, str(counts), embed, timeout_s=timeout)
        files.close()
        chunks.close()
        return [_outcome(row) for row in out]

    def _fit_codec(self, tasks: list[FileTask], builder: TokenVectorBuilder) -> None:
        """A token codec from the first files' chunks (parsed and encoded here, a sample only): once per model
        and codec setting in a cache, then every worker compresses with it."""
        parser, encoder = FileParser(self.config.chunk), shared_encoder(self.config.encoder)
        length, step = self.config.late_interaction.doc_max_length, max(1, self.config.ray.parse_batch_size)
        for start in range(0, len(tasks), step):
            parsed = [o.parsed for o in parse_tasks(tasks[start : start + step], self.config, parser)
                      if o.parsed is not None]
            builder.sample_for_codec([c for p in parsed for c in p.chunks],
                                     lambda texts: encoder.encode_tokens(texts, length), self.config.encoder.group_texts)
            if builder.codec is not None:
                break
        builder.fit_now()


def run_batch(config: Config, manifest: str | Path, ray_address: str | None = None,
              log: Callable[[str], None] | None = None) -> BatchSummary:
    """Load the manifest and index every repository in it with the Ray runner."""
    return Indexer(config, RayRunner(config, ray_address), log=log).run(load_manifest(manifest))
