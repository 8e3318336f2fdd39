"""Texts a study would encode, recorded here and encoded where a GPU is lent, then read back by the same study.

Encoding every candidate function of hundreds of labelled commits with a fine-tuned encoder takes most of an hour
on two CPU cores and seconds on a GPU. So a study (`lab.localizer.function_dense`, `lab.eval.dense_rerank`) runs
once with `--record FILE`: every text it would encode is kept with its token limit and its group (a corpus
repository, or `dev`), and nothing is encoded. The GPU machine encodes the file (`encode`), each group with the
model named for it (the cross-fitted fold models: a repository is encoded by the model that did not train on it),
and each group's query x document cosines come back. The study then runs with `--vectors FILE` and reads each
text by group, token limit and text sha: the same scoring code, fed the GPU's cosines.

    python -m lab.train.text_vectors encode --texts TEXTS.parquet --out VECTORS.npz \
        --model 'repoA,repoB=FOLD_B_MODEL' --model 'repoC=FOLD_A_MODEL' --model '*=ALL_MODEL' --query-length 64

`split TEXTS.parquet --part a=repoA,repoB --part b=repoC` cuts a recording by group (TEXTS.a.parquet, ...; groups
named nowhere go to TEXTS.rest.parquet), so the GPU machine encodes the parts at once, one process per model; a
study reads the parts' outputs back together (`StoredTextVectors` takes several files).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ANY_GROUP = "*"


def text_key(group: str, max_length: int, text: str) -> str:
    """A recorded text's key; plain hashlib, so the GPU machine's path imports nothing of the serving stack."""
    return f"{group}|{max_length}|{hashlib.sha1(text.encode('utf-8', 'replace')).hexdigest()}"


class TextRecorder:
    """Every (group, token limit, text) asked for; `encode` answers zero vectors (of width one: their only use is to
    let the study run to its end) and nothing is scored from them."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple[str, int, str]] = {}

    def for_group(self, group: str) -> GroupRecorder:
        return GroupRecorder(self, group)

    def write(self, path: str | Path) -> int:
        import pyarrow as pa
        import pyarrow.parquet as pq

        keys = sorted(self.rows)
        table = pa.table({"key": keys, "group": [self.rows[k][0] for k in keys],
                          "max_length": [self.rows[k][1] for k in keys], "text": [self.rows[k][2] for k in keys]})
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, str(path), compression="zstd")
        return len(keys)


class GroupRecorder:
    def __init__(self, recorder: TextRecorder, group: str) -> None:
        self.recorder, self.group = recorder, group

    def encode(self, texts: Sequence[str], max_length: int) -> np.ndarray:
        for text in texts:
            self.recorder.rows[text_key(self.group, max_length, text)] = (self.group, max_length, text)
        return np.zeros((len(texts), 1), dtype=np.float32)


class StoredTextVectors:
    """What the GPU machine sent back, per group: the cosine of every recorded query with every recorded document
    (a few MB, where the vectors themselves are tens). It answers `encode` with stand-ins that reproduce those
    cosines exactly: a query is a one-hot row over its group's queries and a document is its column of cosines,
    so `documents @ query` (all the studies compute) is the cosine of the two real vectors. A text never
    encoded is an error, not a zero vector, so a study cannot silently score what was not recorded."""

    def __init__(self, paths: str | Path | Sequence[str | Path]) -> None:
        """One `encode` output, or several (comma-separated, or a list) whose groups do not overlap."""
        if isinstance(paths, str):
            paths = paths.split(",")
        elif isinstance(paths, Path):
            paths = [paths]
        self.tables: dict[str, CosineTable] = {}
        self.models: dict[str, str] = {}
        for path in paths:
            with np.load(path, allow_pickle=False) as stored:
                for n, group in enumerate(stored["groups"].tolist()):
                    if group in self.tables:
                        raise ValueError(f"group {group!r} is in more than one vectors file ({path})")
                    self.models[group] = str(stored["models"][n])
                    self.tables[group] = CosineTable(group, stored[f"g{n}.queries"].tolist(),
                                                     stored[f"g{n}.documents"].tolist(),
                                                     stored[f"g{n}.cosines"].astype(np.float32))

    def for_group(self, group: str) -> CosineTable:
        if group not in self.tables:
            raise KeyError(f"group {group!r} was never encoded (record it first)")
        return self.tables[group]


class CosineTable:
    def __init__(self, group: str, queries: Sequence[str], documents: Sequence[str], cosines: np.ndarray) -> None:
        self.group = group
        self.query_rows = {key: n for n, key in enumerate(queries)}
        self.document_rows = {key: n for n, key in enumerate(documents)}
        self.cosines = cosines  # queries x documents

    def recorded(self, text: str, max_length: int) -> bool:
        """Was this document text encoded (so `encode` can answer it)?"""
        return text_key(self.group, max_length, text) in self.document_rows

    def encode(self, texts: Sequence[str], max_length: int) -> np.ndarray:
        keys = [text_key(self.group, max_length, t) for t in texts]
        width = len(self.query_rows)
        out = np.zeros((len(keys), width), dtype=np.float32)
        for n, key in enumerate(keys):
            if key in self.query_rows:
                out[n, self.query_rows[key]] = 1.0
            elif key in self.document_rows:
                out[n] = self.cosines[:, self.document_rows[key]]
            else:
                raise KeyError(f"a text of group {self.group!r} at {max_length} tokens was never encoded "
                               f"(record it first): {texts[n][:60]!r}")
        return out


