"""Issue-like labelled commits of public repositories: the learned localizer's training corpus.

One JSONL row per kept commit, `bench/corpus/<owner+name>.jsonl`: {repo, sha, parent, time, kind, query,
files, functions}. Only ids, paths, qualified names and the message are stored (no code), so the corpus
is committed and training is reproducible without the clones.

A commit is kept when it reads like an issue and its fix:
- `merge`: a GitHub merge of a pull request (the PR title and body are the query),
- `squash`: a squash-merged pull request (subject ends in `(#N)`),
- `fixes`: a commit that says it fixes/closes/resolves `#N`,
and its message is descriptive, its author is not a bot, its subject is not a revert/bump/release, and
its first-parent diff modifies 1-`max_commit_files` existing non-test source files (every language with function
spans, `semantica.languages.spans`) with at most
`max_commit_lines` changed lines. The labels are the non-test files and the outer functions whose lines
the diff touches, taken at the parent commit (as SWE-bench's gold is taken at the base commit; test
files are left out as SWE-bench leaves the test patch out; a test file is one by its language's rule). The twelve
SWE-bench repositories and their organisations' other projects, and every Multi-SWE-bench repository, are refused
(`check_corpus`).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from jobs.benchmark_repos import is_benchmark_repo
from jobs.train.pairs_source import ISSUE_REF, PR_MERGE, TRAILER, git
from pipelines.history.gitread import BlobReader, changed_source_lines
from semantica.config import LocalizerCorpusConfig
from semantica.languages.registry import is_test_path
from semantica.languages.spans import file_spans, spans_language
from semantica.stores.function_keys import function_key

SQUASH_PR = re.compile(r"\(#(\d+)\)\s*$")
RECORD_SEP, FIELD_SEP = "\x1e", "\x00"
MERGE, SQUASH, FIXES = "merge", "squash", "fixes"


class CorpusError(ValueError):
    """The corpus names a benchmark repository, or a repository cannot be read."""


def check_corpus(repos: Iterable[str]) -> list[str]:
    """The corpus, refused when it names a benchmark repository or organisation."""
    repos = list(repos)
    banned = sorted(r for r in repos if is_benchmark_repo(r))
    if banned:
        raise CorpusError(f"SWE-bench and Multi-SWE-bench repositories must not train a shipped model: "
                          f"{', '.join(banned)}")
    return repos


@dataclass
class LabelledCommit:
    """One corpus row."""

    repo: str
    sha: str
    parent: str
    time: int
    kind: str
    query: str
    files: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)


def labelled(row: LabelledCommit) -> LabelledCommit | None:
    """The row with only the files a miner labels today (source files of a language with spans, no test code) and
    their functions; None when none is left."""
    files = [f for f in row.files if spans_language(f) and not is_test_path(f)]
    if not files:
        return None
    kept = set(files)
    return dataclasses.replace(row, files=files, functions=[f for f in row.functions if f.split("::", 1)[0] in kept])


@dataclass
class RawCommit:
    sha: str
    parents: list[str]
    author: str
    time: int
    message: str


def history(repo_path: str, limit: int) -> list[RawCommit]:
    """HEAD's first-parent line, newest first, at most `limit` commits."""
    raw = git(repo_path, "log", "--first-parent", f"--max-count={limit}",
              "--format=%H%x00%P%x00%an <%ae>%x00%ct%x00%B%x1e", "HEAD")
    out = []
    for record in raw.decode("utf-8", "replace").split(RECORD_SEP):
        parts = record.strip("\n").split(FIELD_SEP)
        if len(parts) == 5:
            out.append(RawCommit(parts[0], parts[1].split(), parts[2], int(parts[3] or 0), parts[4]))
    return out


