"""Per-repository adaptation on the SWE-bench dev split, in one run beside its ablations (same instances,
same mined lists): one JSON report and tables.

    python -m lab.eval.history_adapt --instances FILE --mined DIR --history DIR --work DIR --out FILE.json

Rows: today's default; + history lists; + history and priors (weights given a priori, as in
docs/history.md, never tuned here); + the shared localizer model (blended into today's ranking by
`localizer.*`); + the adapted model in place of the shared one, trained per instance on its repository's
own kept commits strictly at or before the base commit (semantica.history reads nothing later), over the
snapshot at the base commit; and each model alone (today's ranking weight 0). To fit two shared CPU cores, one
model answers up to `--group` consecutive instances of a repository: it is trained at the oldest base commit of
the group, and an instance joins only if that commit is an ancestor of its own base commit (a model from an
index built earlier than the query: stale, never from the future). Models are saved under `--work` and
reused by a re-run (resumable). Mirrors: $SEMANTICA_MIRRORS.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import time
from pathlib import Path
from typing import Any

from jobs.eval.instances import Instance, load_instances, mirror_clone
from jobs.eval.metrics import Prediction
from jobs.eval.replay import LocalizationReplay
from jobs.eval.tables import level_table
from jobs.localizer.gitread import TreeReader
from lab.eval.history_report import replay_predictions, with_history
from lab.eval.history_tune import score
from semantica.config import Config, TrainConfig, is_train_override, load_config, load_train_config
from semantica.history import HistoryReader
from semantica.history.reader import commit_time
from semantica.localizer.adapt import RepositoryAdapter
from semantica.localizer.snapshot import SnapshotBuilder
from serving.core.localizer.stage import LocalizerModels


@dataclasses.dataclass
class ModelPair:
    """What `LearnedLocalizer` reads of a model directory: a files and a functions booster."""

    files: Any
    functions: Any
    meta: dict


def with_localizer(config: Config, **fields: Any) -> Config:
    return dataclasses.replace(config, localizer=dataclasses.replace(config.localizer, enabled=True, **fields))


class AdaptedModelsByInstance:
    """Trains (or loads) each instance's adapted models; the shared function model where none was trained."""

    def __init__(self, config: Config, train: TrainConfig, work: Path, shared: LocalizerModels, log: Any = print) -> None:
        self.config = config
        self.work = work
        self.shared = shared
        self.adapter = RepositoryAdapter(config.history.adapt, config.localizer, train)
        self.reader = HistoryReader(config.history, work / "history.sqlite")
        self.clone = mirror_clone
        self.log = log
        self.meta: dict[str, dict] = {}

    def anchors(self, instances: list[Instance], group: int) -> dict[str, Instance]:
        """instance id -> the instance whose base commit its model is trained at (see the module docstring)."""
        out: dict[str, Instance] = {}
        for repo in sorted({i.repo for i in instances}):
            git_dir = str(self.clone(repo))
            mine = sorted((i for i in instances if i.repo == repo), key=lambda i: commit_time(git_dir, i.base_commit))
            anchor, size = None, 0
            for inst in mine:
                if anchor is None or size >= group or subprocess.run(
                        ["git", "-C", git_dir, "merge-base", "--is-ancestor", anchor.base_commit, inst.base_commit],
                        check=False).returncode != 0:
                    anchor, size = inst, 0
                out[inst.instance_id] = anchor
                size += 1
        return out

    def models(self, inst: Instance, replay: LocalizationReplay) -> ModelPair:
        root = self.work / "models" / inst.instance_id
        if not (root / "meta.json").is_file():
            builders = replay.learned._builders  # the replay's tree reader and snapshot builder per repository
            if inst.repo not in builders:
                git_dir = self.clone(inst.repo)
                builders[inst.repo] = (TreeReader(str(git_dir), self.config.localizer.max_file_bytes),
                                       SnapshotBuilder())
            reader, builder = builders[inst.repo]
            start = time.perf_counter()
            history = self.reader.read(self.clone(inst.repo), inst.base_commit)
            read_s = time.perf_counter() - start
            snapshot = builder.build(reader.texts(inst.base_commit))
            adapted = self.adapter.train(snapshot, history.records, history.commit)
            if adapted is None:
                root.mkdir(parents=True, exist_ok=True)
                (root / "meta.json").write_text(json.dumps({"none": True, "kept": len(history.records)}))
            else:
                adapted.meta.update(history_read_s=round(read_s, 2), kept=len(history.records))
                adapted.save(root)
                adapted.meta["bytes"] = sum(f.stat().st_size for f in root.iterdir() if f.is_file())
                (root / "meta.json").write_text(json.dumps(adapted.meta, indent=1) + "\n")
            self.log(f"{inst.instance_id}: {json.loads((root / 'meta.json').read_text()).get('features_s')} s features, "
                     f"{time.perf_counter() - start:.0f} s in all")
        meta = self.meta[inst.instance_id] = json.loads((root / "meta.json").read_text())
        if meta.get("none"):
            return ModelPair(self.shared.files, self.shared.functions, meta)
        import lightgbm as lgb

        functions = root / "functions.txt"
        return ModelPair(lgb.Booster(model_file=str(root / "files.txt")),
                         lgb.Booster(model_file=str(functions)) if functions.is_file() else self.shared.functions, meta)


