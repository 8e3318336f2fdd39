"""Held-out retrieval for trained encoders: each held-out repository's mined queries against its own documents.

The adoption measure of `semantica train-encoder` under leave-repositories-out: train with
`train_encoder.holdout_repos`, then rank, per held-out repository and pair kind, every query's positives among all
documents mined for that repository and kind (the commit pairs' changed functions, the docstring pairs' functions
and their BM25 negatives), once per model. Reports MRR@k, Acc@1 and Acc@k per repository and their mean, so
MiniLM and a fine-tuned checkpoint are compared on the same pools. Runs where training runs (CUDA with bf16
autocast when torch sees a GPU), and reads pairs with pyarrow alone.

    python -m lab.train.encoder_eval --pairs PAIRS --repo encode/httpx --repo Textualize/rich \
        --model minilm= --model tuned=OUT --out eval.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from jobs.train.encoder import embed_batch
from jobs.train.pair_parts import read_pair_rows
from semantica.config import TrainEncoderConfig, load_train_config
from semantica.runtime.encoder import FastTokenizer, choose_device, resolve_model_path

EVAL_COLUMNS = ("repo", "kind", "query", "positive_documents", "negative_documents")
LONGEST_QUERY = 1_000_000  # tokens: counting a query's length cuts nothing

QUERY_POOLINGS = ("max", "mean")  # how a long query's window cosines join


@dataclass(frozen=True)
class RetrievalTask:
    """One repository and pair kind: queries, the document pool, and each query's relevant pool indices."""

    repo: str
    kind: str
    queries: list[str]
    documents: list[str]
    relevant: list[frozenset[int]]


@dataclass(frozen=True)
class RetrievalScore:
    """One model on one task."""

    repo: str
    kind: str
    queries: int
    documents: int
    mrr: float
    acc_at_1: float
    acc_at_k: float


def build_tasks(pairs_dir: str | Path, repos: Sequence[str], kinds: Sequence[str]) -> list[RetrievalTask]:
    """A task per (repository, kind) with at least one query; documents de-duplicated by text."""
    wanted = set(repos)
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in read_pair_rows(pairs_dir, EVAL_COLUMNS):
        if row["repo"] in wanted and row["kind"] in kinds and row["query"].strip() and row["positive_documents"]:
            grouped.setdefault((row["repo"], row["kind"]), []).append(row)
    missing = sorted(wanted - {repo for repo, _ in grouped})
    if missing:
        raise ValueError(f"no {'/'.join(kinds)} pairs for: {', '.join(missing)}")
    tasks = []
    for (repo, kind), rows in sorted(grouped.items()):
        index: dict[str, int] = {}
        for row in rows:
            for text in list(row["positive_documents"]) + list(row["negative_documents"] or []):
                index.setdefault(text, len(index))
        tasks.append(RetrievalTask(repo, kind, [r["query"] for r in rows], list(index),
                                   [frozenset(index[t] for t in r["positive_documents"]) for r in rows]))
    return tasks


@dataclass(frozen=True)
class QueryReading:
    """How a query is read: its first window only, or up to `windows` windows joined by `pooling` (max | mean)."""

    windows: int = 1
    pooling: str = "max"

    @classmethod
    def parse(cls, text: str) -> QueryReading:
        """`N` or `N:POOLING` (`4:mean`)."""
        windows, _, pooling = text.partition(":")
        reading = cls(int(windows), pooling or "max")
        if reading.windows < 1 or reading.pooling not in QUERY_POOLINGS:
            raise ValueError(f"a query reading is N>=1 or N:POOLING with POOLING one of {', '.join(QUERY_POOLINGS)}")
        return reading

    @property
    def label(self) -> str:
        return f"{self.windows}:{self.pooling}"


def long_queries(task: RetrievalTask, tokenizer: FastTokenizer, min_tokens: int) -> RetrievalTask:
    """The task's queries longer than `min_tokens` tokens (special tokens counted), against the same pool: where
    reading more than the first window can change anything."""
    lengths = [len(ids) for ids, _ in tokenizer.encode(task.queries, LONGEST_QUERY)]
    keep = [n for n, length in enumerate(lengths) if length > min_tokens]
    return RetrievalTask(task.repo, task.kind, [task.queries[n] for n in keep], task.documents,
                         [task.relevant[n] for n in keep])


