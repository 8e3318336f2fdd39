"""The final order: score = fused + alpha * trust + beta * freshness + gamma * diversity (`final_order` reranker).

`fused` is the current score of each of the top `final_order.top_n` hits (after fusion and the rerankers
before this one) scaled to [0, 1] over them, so the weights mean the same whatever stage came before.
- trust: the value of the first `final_order.trust_rules` glob the path matches (pinned paths > 0;
  generated, vendored, deprecated < 0), else 0;
- freshness: 2 ** (-age / half-life) of the file's last commit before the snapshot's commit (`file_ages`);
- diversity: maximal marginal relevance: the hits are placed greedily, each scored with minus its highest
  cosine similarity (chunk embeddings from the FAISS shards) to a hit already placed.
A weight of 0 turns its term off; all three at 0 and the stage does not run. With `explain`, each hit's
explanation lists the terms. `FileOrder` applies trust and freshness to the localized file list as well.
"""

from __future__ import annotations

import fnmatch
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from semantica.config import FinalOrderConfig
from semantica.hits import Hit
from semantica.ondisk.source import GitError
from semantica.schema import Chunk
from semantica.snapshot import Snapshot
from semantica.stores.token_vectors import single_thread_blas
from serving.planning.file_ages import FileAges, freshness
from serving.rerankers.base import RerankInput
from serving.rerankers.registry import register_reranker

log = logging.getLogger(__name__)


class TrustRules:
    """Path globs -> trust; the first rule that matches wins (conf order)."""

    def __init__(self, rules: dict[str, float]) -> None:
        self.rules = list(rules.items())

    def trust(self, path: str) -> tuple[float, str]:
        rooted = "/" + path.lstrip("/")  # `*/vendor/*` also matches a top-level vendor/
        for glob, value in self.rules:
            if fnmatch.fnmatchcase(path, glob) or fnmatch.fnmatchcase(rooted, glob):
                return float(value), glob
        return 0.0, ""


class FileRecency:
    """Per-file recency score of a snapshot: how recently each file changed, for the final order (0 everywhere
    when its source cannot be read: a note says why). Not `semantica.ondisk.freshness.Freshness`, whether a snapshot is stale."""

    def __init__(self, config: FinalOrderConfig, cache_dir: str) -> None:
        self.config = config
        self.ages = FileAges(cache_dir, config.freshness_horizon_days, config.git_timeout_s)
        self.notes: dict[str, str] = {}

    def of(self, snapshot: Snapshot) -> Callable[[str], float]:
        source = snapshot.manifest.source or {}
        git_dir, commit = str(source.get("path", "")), str(source.get("commit") or snapshot.manifest.commit)
        return self.of_git(git_dir, commit, snapshot.repo)

    def of_git(self, git_dir: str, commit: str, repo: str) -> Callable[[str], float]:
        try:
            if not git_dir:
                raise GitError("the snapshot records no source path")
            commit_time, times = self.ages.times(git_dir, commit, key=repo)
        except (GitError, OSError, ValueError) as exc:
            if repo not in self.notes:
                log.warning("final order: freshness is 0 for %s (%s)", repo, exc)
            self.notes[repo] = f"freshness off for {repo}: {exc}"
            return lambda _path: 0.0
        half_life = self.config.freshness_half_life_days
        return lambda path: freshness(commit_time, times.get(path), half_life)


class ChunkVectors:
    """Chunk embeddings read back from a snapshot's FAISS shards (exact for flat shards)."""

    def __init__(self) -> None:
        self._positions: dict[tuple[str, int], dict[int, int]] = {}
        self._lock = threading.Lock()

    def vectors(self, snapshot: Snapshot, chunk_ids: list[str]) -> np.ndarray | None:
        rows = [snapshot.chunk_row.get(c, -1) for c in chunk_ids]
        out: list[np.ndarray | None] = [None] * len(rows)
        for s, shard in enumerate(snapshot.vector_shards):
            key = (snapshot.snapshot_id, s)
            with self._lock:
                if key not in self._positions:
                    self._positions[key] = {int(r): p for p, r in enumerate(shard.rows)}
                    if hasattr(shard.index, "make_direct_map"):
                        shard.index.make_direct_map()
            positions = self._positions[key]
            for i, row in enumerate(rows):
                if out[i] is None and row in positions:
                    out[i] = np.asarray(shard.index.reconstruct(positions[row]), dtype=np.float32)
        if any(v is None for v in out):
            return None
        matrix = np.stack(out)  # type: ignore[arg-type]
        return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


def _token_sets_similarity(texts: list[str]) -> np.ndarray:
    """Jaccard similarity of token sets: diversity's fallback where no embedding can be read back."""
    sets = [set(t.split()) for t in texts]
    n = len(sets)
    sim = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            union = len(sets[i] | sets[j]) or 1
            sim[i, j] = sim[j, i] = len(sets[i] & sets[j]) / union
    return sim


def scaled(scores: list[float]) -> list[float]:
    """Min-max to [0, 1] (all equal -> 1)."""
    low, high = min(scores), max(scores)
    return [1.0 if high == low else (s - low) / (high - low) for s in scores]


