"""Inside one snapshot directory: its file names, its manifest, and the checksums that verify it.

```
<snapshot>/manifest.json
           chunks.parquet symbols.parquet edges.parquet errors.parquet pagerank.parquet files.parquet
           vectors/p000s00-<key>.faiss vectors/p000s00-<key>.ids.npy
           lucene/p000s00-<key>/
           tokens/p000s00-<key>/{codes,scales,offsets}.npy tokens/rows.npy  (semantica.stores.token_vectors)
           history/commits.parquet history/history.json  (semantica.stores.history; git sources)
```
Every directory but the tables belongs to one index kind (`semantica.stores.index_kinds`, written in the order of
`index.kinds`): `vectors/` faiss, `lucene/` lucene, `tokens/` tokens, `history/` history; a registered kind adds
its own (`IndexKind.directories`). The manifest holds the sha256 of every other file; a snapshot is published
(`semantica.layout`) only when they all match.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from semantica.errors import path_exists
from semantica.ondisk.layout_errors import LayoutError
from semantica.schema import SCHEMA_VERSION, Manifest

MANIFEST = "manifest.json"
CHUNKS = "chunks.parquet"
SYMBOLS = "symbols.parquet"
EDGES = "edges.parquet"
ERRORS = "errors.parquet"
PAGERANK = "pagerank.parquet"
FILES = "files.parquet"
VECTORS_DIR = "vectors"
LUCENE_DIR = "lucene"
TOKENS_DIR = "tokens"
HISTORY_DIR = "history"
_HASH_BLOCK = 1 << 20


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_HASH_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def directory_checksums(directory: Path, known: Mapping[str, str] | None = None) -> dict[str, str]:
    """sha256 of every file under `directory` but the manifest, by relative path. `known` files (hard
    links to an already verified snapshot's files, `semantica.stores.index_kinds.sharding`) keep the checksum given."""
    sums: dict[str, str] = {}
    known = known or {}
    for path in sorted(directory.rglob("*")):
        if path.is_file() and path.name != MANIFEST:
            relative = path.relative_to(directory).as_posix()
            sums[relative] = known[relative] if relative in known else file_sha256(path)
    return sums


@dataclass
class SnapshotPaths:
    """Paths inside one snapshot directory."""

    root: Path

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST

    @property
    def chunks(self) -> Path:
        return self.root / CHUNKS

    @property
    def symbols(self) -> Path:
        return self.root / SYMBOLS

    @property
    def edges(self) -> Path:
        return self.root / EDGES

    @property
    def errors(self) -> Path:
        return self.root / ERRORS

    @property
    def pagerank(self) -> Path:
        return self.root / PAGERANK

    @property
    def files(self) -> Path:
        """Every indexed file's blob sha (what the freshness check compares with the source)."""
        return self.root / FILES

    @property
    def vectors(self) -> Path:
        return self.root / VECTORS_DIR

    @property
    def lucene(self) -> Path:
        return self.root / LUCENE_DIR

    @property
    def tokens(self) -> Path:
        return self.root / TOKENS_DIR

    @property
    def history(self) -> Path:
        """Past commits at or before the snapshot's commit (semantica.stores.history); absent for non-git sources."""
        return self.root / HISTORY_DIR

    def read_manifest(self) -> Manifest:
        if not path_exists(self.manifest):
            raise LayoutError(f"{self.root} has no {MANIFEST}: not a finished snapshot")
        try:
            return Manifest.from_dict(json.loads(self.manifest.read_text()))
        except (ValueError, KeyError, TypeError) as exc:  # truncated or hand-edited
            raise LayoutError(f"{MANIFEST} of snapshot {self.root.name!r} is not a valid manifest "
                              f"({type(exc).__name__}: {exc})") from exc

    def write_manifest(self, manifest: Manifest) -> None:
        tmp = self.manifest.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(manifest.to_dict(), indent=2, sort_keys=True))
        os.replace(tmp, self.manifest)

    def verify(self, trusted: Mapping[str, str] | None = None) -> Manifest:
        """Check the manifest's schema version and every checksum; raise on any mismatch. `trusted` files
        (hard links to a published snapshot's files, whose checksums it verified) must be present; their
        bytes are not hashed again."""
        manifest = self.read_manifest()
        if manifest.schema_version != SCHEMA_VERSION:
            raise LayoutError(
                f"{self.root}: schema version {manifest.schema_version}, this build reads "
                f"{SCHEMA_VERSION}; re-index the repository"
            )
        actual = directory_checksums(self.root, known=trusted)
        if actual != manifest.checksums:
            missing = sorted(set(manifest.checksums) - set(actual))
            changed = sorted(k for k in actual if manifest.checksums.get(k) != actual[k])
            raise LayoutError(f"{self.root}: checksum mismatch (missing {missing[:5]}, differing {changed[:5]})")
        return manifest
