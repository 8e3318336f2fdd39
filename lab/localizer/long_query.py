"""Query-side levers for long queries: does the localizer stage's file order gain when a long text (a pasted issue,
a long commit message) reaches its lexical lists (content, path, body, name BM25) in another form?

Each instance's snapshot and history are built once, as `lab.localizer.mswe_replay` builds them; every variant
then rebuilds the candidates with its own query terms (history votes keep the whole text) and the file model
ranks them. File metrics are reported per variant for the queries of at least `--long-chars` characters and the
shorter ones, overall and per repository, so a lever is chosen on the corpus by leave-one-repository-out.

    python -m lab.localizer.long_query --instances corpus_long_short.jsonl --repos-dir DIR --cache CACHE \
        --models models/localizer-history --out long_query.json
"""

from __future__ import annotations

import argparse
import json
import math
import re
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

from jobs.eval.instances import load_instances
from jobs.eval.metrics import Gold, Prediction, evaluate
from jobs.localizer.replay import LearnedReplay
from lab.localizer.mswe_replay import FILE_METRICS, LANGUAGE_GROUPS, replay_config
from semantica.stores.localizer.bm25 import top_scores
from semantica.stores.localizer.features import CandidateConfig, CandidateGenerator
from semantica.stores.localizer.query_signals import CODE_LIKE, QuerySignals
from semantica.stores.localizer.table import LocalizerTable
from semantica.stores.tokenizer import tokenize

FENCE = re.compile(r"```.*?(```|$)", re.S)
URL = re.compile(r"\b(?:https?|ftp)://\S+")
VERSION = re.compile(r"\bv?\d+(?:\.\d+)+(?:[-+][\w.]+)?\b")
CODE_WORD = re.compile(r"`[^`\n]+`|\b[\w$]+(?:(?:\.|::)[\w$]+)+\b|\b[\w/.-]+\.\w{1,5}\b")
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
LISTS = ("content", "path")
GROUPS = {**LANGUAGE_GROUPS, "tsx": "js/ts"}
CHOICE_DEPTH = 5  # the held-out choice reads file Acc@5, then MRR
Terms = Callable[[LocalizerTable, str], Counter]


def plain(_: LocalizerTable, text: str) -> Counter:
    return Counter(tokenize(text))


def deduplicated(_: LocalizerTable, text: str) -> Counter:
    return Counter(dict.fromkeys(tokenize(text), 1))


def sublinear(_: LocalizerTable, text: str) -> Counter:
    return Counter({t: 1.0 + math.log(n) for t, n in Counter(tokenize(text)).items()})


def without(*patterns: re.Pattern) -> Terms:
    def terms(_: LocalizerTable, text: str) -> Counter:
        for pattern in patterns:
            text = pattern.sub(" ", text)
        return Counter(tokenize(text))
    return terms


def code_weighted(weight: float) -> Terms:
    """Tokens of code-shaped words (backticked, dotted or `::` paths, file names, snake_case or camelCase) count
    `weight` times a prose word's."""
    def terms(_: LocalizerTable, text: str) -> Counter:
        out = Counter(tokenize(text))
        code = [m.group(0) for m in CODE_WORD.finditer(text)] + [w for w in IDENT.findall(text) if CODE_LIKE.search(w)]
        for token in tokenize(" ".join(code)):
            out[token] += weight - 1.0
        return out
    return terms


def dedup_code(snapshot: LocalizerTable, text: str, weight: float) -> Counter:
    """Each distinct term once, a code-shaped word's terms `weight` times."""
    prose, coded = plain(snapshot, text), code_weighted(weight)(snapshot, text)
    return Counter({t: weight if coded[t] > prose[t] else 1.0 for t in coded})


def idf_capped(most: int) -> Terms:
    """At most `most` distinct terms, the rarest in the snapshot's content field first."""
    def terms(snapshot: LocalizerTable, text: str) -> Counter:
        counts = Counter(tokenize(text))
        field = snapshot.fields["content"].weights
        df = np.diff(field.indptr)
        known = [t for t in counts if t in snapshot.vocab.ids and snapshot.vocab.ids[t] < len(df)]
        kept = sorted(known, key=lambda t: (df[snapshot.vocab.ids[t]], t))[:most]
        return Counter({t: counts[t] for t in kept})
    return terms


VARIANTS: dict[str, Terms] = {
    "plain": plain, "dedup": deduplicated, "sublinear": sublinear,
    "no_urls": without(URL), "no_versions": without(VERSION), "no_urls_versions": without(URL, VERSION),
    "no_fences": without(FENCE), "no_noise": without(FENCE, URL, VERSION),
    "code_x2": code_weighted(2.0), "code_x3": code_weighted(3.0), "idf_cap24": idf_capped(24), "idf_cap48": idf_capped(48),
    "dedup_code_x2": lambda s, t: dedup_code(s, t, 2.0), "dedup_code_x3": lambda s, t: dedup_code(s, t, 3.0),
}


