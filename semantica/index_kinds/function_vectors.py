"""The dense function channel's vectors (`function_vectors/<key>.npz`): every function's source (any language with
function spans) encoded at index time by `localizer.dense_model` when `localizer.dense_at_index`, so the channel's
first query over a snapshot encodes only the query. Keyed by the encoder and every source file's path and blob sha:
an unchanged set of files is hard-linked from the previous snapshot; otherwise the previous snapshot's vectors are reused for every function
whose source is unchanged (same text sha, same encoder) and only the others are encoded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from semantica.index_kinds.base import KindWritten, WriteContext
from semantica.index_kinds.localizer import source_texts
from semantica.index_kinds.sharding import KEY_CHARS, content_key

KIND = "function_vectors"
VECTORS_DIR = "function_vectors"
FORMAT = 1


def load_vectors(file: Path) -> Any:
    """The stored `StoredFunctionVectors` of one file."""
    from semantica.localizer.dense import StoredFunctionVectors

    with np.load(file, allow_pickle=False) as z:
        keys = z["keys"].tolist()
        return StoredFunctionVectors(str(z["model_id"]), {k: n for n, k in enumerate(keys)}, z["shas"].tolist(),
                                     z["vectors"])


def _stored_file(root: Path | None) -> Path | None:
    directory = root / VECTORS_DIR if root is not None else None
    files = sorted(directory.glob("*.npz")) if directory is not None and directory.is_dir() else []
    return files[0] if files else None


class FunctionVectorsKind:
    name = KIND
    directories = (VECTORS_DIR,)

    def write(self, context: WriteContext) -> KindWritten:
        loc = context.config.localizer
        if not (loc.enabled and loc.dense_model and loc.dense_at_index):
            return KindWritten()
        from semantica.encoder import shared_encoder
        from semantica.localizer.blobcache import blob_sha
        from semantica.localizer.dense import channel_encoder_config, channel_keys, function_sources, text_sha

        encoder = shared_encoder(channel_encoder_config(loc, context.config.encoder))
        texts = source_texts(context.inputs.chunks)
        key = content_key(KIND, [str(FORMAT), encoder.model_id, str(loc.dense_max_length)],
                          (f"{path}\x00{blob_sha(texts[path])}" for path in sorted(texts)))
        relative = f"{VECTORS_DIR}/{key[:KEY_CHARS]}.npz"
        if context.linker.link(relative, KIND):
            return KindWritten(counts={"function_vectors_encoded": 0})
        sources = {key: source for path in channel_keys(sorted(texts))
                   for key, source in function_sources(path, texts[path]).items()}
        keys = list(sources)
        shas = [text_sha(sources[k]) for k in keys]
        reused: dict[str, np.ndarray] = {}
        previous = _stored_file(context.linker.previous.root)
        if previous is not None:
            before = load_vectors(previous)
            if before.model_id == encoder.model_id:
                reused = dict(zip(before.shas, before.vectors))
        missing = sorted({sha: sources[k] for k, sha in zip(keys, shas) if sha not in reused}.items())
        if missing:
            reused.update(zip((sha for sha, _ in missing),
                              encoder.encode([text for _, text in missing], loc.dense_max_length).astype(np.float16)))
        target = context.root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        vectors = np.stack([reused[sha] for sha in shas]) if keys else np.zeros((0, encoder.dim), np.float16)
        np.savez(target, keys=np.array(keys, dtype=str), shas=np.array(shas, dtype=str),
                 vectors=vectors.astype(np.float16), model_id=np.array(encoder.model_id))
        return KindWritten(counts={"function_vectors": len(keys), "function_vectors_encoded": len(missing)})

    def open(self, snapshot: Any) -> Any:
        """The snapshot's `StoredFunctionVectors`; None for a snapshot built without them."""
        stored = _stored_file(snapshot.paths.root)
        return load_vectors(stored) if stored is not None else None
