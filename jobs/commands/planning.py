"""`semantica map REPO` (repository map) and `semantica weights` (feedback-learned strategy weights)."""

from __future__ import annotations

import argparse

from jobs.cli import CliError, add_common, config_from_args, print_json, print_stale


def register(sub: argparse._SubParsersAction) -> None:
    repo_map = sub.add_parser(
        "map", help="a compact map of a repository: files by personalised PageRank, top symbols with signatures",
        description="Rank REPO's files by personalised PageRank over the code graph, seeded with the identifiers "
                    "and paths QUERY names (plain PageRank without a query), and print each file's top symbols "
                    "with line and signature, within a token budget.")
    repo_map.add_argument("repo", metavar="REPO", help="an indexed repository name")
    repo_map.add_argument("--query", default="", metavar="Q", help="what the map is for (seeds the ranking)")
    repo_map.add_argument("--tokens", type=int, default=None, metavar="N",
                          help="token budget (default repo_map.default_tokens)")
    repo_map.add_argument("--json", action="store_true", help="print JSON")
    add_common(repo_map)
    repo_map.set_defaults(handler=run_map)

    weights = sub.add_parser(
        "weights", help="strategy weights learned from /v1/feedback: show, learn (A/B-gated) or reset",
        description="Show each repository's feedback-learned strategy weights (count, confidence, multipliers, "
                    "the profile in use and the A/B verdict); --learn replays the feedback, learns on part of it "
                    "and A/B-tests on the rest; --reset deletes the learned weights (back to the defaults).")
    weights.add_argument("--repo", action="append", default=[], metavar="R", help="repository (default: all indexed)")
    action = weights.add_mutually_exclusive_group()
    action.add_argument("--learn", action="store_true", help="learn from the feedback and run the A/B gate")
    action.add_argument("--reset", action="store_true", help="forget the learned weights")
    weights.add_argument("--feedback-dir", metavar="DIR", help="feedback records (default serve.feedback_dir)")
    weights.add_argument("--json", action="store_true", help="print JSON")
    add_common(weights)
    weights.set_defaults(handler=run_weights)


def run_map(args: argparse.Namespace) -> int:
    from serving.planning.repo_map import RepoMapService

    answer = RepoMapService(config_from_args(args)).run(args.repo, args.query, args.tokens)
    if args.json:
        print_json(answer)
        return 0
    seeds = ", ".join(f"{name} -> {len(paths)} file(s)" for name, paths in answer["seeds"].items()) or "none"
    print(f"# {answer['repo']} @ {answer['snapshot']}: {len(answer['files'])} of {answer['total_files']} files, "
          f"{answer['tokens']}/{answer['budget']} tokens, {answer['took_ms']:.0f} ms; seeds: {seeds}")
    print_stale(answer["freshness"])
    print(answer["text"])
    return 0


def run_weights(args: argparse.Namespace) -> int:
    from semantica.snapshot import SnapshotSet
    from serving.planning.feedback_weights import AbGate, WeightsStore, read_feedback, replay_samples

    config = config_from_args(args)
    store = WeightsStore(config)
    repos = args.repo or SnapshotSet(config).repos()
    if not repos:
        raise CliError("no repository is indexed yet: run `semantica index --repo PATH` first")
    out = []
    for repo in repos:
        if args.reset:
            out.append({"repo": repo, "reset": store.reset(repo), "file": str(store.path(repo))})
            continue
        if args.learn:
            from serving.pipeline import SearchPipeline

            samples = read_feedback(args.feedback_dir or config.serve.feedback_dir, repo)
            if not samples:
                out.append({"repo": repo, "learned": False, "why": "no feedback about this repository"})
                continue
            replayed, skipped = replay_samples(SearchPipeline(config), samples)
            store.write(AbGate(config).run(repo, replayed, skipped))
        out.append(store.describe(repo))
    if args.json:
        print_json(out)
        return 0
    for entry in out:
        if "reset" in entry:
            print(f"{entry['repo']}: {'learned weights removed' if entry['reset'] else 'nothing learned'}; "
                  "searches use the conf profiles")
            continue
        if "intents" not in entry:
            print(f"{entry['repo']}: {entry['why']}")
            continue
        ab = entry["ab"]
        print(f"{entry['repo']}: using {entry['using']}; A/B {ab.get('verdict')}"
              + (f" (MRR default {ab['mrr_default']} vs learned {ab['mrr_learned']} on {ab['holdout']} held-back, "
                 f"{ab['train']} learned from, {ab['skipped']} skipped): {ab['why']}" if "holdout" in ab else ""))
        for intent, row in entry["intents"].items():
            mult = " ".join(f"{s}x{m:g}" for s, m in row["multipliers"].items())
            print(f"  {intent:<9} n={row['count']:<4} confidence {row['confidence']:.2f}  {mult}")
    return 0