def adapted_predictions(replay: LocalizationReplay, config: Config, instances: list[Instance],
                        adapted: AdaptedModelsByInstance, anchors: dict[str, Instance]) -> dict[str, Prediction]:
    replay.reconfigure(config)
    out = {}
    for inst in instances:
        models = adapted.models(anchors[inst.instance_id], replay)
        replay.learned.localizer.models = models
        prediction = replay.predict(inst)
        if prediction is not None:
            out[inst.instance_id] = prediction
    replay.learned.localizer.models = adapted.shared
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", required=True)
    parser.add_argument("--mined", required=True)
    parser.add_argument("--history", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--history-weight", type=float, default=0.5)
    parser.add_argument("--prior-weight", type=float, default=0.25)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--set", action="append", default=[])
    args = parser.parse_args(argv)
    base = load_config(None, [o for o in args.set if not is_train_override(o)])
    base = with_history(base, functions=False)  # the dev histories are read files-only (docs/history.md: cost)
    instances = sorted(load_instances(args.instances), key=lambda i: (i.repo, i.instance_id))
    replay = LocalizationReplay(base, args.mined, history_dir=args.history)
    w, p = args.history_weight, args.prior_weight
    rows: dict[str, Config] = {
        "default": with_history(base, enabled=False),
        "+ history": with_history(base, enabled=True, file_weight=w, function_weight=w, prior_weight=0.0),
        "+ history + priors": with_history(base, enabled=True, file_weight=w, function_weight=w, prior_weight=p),
        "+ shared localizer": with_localizer(with_history(base, enabled=False)),
        "shared localizer alone": with_localizer(with_history(base, enabled=False), today_weight=0.0),
    }
    predictions = {name: replay_predictions(replay, config, instances) for name, config in rows.items()}
    shared_config = rows["+ shared localizer"]
    replay.reconfigure(shared_config)
    shared = replay.learned.localizer.models
    adapted = AdaptedModelsByInstance(shared_config, load_train_config(None, [o for o in args.set if is_train_override(o)]),
                                      Path(args.work), shared)
    anchors = adapted.anchors(instances, args.group)
    print(f"{len(set(a.instance_id for a in anchors.values()))} adapted models for {len(instances)} instances",
          flush=True)
    predictions["+ adapted localizer"] = adapted_predictions(replay, shared_config, instances, adapted, anchors)
    predictions["adapted localizer alone"] = adapted_predictions(
        replay, rows["shared localizer alone"], instances, adapted, anchors)
    predictions["+ history + adapted localizer"] = adapted_predictions(
        replay, with_localizer(rows["+ history"]), instances, adapted, anchors)
    report: dict[str, Any] = {
        "weights": {"history_weight": w, "prior_weight": p, "localizer_blend": {
            "today_weight": base.localizer.today_weight, "learned_weight": base.localizer.learned_weight}},
        "adapt": dataclasses.asdict(base.history.adapt), "group": args.group,
        "anchors": {k: v.instance_id for k, v in anchors.items()},
        "rows": {name: score(pr, instances) for name, pr in predictions.items()},
        "adapted_models": {k: {f: v.get(f) for f in ("kept", "features_s", "train_s", "history_read_s", "bytes",
                                                         "function_queries", "none")}
                           | {"train_commits": len(v.get("train_commits", []))} for k, v in adapted.meta.items()},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1))
    for name, result in report["rows"].items():
        print(f"\n## {name}\n{level_table(result)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
