"""Where a py-spy profile's samples went, by the frames under chosen parents (a build's stages).

    python -m lab.bench.spy_stages PROFILE.raw [--under 'Indexer._publish' 'SnapshotWriter._write' ...]

`PROFILE.raw` is `py-spy record --format raw` output (one collapsed stack and its sample count a line). For each
`--under` frame, the samples of every frame it calls directly, largest first, as shares of all samples: which
stage of the first snapshot's build the time went to, without a cProfile run (py-spy attaches to a live build).
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

FRAME_NAME = re.compile(r"^(.*?) \(")  # "Indexer._publish (pipelines/indexer.py:424)" -> "Indexer._publish"
DEFAULT_PARENTS = ["Indexer._run", "Indexer._publish_first", "Indexer._publish", "SnapshotWriter._write",
                   "PartitionedShardWriter.write"]


def frame_names(stack: str) -> list[str]:
    names = []
    for frame in stack.split(";"):
        match = FRAME_NAME.match(frame.strip())
        names.append(match.group(1) if match else frame.strip())
    return names


def stages(profile: Path, parents: list[str]) -> dict[str, object]:
    total = 0
    children: dict[str, Counter[str]] = {parent: Counter() for parent in parents}
    for line in profile.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        samples = int(count)
        total += samples
        names = frame_names(stack)
        for parent in parents:
            if parent in names:
                at = names.index(parent)
                child = names[at + 1] if at + 1 < len(names) else "(self)"
                children[parent][child] += samples
    return {"samples": total, "under": {parent: {child: round(n / max(total, 1), 3) for child, n in c.most_common(8)}
                                        for parent, c in children.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profile", type=Path)
    parser.add_argument("--under", nargs="+", default=DEFAULT_PARENTS)
    args = parser.parse_args(argv)
    print(json.dumps(stages(args.profile, args.under), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
