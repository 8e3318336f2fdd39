"""The labelled-commit corpus (bench/corpus/*.jsonl: repo, sha, parent, query, files, functions) as instances for
`python -m lab.eval.history_lists --corpus`: each labelled commit is answered by the history of its PARENT, so the commit itself and
everything after it are never seen. Sampling is deterministic (sha order) so a run is reproducible."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from jobs.eval.instances import Instance


def corpus_instances(corpus_dir: str | Path, per_repo: int, exclude: frozenset[str] = frozenset()) -> list[Instance]:
    """Up to `per_repo` labelled commits of each corpus repository (those named in `exclude` left out)."""
    out: list[Instance] = []
    for file in sorted(Path(corpus_dir).glob("*.jsonl")):
        rows = [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]
        rows = [r for r in rows if r.get("files") and r.get("parent") and r["repo"] not in exclude]
        rows.sort(key=lambda r: hashlib.sha1(r["sha"].encode()).hexdigest())
        for row in rows[:per_repo]:
            out.append(Instance(f"{row['repo']}@{row['sha'][:12]}", row["repo"], row["parent"], row["query"],
                                list(row["files"]), list(row.get("functions") or [])))
    return out
