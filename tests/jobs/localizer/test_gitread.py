"""The corpus miner's and the replay's file reader: every language with spans, nothing the clone cannot read."""

from __future__ import annotations

import subprocess
from pathlib import Path

from jobs.localizer.gitread import TreeReader
from tests.dated_git import commit


def test_source_files_of_every_language_and_a_missing_blob_left_out(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    sha = commit(work, {"cmd/root.go": "package cmd\n\nfunc Run() {}\n", "src/lib.rs": "pub fn norm() {}\n",
                        "pkg/mod.py": "def f():\n    return 1\n", "README.md": "# readme\n",
                        "web/gone.ts": "export const gone = () => 1\n"}, "Initial import of the sources", day=0)
    blob = subprocess.run(["git", "-C", str(work), "rev-parse", f"{sha}:web/gone.ts"], capture_output=True, text=True,
                          check=True).stdout.strip()
    (Path(work) / ".git" / "objects" / blob[:2] / blob[2:]).unlink()  # a clone without that blob: `ls-tree` says BAD
    reader = TreeReader(str(work), max_file_bytes=1 << 20)
    try:
        texts = reader.texts(sha)
    finally:
        reader.close()
    assert sorted(texts) == ["cmd/root.go", "pkg/mod.py", "src/lib.rs"]
    assert texts["cmd/root.go"].startswith("package cmd")
