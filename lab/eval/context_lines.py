"""Line-level context coverage: how many of the gold patch's lines the cited context shows, per token budget.

Gold lines of an instance are the base-commit lines that its fixing patch removes or modifies (the `-` side
of each hunk; a pure insertion counts the line it anchors on). The patch is the instance's `patch` field, or,
when the split has none (ours: swebench_lite_dev.jsonl stores only gold files and functions), the upstream
pull request found in the mirror (`Merge pull request #N` -> diff from the merge base to its second parent;
a squash commit `... (#N)` -> its own diff), restricted to the gold files. Each hunk is placed on the base
file by matching its old-side lines (the PR may start from a later commit than `base_commit`); a hunk that
does not match is dropped and counted.

Our context is a replay: the stored retriever lists (`semantica mine swebench`) fused by the pipeline's
`Fusion`, the chunks they name rebuilt from git objects at the base commit with the project's own parser
(no embedding), the top `query.default_k` hits packed by `ContextBuilder` at each budget. The replay has no
reranker (late interaction, cross-encoder), so its hit order is the fused order.

    python -m lab.eval.context_lines --instances swebench_lite_dev.jsonl --mined lab/results/ltr/swebench \\
        --repo-filter psf/requests pallets/flask --out lab/results/context/dev.json
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from jobs.eval.instances import Instance, find_repo, load_instances, mirrors_dir
from jobs.eval.mine import LISTS_DIR, part_name
from pipelines.discover import RepoSource
from pipelines.parse import FileParser
from semantica.config import Config, load_config
from semantica.hits import ChunkMeta
from semantica.schema import Chunk, FileError
from serving.core.context import Context, ContextBuilder, localizer_first_hits

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")
BUDGETS = (2000, 4000, 8000)


@dataclass
class Hunk:
    """One hunk's old side: its lines (context and removed) and which of them are gold."""

    start: int  # 1-based line of the first old-side line, as the patch states it
    old: list[str] = field(default_factory=list)
    gold: list[int] = field(default_factory=list)  # offsets into `old`


def parse_patch(patch: str) -> dict[str, list[Hunk]]:
    """Hunks per changed file (the `a/` side) of a unified diff."""
    hunks: dict[str, list[Hunk]] = {}
    path, hunk = None, None
    for line in patch.splitlines():
        if line.startswith("--- "):
            name = line[4:].split("\t")[0]
            path, hunk = (name[2:] if name.startswith("a/") else None), None
        elif line.startswith("+++ "):
            continue
        elif (match := HUNK.match(line)) and path is not None:
            hunk = Hunk(int(match.group(1)))
            hunks.setdefault(path, []).append(hunk)
        elif hunk is None:
            continue
        elif line.startswith("-"):
            hunk.old.append(line[1:])
            hunk.gold.append(len(hunk.old) - 1)
        elif line.startswith("+"):
            hunk.gold.append(max(len(hunk.old) - 1, 0))  # an insertion anchors on the line before it
        elif line.startswith(" ") or line == "":
            hunk.old.append(line[1:])
    for file_hunks in hunks.values():
        for h in file_hunks:
            h.gold = sorted({g for g in h.gold if 0 <= g < max(len(h.old), 1)})
    return hunks


def place(hunk: Hunk, lines: Sequence[str]) -> int | None:
    """The 1-based line where the hunk's old side sits in `lines`: its stated start if it matches there,
    else the nearest match; None when its old lines are nowhere in the file."""
    size = len(hunk.old)
    if size == 0:
        return hunk.start if 1 <= hunk.start <= len(lines) else None
    starts = [s for s in range(1, len(lines) - size + 2) if list(lines[s - 1: s - 1 + size]) == hunk.old]
    return min(starts, key=lambda s: abs(s - hunk.start)) if starts else None


def gold_lines(patch: str, files: dict[str, list[str]]) -> tuple[dict[str, set[int]], int]:
    """Gold line numbers per path at the base (`files`: path -> its lines), and the hunks that did not place."""
    gold: dict[str, set[int]] = {}
    unplaced = 0
    for path, hunks in parse_patch(patch).items():
        lines = files.get(path)
        if lines is None:
            unplaced += len(hunks)
            continue
        for hunk in hunks:
            at = place(hunk, lines)
            if at is None:
                unplaced += 1
                continue
            gold.setdefault(path, set()).update(at + offset for offset in hunk.gold)
    return gold, unplaced


