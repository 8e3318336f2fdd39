"""Candidates and their features, in one versioned schema for training and for query time.

Files: every file any cheap list reaches (whole-file BM25, path BM25, the files of the function-body
and function-name BM25 lists, files the query names or its traceback runs through, and extra lists
such as history votes), ordered by the fixed fusion of those lists and cut at `max_file_candidates`.
Functions: every function of the top `top_files` files of that order (or of the learned file ranker's order, with
`function_file_order: learned` and a file scorer), plus the function lists' hits,
the functions a traceback frame names and (with `function_name_boost`) the functions the query names by an
exact identifier, ordered by `FunctionScore` and cut at `max_function_candidates`.
The query's own signals (paths, frames, identifiers) are parsed in semantica/stores/localizer/query_signals.py.

A feature that does not apply is NaN (LightGBM routes missing values), never a made-up rank. Adding,
removing or changing a feature bumps `SCHEMA_VERSION`; a model records the version it was trained on
and refuses another.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from semantica.config.localizer import FUNCTION_FILE_ORDERS
from semantica.stores.localizer.bm25 import at_least_kth_best, top_scores
from semantica.stores.localizer.query_signals import (
    FileLookups,
    FunctionNames,
    QuerySignals,
    last_name,
    module_paths,
    path_suffixes,
    scoped_paths,
    suffix_match,
)
from semantica.stores.localizer.table import LocalizerTable

SCHEMA_VERSION = 1
NAN = float("nan")
RRF_K = 60.0
TOP_HITS = 50  # a file's functions among the top this many of a function list
EXAMPLE_PATH = re.compile(r"(^|/)(examples?|docs?|doc_src|benchmarks?|scripts?|tools?)/")
UNNAMED_STEMS = frozenset({"__init__", "__main__", "utils", "util", "core", "base"})  # too common to name a file

FILE_LISTS = ("content", "path", "body", "name", "history")
"""Ranked file lists; `body`/`name` are the function lists seen at file level (a file's best function)."""
FUNCTION_LISTS = ("body", "name", "history")
"""Ranked function lists. History is read files-only, so the function `history` list is always empty: its columns
stay in the schema the shipped models read, as for a function in no list (rank and score NaN, rr 0), and so do
the function rows' history_* priors (NaN)."""
NO_HISTORY = (NAN, NAN, NAN)  # a key without a history prior: (changes, fixes, age days)

FILE_FEATURES: tuple[str, ...] = (
    *(f"{lst}_{kind}" for lst in FILE_LISTS for kind in ("rank", "rr", "score_rel")),
    "body_hits50", "name_hits50", "lists_in", "fusion_rank", "fusion_rr",
    "path_named", "module_named", "stem_named", "frame_hits", "frame_last",
    "ids_defined", "code_ids_defined", "is_test", "is_example", "is_init", "log_lines", "n_functions", "depth",
    "history_count", "history_fixes", "history_age_days",
)
FUNCTION_FEATURES: tuple[str, ...] = (
    *(f"{lst}_{kind}" for lst in FUNCTION_LISTS for kind in ("rank", "rr", "score_rel")),
    "file_content_rr", "file_path_rr", "file_body_rr", "file_fusion_rank", "file_fusion_rr", "fusion_rank",
    "name_named", "code_name_named", "class_named", "frame_function", "file_frame_hits", "file_path_named",
    "file_ids_defined", "is_test", "is_private", "is_dunder", "is_method", "log_lines", "position",
    "file_n_functions", "history_count", "history_fixes", "history_age_days",
)


class ListHit(NamedTuple):
    """A key's place in one list: a tuple, since a query makes a thousand of them."""

    rank: int
    score_rel: float


def ranked(found: Sequence[tuple[str, float]]) -> dict[str, ListHit]:
    """(key, score) best first -> key: rank (1-based, first occurrence) and score relative to the top."""
    out: dict[str, ListHit] = {}
    top = found[0][1] if found else 0.0
    for key, score in found:
        if key not in out:
            out[key] = ListHit(len(out) + 1, score / top if top > 0 else 0.0)
    return out


def best_keys(keys: list[str], scores: np.ndarray, count: int) -> list[str]:
    """The `count` best keys by score, equal scores by key: a full sort's first `count`, sorting only the keys
    that score at least the count-th best (a thousand candidate functions a query, 300 kept)."""
    values = scores.tolist()
    positions = at_least_kth_best(scores, count).tolist()
    return [keys[i] for i in sorted(positions, key=lambda i: (-values[i], keys[i]))[:count]]


@dataclass
class HistorySignals:
    """History file votes (path -> score, best first) and file priors (path -> (changes, fixes, age days))."""

    file_votes: list[tuple[str, float]] = field(default_factory=list)
    priors: Mapping[str, tuple[float, float, float]] = field(default_factory=dict)


@dataclass
class CandidateSet:
    """One query's candidates, their features (rows follow `files`/`functions`) and fixed-fusion scores."""

    files: list[str]
    file_features: np.ndarray
    file_fusion: np.ndarray
    functions: list[str]
    function_features: np.ndarray
    function_fusion: np.ndarray
    file_pool: int = 0  # files reached before the cut
    file_scores: np.ndarray | None = None  # the file scorer's scores (rows follow `files`) where one ordered the functions
    function_body: np.ndarray | None = None  # each function's body BM25 against the query (rows follow `functions`)


@dataclass
class CandidateConfig:
    file_list_depth: int = 200
    function_list_depth: int = 200
    max_file_candidates: int = 200
    max_function_candidates: int = 500
    top_files: int = 20
    test_factor: float = 0.5
    path_boost: float = 5.0
    function_file_weight: float = 1.0  # a function's score: its file's weight / (function_file_rrf_k + file rank) ...
    function_file_rrf_k: float = RRF_K  # ... (a small k and a large weight rank files first, functions inside them)
    function_name_boost: float = 0.0  # a function the query names (code-shaped identifier): as if first in this many lists
    function_file_order: str = "fusion"  # "learned": a file scorer given to `build` orders the files for the functions


class FunctionScore:
    """A function's fixed-fusion score: its lists' reciprocal ranks (body, name, history, a traceback frame), plus
    `file_weight / (file_rrf_k + its file's fusion rank)` (`file_term`), plus `name_boost` first places when the
    query names it; test code damped. Takes floats or numpy columns (file rank 0: not a file candidate), so the
    corpus search (lab/localizer/function_order.py) scores exactly what the query path does."""

    def __init__(self, file_weight: float, file_rrf_k: float, name_boost: float, test_factor: float) -> None:
        self.file_weight = file_weight
        self.file_rrf_k = file_rrf_k
        self.name_boost = name_boost
        self.test_factor = test_factor

    @classmethod
    def of(cls, config: CandidateConfig) -> FunctionScore:
        return cls(config.function_file_weight, config.function_file_rrf_k, config.function_name_boost,
                   config.test_factor)

    def file_term(self, file_rank):  # noqa: ANN001, ANN201 - a float or a numpy column
        if isinstance(file_rank, np.ndarray):
            return np.where(file_rank > 0, self.file_weight / (self.file_rrf_k + np.maximum(file_rank, 0.0)), 0.0)
        return self.file_weight / (self.file_rrf_k + file_rank) if file_rank > 0 else 0.0

    def __call__(self, lists_rr, file_term, named, is_test):  # noqa: ANN001, ANN204 - floats or numpy columns
        score = lists_rr + file_term + self.name_boost * named / (RRF_K + 1.0)
        return score * (1.0 + (self.test_factor - 1.0) * is_test)


def _rr(hit: ListHit | None) -> float:
    return 1.0 / (RRF_K + hit.rank) if hit else 0.0


def _rank(hit: ListHit | None) -> float:
    return float(hit.rank) if hit else NAN


def _rel(hit: ListHit | None) -> float:
    return hit.score_rel if hit else NAN


class CandidateGenerator:
    """Builds a `CandidateSet` for a query over a `LocalizerTable`."""

    def __init__(self, config: CandidateConfig) -> None:
        if config.function_file_order not in FUNCTION_FILE_ORDERS:
            raise ValueError(f"function_file_order: expected one of {', '.join(FUNCTION_FILE_ORDERS)}, "
                             f"got {config.function_file_order!r}")
        self.config = config

    def lists(self, snapshot: LocalizerTable, query: QuerySignals) -> tuple[dict[str, list[tuple[str, float]]], np.ndarray]:
        """The four BM25 lists: files (content, path) and functions (body, name); and every function's body score
        (rows follow `snapshot.functions`), which the mine records beside each function's row."""
        c = self.config
        ids, counts = snapshot.vocab.lookup(query.tokens)
        out = {}
        for name in ("content", "path"):
            out[name] = [(snapshot.files[i].path, s) for i, s in snapshot.fields[name].search(ids, counts, c.file_list_depth)]
        body_scores = snapshot.fields["body"].scores(ids, counts)
        out["body"] = [(snapshot.functions[i].key, s) for i, s in top_scores(body_scores, c.function_list_depth)]
        out["name"] = [(snapshot.functions[i].key, s)
                       for i, s in snapshot.fields["name"].search(ids, counts, c.function_list_depth)]
        return out, body_scores

    @staticmethod
    def _named_candidates(snapshot: LocalizerTable, lookups: FileLookups, query: QuerySignals, named_tails: set[str],
                          named_suffixes: set[str]) -> Iterable[int]:
        """The files (positions) a query may name by path, module, stem or frame: every file when it has frames
        (each is matched by `suffix_match`), else those the lookups' inverted maps give, in table order. A file
        outside them has no name in the query, so `build`'s loop skips it (a large repository: 10k files a query)."""
        if query.frames:
            return range(len(snapshot.files))
        found = {snapshot.file_index[p] for p in named_tails if p in snapshot.file_index}
        for suffix in named_suffixes:
            found.update(lookups.by_suffix.get(suffix, ()))
        for word in query.words - UNNAMED_STEMS:
            found.update(lookups.by_stem.get(word, ()))
        return sorted(found)

    def build(self, snapshot: LocalizerTable, query_text: str, history: HistorySignals | None = None,
              features: bool = True, file_scorer: Callable[[np.ndarray], np.ndarray] | None = None,
              function_features: bool = True) -> CandidateSet:
        """`features=False` (no model will read them) leaves both feature matrices without columns, and
        `function_features=False` the function matrix (only the corpus miner's training rows read it); the
        candidates and their fixed-fusion scores are the same either way. `file_scorer` (the learned file ranker:
        feature rows -> scores) orders the files whose functions are candidates and gives the functions' file term
        when `function_file_order` is "learned" and the rows are built; its scores are kept in `file_scores`."""
        c = self.config
        query = QuerySignals.parse(query_text)
        history = history or HistorySignals()
        found, body_scores = self.lists(snapshot, query)
        file_lists = {"content": ranked(found["content"]), "path": ranked(found["path"]),
                      "body": ranked([(k.split("::", 1)[0], s) for k, s in found["body"]]),
                      "name": ranked([(k.split("::", 1)[0], s) for k, s in found["name"]]),
                      "history": ranked([(k, s) for k, s in history.file_votes if k in snapshot.file_index])}
        function_lists = {"body": ranked(found["body"]), "name": ranked(found["name"]), "history": {}}

        named: dict[str, tuple[bool, bool, bool]] = {}
        frame_hits: dict[str, int] = {}
        frame_last: str = ""
        frame_functions: set[str] = set()
        lookups = FileLookups.of(snapshot)
        # suffix_match(p, q) as set lookups: p is q or a tail of q, or q (with a "/") is a tail of p
        named_paths = [q.lstrip("./") for q in query.paths]
        named_tails = {t for q in named_paths for t in path_suffixes(q)}
        named_with_dir = {q for q in named_paths if "/" in q}
        module_suffixes = {s for m in query.modules for s in module_paths(m)} | {
            s for m in query.scoped for s in scoped_paths(m)}
        for position in self._named_candidates(snapshot, lookups, query, named_tails, named_with_dir | module_suffixes):
            doc, suffixes, stem = snapshot.files[position], lookups.suffixes[position], lookups.stems[position]
            p = doc.path
            path_named = p in named_tails or not named_with_dir.isdisjoint(suffixes)
            module_named = not module_suffixes.isdisjoint(suffixes)
            stem_named = stem not in UNNAMED_STEMS and stem in query.words
            hits = [fn for fp, fn in query.frames if suffix_match(p, fp)] if query.frames else []
            if hits:
                frame_hits[p] = len(hits)
                names = {fn for fn in hits if fn}  # a frame names `total`; the key is `Class.total`
                frame_functions.update(f.key for f in doc.functions if f.qualname.rsplit(".", 1)[-1] in names)
            if path_named or module_named or stem_named:
                named[p] = (path_named, module_named, stem_named)
        if query.frames:
            last = query.frames[-1][0]
            frame_last = next((d.path for d in snapshot.files if suffix_match(d.path, last)), "")

        # fixed fusion over the cheap lists: the baseline, and the candidates' order before the cut
        fusion: dict[str, float] = {}
        for name in FILE_LISTS:
            for key, hit in file_lists[name].items():
                fusion[key] = fusion.get(key, 0.0) + _rr(hit)
        for p in list(named) + list(frame_hits):
            fusion.setdefault(p, 0.0)
        for p in list(fusion):
            if lookups.tests[p]:
                fusion[p] *= c.test_factor
            if p in named and (named[p][0] or named[p][1]) or p in frame_hits:
                fusion[p] = fusion[p] * c.path_boost + 1.0 / RRF_K
        order = sorted(fusion, key=lambda k: (-fusion[k], k))
        pool = len(order)
        files = order[: c.max_file_candidates]
        file_rank = {p: i + 1 for i, p in enumerate(files)}

        rows: list[list[float]] = []
        if features:  # the rows only a learned model reads
            hits50 = {name: {} for name in ("body", "name")}
            for name, counts in hits50.items():
                for key, hit in function_lists[name].items():
                    if hit.rank <= TOP_HITS:
                        path = key.split("::", 1)[0]
                        counts[path] = counts.get(path, 0) + 1
            for p in files:
                doc = snapshot.files[snapshot.file_index[p]]
                row: list[float] = []
                for name in FILE_LISTS:
                    hit = file_lists[name].get(p)
                    row += [_rank(hit), _rr(hit), _rel(hit)]
                row += [float(hits50["body"].get(p, 0)), float(hits50["name"].get(p, 0)),
                        sum(1 for name in FILE_LISTS if p in file_lists[name]),
                        file_rank[p], 1.0 / (RRF_K + file_rank[p])]
                pn, mn, sn = named.get(p, (False, False, False))
                row += [float(pn), float(mn), float(sn), float(frame_hits.get(p, 0)), float(p == frame_last),
                        float(len(query.words & doc.names)), float(len(query.code_words & doc.names)),
                        float(lookups.tests[p]), float(bool(EXAMPLE_PATH.search(p))),
                        float(p.endswith("__init__.py")), math.log1p(doc.lines), float(len(doc.functions)),
                        float(p.count("/"))]
                row += list(history.priors.get(p, NO_HISTORY))
                rows.append(row)

        file_matrix = np.array(rows, dtype=np.float32).reshape(len(files), len(FILE_FEATURES) if features else 0)
        file_scores = None
        function_file_rank = file_rank  # the file order the functions follow
        if features and file_scorer is not None and c.function_file_order == "learned" and files:
            file_scores = np.asarray(file_scorer(file_matrix), dtype=np.float64)
            function_file_rank = {files[i]: n for n, i in enumerate(np.argsort(-file_scores, kind="stable"), 1)}

        # functions: every function of the top files, the function lists' hits and the frames' functions
        f_fusion: dict[str, float] = {}
        for name in FUNCTION_LISTS:
            for key, hit in function_lists[name].items():
                f_fusion[key] = f_fusion.get(key, 0.0) + _rr(hit)
        for p in sorted(function_file_rank, key=function_file_rank.__getitem__)[: c.top_files]:
            for fn in snapshot.files[snapshot.file_index[p]].functions:
                f_fusion.setdefault(fn.key, 0.0)
        for key in frame_functions:
            if key in snapshot.function_index:
                f_fusion[key] = f_fusion.get(key, 0.0) + 1.0 / RRF_K
        if c.function_name_boost:  # a function the query names is a candidate wherever its file ranks
            names = FunctionNames.of(snapshot).keys
            for word in query.code_words:
                for key in names.get(word, ()):
                    f_fusion.setdefault(key, 0.0)
        score = FunctionScore.of(c)
        file_terms = {p: score.file_term(float(r)) for p, r in function_file_rank.items()}  # per file once, not per function
        keys = list(f_fusion)
        paths = [key.partition("::")[0] for key in keys]
        named_keys = {key for word in query.code_words for key in FunctionNames.of(snapshot).keys.get(word, ())} \
            if c.function_name_boost else set()  # the keys whose last name the query says (`last_name`)
        scores = score(np.fromiter(f_fusion.values(), np.float64, len(keys)),
                       np.array([file_terms.get(path, 0.0) for path in paths], dtype=np.float64),
                       np.array([key in named_keys for key in keys], dtype=np.float64),
                       np.array([lookups.tests[path] for path in paths], dtype=np.float64))
        f_fusion = dict(zip(keys, scores.tolist()))  # as one score per function would give: the same float64 steps
        # equal scores by key (body BM25 as the tie order lost in 52 of 52 corpus folds)
        # every key is the table's (its lists, its files' functions, its names, a frame's function it holds)
        functions = best_keys(keys, scores, c.max_function_candidates)
        f_rows: list[list[float]] = []
        function_rows = features and function_features
        if function_rows:
            for n, key in enumerate(functions, 1):
                fn = snapshot.functions[snapshot.function_index[key]]
                doc = snapshot.files[snapshot.file_index[fn.path]]
                row = []
                for name in FUNCTION_LISTS:
                    hit = function_lists[name].get(key)
                    row += [_rank(hit), _rr(hit), _rel(hit)]
                parts = fn.qualname.split(".")
                last = last_name(fn.qualname)
                fr = file_rank.get(fn.path)
                row += [_rr(file_lists["content"].get(fn.path)), _rr(file_lists["path"].get(fn.path)),
                        _rr(file_lists["body"].get(fn.path)), float(fr) if fr else NAN,
                        1.0 / (RRF_K + fr) if fr else 0.0, float(n),
                        float(last in query.words), float(last in query.code_words),
                        float(len(parts) > 1 and parts[0].lower() in query.words), float(key in frame_functions),
                        float(frame_hits.get(fn.path, 0)), float(any(named.get(fn.path, (False, False, False))[:2])),
                        float(len(query.words & doc.names)), float(lookups.tests[fn.path]),
                        float(last.startswith("_") and not last.startswith("__")),
                        float(last.startswith("__") and last.endswith("__")), float(len(parts) > 1),
                        math.log1p(fn.end - fn.start + 1),
                        fn.position / max(1, len(doc.functions)), float(len(doc.functions))]
                row += list(NO_HISTORY)
                f_rows.append(row)
        return CandidateSet(
            files, file_matrix, np.array([fusion[p] for p in files], dtype=np.float32),
            functions, np.array(f_rows, dtype=np.float32).reshape(len(functions), len(FUNCTION_FEATURES) if function_rows else 0),
            np.array([f_fusion[k] for k in functions], dtype=np.float32), pool, file_scores,
            body_scores[[snapshot.function_index[k] for k in functions]].astype(np.float32))
