"""Two or more corpus studies of the dense channel as one grid, chosen by leave-one-repository-out:
`python -m lab.localizer.grid_union OUT.json LABEL=STUDY.json LABEL=STUDY.json ...`.

Each `lab.localizer.function_dense` output holds a grid over the channel's settings at one setting of what it
builds on (`--set`, e.g. `localizer.dense_depth`). Every study must hold the same repositories and queries; the
union's settings are `LABEL:SETTING`, and each repository is scored with the one best on the other repositories by
the studies' own criterion, so a choice between the builds is made the way each channel setting was. The first
label's channel-off row is the reference the ties fall back to.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lab.localizer.function_dense import NO_CHANNEL, leave_one_repository_out
from lab.localizer.function_order import criterion


def union(studies: dict[str, dict]) -> dict:
    labels = list(studies)
    first = studies[labels[0]]
    for label, study in studies.items():
        if study["repos"] != first["repos"] or study["queries"] != first["queries"]:
            raise ValueError(f"{label}: another sample than {labels[0]}'s (repositories or queries differ)")
    grid = {f"{label}:{key}": row for label, study in studies.items() for key, row in study["grid"].items()}
    off_key = f"{labels[0]}:{NO_CHANNEL}/0/0.0/0.0"
    picks, loro = leave_one_repository_out(grid, first["repos"], off_key, criterion)
    chosen_label = {label: sum(1 for p in picks.values() if p.startswith(f"{label}:")) for label in labels}
    return {"studies": {label: {"function_ties": study.get("function_ties"), "loro": study["loro"],
                                "unrecorded_without_cosine": study.get("unrecorded_without_cosine")}
                        for label, study in studies.items()},
            "criterion": first["criterion"], "repos": first["repos"], "queries": first["queries"],
            "folds_choosing": chosen_label, "picks": picks, "loro": loro}


def main(argv: list[str]) -> int:
    out, specs = argv[0], argv[1:]
    studies = {}
    for spec in specs:
        label, _, path = spec.partition("=")
        studies[label] = json.loads(Path(path).read_text())
    result = union(studies)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("folds_choosing", "loro")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
