"""ADRs and design docs found in an indexed repository become `candidate` entries (read from the snapshot).

A file matching `knowledge.candidate_globs` gives one candidate: its first heading as the title, its
"Decision" section (ADRs) or else its opening paragraphs as the text, scoped to the file itself and to the
backticked names in that text that resolve in the snapshot (`` `make_frobnicator` `` binds the symbol,
`` `src/app.py` `` the path), so a rename fails its re-verification and demotes it. Re-indexing an unchanged
file changes nothing; a changed file edits its candidate (a new version) and re-binds it.
"""

from __future__ import annotations

import fnmatch
import re

from semantica.snapshot import Snapshot
from serving.knowledge.entry import Kind, SourceKind, Status
from serving.knowledge.service import KnowledgeService
from serving.knowledge.verify import SnapshotIndex

_HEADING = re.compile(r"^(#{1,6})\s+(.*\S)\s*$")
_BACKTICKED = re.compile(r"`([^`\n]{1,200})`")
ADR_MARKERS = ("/adr/", "/decisions/")


def is_adr(path: str) -> bool:
    return any(marker in f"/{path}" for marker in ADR_MARKERS)


def summarize(path: str, text: str, limit: int) -> tuple[str, str]:
    """(title, text) of a markdown document: its first heading and its Decision section or opening paragraphs."""
    lines = text.splitlines()
    title = next((m.group(2) for line in lines if (m := _HEADING.match(line))), path.rsplit("/", 1)[-1])
    sections: dict[str, list[str]] = {}
    current = ""
    for line in lines:
        match = _HEADING.match(line)
        if match:
            current = match.group(2).strip().lower()
            continue
        sections.setdefault(current, []).append(line)
    decision = next((body for name, body in sections.items() if name.startswith("decision")), None)
    body = decision if decision and "\n".join(decision).strip() else [ln for ln in lines if not _HEADING.match(ln)]
    summary = "\n".join(body).strip()
    return title[:200], (summary[:limit].rsplit(" ", 1)[0] if len(summary) > limit else summary) or title


def bound_scope(path: str, text: str, index: SnapshotIndex) -> tuple[list[str], list[str]]:
    """(paths, symbols): the document itself plus the backticked paths and symbols of `text` the snapshot has."""
    paths, symbols = [path], []
    for match in _BACKTICKED.finditer(text):
        name = match.group(1).strip()
        if not name or any(ch.isspace() for ch in name):
            continue  # a command or a phrase, not a name
        if index.has_path(name) and "*" not in name:
            paths.append(name)
        elif index.has_symbol(name):
            symbols.append(name.removesuffix("()"))
    return list(dict.fromkeys(paths)), list(dict.fromkeys(symbols))


def ingest_candidates(service: KnowledgeService, snapshot: Snapshot) -> list[str]:
    """Candidates for every matching file of `snapshot`; the ids added or edited."""
    config = service.config.knowledge
    paths = [p for p in sorted(snapshot.chunks_by_path) if any(fnmatch.fnmatchcase(p, g) for g in config.candidate_globs)]
    if not paths:
        return []  # no store file is created for a repository without documents or entries
    store = service.base.store(snapshot.repo)
    by_source = {e.source_ref: e for e in store.entries() if e.source_kind in (SourceKind.ADR.value, SourceKind.DOC.value)}
    touched: list[str] = []
    index = SnapshotIndex(snapshot)
    for path in paths:
        title, text = summarize(path, "\n".join(snapshot.file_lines(path)), config.max_text_chars)
        scope, symbols = bound_scope(path, text, index)
        known = by_source.get(path)
        if known is None:
            result = service.add(snapshot.repo, {
                "title": title, "text": text, "kind": Kind.DECISION.value if is_adr(path) else Kind.FACT.value,
                "paths": scope, "symbols": symbols, "source_kind": SourceKind.ADR.value if is_adr(path) else SourceKind.DOC.value,
                "source_ref": path, "status": Status.CANDIDATE.value}, actor="index")
            touched.append(result.entry.id)
        elif known.status != Status.RETIRED.value and (known.title, known.text) != (title, text):
            service.edit(known.id, {"title": title, "text": text, "paths": scope, "symbols": symbols}, [snapshot.repo],
                         actor="index",
                         why=f"{path} changed")
            touched.append(known.id)
    return touched
