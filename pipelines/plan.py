"""The dry run before indexing (`semantica plan`): what `index` would read, skip and spend.

It runs the indexer's own discovery (`pipelines.manifest.open_spec`, then `RepoSource.read`'s checks for
binary, non-UTF-8 and minified files), so the files it lists are the files `index` then indexes; it
loads no model and starts no JVM. Chunks are estimated per language from each file's size and the
functions tree-sitter finds in it (the parser chunks each function apart, so they drive the count more
than bytes do): `plan.chunk_rates` in conf/default.yaml, fitted on public repositories by
`python -m lab.bench.plan_chunk_fit`. Embedding time and index size come from rates measured on this
machine (`python -m lab.bench.plan_rates`). Only a file the parser rejects after reading can differ, and
the parser accepts any UTF-8 text.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pipelines.discover import STAGE
from pipelines.manifest import RepoSpec, open_spec
from pipelines.source_files import SourceFile
from semantica.config import Config, PlanConfig
from semantica.languages.spans import file_spans
from semantica.layout import IndexLayout
from semantica.ondisk.layout_errors import LayoutError
from semantica.ondisk.source import FileBlobs
from semantica.schema import FileError

# A skip reason's kind, by how discovery words it (first match wins): what `semantica plan` groups by.
SKIP_KINDS = (
    ("ignored by ", "ignored"), ("vendored directory", "vendored"), ("generated", "generated"),
    ("oversized", "huge"), ("symlink", "symlink"), ("binary", "binary"), ("not valid UTF-8", "not-utf8"),
    ("file name is not valid UTF-8", "not-utf8-name"),
    ("unknown file type", "unknown-type"), ("submodule", "submodule"), ("excluded by", "excluded"),
    ("missing from", "missing"),
)


def skip_kind(reason: str) -> str:
    """The kind of a discovery skip reason (`other` for one no kind describes)."""
    return next((kind for prefix, kind in SKIP_KINDS if reason.startswith(prefix)), "other")


KIB = 1024
EXCLUDED_REASON = "excluded by the manifest's exclude globs"
DEFAULT_RATE = "default"
RATE_TERMS = ("per_file", "per_kib", "per_function")  # chunks = per_file * files + per_kib * KiB + per_function * functions
# the report's shape and its warnings' word lists (constants of the dry run, not per-deployment settings)
TOP_DIRS = 10  # top included / excluded directories listed
EXAMPLES_PER_REASON = 5  # example paths listed per skip reason and per warning
LOCKFILE_NAMES = frozenset({  # an included file of this name is warned about as a lockfile
    "package-lock.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock", "Pipfile.lock", "Cargo.lock",
    "go.sum", "composer.lock", "Gemfile.lock", "uv.lock", "pdm.lock"})
ARTIFACT_DIRS = frozenset({  # an included file under a directory of this name is warned about as a build artifact
    "target", "out", "dist", "build", "_build", ".next", "coverage", "htmlcov", "generated", "obj"})
# an included file at least `plan.data_dump_bytes` big with one of these suffixes is warned about as a data dump
DATA_SUFFIXES = (".json", ".jsonl", ".csv", ".tsv", ".sql", ".xml", ".yaml", ".yml", ".txt", ".log")


def function_count(path: str, text: str) -> int:
    """The outer functions and methods tree-sitter finds in a file (`semantica.languages.spans`); 0 for a language
    without spans, or a file tree-sitter cannot read."""
    try:
        return len(file_spans(path, text))
    except Exception:  # an estimate never fails a plan
        return 0


class ChunkRates:
    """Per-language rates of the chunks `index` makes (`plan.chunk_rates`); an unlisted language takes `default`."""

    def __init__(self, table: dict[str, dict[str, float]]) -> None:
        for language, rate in table.items():
            unknown = set(rate) - set(RATE_TERMS)
            if unknown:
                raise ValueError(f"plan.chunk_rates.{language}: unknown term(s) {sorted(unknown)}; use {list(RATE_TERMS)}")
        if DEFAULT_RATE not in table:
            raise ValueError(f"plan.chunk_rates needs a {DEFAULT_RATE!r} row for unlisted languages")
        self.table = table

    def estimate(self, language: str, files: int, kib: float, functions: int) -> int:
        if not files:
            return 0
        rate = self.table.get(language, self.table[DEFAULT_RATE])
        chunks = (rate.get("per_file", 0.0) * files + rate.get("per_kib", 0.0) * kib
                  + rate.get("per_function", 0.0) * functions)
        return max(files, round(chunks))  # every indexed file holds at least one chunk


@dataclass
class Tally:
    files: int = 0
    bytes: int = 0


@dataclass
class LanguageTally(Tally):
    functions: int = 0  # found by tree-sitter
    chunks: int = 0  # estimated


@dataclass
class SkipTally(Tally):
    examples: list[dict[str, str]] = field(default_factory=list)


@dataclass
class DirTally(Tally):
    path: str = ""


@dataclass
class WarmEstimate:
    """A build over the published snapshot of the same name: a file whose blob is unchanged keeps its chunks'
    vectors (the embedding cache is keyed by content), so only the changed and new files' chunks are embedded."""

    snapshot: str
    unchanged_files: int
    changed_files: int
    chunks: int
    embed_seconds: float


