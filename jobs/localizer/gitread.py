"""Source file texts (every language with function spans) of a bare repository at a commit, from git objects (no
checkout), cached by blob."""

from __future__ import annotations

import subprocess

from jobs.train.pairs_source import git
from pipelines.history.gitread import BlobReader
from semantica.languages.spans import spans_language


class TreeReader:
    """`{path: text}` of the source files (`spans_language`) at a commit; a blob read once is not read again.
    It holds one `git cat-file --batch` process: close it (or use it as a context manager)."""

    def __init__(self, repo_path: str, max_file_bytes: int) -> None:
        self.repo_path = repo_path
        self.max_file_bytes = max_file_bytes
        self.blobs = BlobReader(repo_path)
        self._texts: dict[str, str] = {}

    def texts(self, commit: str) -> dict[str, str]:
        raw = git(self.repo_path, "ls-tree", "-r", "-z", "--long", commit)
        out: dict[str, str] = {}
        for record in raw.split(b"\0"):
            if not record:
                continue
            meta, _, path_b = record.partition(b"\t")
            parts = meta.split()
            path = path_b.decode("utf-8", "replace")
            if len(parts) < 4 or parts[1] != b"blob" or not spans_language(path) or not parts[3].isdigit():
                continue  # a submodule ("-") or a blob the clone lacks (git writes "BAD" for its size)
            if int(parts[3]) > self.max_file_bytes:
                continue
            sha = parts[2].decode()
            if sha not in self._texts:
                self._texts[sha] = self.blobs.read(sha) or ""
            out[path] = self._texts[sha]
        return out

    def first_parent_positions(self) -> dict[str, int]:
        """sha -> position on HEAD's first-parent line (0 = HEAD)."""
        raw = subprocess.run(["git", "-C", self.repo_path, "rev-list", "--first-parent", "HEAD"],
                             capture_output=True, check=True).stdout.decode().split()
        return {sha: n for n, sha in enumerate(raw)}

    def close(self) -> None:
        self.blobs.close()

    def __enter__(self) -> TreeReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
