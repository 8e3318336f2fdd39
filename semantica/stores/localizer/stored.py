"""A localizer `LocalizerTable` stored in an index snapshot (`localizer/`, the `localizer` index kind), so the first
query of a snapshot loads arrays instead of tokenizing every Python file: the four fields' BM25 weights
(sparse, `fields.npz`), the vocabulary in id order and the files with their function spans (`snapshot.json`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from semantica.stores.function_keys import function_key
from semantica.stores.localizer.bm25 import Bm25Field, Vocabulary
from semantica.stores.localizer.table import FileDoc, FunctionDoc, LocalizerTable

FORMAT = 1
"""Bumped when the stored layout changes; a snapshot stored in another format is rebuilt at query time."""
FIELDS_FILE, META_FILE = "fields.npz", "snapshot.json"


def save_table(snapshot: LocalizerTable, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    for name, field in snapshot.fields.items():
        weights = field.weights.tocsc()
        arrays.update({f"{name}.data": weights.data, f"{name}.indices": weights.indices,
                       f"{name}.indptr": weights.indptr, f"{name}.shape": np.array(weights.shape, dtype=np.int64)})
    np.savez(directory / FIELDS_FILE, **arrays)
    terms = sorted(snapshot.vocab.ids, key=snapshot.vocab.ids.__getitem__)
    files = [{"path": doc.path, "lines": doc.lines, "names": sorted(doc.names),
              "functions": [[f.qualname, f.start, f.end] for f in doc.functions]} for doc in snapshot.files]
    (directory / META_FILE).write_text(json.dumps({"format": FORMAT, "terms": terms, "files": files}))


def load_table(directory: Path) -> LocalizerTable | None:
    """The stored snapshot; None where there is none or it was stored in another format."""
    from scipy import sparse  # a fifth of a second to import: only where a table is read

    meta_file = directory / META_FILE
    if not meta_file.is_file():
        return None
    meta = json.loads(meta_file.read_text())
    if meta.get("format") != FORMAT:
        return None
    vocab = Vocabulary()
    vocab.ids = {term: n for n, term in enumerate(meta["terms"])}
    files = [FileDoc(f["path"], int(f["lines"]),
                     [FunctionDoc(function_key(f["path"], q), f["path"], q, int(a), int(b), n)
                      for n, (q, a, b) in enumerate(f["functions"])], frozenset(f["names"])) for f in meta["files"]]
    with np.load(directory / FIELDS_FILE, allow_pickle=False) as z:
        fields = {name: Bm25Field.from_weights(sparse.csc_matrix(
            (z[f"{name}.data"], z[f"{name}.indices"], z[f"{name}.indptr"]), shape=tuple(z[f"{name}.shape"])))
            for name in sorted({key.split(".")[0] for key in z.files})}
    return LocalizerTable(files, fields, vocab)
