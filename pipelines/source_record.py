"""What a snapshot is built from (`SourceRecord`): a git commit, or a working tree with its branch and dirty
paths, plus the rule that decided which files were indexable. Every later answer's freshness check
(semantica/ondisk/freshness.py) compares the source against this record."""

from __future__ import annotations

import subprocess

from pipelines.discover import RepoSource
from semantica.config import Config
from semantica.languages import LANGUAGE_BY_NAME, LANGUAGE_BY_SUFFIX
from semantica.ondisk.source import IndexableRule, SourceKind, SourceRecord, git_status


def record_source(source: RepoSource, ref: str | None, config: Config) -> SourceRecord:
    """What a snapshot is built from, for the freshness check of every later answer."""
    discover = source.config
    rule = IndexableRule(suffixes=sorted(LANGUAGE_BY_SUFFIX), names=sorted(LANGUAGE_BY_NAME),
                         vendored_dirs=list(discover.vendored_dirs), include_globs=list(discover.include_globs))
    if source.commit is None and not source.bare:
        if config.freshness.untracked_cache:  # a git index extension: later status calls skip unchanged dirs
            subprocess.run(["git", "-C", source.repo_path, "update-index", "--untracked-cache"], capture_output=True,
                           timeout=config.freshness.git_timeout_s, check=False)
        status = git_status(source.repo_path, config.freshness.git_timeout_s)
        return SourceRecord(kind=SourceKind.WORKTREE.value, path=source.repo_path, commit=status.head,
                            branch=status.branch, dirty=status.changed, indexable=rule)
    followed = ref or "HEAD"
    is_sha = len(followed) == 40 and all(c in "0123456789abcdef" for c in followed)
    return SourceRecord(kind=SourceKind.GIT.value, path=source.repo_path, ref=followed, commit=source.commit or "",
                        branch="" if is_sha or followed == "HEAD" else followed, indexable=rule)
