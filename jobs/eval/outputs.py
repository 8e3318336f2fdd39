"""Evaluation output files: prediction JSONL (repaired after a kill), TREC runs and qrels."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from jobs.eval.instances import EvalError, Instance
from jobs.eval.metrics import Prediction


@dataclass(frozen=True)
class OutputPaths:
    """Every file one run writes, derived from `--out`: `runs/pred.jsonl` -> `runs/pred.<ablation>.jsonl` ..."""

    out: Path

    @property
    def stem(self) -> Path:
        return self.out.with_suffix("") if self.out.suffix == ".jsonl" else self.out

    def _with(self, suffix: str) -> Path:
        return self.stem.with_name(self.stem.name + suffix)

    def predictions(self, ablation: str) -> Path:
        return self._with(f".{ablation}.jsonl")

    def trec(self, ablation: str, level: str) -> Path:
        return self._with(f".{ablation}.{level}.trec")

    def qrels(self, level: str) -> Path:
        return self._with(f".{level}.qrels")

    @property
    def metrics(self) -> Path:
        return self._with(".metrics.json")

    @property
    def timings(self) -> Path:
        return self._with(".timings.jsonl")


def read_jsonl(path: Path) -> list[dict]:
    """Complete, valid JSON lines of a file (a torn last line from a crash is ignored)."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def repair_jsonl(path: Path) -> list[dict]:
    """Keep only the valid lines (rewriting the file when a crash left a torn one) and return them."""
    rows = read_jsonl(path)
    if path.exists():
        text = path.read_text(encoding="utf-8")
        if (text and not text.endswith("\n")) or sum(1 for line in text.splitlines() if line.strip()) != len(rows):
            path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return rows


def load_predictions(path: str | os.PathLike[str]) -> dict[str, Prediction]:
    """`{"instance_id", "files", "functions"}` lines -> Prediction per id (the last line wins)."""
    file = Path(path)
    if not file.is_file():
        raise EvalError(f"prediction file {file} does not exist")
    preds: dict[str, Prediction] = {}
    for row in read_jsonl(file):
        if "instance_id" not in row:
            continue
        preds[row["instance_id"]] = Prediction(list(row.get("files") or []), list(row.get("functions") or []))
    return preds


def _trec_docid(item: str) -> str:
    return item.replace("%", "%25").replace(" ", "%20").replace("\t", "%09")


def write_trec_run(path: Path, rows: Iterable[dict], level: str, run_name: str) -> None:
    """`qid Q0 docid rank score run`, scores made strictly decreasing so trec_eval keeps our order."""
    key, score_key = ("files", "file_scores") if level == "files" else ("functions", "function_scores")
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            items = row.get(key) or []
            scores = row.get(score_key) or []
            previous = float("inf")
            for rank, item in enumerate(items, 1):
                score = float(scores[rank - 1]) if rank - 1 < len(scores) else 1.0 / rank
                score = min(score, previous - 1e-6) if previous != float("inf") else score
                previous = score
                handle.write(f"{row['instance_id']} Q0 {_trec_docid(item)} {rank} {score:.6f} {run_name}\n")


def write_qrels(path: Path, instances: Iterable[Instance], level: str) -> None:
    """`qid 0 docid 1` per gold item (functions with `.__init__` kept as in the gold)."""
    with path.open("w", encoding="utf-8") as handle:
        for inst in instances:
            for item in (inst.gold_files if level == "files" else inst.gold_functions):
                handle.write(f"{inst.instance_id} 0 {_trec_docid(item)} 1\n")