class PooledEncoder:
    """A checkpoint's mean-pooled, L2-normalised vectors, as `semantica.runtime.encoder` serves and the trainer trains them."""

    def __init__(self, model_path: str, settings: TrainEncoderConfig, batch_size: int) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.path = resolve_model_path(model_path)
        self.device = choose_device(settings.device)
        self.settings, self.batch_size = settings, batch_size
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.path))
        self.model = AutoModel.from_pretrained(str(self.path), dtype=torch.float32).to(self.device).eval()
        self.fast_tokenizer = FastTokenizer(self.path)  # the query windows, cut as the dense channel cuts them

    def encode(self, texts: Sequence[str], max_length: int) -> Any:
        import torch

        with torch.no_grad():
            return torch.cat([embed_batch(self.model, self.tokenizer, self.device,
                                          texts[start: start + self.batch_size], max_length)
                              for start in range(0, len(texts), self.batch_size)])

    def similarities(self, queries: Sequence[str], documents: Any, reading: QueryReading) -> Any:
        """(queries, documents) cosines: each query read as one window of `query_max_length` tokens, or as up to
        `reading.windows` such windows whose cosines join by `reading.pooling` (the study behind the dropped
        `localizer.dense_query_windows`, lab/README.md)."""
        import torch

        length = self.settings.query_max_length
        if reading.windows <= 1:
            return self.encode(queries, length) @ documents.T
        windows = [self.fast_tokenizer.windows(query, length, reading.windows) for query in queries]
        owner = torch.tensor([n for n, texts in enumerate(windows) for _ in texts], device=documents.device)
        per_window = self.encode([text for texts in windows for text in texts], length) @ documents.T
        pooled = torch.zeros(len(queries), documents.shape[0], dtype=per_window.dtype, device=documents.device)
        return pooled.scatter_reduce(0, owner[:, None].expand_as(per_window), per_window,
                                     reduce="amax" if reading.pooling == "max" else "mean", include_self=False)

    def score(self, task: RetrievalTask, k: int) -> RetrievalScore:
        """Rank the pool for every query; reciprocal rank of the first relevant document within k, else 0."""
        return self.score_readings(task, k, [QueryReading()])[0]

    def score_readings(self, task: RetrievalTask, k: int, readings: Sequence[QueryReading]) -> list[RetrievalScore]:
        """`score` once per way of reading the queries, the documents encoded once."""
        documents = self.encode(task.documents, self.settings.max_length)
        return [ranked(task, self.similarities(task.queries, documents, reading), k) for reading in readings]


def ranked(task: RetrievalTask, similarities: Any, k: int) -> RetrievalScore:
    """The task's scores from its (queries, documents) similarities."""
    top = similarities.topk(min(k, len(task.documents)), dim=1).indices.tolist()
    ranks = [next((n for n, doc in enumerate(row) if doc in relevant), None)
             for row, relevant in zip(top, task.relevant)]
    count = len(ranks)
    return RetrievalScore(task.repo, task.kind, count, len(task.documents),
                          sum(1.0 / (r + 1) for r in ranks if r is not None) / count,
                          sum(r == 0 for r in ranks) / count, sum(r is not None for r in ranks) / count)


def summarise(scores: Sequence[RetrievalScore]) -> dict[str, dict[str, float]]:
    """Per kind, the unweighted mean over repositories (each repository counts once)."""
    out: dict[str, dict[str, float]] = {}
    for kind in sorted({s.kind for s in scores}):
        rows = [s for s in scores if s.kind == kind]
        out[kind] = {name: round(100 * sum(getattr(s, name) for s in rows) / len(rows), 2)
                     for name in ("mrr", "acc_at_1", "acc_at_k")} | {"repos": len(rows)}
    return out


def mean_mrr(report_path: str | Path, repos: str, model: str = "tuned", kind: str = "commit") -> float:
    """A model's MRR@k over the comma-separated repositories, unweighted (the device script's choice)."""
    wanted = set(repos.split(","))
    report = json.loads(Path(report_path).read_text())
    scores = [s["mrr"] for s in report["models"][model]["per_repo"] if s["repo"] in wanted and s["kind"] == kind]
    if not scores:
        raise ValueError(f"no {kind} scores for {repos} in {report_path}")
    return sum(scores) / len(scores)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", required=True, help="mine-pairs output directory")
    parser.add_argument("--repo", action="append", required=True, help="held-out repository (repeatable)")
    parser.add_argument("--model", action="append", required=True, metavar="NAME=PATH",
                        help="a checkpoint to measure; an empty PATH is the configured MiniLM (repeatable)")
    parser.add_argument("--kind", action="append", default=[], help="pair kinds (default: train_encoder.kinds)")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--out", required=True)
    parser.add_argument("--query-reading", action="append", default=[], metavar="N[:POOLING]",
                        help="read each query as up to N windows of query_max_length tokens joined by POOLING "
                             f"({', '.join(QUERY_POOLINGS)}; default 1, the first window); repeatable: the "
                             "documents are encoded once, each reading reported as NAME@N:POOLING")
    parser.add_argument("--min-query-tokens", type=int, default=0,
                        help="only queries longer than this many tokens (the pool stays whole)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE")
    args = parser.parse_args(argv)
    settings = load_train_config(None, args.set).train_encoder
    try:
        readings = [QueryReading.parse(text) for text in args.query_reading] or [QueryReading()]
    except ValueError as exc:
        parser.error(str(exc))
    tasks = build_tasks(args.pairs, args.repo, args.kind or settings.kinds)
    if args.min_query_tokens:  # the first model's tokenizer counts, so every model ranks the same queries
        counter = FastTokenizer(resolve_model_path(args.model[0].partition("=")[2]))
        tasks = [task for task in (long_queries(task, counter, args.min_query_tokens) for task in tasks) if task.queries]
    report: dict[str, Any] = {"pairs": args.pairs, "k": args.k, "repos": args.repo,
                              "query_max_length": settings.query_max_length, "query_readings": [r.label for r in readings],
                              "min_query_tokens": args.min_query_tokens, "models": {}}
    for spec in args.model:
        name, _, path = spec.partition("=")
        encoder = PooledEncoder(path, settings, args.batch_size)
        by_task = [encoder.score_readings(task, args.k, readings) for task in tasks]
        for n, reading in enumerate(readings):
            scores = [task_scores[n] for task_scores in by_task]
            key = name if len(readings) == 1 else f"{name}@{reading.label}"
            report["models"][key] = {"path": str(encoder.path), "mean": summarise(scores),
                                     "per_repo": [asdict(s) for s in scores]}
            print(key, json.dumps(report["models"][key]["mean"]), file=sys.stderr)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")  # after each model: a cut run keeps what it finished
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
