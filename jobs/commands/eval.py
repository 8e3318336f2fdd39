"""`semantica eval {swebench,score,golden,report}`: benchmark runs, scoring and the report figure."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Iterable

from jobs.cli import CliError, add_common, add_training, config_from_args, print_json, train_config_from_args
from jobs.eval.instances import DEFAULT_LANGUAGE, source_globs
from semantica.config import Config

# The eval keeps its own index and caches (so a benchmark never replaces a user's snapshot) and indexes only the
# source of the instances' languages (`discover.include_globs` from jobs.eval.instances.source_globs: `*.py` and
# `*.pyi` for SWE-bench). A value set explicitly (YAML, env, --set) wins.
EVAL_DEFAULTS: dict[str, object] = {
    "paths.index_root": ".semantica/eval/index",
    "paths.cache_dir": ".semantica/eval/cache",
    "index.keep_snapshots": 1,
}
SOURCE_GLOBS_KEY = "discover.include_globs"

SWEBENCH_EPILOG = """\
Writes, for --out runs/pred.jsonl: runs/pred.<ablation>.jsonl (one {"instance_id", "files",
"functions", "file_scores", "function_scores"} per instance, top 50), runs/pred.<ablation>.files.trec
and .functions.trec (TREC runs), runs/pred.files.qrels and .functions.qrels (gold),
runs/pred.timings.jsonl (index/query seconds per instance) and runs/pred.metrics.json (LocAgent
metrics per ablation, overall and per repository). Re-running skips instances already written to every
ablation's file. Eval defaults unless set explicitly: """ + ", ".join(f"{k}={v}" for k, v in EVAL_DEFAULTS.items()) + \
    f", {SOURCE_GLOBS_KEY}=the source suffixes of the instances' languages"


