"""Shaping a search answer: each hit's view and explanation, the history voters, the context dict and the
`degraded` entries (what the pipeline returns, kept apart from the orchestration that computes it)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from semantica.api import HitView
from semantica.errors import public_message
from semantica.hits import Hit
from semantica.schema import Chunk
from semantica.snapshot import Snapshot
from serving.core.context import Context

if TYPE_CHECKING:  # a type only: core/ imports no other room at run time
    from serving.knowledge.inject import InjectedKnowledge

log = logging.getLogger("serving.pipeline")  # the pipeline's logger: a degraded stage logs where it always did


def file_lines(snapshots: list[Snapshot]) -> Callable[[str, str], list[str]]:
    """A reader of a file's lines by (repo, path) over the snapshots of one answer."""
    by_repo = {s.repo: s for s in snapshots}

    def lines(repo: str, path: str) -> list[str]:
        snapshot = by_repo.get(repo)
        return snapshot.file_lines(path) if snapshot else []

    return lines

SCORE_FIELDS = {"late_score": "late_interaction", "cross_score": "cross_encoder"}
"""The hit view's named score fields, from the reranker scores they have always shown (`Hit.scores`)."""


def hit_view(rank: int, hit: Hit, chunk: Chunk, explain: bool) -> HitView:
    """One hit as the client sees it: where it is, its scores, and (with `explain`) why it ranks there."""
    return HitView(
        rank=rank, chunk_id=hit.chunk_id, repo=chunk.repo, path=chunk.path, start_line=chunk.start_line,
        end_line=chunk.end_line, symbol=chunk.symbol, kind=chunk.kind, score=round(hit.score, 6),
        fused_score=round(hit.fused_score, 6), ranks=dict(hit.ranks),
        citation=f"{chunk.path}:{chunk.start_line}-{chunk.end_line}", content=chunk.content,
        **{field_name: hit.scores.get(stage) for field_name, stage in SCORE_FIELDS.items()}, scores=dict(hit.scores),
        features=list(hit.features) if explain else None, explanation=hit.explanation if explain else None,
    )


def attach_voters(files: list[dict[str, Any]], voters: dict[str, list[Any]]) -> None:
    """Files that past commits voted for carry them: `history: [{sha, subject, date, similarity}]`."""
    for item in files:
        found = voters.get(f"{item['repo']}\x00{item['path']}")
        if found:
            item["history"] = [v.to_dict() for v in found]


def explain_history(view: HitView, voters: dict[str, list[Any]]) -> None:
    """A hit whose file past commits voted for says which (sha, subject, date)."""
    found = voters.get(f"{view.repo}\x00{view.path}")
    if found:
        said = "; ".join(f"{v.sha[:10]} {v.subject!r} ({v.date})" for v in found)
        view.explanation = f"{view.explanation or ''} history: voted by past commits {said}".strip()


def degraded_entry(stage: str, exc: BaseException) -> dict[str, str]:
    """A `degraded` entry: a short, path-free message for the client; the full one goes to the log."""
    log.warning("stage %s failed; answering without it", stage, exc_info=exc)
    return {"stage": stage, "error": public_message(exc)}


def interleave(*sources: list[str]) -> list[str]:
    """Seeds alternate between their sources (symbol, lexical) so each is represented."""
    out: list[str] = []
    for rank in range(max((len(s) for s in sources), default=0)):
        out.extend(s[rank] for s in sources if rank < len(s))
    return list(dict.fromkeys(out))


def context_dict(context: Context, knowledge: InjectedKnowledge) -> dict[str, Any]:
    """The code blocks, after the knowledge entries (first in `text`, listed in `knowledge`)."""
    text = "\n\n".join(t for t in (knowledge.text, context.render()) if t)
    return {"blocks": [asdict(b) for b in context.blocks], "tokens_used": context.tokens_used + knowledge.tokens,
            "budget": context.budget + knowledge.tokens, "truncated": context.truncated, "text": text,
            "knowledge": knowledge.to_list()}
