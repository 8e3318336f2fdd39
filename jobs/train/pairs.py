"""`semantica mine-pairs`: training pairs for a code encoder / cross-encoder from git history.

Two kinds, each row with provenance (repo, commit, parent, path, symbol):
- `docstring`: a function's docstring -> the function's source with the docstring removed, at HEAD,
  with BM25 hard negatives (function-level BM25 over the same snapshot, positives excluded);
- `commit`: a commit message (subject + body; a PR merge's title; `Fixes #N` kept in `issue_refs`) ->
  the files and outer functions it changed, taken at its parent commit, with in-file hard negatives: the
  unchanged functions of the changed files most like the message (BM25 among them), the neighbours the
  localizer's head holds beside a gold function. Bot, revert, trivial and huge commits are dropped
  (thresholds: `pairs.*` in conf/train.yaml).

Rows are de-duplicated by (query, positives) across the whole output. Output is Parquet under
`OUT/<owner+name>/`: `docstring.parquet` and `commits-NNNN.parquet` (one per `pairs.commit_batch`
commits); a re-run skips parts already written, so an interrupted run resumes. The twelve SWE-bench
repositories (and their organisations) are refused: the benchmark numbers must stay honest.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import bm25s
import numpy as np
import polars as pl
from tqdm import tqdm

from jobs.benchmark_repos import is_benchmark_repo
from jobs.eval.instances import find_repo
from jobs.train.pair_parts import PairsError, pair_parts  # noqa: F401  (PairsError re-exported)
from jobs.train.pairs_source import Commit, FunctionSpan, changed_python_lines, first_parent_history, function_spans
from pipelines.discover import RepoSource, repo_name_from_path
from semantica.config import Config, DiscoverConfig, PairsConfig
from semantica.schema import FileError
from semantica.stores.function_keys import function_key
from semantica.stores.lucene import LuceneDoc, LuceneShardSearcher, LuceneShardWriter, raw_document
from semantica.stores.tokenizer import tokenize

FunctionsAt = dict[str, tuple[list[str], list[FunctionSpan]]]
"""path -> (the file's lines, its outer functions), at one commit."""

DOCSTRING, COMMIT = "docstring", "commit"
PYTHON_ONLY = ["*.py"]


def check_corpus(repos: Iterable[str]) -> list[str]:
    """The corpus, refused when it names a benchmark repository (case-insensitive, any spelling of the path)."""
    repos = list(repos)
    banned = sorted(r for r in repos if is_benchmark_repo(r))
    if banned:
        raise PairsError(f"benchmark repositories must not be mined for training: {', '.join(banned)} "
                         "(SWE-bench's twelve repositories and their organisations)")
    return repos


@dataclass
class Pair:
    """One training pair (a Parquet row)."""

    kind: str
    repo: str
    commit: str
    parent: str
    path: str
    symbol: str
    query: str
    positive_keys: list[str]
    positive_documents: list[str]
    negative_keys: list[str] = field(default_factory=list)
    negative_documents: list[str] = field(default_factory=list)
    issue_refs: list[str] = field(default_factory=list)

    def dedup_key(self) -> str:
        text = " ".join(self.query.split()).lower() + "\x00" + "\x00".join(self.positive_documents)
        return hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()


PAIR_SCHEMA = {"kind": pl.Utf8, "repo": pl.Utf8, "commit": pl.Utf8, "parent": pl.Utf8, "path": pl.Utf8,
               "symbol": pl.Utf8, "query": pl.Utf8, "positive_keys": pl.List(pl.Utf8),
               "positive_documents": pl.List(pl.Utf8), "negative_keys": pl.List(pl.Utf8),
               "negative_documents": pl.List(pl.Utf8), "issue_refs": pl.List(pl.Utf8), "dedup_key": pl.Utf8}


class PairMiner:
    """Mines one repository at a time into `out/<owner+name>/`."""

    def __init__(self, config: Config, pairs: PairsConfig, out: str | Path, progress: bool = True,
                 log: Callable[[str], None] = print) -> None:
        self.config = config
        self.pairs = pairs
        self.discover = DiscoverConfig(**{**asdict(config.discover), "include_globs": PYTHON_ONLY})
        self.out = Path(out)
        self.progress = progress
        self.log = log
        self.seen: set[str] = set()
        if self.out.is_dir():  # resume: what earlier parts hold stays unique
            for part in sorted(self.out.glob("*/*.parquet")):
                self.seen.update(pl.read_parquet(part, columns=["dedup_key"])["dedup_key"].to_list())

    # -- docstring -> function ----------------------------------------------------------------------

    def functions_at(self, source: RepoSource, paths: set[str] | None = None) -> FunctionsAt:
        entries, _ = source.entries()
        wanted = [e for e in entries if paths is None or e.path in paths]
        out = {}
        for item in source.read(wanted):
            if not isinstance(item, FileError):
                out[item.path] = (item.text.split("\n"), function_spans(item.text))
        return out

    def docstring_pairs(self, repo_path: str, repo: str) -> list[Pair]:
        p = self.pairs
        source = RepoSource(repo_path, "HEAD", self.discover)
        pairs: list[Pair] = []
        docs: list[LuceneDoc] = []
        for path, (lines, spans) in sorted(self.functions_at(source).items()):
            for span in spans:
                body = span.body(lines)[: p.max_document_chars]
                key = function_key(path, span.qualname)
                docs.append(LuceneDoc(key, body, path, span.qualname))
                if len(span.docstring) < p.min_docstring_chars or len(body.strip().split("\n")) < p.min_body_lines:
                    continue
                pairs.append(Pair(DOCSTRING, repo, source.commit or "", "", path, span.qualname, span.docstring,
                                  [key], [body]))
        self._hard_negatives(pairs, docs)
        return pairs

    def _hard_negatives(self, pairs: list[Pair], docs: list[LuceneDoc]) -> None:
        """BM25 neighbours of each query among the snapshot's functions, positives excluded."""
        if not pairs or self.pairs.hard_negatives <= 0:
            return
        text_of = {d.doc_id: d.text for d in docs}
        with tempfile.TemporaryDirectory(prefix="pairs-") as tmp:
            raw, size, searchers = [raw_document(d) for d in docs], max(1, self.config.lucene.shard_max_docs), []
            for number, start in enumerate(range(0, len(raw), size)):  # one function-level BM25 index, in shards
                directory = Path(tmp) / f"functions-{number:03d}"
                writer = LuceneShardWriter(directory, self.config.lucene)
                writer.add_raw(raw[start:start + size])
                writer.close()
                searchers.append(LuceneShardSearcher(directory, self.config.lucene))
            for pair in tqdm(pairs, desc="hard negatives", disable=not self.progress):
                found = sorted((hit for s in searchers for hit in s.search(pair.query, self.pairs.hard_negatives + 5)),
                               key=lambda hit: -hit[1])
                keys = [k for k, _ in found if k not in pair.positive_keys][: self.pairs.hard_negatives]
                pair.negative_keys, pair.negative_documents = keys, [text_of[k] for k in keys]
            for searcher in searchers:
                searcher.close()

    # -- commit -> changed files and functions -------------------------------------------------------

    def keep_commit(self, commit: Commit) -> str:
        """'' to mine the commit, else why it is dropped."""
        p = self.pairs
        if not commit.parents:
            return "root commit"
        if any(marker.lower() in commit.author.lower() for marker in p.bot_markers):
            return "bot author"
        query = commit.query()
        subject = query.split("\n", 1)[0].strip().lower()
        if any(subject.startswith(prefix.lower()) for prefix in p.skip_subject_prefixes):
            return "skipped subject"
        if len(query) < p.min_message_chars:
            return "trivial message"
        return ""

    def commit_pair(self, repo_path: str, repo: str, commit: Commit) -> Pair | None:
        p = self.pairs
        if self.keep_commit(commit):
            return None
        parent = commit.parents[0]
        changes = [c for c in changed_python_lines(repo_path, parent, commit.sha) if c.old_lines]
        if not changes or len(changes) > p.max_commit_files:
            return None
        if sum(c.added + c.removed for c in changes) > p.max_commit_lines:
            return None
        at_parent = self.functions_at(RepoSource(repo_path, parent, self.discover), {c.path for c in changes})
        keys: list[str] = []
        documents: list[str] = []
        for change in changes:
            if change.path not in at_parent:
                continue
            lines, spans = at_parent[change.path]
            keys.append(change.path)
            for span in spans:
                key = function_key(change.path, span.qualname)
                if key not in keys and any(span.start <= n <= span.end for n in change.old_lines):
                    keys.append(key)
                    documents.append(span.source(lines)[: p.max_document_chars])
        if not documents:
            return None
        query = commit.query()
        negative_keys, negative_documents = self.in_file_negatives(query, at_parent, set(keys))
        return Pair(COMMIT, repo, commit.sha, parent, ",".join(c.path for c in changes), "", query,
                    keys, documents, negative_keys, negative_documents, issue_refs=commit.issue_refs())

    def in_file_negatives(self, query: str, at_parent: FunctionsAt, positive_keys: set[str]) -> tuple[list[str], list[str]]:
        """The `pairs.commit_negatives` unchanged functions of the changed files that BM25 ranks highest for the
        message (ties in file order); what a ranker among a file's functions must learn to put below the gold."""
        count, terms = self.pairs.commit_negatives, tokenize(query)
        if count <= 0 or not terms:
            return [], []
        keys: list[str] = []
        documents: list[str] = []
        for path, (lines, spans) in sorted(at_parent.items()):
            for span in spans:
                key = function_key(path, span.qualname)
                if key not in positive_keys and key not in keys:
                    keys.append(key)
                    documents.append(span.source(lines)[: self.pairs.max_document_chars])
        if not keys:
            return [], []
        ranker = bm25s.BM25()
        ranker.index([tokenize(d) or ["\x00"] for d in documents], show_progress=False)
        order = np.argsort(-np.asarray(ranker.get_scores(terms)), kind="stable")[:count]
        return [keys[i] for i in order], [documents[i] for i in order]

    # -- driver -------------------------------------------------------------------------------------

    def _write(self, target: Path, pairs: list[Pair]) -> int:
        rows = []
        for pair in pairs:
            key = pair.dedup_key()
            if key not in self.seen:
                self.seen.add(key)
                rows.append({**asdict(pair), "dedup_key": key})
        return write_part(target, rows)

    def mine_repo(self, repo_path: str, repo: str | None = None) -> dict[str, int]:
        """Both kinds for one repository; returns rows written per kind (parts already there are skipped)."""
        repo = repo or repo_name_from_path(repo_path)
        check_corpus([repo])
        directory = self.out / repo.replace("/", "+")
        written = {DOCSTRING: 0, COMMIT: 0}
        target = directory / "docstring.parquet"
        if not target.is_file():
            written[DOCSTRING] = self._write(target, self.docstring_pairs(repo_path, repo))
        history = first_parent_history(repo_path, self.pairs.max_commits)
        batch = max(1, self.pairs.commit_batch)
        for number, start in enumerate(range(0, len(history), batch)):
            target = directory / f"commits-{number:04d}.parquet"
            if target.is_file():
                continue
            pairs = []
            for commit in tqdm(history[start: start + batch], desc=f"{repo} commits {number}",
                               disable=not self.progress):
                pair = self.commit_pair(repo_path, repo, commit)
                if pair is not None:
                    pairs.append(pair)
            written[COMMIT] += self._write(target, pairs)
        self.log(f"{repo}: {written[DOCSTRING]} docstring and {written[COMMIT]} commit pairs written")
        return written

    def run(self, repos_dir: str | Path, corpus: Iterable[str]) -> dict[str, dict[str, int]]:
        return {repo: self.mine_repo(str(find_repo(repos_dir, repo)), repo) for repo in check_corpus(corpus)}


def write_part(target: Path, rows: list[dict]) -> int:
    """One output part, written whole or not at all (a resumed run skips the parts that exist); returns its rows."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    pl.DataFrame(rows, schema=PAIR_SCHEMA).write_parquet(tmp)
    tmp.replace(target)
    return len(rows)


def load_pairs(out: str | Path) -> pl.DataFrame:
    """Every mined pair under `out` (one frame)."""
    return pl.concat([pl.read_parquet(p) for p in pair_parts(out)])