def held_out_choice(ranks: dict[str, dict[str, list[int | None]]], repo_of: dict[str, str], ids: list[str],
                    baseline: str = "plain") -> dict:
    """Leave one repository out: each repository's queries ranked by the variant with the best mean file
    (Acc@5, MRR) over the other repositories' (ties go to `baseline`); their held-out means and the choices."""
    def mean(variant: str, chosen: list[str]) -> tuple[float, float]:
        pairs = [file_score(ranks[variant][i]) for i in chosen]
        return (sum(a for a, _ in pairs) / len(pairs), sum(r for _, r in pairs) / len(pairs)) if pairs else (0.0, 0.0)

    held: list[tuple[float, float]] = []
    choices: dict[str, str] = {}
    for repo in sorted({repo_of[i] for i in ids}):
        rest = [i for i in ids if repo_of[i] != repo]
        choices[repo] = max(ranks, key=lambda v: (mean(v, rest), v == baseline))
        held += [file_score(ranks[choices[repo]][i]) for i in ids if repo_of[i] == repo]
    return {"choices": choices, "Acc@5": sum(a for a, _ in held) / max(1, len(held)),
            "MRR": sum(r for _, r in held) / max(1, len(held)), "baseline": dict(zip(("Acc@5", "MRR"), mean(baseline, ids)))}


def against_baseline(ranks: dict[str, dict[str, list[int | None]]], repo_of: dict[str, str], ids: list[str],
                     baseline: str = "plain") -> dict:
    """Each variant's mean file Acc@5 and MRR over `ids` against the baseline's, and in how many repositories each
    goes up or down (a lever that wins should win in most of them, not in one)."""
    def mean(variant: str, chosen: list[str]) -> tuple[float, float]:
        pairs = [file_score(ranks[variant][i]) for i in chosen]
        return sum(a for a, _ in pairs) / len(pairs), sum(r for _, r in pairs) / len(pairs)

    repos = {repo: [i for i in ids if repo_of[i] == repo] for repo in sorted({repo_of[i] for i in ids})}
    out = {}
    for variant in ranks:
        row = {"all": dict(zip(("Acc@5", "MRR"), mean(variant, ids))), "repositories": len(repos)}
        for k, metric in enumerate(("Acc@5", "MRR")):
            gaps = [mean(variant, chosen)[k] - mean(baseline, chosen)[k] for chosen in repos.values()]
            row[metric] = {"up": sum(g > 0 for g in gaps), "down": sum(g < 0 for g in gaps)}
        out[variant] = row
    return out


def file_score(gold_ranks: list[int | None]) -> tuple[float, float]:
    """(Acc@5, reciprocal rank of the first gold file) of one query, as `jobs.eval.metrics` counts them."""
    found = sum(1 for r in gold_ranks if r is not None and r <= CHOICE_DEPTH)
    ranks = [r for r in gold_ranks if r is not None]
    return float(found == min(len(gold_ranks), CHOICE_DEPTH)), 1.0 / min(ranks) if ranks else 0.0


class VariantGenerator(CandidateGenerator):
    """The stage's candidate generator with the lexical lists' query terms from a variant."""

    def __init__(self, config: CandidateConfig, terms: Terms = plain) -> None:
        super().__init__(config)
        self.terms = terms

    def lists(self, snapshot: LocalizerTable, query: QuerySignals):  # noqa: ANN201 - as the base class
        c = self.config
        counts = self.terms(snapshot, query.text)
        known = [(snapshot.vocab.ids[t], w) for t, w in counts.items() if t in snapshot.vocab.ids and w > 0]
        ids = np.array([i for i, _ in known], dtype=np.int64)
        weights = np.array([w for _, w in known], dtype=np.float32)
        out = {name: [(snapshot.files[i].path, s) for i, s in snapshot.fields[name].search(ids, weights, c.file_list_depth)]
               for name in LISTS}
        body_scores = snapshot.fields["body"].scores(ids, weights)
        out["body"] = [(snapshot.functions[i].key, s) for i, s in top_scores(body_scores, c.function_list_depth)]
        out["name"] = [(snapshot.functions[i].key, s)
                       for i, s in snapshot.fields["name"].search(ids, weights, c.function_list_depth)]
        return out, body_scores


