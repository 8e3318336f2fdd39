"""The learned localizer's snapshot (`localizer/<key>/`, semantica.stores.localizer.stored): the four BM25 fields
over the snapshot's source files (every language with function spans), built at index time when
`localizer.enabled`, so the first query of a snapshot loads it instead of tokenizing every file. Keyed by every
source file's path and blob sha: an
unchanged set of files is hard-linked from the previous snapshot; a changed one is rebuilt through the
localizer's blob cache (only the changed files are parsed)."""

from __future__ import annotations

from typing import Any

from semantica.languages.spans import spans_language
from semantica.schema import chunk_lines
from semantica.stores.index_kinds.base import KindWritten, WriteContext
from semantica.stores.index_kinds.sharding import KEY_CHARS, content_key
from semantica.stores.localizer.blobcache import CACHE_VERSION, blob_sha, open_blob_cache
from semantica.stores.localizer.stored import FORMAT, load_table, save_table
from semantica.stores.localizer.table import LocalizerTableBuilder

KIND = "localizer"
LOCALIZER_DIR = "localizer"


def source_texts(chunks: list[Any]) -> dict[str, str]:
    """path -> the text of each source file (`spans_language`: every language with function spans), rebuilt from
    its chunks (as the stage reads a served file)."""
    by_path: dict[str, list[Any]] = {}
    for chunk in chunks:
        if spans_language(chunk.path):
            by_path.setdefault(chunk.path, []).append(chunk)
    return {path: "\n".join(chunk_lines(parts)) for path, parts in by_path.items()}


class LocalizerKind:
    name = KIND
    directories = (LOCALIZER_DIR,)

    def write(self, context: WriteContext) -> KindWritten:
        config = context.config
        if not config.localizer.enabled:
            return KindWritten()
        texts = source_texts(context.inputs.chunks)
        key = content_key(KIND, [str(FORMAT), CACHE_VERSION],
                          (f"{path}\x00{blob_sha(texts[path])}" for path in sorted(texts)))
        relative = f"{LOCALIZER_DIR}/{key[:KEY_CHARS]}"
        if not context.linker.link(relative, KIND):
            cache = open_blob_cache(config.localizer.blob_cache_file, config.paths.cache_dir)
            try:
                save_table(LocalizerTableBuilder(cache).build(texts), context.root / relative)
            finally:
                if cache is not None:
                    cache.close()
        return KindWritten(counts={"localizer_files": len(texts)})

    def open(self, snapshot: Any) -> Any:
        """The stored `semantica.stores.localizer.table.Snapshot`; None for a snapshot built without one."""
        directory = snapshot.paths.root / LOCALIZER_DIR
        stored = sorted(p for p in directory.iterdir() if p.is_dir()) if directory.is_dir() else []
        if not stored:
            return None
        return load_table(stored[0])