@dataclass
class Terms:
    fused: float
    trust: float
    rule: str
    fresh: float
    similarity: float = 0.0


class FinalOrder:
    """Reorders hits by the final-order score (one instance per pipeline: caches per snapshot inside)."""

    def __init__(self, config: FinalOrderConfig, cache_dir: str) -> None:
        self.config = config
        self.trust = TrustRules(config.trust_rules)
        self.freshness = FileRecency(config, cache_dir)
        self.embeddings = ChunkVectors()

    @property
    def active(self) -> bool:
        return any(w != 0 for w in (self.config.alpha, self.config.beta, self.config.gamma))

    def order(self, hits: list[Hit], chunks: dict[str, Chunk], snapshot_of: Callable[[str], Snapshot],
              explain: bool = False) -> list[Hit]:
        c = self.config
        head, tail = hits[: c.top_n], hits[c.top_n:]
        if not head:
            return hits
        fresh_of: dict[str, Callable[[str], float]] = {}
        if c.beta:
            for repo in dict.fromkeys(chunks[h.chunk_id].repo for h in head):
                fresh_of[repo] = self.freshness.of(snapshot_of(repo))
        terms: list[Terms] = []
        for hit, fused in zip(head, scaled([h.score for h in head])):
            chunk = chunks[hit.chunk_id]
            trust, rule = self.trust.trust(chunk.path) if c.alpha else (0.0, "")
            fresh = fresh_of[chunk.repo](chunk.path) if c.beta else 0.0
            terms.append(Terms(fused, trust, rule, fresh))
        base = np.array([t.fused + c.alpha * t.trust + c.beta * t.fresh for t in terms])
        similarity = self._similarity(head, chunks, snapshot_of) if c.gamma else None
        placed: list[int] = []
        remaining = list(range(len(head)))
        max_sim = np.zeros(len(head))
        while remaining:
            scores = [base[i] - c.gamma * max_sim[i] for i in remaining]
            best = remaining[int(np.argmax(scores))]  # argmax takes the first: ties keep the previous order
            terms[best].similarity = float(max_sim[best])
            head[best].score = float(base[best] - c.gamma * max_sim[best])
            placed.append(best)
            remaining.remove(best)
            if similarity is not None:
                max_sim = np.maximum(max_sim, np.clip(similarity[best], 0.0, None))
        if explain:
            for i in placed:
                t = terms[i]
                rule = f" {t.rule!r}" if t.rule else ""
                head[i].explanation = (f"{head[i].explanation}; final order {head[i].score:.4f} = fused {t.fused:.3f}"
                                       f" + {c.alpha}*trust {t.trust:+.2f}{rule} + {c.beta}*freshness {t.fresh:.3f}"
                                       f" - {c.gamma}*similarity {t.similarity:.3f}").lstrip("; ")
        return [head[i] for i in placed] + tail

    def _similarity(self, hits: list[Hit], chunks: dict[str, Chunk],
                    snapshot_of: Callable[[str], Snapshot]) -> np.ndarray:
        ids = [h.chunk_id for h in hits]
        repos = {chunks[i].repo for i in ids}
        if len(repos) == 1:
            try:
                vectors = self.embeddings.vectors(snapshot_of(next(iter(repos))), ids)
                if vectors is not None:
                    with single_thread_blas():  # a 50x384 product: BLAS threads only cost on a busy machine
                        return vectors @ vectors.T
            except Exception as exc:  # an index kind that cannot give vectors back: token overlap instead
                log.info("final order: no embeddings read back (%s); diversity by token overlap", exc)
        return _token_sets_similarity([chunks[i].content for i in ids])

    def order_files(self, files: list[dict[str, Any]], fresh_of: Callable[[str, str], float]) -> list[dict[str, Any]]:
        """The localized files reordered by scaled score + alpha * trust + beta * freshness."""
        c = self.config
        if not files or not (c.alpha or c.beta):
            return files
        keyed = []
        for entry, fused in zip(files, scaled([float(f["score"]) for f in files])):
            trust = self.trust.trust(entry["path"])[0] if c.alpha else 0.0
            fresh = fresh_of(entry.get("repo", ""), entry["path"]) if c.beta else 0.0
            keyed.append((fused + c.alpha * trust + c.beta * fresh, entry))
        return [entry for _, entry in sorted(keyed, key=lambda kv: -kv[0])]


@register_reranker("final_order")
class FinalOrderStage:
    """Registry adapter: runs when a weight is non-zero; an optional stage (a failure keeps the order)."""

    name, optional, deployed = "final_order", True, False

    def __init__(self, pipeline: Any) -> None:
        self.pipeline = pipeline
        hooks = getattr(pipeline, "ranking_hooks", None)  # share its per-snapshot caches with the file order
        self.stage = hooks.final if hooks is not None else FinalOrder(pipeline.config.final_order,
                                                                      pipeline.config.paths.cache_dir)

    def warm_up(self) -> None:  # no model: what it reads is per snapshot, loaded on first use
        pass

    def wanted(self, given: RerankInput) -> bool:
        return self.stage.active

    def rerank(self, hits: list[Hit], given: RerankInput) -> list[Hit]:
        return self.stage.order(hits, given.chunks, self.pipeline.snapshots.get, given.request.explain)
