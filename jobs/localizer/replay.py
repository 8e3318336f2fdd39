"""The learned localizer in the localization replay: its candidates at each instance's base commit.

The snapshot's Python files are read from the repository's bare clone under $SEMANTICA_MIRRORS
(`<owner>+<name>/repo`) at the base commit, exactly as the corpus features read
a parent commit, then `serving.localizer` ranks them; `blend` mixes the result into today's ranking.
Only the files the indexer would discover there (`discover.*`: include globs, ignore rules, sizes) are
candidates, so a replay ranks the same files as the snapshot a full run indexed; they are found once per base
commit, however many instances share it. With `localizer.history_features` the history votes and priors are
read from the same clone as of the base commit (that commit and its first-parent ancestors only), by the code
`mine-localizer` runs (jobs/localizer/history.py).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import astuple
from pathlib import Path

import numpy as np

from jobs.eval.instances import Instance, find_repo, mirror_clone
from jobs.eval.mine import MineError
from jobs.localizer.gitread import TreeReader
from jobs.localizer.history import CorpusHistory
from pipelines.discover import RepoSource
from pipelines.history.gitread import GitReadError
from semantica.config import Config, DiscoverConfig
from semantica.stores.localizer.blobcache import open_blob_cache
from semantica.stores.localizer.dense import function_sources
from semantica.stores.localizer.features import SCHEMA_VERSION, CandidateSet, HistorySignals
from semantica.stores.localizer.models import candidate_config
from semantica.stores.localizer.table import LocalizerTableBuilder
from serving.localizer.dense import DenseFunctionChannel
from serving.localizer.stage import (
    LearnedLocalizer,
    LocalizerModelError,
    LocalizerModels,
    Ranked,
    blend,
    file_today_weight,
)

CACHE_DIR = "localizer-candidates"


class DiscoveredPaths:
    """The paths the indexer would discover at a commit (`git ls-tree`, include globs, ignore rules, sizes), found
    once per (clone, commit, discover settings): every instance replayed at one base commit shares them."""

    def __init__(self) -> None:
        self._found: dict[tuple[str, str, str], frozenset[str]] = {}

    def at(self, git_dir: Path, commit: str, discover: DiscoverConfig) -> frozenset[str]:
        key = (str(git_dir), commit, repr(discover))
        if key not in self._found:
            entries, _ = RepoSource(str(git_dir), commit, discover).entries()
            self._found[key] = frozenset(entry.path for entry in entries)
        return self._found[key]


class LearnedReplay:
    """Ranks an instance's candidates with the configured localizer (one snapshot builder per repository)."""

    def __init__(self, config: Config, repos_dir: Path | None = None) -> None:
        self.config = config.localizer
        self.repos_dir = repos_dir  # the replay's bare clones; None: $SEMANTICA_MIRRORS
        try:
            models = LocalizerModels(self.config.model_dir) if self.config.learned_files else None
        except LocalizerModelError as exc:
            raise MineError(str(exc)) from None
        self.localizer = LearnedLocalizer(self.config, models)
        self.cache_dir = Path(config.paths.cache_dir) / CACHE_DIR  # candidates per instance, reused by later replays
        self.blob_cache_dir = config.paths.cache_dir
        self.discover = config.discover  # which files a snapshot at the base commit would hold
        self.history_config = config  # read on first use: history as of each base commit (history_features)
        self.dense = DenseFunctionChannel(self.config, config.encoder) if self.config.dense_model else None
        self._history: CorpusHistory | None = None

    _candidates: dict[tuple, CandidateSet] = {}  # (instance, candidate settings): shared by every replayed config
    _builders: dict[str, tuple[Path, TreeReader, LocalizerTableBuilder]] = {}
    _discovered = DiscoveredPaths()  # per base commit, shared like the builders
    seconds: list[float] = []  # candidates and features per query computed here (the snapshot build excluded)
    model_seconds: list[float] = []  # the two models' scoring per query

    def _stored(self, inst: Instance) -> tuple[tuple, Path]:
        c = self.config
        history = (c.history_max_commits, False) if c.history_features else None  # (commits read, function votes)
        candidate = candidate_config(c)
        settings = astuple(candidate)[:-1]  # all but function_file_order
        learned_order = self.localizer.file_scorer(c.learned_files) is not None  # the functions follow its model
        if learned_order:  # otherwise function_file_order changes nothing: the key from before it (earlier caches hold)
            settings += (candidate.function_file_order,)
        key = (inst.instance_id, settings, repr(self.discover), *((history,) if history else ()),
               *((c.model_dir,) if learned_order else ()))
        digest = hashlib.sha1(repr((key, SCHEMA_VERSION, inst.base_commit)).encode()).hexdigest()[:16]
        return key, self.cache_dir / f"{inst.instance_id.replace('/', '+')}-{digest}.npz"  # ids may hold a repo name

    def cached(self, inst: Instance) -> bool:
        """Are the instance's candidates already computed (in memory or in the cache directory)?"""
        key, stored = self._stored(inst)
        return key in self._candidates or stored.is_file()

    def candidates(self, inst: Instance) -> CandidateSet:
        key, stored = self._stored(inst)
        if key in self._candidates:
            return self._candidates[key]
        if stored.is_file():
            with np.load(stored, allow_pickle=False) as z:
                cands = self._candidates[key] = CandidateSet(
                    list(z["files"]), z["file_features"], z["file_fusion"], list(z["functions"]),
                    z["function_features"], z["function_fusion"], int(z["file_pool"]),
                    z["file_scores"] if "file_scores" in z.files else None)
            return cands
        git_dir, _, builder = self._builder(inst)
        snapshot = builder.build(self.texts(inst))
        signals = self.history_at(git_dir, inst) if self.config.history_features else None  # not timed: index time
        start = time.perf_counter()
        cands = self._candidates[key] = self.localizer.generator.build(
            snapshot, inst.problem_statement, signals, file_scorer=self.localizer.file_scorer(self.config.learned_files))
        self.seconds.append(time.perf_counter() - start)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        np.savez(stored.with_suffix(".tmp.npz"), files=np.array(cands.files, dtype=str),
                 file_features=cands.file_features, file_fusion=cands.file_fusion,
                 functions=np.array(cands.functions, dtype=str), function_features=cands.function_features,
                 function_fusion=cands.function_fusion, file_pool=cands.file_pool,
                 **({"file_scores": cands.file_scores} if cands.file_scores is not None else {}))
        stored.with_suffix(".tmp.npz").replace(stored)
        return cands

    def _builder(self, inst: Instance) -> tuple[Path, TreeReader, LocalizerTableBuilder]:
        """The instance's repository: its bare clone, a reader of its trees and a snapshot builder (one each)."""
        if inst.repo not in self._builders:
            git_dir = find_repo(self.repos_dir, inst.repo) if self.repos_dir else mirror_clone(inst.repo)
            if not git_dir.is_dir():
                raise MineError(f"localizer.enabled needs the bare clone of {inst.repo} at {git_dir} "
                                f"(set SEMANTICA_MIRRORS)")
            self._builders[inst.repo] = (git_dir, TreeReader(str(git_dir), self.config.max_file_bytes), LocalizerTableBuilder(
                open_blob_cache(self.config.blob_cache_file, self.blob_cache_dir)))
        return self._builders[inst.repo]

    def texts(self, inst: Instance) -> dict[str, str]:
        """The Python files a snapshot at the instance's base commit would hold, by path."""
        git_dir, reader, _ = self._builder(inst)
        indexed = self._discovered.at(git_dir, inst.base_commit, self.discover)
        return {path: text for path, text in reader.texts(inst.base_commit).items() if path in indexed}

    def function_source(self, inst: Instance) -> Callable[[str], str | None]:
        """key -> the function's source at the base commit (the dense channel's text, as the stage reads it)."""
        texts = self.texts(inst)
        sources: dict[str, dict[str, str]] = {}  # each file parsed once per instance

        def text_of(key: str) -> str | None:
            path = key.partition("::")[0]
            if path not in texts:
                return None
            if path not in sources:
                sources[path] = function_sources(path, texts[path])
            return sources[path].get(key)

        return text_of

    def history_at(self, git_dir: Path, inst: Instance) -> HistorySignals | None:
        """The instance's history votes and priors as of its base commit (never a later commit); None where git
        cannot read that history (a clone missing a blob), as the indexer then publishes the snapshot without it."""
        if self._history is None:
            self._history = CorpusHistory.for_localizer(self.history_config)
        try:
            return self._history.at(git_dir, inst.base_commit).signals(inst.problem_statement)
        except GitReadError as exc:
            print(f"{inst.instance_id}: history skipped: {exc}", flush=True)
            return None

    def rank(self, inst: Instance) -> Ranked:
        cands = self.candidates(inst)
        start = time.perf_counter()
        ranked = self.localizer.rank_candidates(cands, self.config.learned_files)
        if self.localizer.models is not None:
            self.model_seconds.append(time.perf_counter() - start)
        return ranked

    def blend(self, inst: Instance, files: list[str], functions: list[str]) -> tuple[list[str], list[str]]:
        ranked = self.rank(inst)
        c = self.config
        function_order = blend(functions, [k for k, _ in ranked.functions], c.today_weight, c.learned_weight, c.blend_rrf_k)
        file_order = blend(files, [k for k, _ in ranked.files], file_today_weight(c), c.learned_weight, c.blend_rrf_k)
        if self.dense is not None:  # as the stage: the function head and the files re-ranked by the channel's cosine
            function_order, file_order = self.dense.rerank(self.dense.encode_query(inst.problem_statement),
                                                           function_order, file_order, self.function_source(inst))
        return file_order, function_order
