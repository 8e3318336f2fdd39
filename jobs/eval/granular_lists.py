"""`semantica mine granular`: whole-file and function-level BM25 lists per SWE-bench instance.

Adds to a mine directory (`OUT/lists/` from `mine swebench`) the granular lists a snapshot with
`granular.index` would give, without indexing or embedding again: for each instance the repository
is read at its base commit straight from git objects (`pipelines.discover.RepoSource`), each file is
parsed once per blob (`pipelines.parse.FileParser`), its documents are built as the indexer builds
them (`pipelines.granular`), and a temporary Lucene index answers the issue text. Writes
`OUT/granular/<instance>.parquet` with rows (kind, rank, key, score): kind `file` and `function` are
the BM25 lists (best first), kind `inventory` lists the functions of every file that any list ranks
(the candidates of "functions of the top files"), in source order. A re-run skips written instances.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from jobs.eval.instances import Instance, find_repo
from jobs.ltr.mine import LISTS_DIR, part_name
from pipelines.discover import RepoSource
from pipelines.granular import GranularIndexWriter, file_documents, file_texts_from_chunks
from pipelines.parse import FileParser
from semantica.config import Config
from semantica.schema import FileError
from semantica.stores.granular import Granularity, path_of_key
from semantica.stores.lucene import LuceneShardSearcher, raw_document

GRANULAR_DIR = "granular"
INVENTORY = "inventory"


@dataclass
class FileDocs:
    """One blob's raw granular documents and its function keys (cached across commits)."""

    file: str
    functions: list[str]
    function_keys: list[str]


class GranularListMiner:
    """Writes the granular lists of SWE-bench instances into `out/granular/`."""

    def __init__(self, config: Config, repos_dir: str | Path, out: str | Path,
                 log: Callable[[str], None] = print) -> None:
        self.config = config
        self.repos_dir = Path(repos_dir)
        self.out = Path(out) / GRANULAR_DIR
        self.lists_dir = Path(out) / LISTS_DIR
        self.parser = FileParser(config.chunk)
        self.log = log
        self._cache: dict[tuple[str, str], FileDocs | None] = {}
        self._cache_repo = ""

    def _docs(self, source: RepoSource, repo: str) -> dict[str, FileDocs]:
        """Documents of every file at the source's commit; blobs seen before are not read again."""
        if repo != self._cache_repo:
            self._cache, self._cache_repo = {}, repo
        entries, _ = source.entries()
        todo = [e for e in entries if (e.path, e.blob_sha) not in self._cache]
        for item in source.read(todo):
            if isinstance(item, FileError):
                continue
            parsed = self.parser.parse(repo, item)  # never raises: a bad file falls back to windows
            # the text the indexer's writer sees: rebuilt from the chunks (`pipelines.granular`)
            text = file_texts_from_chunks(parsed.chunks).get(item.path, "")
            docs = file_documents(item.path, text, parsed.symbols)
            self._cache[(item.path, item.blob_sha)] = FileDocs(
                raw_document(docs.file[0]), [raw_document(d) for d in docs.functions],
                [d.doc_id for d in docs.functions])
        for entry in todo:
            self._cache.setdefault((entry.path, entry.blob_sha), None)
        found = {e.path: self._cache[(e.path, e.blob_sha)] for e in entries}
        return {path: docs for path, docs in found.items() if docs is not None}

    def _ranked_paths(self, inst: Instance) -> set[str]:
        """Paths the stored chunk lists rank (their functions are candidates too)."""
        file = self.lists_dir / part_name(inst.instance_id)
        return set(pl.read_parquet(file, columns=["path"])["path"].to_list()) if file.is_file() else set()

    def mine(self, inst: Instance) -> Path:
        target = self.out / part_name(inst.instance_id)
        if target.is_file():
            return target
        source = RepoSource(str(find_repo(self.repos_dir, inst.repo)), inst.base_commit, self.config.discover)
        docs = self._docs(source, inst.repo)
        k = self.config.granular.k
        rows: list[tuple[str, int, str, float]] = []
        with tempfile.TemporaryDirectory(prefix="granular-") as tmp:
            raw = {Granularity.FILE: [d.file for d in docs.values()],
                   Granularity.FUNCTION: [f for d in docs.values() for f in d.functions]}
            shards = GranularIndexWriter(self.config.lucene).write(Path(tmp), raw)
            for granularity in Granularity:
                found: list[tuple[str, float]] = []
                for shard in shards:
                    if shard.kind == granularity.shard_kind:
                        searcher = LuceneShardSearcher(Path(tmp) / shard.path, self.config.lucene)
                        found.extend(searcher.search(inst.problem_statement, k, self.config.granular.query_repeats))
                        searcher.close()
                found.sort(key=lambda item: (-item[1], item[0]))
                rows.extend((granularity.value, rank, key, score) for rank, (key, score) in enumerate(found[:k], 1))
        ranked = self._ranked_paths(inst) | {path_of_key(key) for kind, _, key, _ in rows}
        for path in sorted(ranked):
            if path in docs:
                rows.extend((INVENTORY, n, key, 0.0) for n, key in enumerate(docs[path].function_keys, 1))
        self.out.mkdir(parents=True, exist_ok=True)
        frame = pl.DataFrame(rows, schema={"kind": pl.Utf8, "rank": pl.Int32, "key": pl.Utf8, "score": pl.Float64},
                             orient="row")
        tmp_target = target.with_suffix(".tmp")
        frame.write_parquet(tmp_target)
        tmp_target.replace(target)
        return target

    def run(self, instances: Sequence[Instance]) -> list[str]:
        """Mine every instance (grouped by repository, so blobs are shared); returns the failed ids."""
        failed: list[str] = []
        ordered = sorted(instances, key=lambda i: i.repo)
        for n, inst in enumerate(ordered, 1):
            start = time.perf_counter()
            try:
                self.mine(inst)
            except Exception as exc:  # one instance must not stop the run
                failed.append(inst.instance_id)
                self.log(f"[{n}/{len(ordered)}] {inst.instance_id} FAILED: {type(exc).__name__}: {exc}")
                continue
            self.log(f"[{n}/{len(ordered)}] {inst.instance_id} {time.perf_counter() - start:.1f} s")
        return failed


def load_granular(mined_dir: str | Path, instance_id: str) -> pl.DataFrame | None:
    """An instance's granular rows, or None when they were never mined."""
    file = Path(mined_dir) / GRANULAR_DIR / part_name(instance_id)
    return pl.read_parquet(file) if file.is_file() else None
