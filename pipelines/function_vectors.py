"""The dense function channel's model pass (`localizer.dense_model` with `localizer.dense_at_index`): every
function's source encoded by the channel's own encoder inside the runner (in process, or on Ray Data's embedding
actors, GPU when present), next to the chunk embedding, so no model pass is left to the driver's write step.

Vectors are cached by the function source's sha (`text_sha`) in append-only segments under
`<cache_dir>/function_vectors/<model>-<dim>-len<L>/`, shared by every repository and snapshot like chunk vectors: an
unchanged function is never encoded again. The parse cache keeps each file's (function key, sha) list, so a file
whose parse and vectors are all cached is planned as done without reading its spans again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pipelines.embed import EmbeddingCache
from pipelines.parse import ParsedFile
from semantica.config import Config
from semantica.languages.spans import spans_language
from semantica.runtime.encoder import shared_encoder
from semantica.schema import chunk_lines
from semantica.stores.localizer.blobcache import CACHE_VERSION
from semantica.stores.localizer.dense import channel_encoder_config, channel_keys, function_sources, text_sha

FUNCTION_VECTORS_DIR = "function_vectors"
STORED_DTYPE = np.float16  # as a snapshot stores them; the cache holds the same rounded values


def functions_key(parse_key: str) -> str:
    """The parse-cache key of a file's (function key, source sha) list: the file's parse key under the span
    reader's version (a change of how spans are read never meets an old list)."""
    return f"functions\x00{CACHE_VERSION}\x00{parse_key}"


def channel_enabled(config: Config) -> bool:
    """Whether an index stores the channel's function vectors."""
    loc = config.localizer
    return bool(loc.enabled and loc.dense_model and loc.dense_at_index)


@dataclass
class FileFunctions:
    """One file's function vectors: key (`path::qualname`), source sha and one stored row per function."""

    keys: list[str] = field(default_factory=list)
    shas: list[str] = field(default_factory=list)
    vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=STORED_DTYPE))

    def pairs(self) -> list[tuple[str, str]]:
        return list(zip(self.keys, self.shas))


@dataclass
class StoredFunctions:
    """A snapshot's function vectors as the driver hands them to the writer: per file, the channel's model id,
    its max length (both in the shards' content key) and how many were encoded in this run."""

    model_id: str
    max_length: int
    dim: int
    files: dict[str, FileFunctions]
    encoded: int = 0


class FunctionVectorPass:
    """Function vectors for parsed files; only sources whose sha is not cached reach the channel's encoder, which
    is loaded on the first miss."""

    def __init__(self, config: Config, cache: EmbeddingCache, model_id: str, dim: int,
                 encoder_factory: Callable[[], object] | None = None) -> None:
        self.config = config.localizer
        self.model_id, self.dim = model_id, dim
        self.cache = cache
        self.batch_texts = config.encoder.cache_segment_vectors
        encoder_config = channel_encoder_config(config.localizer, config.encoder)
        self._encoder_factory = encoder_factory or (lambda: shared_encoder(encoder_config))

    def covers(self, path: str) -> bool:
        """Whether the channel encodes this file's functions (test code is left out)."""
        return bool(channel_keys([path]))

    def lookup(self, pairs: Sequence[tuple[str, str]]) -> FileFunctions | None:
        """A file's vectors from its (key, sha) list, or None when one of them is not cached."""
        keys, shas = [k for k, _ in pairs], [s for _, s in pairs]
        found = self.cache.get_many(shas)
        if len(found) < len(set(shas)):
            return None
        return FileFunctions(keys, shas, self._stack([found[s] for s in shas]))

    def fill(self, files: Sequence[ParsedFile | None],
             progress: Callable[[int], None] | None = None) -> list[tuple[FileFunctions, int]]:
        """Per file (None: not parsed): its functions' vectors and how many of their sources were encoded now (a
        source shared by two files counted once, for the first)."""
        sources = [self._sources(parsed) if parsed is not None and self.covers(parsed.path) else {}
                   for parsed in files]
        shas = [[text_sha(text) for text in file.values()] for file in sources]
        known = self.cache.get_many(sorted({s for file in shas for s in file}))
        missing: dict[str, str] = {}
        for file, digests in zip(sources, shas):
            for text, sha in zip(file.values(), digests):
                if sha not in known:
                    missing.setdefault(sha, text)
        self._encode(missing, known, progress)
        out: list[tuple[FileFunctions, int]] = []
        counted: set[str] = set()
        for file, digests in zip(sources, shas):
            new = {s for s in digests if s in missing} - counted
            counted |= new
            out.append((FileFunctions(list(file), digests, self._stack([known[s] for s in digests])), len(new)))
        return out

    def _encode(self, missing: dict[str, str], known: dict[str, np.ndarray],
                progress: Callable[[int], None] | None) -> None:
        """Encode the missing sources in length order (less padding), one cache segment per batch."""
        order = sorted(missing, key=lambda sha: len(missing[sha]))
        step = max(1, self.batch_texts)
        for start in range(0, len(order), step):
            batch = order[start : start + step]
            encoded = self._encoder_factory().encode([missing[s] for s in batch], self.config.dense_max_length)
            rounded = np.asarray(encoded).astype(STORED_DTYPE).astype(np.float32)
            self.cache.put_many(batch, rounded)
            known.update(zip(batch, rounded))
            if progress:
                progress(len(batch))

    def _stack(self, vectors: list[np.ndarray]) -> np.ndarray:
        return np.stack(vectors).astype(STORED_DTYPE) if vectors else np.zeros((0, self.dim), dtype=STORED_DTYPE)

    @staticmethod
    def _sources(parsed: ParsedFile) -> dict[str, str]:
        """Function key -> source of one parsed file, from its chunks' lines (as the writer and the served
        snapshot rebuild a file); none for a language without function spans."""
        if not spans_language(parsed.path):
            return {}
        return function_sources(parsed.path, "\n".join(chunk_lines(parsed.chunks)))


def function_cache_dir(config: Config) -> Path:
    return Path(config.paths.cache_dir) / FUNCTION_VECTORS_DIR