@dataclass
class Estimate:
    """Cold-build estimates (nothing in the embedding cache), the warm one when a snapshot is published, and the
    rates they came from."""

    chunks: int
    embed_seconds: float
    index_bytes: int
    rates: dict[str, Any]
    warm: WarmEstimate | None = None


@dataclass
class RepoPlan:
    """One repository's dry run."""

    repo: str
    path: str
    commit: str
    files: int
    bytes: int
    languages: dict[str, LanguageTally]
    skipped: dict[str, SkipTally]
    top_included_dirs: list[DirTally]
    top_excluded_dirs: list[DirTally]
    estimate: Estimate
    warnings: list[str]
    included: list[str]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class IndexPlanner:
    """Plans manifest entries (a path, a url or a `conf/repos.yaml` list) without indexing them."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.settings: PlanConfig = config.plan
        self.rates = ChunkRates(config.plan.chunk_rates)

    def plan(self, spec: RepoSpec) -> RepoPlan:
        start = time.perf_counter()
        opened = open_spec(spec, self.config.discover, Path(self.config.paths.cache_dir),
                           self.config.ray.clone_timeout_s, with_ignored=True)
        source = opened.source
        sizes = {e.path: e.size for e in opened.entries}
        skipped: list[FileError] = list(opened.found.ignored) + list(opened.found.errors)
        skipped += [FileError(source.repo, path, STAGE, EXCLUDED_REASON) for path in opened.excluded]
        included: list[SourceFile] = []
        for item in source.read(opened.entries):
            (included if isinstance(item, SourceFile) else skipped).append(item)
        functions = {f.path: function_count(f.path, f.text) for f in included}
        languages = self._tally(included, sizes, functions)
        paths = [f.path for f in included]
        total_bytes = sum(t.bytes for t in languages.values())
        repo = source.repo if not spec.name else spec.name
        estimate = self._estimate(sum(t.chunks for t in languages.values()))
        estimate.warm = self._warm(repo, included, sizes, functions)
        return RepoPlan(
            repo=repo, path=source.repo_path,
            commit=source.commit or "worktree", files=len(included), bytes=total_bytes,
            languages=dict(sorted(languages.items(), key=lambda kv: -kv[1].bytes)),
            skipped=self._skips(skipped, source.repo_path, source.commit),
            top_included_dirs=self._top_dirs({p: sizes[p] for p in paths}),
            top_excluded_dirs=self._top_dirs({e.path: 0 for e in skipped}),
            estimate=estimate,
            warnings=self._warnings(paths, sizes),
            included=paths, seconds=round(time.perf_counter() - start, 3),
        )

    def plan_many(self, specs: list[RepoSpec]) -> list[RepoPlan]:
        return [self.plan(spec) for spec in specs]

    def _estimate(self, chunks: int) -> Estimate:
        rate = self.settings.embed_chunks_per_s
        return Estimate(chunks=chunks, embed_seconds=round(chunks / rate, 1) if rate > 0 else 0.0,
                        index_bytes=chunks * self.settings.index_bytes_per_chunk,
                        rates={"chunk_rates": dict(self.settings.chunk_rates), "embed_chunks_per_s": rate,
                               "index_bytes_per_chunk": self.settings.index_bytes_per_chunk,
                               "measured_by": "python -m lab.bench.plan_chunk_fit, python -m lab.bench.plan_rates "
                                              "(docs/plan.md)"})

    def _tally(self, files: list[SourceFile], sizes: dict[str, int], functions: dict[str, int]) -> dict[str, LanguageTally]:
        """Files, bytes, functions and estimated chunks per language."""
        languages: dict[str, LanguageTally] = defaultdict(LanguageTally)
        for file in files:
            tally = languages[file.language]
            tally.files += 1
            tally.bytes += sizes[file.path]
            tally.functions += functions[file.path]
        for name, tally in languages.items():
            tally.chunks = self.rates.estimate(name, tally.files, tally.bytes / KIB, tally.functions)
        return languages

    def _warm(self, repo: str, included: list[SourceFile], sizes: dict[str, int],
              functions: dict[str, int]) -> WarmEstimate | None:
        """The warm estimate against `repo`'s published snapshot; None when none is published (or it is unreadable)."""
        try:
            paths = IndexLayout(self.config.paths.index_root).current(repo)
            published = FileBlobs.read(paths.files).blobs
        except (LayoutError, OSError, ValueError):
            return None
        changed = [f for f in included if published.get(f.path) != f.blob_sha]
        chunks = sum(t.chunks for t in self._tally(changed, sizes, functions).values())
        rate = self.settings.embed_chunks_per_s
        return WarmEstimate(snapshot=paths.root.name, unchanged_files=len(included) - len(changed),
                            changed_files=len(changed), chunks=chunks,
                            embed_seconds=round(chunks / rate, 1) if rate > 0 else 0.0)

    def _skips(self, skipped: list[FileError], repo_path: str, commit: str | None) -> dict[str, SkipTally]:
        tallies: dict[str, SkipTally] = defaultdict(SkipTally)
        root = Path(repo_path)
        for error in sorted(skipped, key=lambda e: e.path):
            tally = tallies[skip_kind(error.reason)]
            tally.files += 1
            if commit is None and not error.path.endswith("/"):
                try:
                    tally.bytes += (root / error.path).lstat().st_size
                except OSError:
                    pass
            if len(tally.examples) < EXAMPLES_PER_REASON:
                tally.examples.append({"path": error.path, "reason": error.reason})
        return dict(sorted(tallies.items(), key=lambda kv: -kv[1].files))

    def _top_dirs(self, sizes: dict[str, int]) -> list[DirTally]:
        """Directories (at most `dir_depth` deep) by file count; "." holds the root's own files."""
        counts: Counter[str] = Counter()
        volume: Counter[str] = Counter()
        for path, size in sizes.items():
            parts = path.rstrip("/").split("/")[:-1][: self.settings.dir_depth]
            directory = "/".join(parts) or "."
            counts[directory] += 1
            volume[directory] += size
        return [DirTally(files=n, bytes=volume[d], path=d) for d, n in counts.most_common(TOP_DIRS)]

    def _warnings(self, paths: list[str], sizes: dict[str, int]) -> list[str]:
        """Included files that are probably not worth embedding: lockfiles, build artifacts, data dumps."""
        settings = self.settings
        notes: dict[str, list[str]] = defaultdict(list)
        for path in paths:
            parts = path.split("/")
            if parts[-1] in LOCKFILE_NAMES:
                notes["lockfile"].append(path)
            if ARTIFACT_DIRS & set(parts[:-1]):
                notes["build artifact directory"].append(path)
            if sizes[path] >= settings.data_dump_bytes and path.lower().endswith(DATA_SUFFIXES):
                notes["data dump"].append(path)
        warnings = []
        for kind, found in notes.items():
            shown = ", ".join(found[:EXAMPLES_PER_REASON])
            more = f" and {len(found) - EXAMPLES_PER_REASON} more" if len(found) > EXAMPLES_PER_REASON else ""
            warnings.append(f"{len(found)} likely {kind} file(s) would be indexed: {shown}{more} "
                            f"(add them to .semanticaignore to skip)")
        return warnings
