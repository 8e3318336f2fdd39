"""History read cost of a corpus snapshot: `python -m lab.localizer.history_cost OWNER/NAME MAX_COMMITS`.

Reads HEAD's history (at most MAX_COMMITS) files-only, then with functions, each into a fresh cache, then
the snapshot five commits earlier from that warm cache; one JSON line with wall seconds and the load average.
The bare clone is `$SEMANTICA_MIRRORS/<owner+name>/repo` .
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from jobs.eval.instances import mirror_clone
from jobs.localizer.history import CorpusHistory
from semantica.config import load_config


def main(argv: list[str]) -> int:
    repo, max_commits = argv[0], int(argv[1])
    git_dir = mirror_clone(repo)
    config = load_config(None, []).history
    out: dict[str, object] = {"repo": repo, "max_commits": max_commits}
    for functions in (False, True):
        name = "functions" if functions else "files_only"
        with tempfile.TemporaryDirectory() as tmp:
            history = CorpusHistory(dataclasses.replace(config, max_commits=max_commits, functions=functions),
                                    Path(tmp) / "history.sqlite")
            start = time.perf_counter()
            snapshot = history.at(git_dir, "HEAD")
            out[name] = {"wall_s": round(time.perf_counter() - start, 1), "kept": len(snapshot.shas),
                         "read": snapshot.searcher.history.read_commits}
            start = time.perf_counter()
            history.at(git_dir, "HEAD~5")
            out[f"{name}_neighbour_s"] = round(time.perf_counter() - start, 2)
            history.close()
    out["load_average"] = os.getloadavg()[0]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
