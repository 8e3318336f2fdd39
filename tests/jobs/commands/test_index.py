"""`semantica index` records each build's outcome and duration for `/metrics` (semantica.ondisk.build_stats)."""

from __future__ import annotations

import subprocess

from semantica.ondisk.build_stats import DEFAULT_FILE, read_build_stats
from tests.jobs.commands.test_cli import run_cli
from tests.serving.ray.test_app import FILES


def test_index_records_successful_and_failed_builds(tmp_path):
    repo = tmp_path / "repo"
    for name, text in FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    root = tmp_path / "index"
    common = ("--index-root", str(root), "--set", f"paths.cache_dir={tmp_path / 'cache'}")
    ok = run_cli("index", "--repo", str(repo), "--name", "tiny/shop", *common)
    assert ok.returncode == 0, ok.stderr
    failed = run_cli("index", "--repo", str(tmp_path / "missing"), "--name", "tiny/gone", *common)
    assert failed.returncode != 0
    stats = read_build_stats(root / DEFAULT_FILE)
    assert stats["tiny/shop"]["ok"] == 1 and stats["tiny/shop"]["failed"] == 0 and stats["tiny/shop"]["seconds"] > 0
    assert stats["tiny/gone"] == {"ok": 0, "failed": 1, "seconds": stats["tiny/gone"]["seconds"]}
    listing = run_cli("repos", "--json", "--index-root", str(root))
    assert listing.returncode == 0 and "build-stats" not in listing.stdout  # the stats file is no repository