class CorpusMiner:
    """Labels one repository at a time; writes `out/<owner+name>.jsonl` (a written file is skipped)."""

    def __init__(self, config: LocalizerCorpusConfig, out: str | Path, log: Callable[[str], None] = print) -> None:
        self.config = config
        self.out = Path(out)
        self.log = log

    def kind_of(self, commit: RawCommit) -> tuple[str, str]:
        """(kind, query) of an issue-like commit, or ('', why it is dropped)."""
        c = self.config
        if not commit.parents:
            return "", "root commit"
        if any(m.lower() in commit.author.lower() for m in c.bot_markers):
            return "", "bot author"
        lines = [ln for ln in commit.message.strip().split("\n") if not TRAILER.match(ln.strip())]
        kind = ""
        if lines and PR_MERGE.match(lines[0]):
            kind, lines = MERGE, lines[1:]
        query = "\n".join(lines).strip()
        subject = query.split("\n", 1)[0].strip()
        if not kind:
            if SQUASH_PR.search(subject):
                kind = SQUASH
            elif ISSUE_REF.search(commit.message):
                kind = FIXES
            else:
                return "", "not issue-like"
        if any(subject.lower().startswith(p.lower()) for p in c.skip_subject_prefixes):
            return "", "skipped subject"
        words = re.findall(r"[A-Za-z_]{2,}", ISSUE_REF.sub(" ", SQUASH_PR.sub(" ", query)))
        if len(query) < c.min_message_chars or len(words) < c.min_message_words:
            return "", "trivial message"
        return kind, query[: c.max_query_chars]

    def label(self, repo_path: str, repo: str, commit: RawCommit, blobs: BlobReader) -> LabelledCommit | None:
        kind, query = self.kind_of(commit)
        if not kind:
            return None
        c = self.config
        parent = commit.parents[0]
        changes = [ch for ch in changed_source_lines(repo_path, parent, commit.sha) if ch.old_lines]
        source = [ch for ch in changes if not is_test_path(ch.path)]
        if not source or len(source) > c.max_commit_files:
            return None
        if sum(ch.added + ch.removed for ch in changes) > c.max_commit_lines:
            return None
        functions: list[str] = []
        for change in source:
            text = blobs.read(f"{parent}:{change.path}")
            if text is None:
                continue
            for span in file_spans(change.path, text):
                if any(span.start <= n <= span.end for n in change.old_lines):
                    functions.append(function_key(change.path, span.qualname))
        return LabelledCommit(repo, commit.sha, parent, commit.time, kind, query,
                              [ch.path for ch in source], list(dict.fromkeys(functions)))

    def mine_repo(self, repo_path: str, repo: str) -> int:
        check_corpus([repo])
        target = self.out / f"{repo.replace('/', '+')}.jsonl"
        if target.is_file():
            return sum(1 for _ in target.open())
        rows: list[LabelledCommit] = []
        seen: set[str] = set()
        with BlobReader(repo_path) as blobs:
            for commit in history(repo_path, self.config.max_history):
                row = self.label(repo_path, repo, commit, blobs)
                if row is None or " ".join(row.query.lower().split()) in seen:
                    continue
                seen.add(" ".join(row.query.lower().split()))
                rows.append(row)
                if len(rows) >= self.config.max_per_repo:
                    break
        self.out.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        with tmp.open("w") as fh:
            for row in rows:
                fh.write(json.dumps(asdict(row), ensure_ascii=False) + "\n")
        tmp.replace(target)
        self.log(f"{repo}: {len(rows)} labelled commits")
        return len(rows)

    def run(self, repos_dir: str | Path, corpus: Iterable[str]) -> dict[str, int]:
        out = {}
        for repo in check_corpus(corpus):
            path = Path(repos_dir) / repo.replace("/", "+") / "repo"
            if not path.is_dir():
                self.log(f"{repo}: SKIPPED, no clone at {path}")
                continue
            try:
                out[repo] = self.mine_repo(str(path), repo)
            except RuntimeError as exc:
                self.log(f"{repo}: FAILED {exc}")
        return out


def load_corpus(corpus_dir: str | Path) -> list[LabelledCommit]:
    """Every row of every `<owner+name>.jsonl` under `corpus_dir` (refused if one is a benchmark repo), its labels
    read under today's rules (`labelled`): a row mined before a language's test rule grew keeps its source files."""
    rows: list[LabelledCommit] = []
    for file in sorted(Path(corpus_dir).glob("*.jsonl")):
        check_corpus([file.stem])
        with file.open() as fh:
            rows.extend(row for line in fh if line.strip() and (row := labelled(LabelledCommit(**json.loads(line)))))
    if not rows:
        raise CorpusError(f"no corpus under {corpus_dir}: run `semantica mine-pairs --labels {corpus_dir}` first")
    return rows