def covered(gold: dict[str, set[int]], context: Context) -> tuple[float, float]:
    """(share of gold lines inside the context's blocks, share of gold files with any block)."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for block in context.blocks:
        spans.setdefault(block.path, []).append((block.start_line, block.end_line))
    total = sum(len(v) for v in gold.values())
    inside = sum(1 for path, lines in gold.items() for n in lines
                 if any(lo <= n <= hi for lo, hi in spans.get(path, [])))
    files = sum(1 for path in gold if path in spans)
    return (inside / total if total else 0.0, files / len(gold) if gold else 0.0)


def git(git_dir: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True,
                          check=True).stdout


def upstream_patch(git_dir: Path, inst: Instance) -> str | None:
    """The fixing pull request's diff on the gold files, from the mirror's history (see the module docstring)."""
    number = inst.instance_id.rsplit("-", 1)[1]
    log = git(git_dir, "log", "--all", "--format=%H %P%x00%s", "-E",
              f"--grep=(pull request #{number}\\b|\\(#{number}\\)$)")
    for row in log.splitlines():
        shas, _, subject = row.partition("\x00")
        sha, *parents = shas.split()
        if subject.startswith("Revert") or "backport" in subject.lower():
            continue
        if len(parents) == 2 and (subject.startswith(f"Merge pull request #{number} ")
                                  or subject.endswith(f"(#{number})")):
            base = git(git_dir, "merge-base", parents[0], parents[1]).strip()
            return git(git_dir, "diff", base, parents[1], "--", *inst.gold_files)
        if subject.endswith(f"(#{number})") and len(parents) == 1:
            return git(git_dir, "diff", parents[0], sha, "--", *inst.gold_files)
    return None


class ContextReplay:
    """The context the pipeline would build for an instance, from its stored lists and git objects."""

    def __init__(self, config: Config, mined: Path, repos_dir: Path) -> None:
        self.config = config
        self.lists_dir = mined / LISTS_DIR
        self.repos_dir = repos_dir
        self.parser = FileParser(config.chunk)
        from jobs.eval.replay import LocalizationReplay  # the pipeline's localization tail, for the functions

        self.localization = LocalizationReplay(config, mined, repos_dir)
        self.fusion = self.localization.stages.fusion
        self._parsed: dict[tuple[str, str], list[Chunk]] = {}  # (path, blob sha) -> chunks: blobs repeat

    def files(self, inst: Instance, paths: set[str]) -> tuple[dict[str, list[str]], dict[str, Chunk]]:
        """Lines and chunks of `paths` at the base commit (each blob parsed once)."""
        source = RepoSource(str(find_repo(self.repos_dir, inst.repo)), inst.base_commit, self.config.discover)
        entries, _ = source.entries()
        wanted = [e for e in entries if e.path in paths]
        lines: dict[str, list[str]] = {}
        chunks: dict[str, Chunk] = {}
        for item in source.read(wanted):
            if isinstance(item, FileError):
                continue
            lines[item.path] = item.text.splitlines()
            key = (item.path, item.blob_sha)
            if key not in self._parsed:
                self._parsed[key] = self.parser.parse(inst.repo, item).chunks
            chunks.update((c.chunk_id, c) for c in self._parsed[key])
        return lines, chunks

    def contexts(self, inst: Instance, gold_paths: set[str], budgets: Sequence[int], localizer_first: bool,
                 k: int) -> tuple[dict[str, list[str]], list[Context], float]:
        """Base lines of the listed and gold files, the context per budget, and the share of listed chunks
        that the rebuilt chunks reproduce."""
        frame = pl.read_parquet(self.lists_dir / part_name(inst.instance_id)).sort(["strategy", "rank"])
        lists: dict[Any, list[tuple[str, int]]] = {}
        for strategy, rank, chunk_id in frame.select("strategy", "rank", "chunk_id").iter_rows():
            lists.setdefault(strategy, []).append((chunk_id, rank))
        lines, chunks = self.files(inst, set(frame["path"].to_list()) | gold_paths)
        listed = {cid for ranked in lists.values() for cid, _ in ranked}
        found = len(listed & chunks.keys()) / len(listed) if listed else 0.0
        intent = self.localization.intent.classify(inst.problem_statement)
        meta = {cid: ChunkMeta.from_chunk(chunks[cid]) for cid in listed if cid in chunks}
        hits = [h for h in self.fusion.fuse(lists, intent, meta, k) if h.chunk_id in chunks][:k]
        if localizer_first:
            prediction = self.localization.predict(inst)
            functions = [{"function": f} for f in (prediction.functions if prediction else [])]
            hits = localizer_first_hits(hits, functions, chunks, self.config.context.localizer_functions)
        builder = ContextBuilder(self.config.context)
        reader = lambda _repo, path: lines.get(path, [])  # noqa: E731
        return lines, [builder.build(hits, chunks, reader, budget) for budget in budgets], found


def mean(values: Sequence[float]) -> float:
    return round(100 * sum(values) / len(values), 1) if values else 0.0


def variants(config: Config) -> dict[str, tuple[bool, int]]:
    """Name -> (localizer_first, request k): the default k, and the localization depth (more hits to pack)."""
    default, deep = config.query.default_k, config.query.file_rank_depth
    return {"hits": (False, default), "first": (True, default), f"hits_k{deep}": (False, deep),
            f"first_k{deep}": (True, deep)}


def run(instances: Sequence[Instance], config: Config, mined: Path, repos_dir: Path,
        budgets: Sequence[int] = BUDGETS, log=print) -> dict[str, Any]:  # noqa: ANN001
    """Per instance and summarised: line and file coverage per budget, switch off and on."""
    replay = ContextReplay(config, mined, repos_dir)
    rows: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    for inst in instances:
        if not (replay.lists_dir / part_name(inst.instance_id)).is_file():
            skipped[inst.instance_id] = "no mined lists"
            continue
        git_dir = find_repo(repos_dir, inst.repo)
        patch = getattr(inst, "patch", None) or upstream_patch(Path(git_dir), inst)
        if not patch:
            skipped[inst.instance_id] = "no patch (field or upstream pull request)"
            continue
        row: dict[str, Any] = {"instance_id": inst.instance_id, "repo": inst.repo}
        for variant, (switch, k) in variants(config).items():
            lines, contexts, found = replay.contexts(inst, set(inst.gold_files), budgets, switch, k)
            gold, unplaced = gold_lines(patch, lines)
            if not gold:
                break
            row.update(gold_lines=sum(len(v) for v in gold.values()), unplaced_hunks=unplaced,
                       chunks_rebuilt=round(found, 4))
            for budget, context in zip(budgets, contexts):
                line_cov, file_cov = covered(gold, context)
                row[f"{variant}_{budget}"] = {"lines": round(line_cov, 4), "files": round(file_cov, 4),
                                              "tokens": context.tokens_used}
        if "gold_lines" not in row:
            skipped[inst.instance_id] = "no hunk placed on the base files"
            continue
        rows.append(row)
        log(f"{inst.instance_id}: gold {row['gold_lines']} lines, 4k lines "
            f"{row['hits_4000']['lines']:.2f} -> {row['first_4000']['lines']:.2f}")
    names = list(variants(config))
    return {"instances": len(rows), "skipped": skipped, "summary": summarise(rows, budgets, names), "rows": rows}


def summarise(rows: list[dict[str, Any]], budgets: Sequence[int], names: Sequence[str]) -> dict[str, Any]:
    """Mean line and file coverage (percent) per budget and variant, overall and per repository."""
    groups = {"all": rows} | {repo: [r for r in rows if r["repo"] == repo] for repo in sorted({r["repo"] for r in rows})}
    return {name: {"n": len(group)} | {f"{variant}_{budget}": {
        "lines": mean([r[f"{variant}_{budget}"]["lines"] for r in group]),
        "files": mean([r[f"{variant}_{budget}"]["files"] for r in group]),
        "tokens": round(sum(r[f"{variant}_{budget}"]["tokens"] for r in group) / max(len(group), 1))}
        for variant in names for budget in budgets} for name, group in groups.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instances", required=True)
    parser.add_argument("--mined", required=True, help="a `semantica mine swebench` directory")
    parser.add_argument("--repos-dir", default=None, help="bare clones (default $SEMANTICA_MIRRORS)")
    parser.add_argument("--repo-filter", nargs="*", default=None)
    parser.add_argument("--config", default=None)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    try:
        repos = mirrors_dir(args.repos_dir)
        if repos is None:
            raise ValueError("pass --repos-dir or set SEMANTICA_MIRRORS")
        instances = [i for i in load_instances(args.instances) if not args.repo_filter or i.repo in args.repo_filter]
        result = run(instances, load_config(args.config), Path(args.mined), Path(repos))
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")
    print(json.dumps(result["summary"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
