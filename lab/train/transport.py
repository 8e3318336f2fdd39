"""Model and pairs packed for the GPU machine's transfer limits, and unpacked on the other side.

The device tool carries at most 64 MiB per call and brings back files of at most 16 MiB. MiniLM's fp32 weights
(91 MB) travel as fp16 parts (`pack-model`; fp16 holds its weights to ~1e-4 relative) and are widened back to fp32
before training (`unpack-model`), so the optimizer steps on fp32 weights; the trained model comes back the same way.
Pairs travel trimmed (`pack-pairs`): the columns training and `lab.train.encoder_eval` read, documents cut to a
length past the encoder's token window, the hard negatives training uses.

    python -m lab.train.transport pack-model SRC_MODEL_DIR DST_DIR
    python -m lab.train.transport unpack-model DST_DIR MODEL_DIR
    python -m lab.train.transport pack-pairs PAIRS_DIR DST_DIR --max-chars 2000 --negatives 1
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Sequence
from pathlib import Path

from jobs.train.pair_parts import pair_parts

WEIGHTS = "model.safetensors"
PART_GLOB = WEIGHTS + ".part-*"
PART_BYTES = 16_000_000  # under the device tool's 16 MiB per returned file
PAIR_COLUMNS = ("repo", "kind", "query", "positive_documents", "negative_documents")


def pack_model(src: Path, dst: Path, part_bytes: int = PART_BYTES) -> list[Path]:
    """fp16 weights split into parts, plus every small file of the checkpoint (config, tokenizer)."""
    from safetensors.torch import load_file, save_file

    dst.mkdir(parents=True, exist_ok=True)
    tensors = {name: t.half() if t.is_floating_point() else t for name, t in load_file(str(src / WEIGHTS)).items()}
    packed = dst / (WEIGHTS + ".fp16")
    save_file({name: t.contiguous() for name, t in tensors.items()}, str(packed), metadata={"format": "pt"})
    data = packed.read_bytes()
    packed.unlink()
    parts = []
    for n, start in enumerate(range(0, len(data), part_bytes)):
        part = dst / f"{WEIGHTS}.part-{n:02d}"
        part.write_bytes(data[start: start + part_bytes])
        parts.append(part)
    for extra in src.iterdir():
        if extra.is_file() and extra.name != WEIGHTS and not extra.name.startswith("."):
            shutil.copy(extra, dst / extra.name)
    return parts


def unpack_model(src: Path, dst: Path) -> Path:
    """The parts joined and widened to fp32, with the small files beside: a `from_pretrained` directory."""
    import torch
    from safetensors.torch import load, save_file

    parts = sorted(src.glob(PART_GLOB))
    if not parts:
        raise FileNotFoundError(f"no {PART_GLOB} under {src}")
    tensors = load(b"".join(p.read_bytes() for p in parts))
    dst.mkdir(parents=True, exist_ok=True)
    save_file({name: t.to(torch.float32) if t.is_floating_point() else t for name, t in tensors.items()},
              str(dst / WEIGHTS), metadata={"format": "pt"})
    for extra in src.iterdir():
        if extra.is_file() and not extra.name.startswith(WEIGHTS):
            shutil.copy(extra, dst / extra.name)
    return dst / WEIGHTS


def pack_pairs(src: Path, dst: Path, max_chars: int, negatives: int) -> int:
    """Each part rewritten with the read columns only, documents cut at `max_chars`, `negatives` negatives kept."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows_written = 0
    for part in pair_parts(src):
        rows = pq.read_table(part, columns=list(PAIR_COLUMNS)).to_pylist()
        for row in rows:
            row["positive_documents"] = [d[:max_chars] for d in row["positive_documents"] or []]
            row["negative_documents"] = [d[:max_chars] for d in (row["negative_documents"] or [])[:negatives]]
        target = dst / part.parent.name / part.name
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), target, compression="zstd", compression_level=19)
        rows_written += len(rows)
    return rows_written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("pack-model", "unpack-model", "pack-pairs"))
    parser.add_argument("src", type=Path)
    parser.add_argument("dst", type=Path)
    parser.add_argument("--max-chars", type=int, default=2000, help="pack-pairs: document characters kept")
    parser.add_argument("--negatives", type=int, default=1, help="pack-pairs: hard negatives kept per row")
    args = parser.parse_args(argv)
    if args.action == "pack-model":
        print(f"{len(pack_model(args.src, args.dst))} parts under {args.dst}")
    elif args.action == "unpack-model":
        print(unpack_model(args.src, args.dst))
    else:
        print(f"{pack_pairs(args.src, args.dst, args.max_chars, args.negatives)} rows under {args.dst}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
