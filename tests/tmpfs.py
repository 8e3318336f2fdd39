"""A real file system that fills up: a tmpfs of a given size, for the full-disk tests (root and mount rights
needed; without them the test is skipped loudly, naming what covers it instead)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def mounted_tmpfs(mount_point: Path, options: str, covered_by: str) -> Iterator[Path]:
    """`mount -t tmpfs -o options` at `mount_point` (created) for the block, unmounted after it."""
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount_point)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"SKIPPED LOUDLY: cannot mount a tmpfs here ({mounted.stderr.strip() or 'not root'}); "
                    f"{covered_by}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)