def model_for_groups(specs: Sequence[str]) -> dict[str, str]:
    """'repoA,repoB=DIR' ... -> group -> model directory ('*' for every group not named)."""
    chosen: dict[str, str] = {}
    for spec in specs:
        groups, _, path = spec.rpartition("=")
        for group in groups.split(","):
            if group in chosen:
                raise ValueError(f"group {group!r} named twice")
            chosen[group] = path
    return chosen


def encode_file(texts_path: str | Path, out: str | Path, models: dict[str, str], query_length: int,
                batch_size: int) -> dict[str, int]:
    """Encode every recorded text with its group's model (torch, the trainer's pooling) and keep, per group, the
    cosine of each query (the texts recorded at `query_length` tokens) with each document (all others)."""
    import pyarrow.parquet as pq

    from lab.train.encoder_eval import PooledEncoder
    from semantica.config import load_train_config

    settings = load_train_config(None, []).train_encoder
    rows = pq.read_table(str(texts_path)).to_pylist()
    groups = sorted({r["group"] for r in rows})
    model_of = {g: models.get(g, models.get(ANY_GROUP, "")) for g in groups}
    if missing := [g for g, path in model_of.items() if not path]:
        raise ValueError(f"no model for groups {missing}")
    arrays: dict[str, np.ndarray] = {"groups": np.array(groups), "models": np.array([model_of[g] for g in groups])}
    counts: dict[str, int] = {}
    for path in sorted(set(model_of.values())):
        encoder = PooledEncoder(path, settings, batch_size)
        for n, group in enumerate(groups):
            if model_of[group] != path:
                continue
            mine = [r for r in rows if r["group"] == group]
            vectors = {}
            for max_length in sorted({r["max_length"] for r in mine}):
                batch = [r for r in mine if r["max_length"] == max_length]
                encoded = encoder.encode([r["text"] for r in batch], max_length).float().cpu().numpy()
                vectors.update(zip((r["key"] for r in batch), encoded))
            queries = [r["key"] for r in mine if r["max_length"] == query_length]
            documents = [r["key"] for r in mine if r["max_length"] != query_length]
            arrays[f"g{n}.queries"] = np.array(queries)
            arrays[f"g{n}.documents"] = np.array(documents)
            arrays[f"g{n}.cosines"] = (np.stack([vectors[k] for k in queries]) @
                                       np.stack([vectors[k] for k in documents]).T).astype(np.float32) \
                if queries and documents else np.zeros((len(queries), len(documents)), dtype=np.float32)
            counts[group] = len(mine)
        print(f"{path}: {sum(counts[g] for g in groups if model_of[g] == path)} texts", file=sys.stderr, flush=True)
    np.savez_compressed(out, **arrays)
    return counts


def split_file(texts_path: str | Path, parts: dict[str, set[str]]) -> dict[str, int]:
    """`TEXTS.NAME.parquet` per part (its groups' rows), `TEXTS.rest.parquet` for groups in no part; rows per file."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    texts_path = Path(texts_path)
    table = pq.read_table(str(texts_path))
    named = set().union(*parts.values()) if parts else set()
    everything = set(table.column("group").to_pylist())
    counts = {}
    for name, groups in [*parts.items(), ("rest", everything - named)]:
        rows = table.filter(pc.is_in(table.column("group"), value_set=pa.array(sorted(groups), type=pa.string())))
        if rows.num_rows:
            pq.write_table(rows, str(texts_path.with_suffix(f".{name}.parquet")), compression="zstd")
            counts[name] = rows.num_rows
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    cut = sub.add_parser("split", help="cut a recorded texts file by group, one file per part")
    cut.add_argument("texts")
    cut.add_argument("--part", action="append", required=True, metavar="NAME=GROUP,GROUP")
    enc = sub.add_parser("encode", help="encode a recorded texts file, each group with its model")
    enc.add_argument("--texts", required=True)
    enc.add_argument("--out", required=True)
    enc.add_argument("--model", action="append", required=True, metavar="GROUP,GROUP=DIR",
                     help="model directory for these groups; '*=DIR' for the rest (repeatable)")
    enc.add_argument("--query-length", type=int, required=True,
                     help="texts recorded at this token limit are the queries (localizer.dense_query_max_length)")
    enc.add_argument("--batch-size", type=int, default=256)
    args = parser.parse_args(argv)
    if args.command == "split":
        parts = {name: set(groups.split(",")) for name, _, groups in (p.partition("=") for p in args.part)}
        print(split_file(args.texts, parts))
        return 0
    counts = encode_file(args.texts, args.out, model_for_groups(args.model), args.query_length, args.batch_size)
    print(counts)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