def gold_bucket(gold: Gold) -> str:
    n = len(gold.files)
    return "1" if n == 1 else "2-3" if n <= 3 else "4+"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", required=True)
    parser.add_argument("--repos-dir", required=True)
    parser.add_argument("--cache", required=True, help="paths.cache_dir (blobs and history, reused)")
    parser.add_argument("--models", default="models/localizer-history")
    parser.add_argument("--variant", action="append", default=[], help=f"one of {', '.join(VARIANTS)} (default all)")
    parser.add_argument("--long-chars", type=int, default=300)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    instances = load_instances(args.instances)
    replay = LearnedReplay(replay_config(args.models, args.cache, {i.language for i in instances}), Path(args.repos_dir))
    scorer = replay.localizer.file_scorer(True)
    names = ["plain", *(v for v in args.variant if v != "plain")] if args.variant else list(VARIANTS)
    generators = {name: VariantGenerator(replay.localizer.generator.config, VARIANTS[name]) for name in names}
    preds: dict[str, dict[str, Prediction]] = {name: {} for name in names}
    start = time.perf_counter()
    for n, inst in enumerate(instances, 1):
        try:
            git_dir, _, builder = replay._builder(inst)
            snapshot = builder.build(replay.texts(inst))
            signals = replay.history_at(git_dir, inst)
        except Exception as exc:  # noqa: BLE001 - one broken instance is reported, not fatal
            print(f"{inst.instance_id}: FAILED {type(exc).__name__}: {exc}", flush=True)
            continue
        for name, generator in generators.items():
            cands = generator.build(snapshot, inst.problem_statement, signals, file_scorer=scorer)
            ranked = replay.localizer.rank_candidates(cands, True)
            preds[name][inst.instance_id] = Prediction([k for k, _ in ranked.files], [])
        if n % 25 == 0:
            print(f"{n}/{len(instances)} ({time.perf_counter() - start:.0f} s)", flush=True)
    gold = {i.instance_id: Gold(i.repo, i.gold().files, []) for i in instances}
    length = {i.instance_id: len(i.problem_statement) for i in instances}
    language = {i.instance_id: GROUPS.get(i.language, i.language) for i in instances}
    slices = {"long": {i for i in gold if length[i] >= args.long_chars}, "short": {i for i in gold if length[i] < args.long_chars}}
    report: dict = {"instances": len(instances), "long_chars": args.long_chars, "variants": {}}
    for name in names:
        row = {}
        for slice_name, ids in slices.items():
            scores = evaluate({i: p for i, p in preds[name].items() if i in ids}, {i: gold[i] for i in ids},
                              FILE_METRICS, ())
            row[slice_name] = {"all": scores["overall"]["file"],
                               "by_repo": {r: s["file"] for r, s in scores["by_repo"].items()}}
        row["gold_ranks"] = {i: [p.files.index(f) + 1 if f in p.files else None for f in gold[i].files]
                             for i, p in preds[name].items()}
        for slice_name, ids in slices.items():  # multi-file commits are harder at any length
            for key, of in (("by_gold_files", lambda i: gold_bucket(gold[i])), ("by_language", language.get)):
                row[slice_name][key] = {
                    group: evaluate({i: preds[name][i] for i in ids if i in preds[name] and of(i) == group},
                                    {i: gold[i] for i in ids if of(i) == group}, FILE_METRICS, ())["overall"]["file"]
                    for group in sorted({of(i) for i in ids})}
        report["variants"][name] = row
        print(f"{name}: " + "  ".join(f"{s} " + "/".join(f"{100 * row[s]['all'][m]:.1f}" for m in FILE_METRICS)
                                      for s in slices), flush=True)
    ranks = {name: report["variants"][name]["gold_ranks"] for name in names}
    repo_of = {i: gold[i].repo for i in gold}
    report["held_out"] = {s: held_out_choice(ranks, repo_of, sorted(ids & set(ranks[names[0]]))) for s, ids in slices.items()}
    report["against_plain"] = against_baseline(ranks, repo_of, sorted(set(ranks[names[0]])))
    for name, row in report["against_plain"].items():
        print(f"{name}, every query: file Acc@5 {100 * row['all']['Acc@5']:.1f} (up in {row['Acc@5']['up']}, down in "
              f"{row['Acc@5']['down']} of {row['repositories']} repositories), MRR {100 * row['all']['MRR']:.1f} "
              f"(up {row['MRR']['up']}, down {row['MRR']['down']})", flush=True)
    for s, found in report["held_out"].items():
        print(f"held out, {s}: file Acc@5/MRR {100 * found['baseline']['Acc@5']:.1f}/{100 * found['baseline']['MRR']:.1f}"
              f" -> {100 * found['Acc@5']:.1f}/{100 * found['MRR']:.1f} ({Counter(found['choices'].values())})", flush=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
