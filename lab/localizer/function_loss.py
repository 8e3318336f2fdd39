"""Where a replayed split's gold functions are lost: `python -m lab.localizer.function_loss INSTANCES MINED OUT.json
[--set key=value ...]` (bare clones under $SEMANTICA_MIRRORS; candidates from `paths.cache_dir` when cached).

Each gold function lands in the first stage that drops it: its file is not a file candidate; it is no outer
function or method of its file at the base commit (module-level or class-level code, or new), so no function
key can name it; its file ranks below `localizer.top_files` (in the order the functions followed: the learned
one with `function_file_order: learned`) and no function list reached it; it was cut at
`localizer.max_function_candidates`; or it is a candidate, and then by its rank in the localizer's list and in
the final (blended) list; each gold function outside the final top 50 is listed with its stage and
ranks. Read-only: a diagnosis, not a metric to tune on.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from jobs.eval.instances import load_instances, mirror_clone
from jobs.eval.metrics import normalize_function
from jobs.eval.replay import LocalizationReplay
from semantica.config import load_config
from semantica.languages.spans import function_spans

STAGES = ("no file candidate", "not a function at base", "file below top_files", "cut at max_function_candidates",
          "candidate, rank > 50", "candidate, rank 11-50", "candidate, rank <= 10")
FINAL = ("final rank > 50", "final rank 11-50", "final rank <= 10")
FILE_RANK_BANDS = ((10, "1-10"), (20, "11-20"), (30, "21-30"), (50, "31-50"), (100, "51-100"))
TOP_RANK = 10  # the band the localization metrics' Acc@10 reads
RECALL_RANK = 50  # the band Recall@50 reads


def outer_functions(repo: str, commit: str, path: str) -> set[str]:
    """The normalised qualified names the localizer's snapshot holds for one file at a commit."""
    shown = subprocess.run(["git", "-C", str(mirror_clone(repo)), "show", f"{commit}:{path}"], capture_output=True)
    if shown.returncode != 0:
        return set()
    return {normalize_function(s.qualname) for s in function_spans(shown.stdout.decode("utf-8", "replace"))}


def band(rank: int | None) -> str:
    if rank is None:
        return "not a candidate"
    return next((name for top, name in FILE_RANK_BANDS if rank <= top), "> 100")


def loss_stage(key: str, candidate_rank: int | None, file_rank: dict[str, int], outer: set[str],
               top_files: int) -> str:
    """The first stage that drops a gold function `path::qualname`, or its band as a localizer candidate."""
    path = key.partition("::")[0]
    if candidate_rank is not None:
        return STAGES[4] if candidate_rank > RECALL_RANK else STAGES[5] if candidate_rank > TOP_RANK else STAGES[6]
    if path not in file_rank:
        return STAGES[0]
    if key not in outer:
        return STAGES[1]
    if file_rank[path] > top_files:
        return STAGES[2]
    return STAGES[3]


def final_band(final_rank: int | None) -> str:
    """A gold function's band in the final (blended) list; absent counts as below 50."""
    if final_rank is None or final_rank > RECALL_RANK:
        return FINAL[0]
    return FINAL[1] if final_rank > TOP_RANK else FINAL[2]


def diagnose(instances_file: str, mined: str, overrides: list[str]) -> dict:
    config = load_config(None, overrides)
    top_files = config.localizer.top_files
    replay = LocalizationReplay(config, mined)
    stages: dict[str, Counter] = defaultdict(Counter)
    final: dict[str, Counter] = defaultdict(Counter)
    lost_file_rank: dict[str, Counter] = defaultdict(Counter)  # gold function not a candidate: its file's rank band
    missed: list[dict] = []  # each gold function outside the final top 50: where it was lost
    for inst in load_instances(instances_file):
        gold = {normalize_function(f) for f in inst.gold_functions}
        prediction = replay.predict(inst)
        if not gold or prediction is None:
            continue
        cands = replay.learned.candidates(inst)
        files = cands.files if cands.file_scores is None else [  # the order the functions followed
            cands.files[i] for i in np.argsort(-cands.file_scores, kind="stable")]
        file_rank = {p: n for n, p in enumerate(files, 1)}
        order = sorted(range(len(cands.functions)), key=lambda i: -float(cands.function_fusion[i]))
        function_rank = {normalize_function(cands.functions[i]): n for n, i in enumerate(order, 1)}
        final_rank = {normalize_function(k): n for n, k in enumerate(dict.fromkeys(prediction.functions), 1)}
        spans: dict[str, set[str]] = {}
        for key in sorted(gold):
            path = key.partition("::")[0]
            if path not in spans:
                spans[path] = {f"{path}::{q}" for q in outer_functions(inst.repo, inst.base_commit, path)}
            rank = function_rank.get(key)
            stage = loss_stage(key, rank, file_rank, spans[path], top_files)
            if rank is None:
                lost_file_rank[inst.repo][band(file_rank.get(path))] += 1
            where = final_rank.get(key)
            in_final = final_band(where)
            if in_final == FINAL[0]:
                missed.append({"instance": inst.instance_id, "function": key, "stage": stage,
                               "file_rank": file_rank.get(path), "candidate_rank": rank, "final_rank": where})
            for scope in (inst.repo, "all"):
                stages[scope][stage] += 1
                final[scope][in_final] += 1
    lost_file_rank["all"] = sum(lost_file_rank.values(), Counter())
    return {"overrides": overrides, "stages": {s: {k: stages[s][k] for k in STAGES} for s in stages},
            "final": {s: {k: final[s][k] for k in FINAL} for s in final},
            "lost_candidates_file_rank": {s: dict(c) for s, c in lost_file_rank.items()}, "missed": missed}


def main(argv: list[str]) -> int:
    instances_file, mined, out = argv[:3]
    overrides = [a for flag, a in zip(argv[3:], argv[4:]) if flag == "--set"]
    result = diagnose(instances_file, mined, overrides)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["stages"]["all"], indent=1), json.dumps(result["final"]["all"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