def register(sub: argparse._SubParsersAction) -> None:
    from jobs.eval.swebench import ABLATIONS

    evaluation = sub.add_parser("eval", help="evaluate retrieval quality (SWE-bench localization, golden sets)",
                                description="Benchmarks: SWE-bench Lite localization, golden query sets, reports.")
    commands = evaluation.add_subparsers(dest="eval_command", metavar="EVAL_COMMAND")
    commands.required = True

    swe = commands.add_parser(
        "swebench", help="index each instance at its base commit, query with the issue, score",
        description="SWE-bench Lite code localization under retrieval ablations (one index per instance, "
                    "shared by the ablations).",
        epilog=SWEBENCH_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    swe.add_argument("--instances", required=True, metavar="FILE", help="instances JSONL (swebench_lite_dev.jsonl)")
    swe.add_argument("--repos-dir", required=True, metavar="DIR",
                     help="directory of clones: DIR/<owner>+<name>/repo, DIR/<owner>__<name> or DIR/<name>")
    swe.add_argument("--out", required=True, metavar="PRED.jsonl", help="prediction path; the ablation name is added")
    swe.add_argument("--ablation", action="extend", nargs="+", default=[], metavar="NAME",
                     choices=list(ABLATIONS), help=f"ablations to run (default: all: {', '.join(ABLATIONS)})")
    swe.add_argument("--limit", type=int, metavar="N", help="only the first N instances (after --repo-filter)")
    swe.add_argument("--repo-filter", action="extend", nargs="+", default=[], metavar="OWNER/NAME",
                     help="only instances of these repositories")
    swe.add_argument("--quiet", action="store_true", help="no progress bar or per-instance lines")
    swe.add_argument("--json", action="store_true", help="print the metrics as JSON instead of the table")
    swe.add_argument("--mine", metavar="DIR", help="also log each instance's labelled fused hits and retriever lists "
                                                   "into DIR (as `semantica mine swebench`; the index is shared)")
    add_common(swe)
    add_training(swe)
    swe.set_defaults(handler=run_swebench)

    score = commands.add_parser("score", help="score an existing prediction file",
                                description="LocAgent metrics of a prediction JSONL against the instances' gold.")
    score.add_argument("--instances", required=True, metavar="FILE", help="instances JSONL with gold")
    score.add_argument("--pred", required=True, metavar="PRED.jsonl", help="predictions: {instance_id, files, functions}")
    score.add_argument("--missing-as-empty", action="store_true",
                       help="score instances absent from PRED as empty predictions (default: skip them)")
    score.add_argument("--repo-filter", action="extend", nargs="+", default=[], metavar="OWNER/NAME",
                       help="only instances of these repositories")
    score.add_argument("--json", action="store_true", help="print JSON")
    score.set_defaults(handler=run_score)

    golden = commands.add_parser("golden", help="score a golden query set against an indexed repository",
                                 description="Precision@5, Recall@10, MRR and NDCG@10 of the search hits for "
                                             "hand-labelled queries (format: jobs/eval/golden.py).")
    golden.add_argument("--set", dest="golden_set", required=True, metavar="FILE", help="golden set JSONL")
    golden.add_argument("--repo", required=True, metavar="R", help="the indexed repository name to query")
    golden.add_argument("--ablation", choices=list(ABLATIONS), help="retrievers/rerankers to use (default: as configured)")
    golden.add_argument("--json", action="store_true", help="print the full report (per query) as JSON")
    golden.add_argument("--config", metavar="FILE", help="YAML config (default: conf/default.yaml)")
    golden.add_argument("--index-root", metavar="DIR", help="index directory (overrides paths.index_root)")
    golden.add_argument("--override", dest="set", metavar="SECTION.FIELD=VALUE", action="append", default=[],
                        help="override any config value (repeatable; `--set` names the golden set here)")
    golden.set_defaults(handler=run_golden)

    flow = commands.add_parser(
        "flow", help="Recall@10 and MRR of structural answers on a flow golden set (jedi gold)",
        description="\"who calls X\" / \"what does X call\" questions from conf/golden/flow-*.jsonl, answered by "
                    "the graph ops `semantica query` routes them to, over a fresh parse of each repo@commit.")
    flow.add_argument("--flow-set", action="append", default=[], metavar="FILE",
                      help="flow golden set JSONL (repeatable; default: conf/golden/flow-*.jsonl)")
    flow.add_argument("--mirror", action="append", default=[], metavar="OWNER/NAME=PATH",
                      help="bare git directory of a repository (default: $SEMANTICA_MIRRORS/<owner>+<name>/repo)")
    flow.add_argument("--json", action="store_true", help="print the full report (per query) as JSON")
    add_common(flow)
    flow.set_defaults(handler=run_flow)

    replay = commands.add_parser(
        "localize", help="replay file/function localization over mined retriever lists (seconds, no indexing)",
        description="Re-run only the localization stage over the retriever lists that `eval swebench --mine DIR` "
                    "or `mine swebench --out DIR` stored, with the given config, and score it: tune "
                    "query.localize_* and fusion.* without indexing again.")
    replay.add_argument("--instances", required=True, metavar="FILE", help="instances JSONL with gold")
    replay.add_argument("--mined", required=True, metavar="DIR", help="the mine output directory (holds lists/)")
    replay.add_argument("--repo-filter", action="extend", nargs="+", default=[], metavar="OWNER/NAME",
                        help="only instances of these repositories")
    replay.add_argument("--repos-dir", metavar="DIR",
                        help="bare clones (<owner>+<name>/repo), read by the learned localizer (default: $SEMANTICA_MIRRORS)")
    replay.add_argument("--json", action="store_true", help="print JSON")
    add_common(replay)
    replay.set_defaults(handler=run_localize)

    report = commands.add_parser("report", help="draw the eval report PNG from a metrics.json",
                                 description="The ablation table and per-repository file Acc@5 bars, as one PNG "
                                             "(the same figure as notebooks/eval_report.ipynb).")
    report.add_argument("--metrics", required=True, metavar="FILE", help="<stem>.metrics.json from `eval swebench`")
    report.add_argument("--png", required=True, metavar="OUT", help="PNG path to write")
    report.set_defaults(handler=run_report)


def apply_eval_defaults(config: Config, explicit: set[str] | None = None,
                        languages: Iterable[str] = (DEFAULT_LANGUAGE,)) -> Config:
    """Eval defaults for every listed key still at its dataclass default and not set explicitly; the index reads
    the source files of the instances' `languages`."""
    explicit = explicit or set()
    baseline = Config()
    overrides = []
    for dotted, value in {**EVAL_DEFAULTS, SOURCE_GLOBS_KEY: source_globs(languages)}.items():
        section, name = dotted.split(".")
        current = getattr(getattr(config, section), name)
        if dotted not in explicit and current == getattr(getattr(baseline, section), name):
            overrides.append((section, name, value))
    for section, name, value in overrides:
        setattr(config, section, dataclasses.replace(getattr(config, section), **{name: value}))
    return config


def _explicit_keys(args: argparse.Namespace) -> set[str]:
    keys = {s.split("=", 1)[0].strip() for s in (getattr(args, "set", None) or []) if "=" in s}
    if getattr(args, "index_root", None):
        keys.add("paths.index_root")
    return keys


def _load_instances(path: str, repo_filter: list[str]):
    from jobs.eval.instances import load_instances

    instances = load_instances(path)
    if repo_filter:
        known = {i.repo for i in instances}
        unknown = sorted(set(repo_filter) - known)
        if unknown:
            raise CliError(f"--repo-filter {unknown}: no such repository in {path}; known: {sorted(known)}")
        instances = [i for i in instances if i.repo in set(repo_filter)]
    return instances


def run_swebench(args: argparse.Namespace) -> int:
    from jobs.eval.swebench import SwebenchEval, parse_ablations

    if args.limit is not None and args.limit <= 0:
        raise CliError(f"--limit must be a positive integer, got {args.limit}")
    everything = _load_instances(args.instances, [])
    instances = _load_instances(args.instances, args.repo_filter)
    config = apply_eval_defaults(config_from_args(args), _explicit_keys(args), {i.language for i in everything})
    if args.limit:
        instances = instances[: args.limit]
    from jobs.eval.mine import HitMiner

    miner = HitMiner(train_config_from_args(args).mine, args.mine) if args.mine else None
    runner = SwebenchEval(config, args.repos_dir, args.out, parse_ablations(args.ablation),
                          progress=not args.quiet, log=(lambda _msg: None) if args.quiet else None, miner=miner)
    result = runner.run(instances, score_over=everything)  # metrics cover every instance predicted so far
    if args.json:
        print_json(result.metrics)
    else:
        print(f"{len(instances)} instances ({result.done} run, {result.skipped} already done, "
              f"{len(result.failed)} failed) in {result.wall_s:.0f} s; index root {config.paths.index_root}; "
              f"metrics over the {result.metrics['instances']} instances predicted in {args.out}")
        print(result.table)
        print(f"metrics: {result.paths.metrics}")
    if result.failed:
        print(f"failed instances: {', '.join(result.failed)} (see {result.paths.timings})", file=sys.stderr)
        return 1
    return 0


def run_score(args: argparse.Namespace) -> int:
    from jobs.eval.tables import level_table, score_predictions

    instances = _load_instances(args.instances, args.repo_filter)
    result = score_predictions(instances, args.pred, missing_as_empty=args.missing_as_empty)
    if args.json:
        print_json(result)
        return 0
    how = "scored as empty" if args.missing_as_empty else "skipped"
    unknown = f", {len(result['unknown_ids'])} unknown ids ignored" if result["unknown_ids"] else ""
    print(f"{result['instances']} instances scored ({len(result['missing'])} without a prediction {how}{unknown})")
    print(level_table(result))
    return 0


def run_localize(args: argparse.Namespace) -> int:
    from jobs.eval.mine import MineError
    from jobs.eval.replay import LocalizationReplay
    from jobs.eval.tables import level_table

    config = config_from_args(args)
    instances = _load_instances(args.instances, args.repo_filter)
    try:
        result = LocalizationReplay(config, args.mined, args.repos_dir).run(instances)
    except MineError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print_json(result)
        return 0
    print(f"{result['instances']} instances replayed ({len(result['missing'])} without mined lists skipped)")
    print(level_table(result))
    return 0


def run_golden(args: argparse.Namespace) -> int:
    from jobs.eval.golden import GoldenEval, load_golden_set
    from jobs.eval.swebench import ABLATIONS
    from serving.pipeline import SearchPipeline

    config = config_from_args(args)
    queries = load_golden_set(args.golden_set)
    ablation = ABLATIONS[args.ablation] if args.ablation else None
    runner = GoldenEval(SearchPipeline(config), args.repo,
                        strategies=ablation.strategies if ablation else (),
                        late_interaction=ablation.late_interaction if ablation else None)
    report = runner.run(queries)
    if args.json:
        print_json(report.to_dict())
        return 0
    print(f"{len(queries)} queries over {args.repo} in {report.seconds:.1f} s")
    print(report.table())
    misses = [q for q in report.queries if q["MRR"] == 0]
    for q in misses:
        print(f"  miss [{q['intent'] or '-'}] {q['query']!r} -> {', '.join(q['top'][:3]) or 'no hits'}")
    return 0


def run_flow(args: argparse.Namespace) -> int:
    from pathlib import Path

    from jobs.eval.flow import evaluate, load_rows
    from jobs.eval.instances import find_clone, mirrors_dir

    root = Path(__file__).resolve().parents[2]
    paths = [Path(p) for p in args.flow_set] or sorted((root / "conf" / "golden").glob("flow-*.jsonl"))
    if not paths:
        raise CliError("no flow golden set: pass --flow-set FILE (built with python -m lab.eval.flow_gold)")
    rows = load_rows(paths)
    clones = mirrors_dir()
    found = {r["repo"]: find_clone(clones, r["repo"]) if clones else None for r in rows}
    mirrors = {name: path for name, path in found.items() if path is not None}
    for item in args.mirror:
        name, _, path = item.partition("=")
        mirrors[name] = Path(path)
    missing = sorted({r["repo"] for r in rows} - {r for r, p in mirrors.items() if (p / "HEAD").exists()})
    if missing:
        print(f"SKIPPED (no mirror): {', '.join(missing)}", file=sys.stderr)
        rows = [r for r in rows if r["repo"] not in missing]
    report = evaluate(rows, {r: p for r, p in mirrors.items() if r not in missing}, config_from_args(args))
    if args.json:
        print_json(report.to_dict())
        return 0
    print("| op | questions | Recall@10 | MRR | precision@10 | Recall@10 capped | reachable Recall@10 |\n"
          "|---|---|---|---|---|---|---|")
    for op, v in sorted(report.by_op.items()):
        print(f"| {op} | {v['questions']} | {v['recall@10']:.3f} | {v['mrr']:.3f} | {v['precision@10']:.3f} | "
              f"{v['recall@10_capped']:.3f} | {v['recall@10_reachable']:.3f} |")
    print(f"graph build s: {report.build_s}; question p50 {report.query_ms_p50} ms")
    return 0


def run_report(args: argparse.Namespace) -> int:
    from jobs.eval.report import ReportError, load_metrics, markdown, write_png

    try:
        print(markdown(load_metrics(args.metrics)))
        out = write_png(args.metrics, args.png)
    except ReportError as exc:
        raise CliError(str(exc)) from None
    print(f"wrote {out}")
    return 0

