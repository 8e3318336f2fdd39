"""Static token embeddings (model2vec) as the chunk encoder: a lab study of the fast channel, not a product runtime.

A model2vec model is one embedding row per vocabulary token, distilled from a transformer by passing each token
through it once (PCA and SIF weighting baked in). A text's vector is the mean of its tokens' rows, so indexing
costs a table lookup instead of a forward pass; a token's "token vector" for late interaction is its row, the same
in every context. Whether that keeps quality is what `lab.bench.golden_variants` measures.

`install()` (which `lab.bench.golden_variants --plugin` calls) routes `shared_encoder` to `StaticEncoder` for any
`encoder.model_path` holding a prepared static model (`prepare` below: a model2vec directory plus the `hidden_size`
the product reads and the BERT special tokens the token extraction strips); every other checkpoint loads as before.
Distil the model in a separate venv (`pip install "model2vec[distill]==0.10.0" scikit-learn`;
`model2vec.distill.distill(model_name=PATH, pca_dims=256)`), then:

    python -m lab.plugins.static_encoder --model2vec DIR --out DIR
"""

from __future__ import annotations

import argparse
import json
import threading
from pathlib import Path
from typing import Any

import numpy as np

import semantica.runtime.encoder as encoder_module
from semantica.config import EncoderConfig
from semantica.encoder_identity import Runtime, RuntimeIdentity, checkpoint_of
from semantica.runtime.forward import ForwardOutput
from semantica.runtime.pooling import l2_normalise

STATIC_MODEL_TYPE = "model2vec"
SPECIAL_TOKENS = ("[CLS]", "[SEP]")  # what the product's token extraction drops from each text's ends


def is_static(model_path: str) -> bool:
    config = Path(model_path or "") / "config.json"
    if not model_path or not config.exists():
        return False
    return json.loads(config.read_text()).get("model_type") == STATIC_MODEL_TYPE


class StaticForward:
    """One padded batch as embedding rows: the masked mean of each text's non-special rows (unit length), and the
    rows themselves when token vectors are asked for."""

    def __init__(self, embeddings: np.ndarray, special_ids: set[int]) -> None:
        self.embeddings = embeddings
        self.special = np.array(sorted(special_ids), dtype=np.int64)

    def __call__(self, inputs: dict[str, np.ndarray], keep_hidden: bool) -> ForwardOutput:
        ids = inputs["input_ids"]
        mask = inputs["attention_mask"].astype(bool) & ~np.isin(ids, self.special)
        rows = self.embeddings[ids]
        weights = mask[..., None].astype(np.float32)
        pooled = (rows * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        return ForwardOutput(l2_normalise(pooled), rows if keep_hidden else None)


class StaticEncoder(encoder_module.Encoder):
    """The product's `Encoder` over a static model: same tokenisation, batching, caches and identity scheme."""

    def __init__(self, config: EncoderConfig) -> None:  # noqa: D107 (no transformer to load: the parent's init is not run)
        from safetensors.numpy import load_file

        self.config = config
        self.model_path = Path(config.model_path)
        self.tokenizer = encoder_module.FastTokenizer(self.model_path)
        embeddings = load_file(str(self.model_path / "model.safetensors"))["embeddings"].astype(np.float32)
        self.dim = int(embeddings.shape[1])
        vocab = json.loads((self.model_path / "tokenizer.json").read_text())["model"]["vocab"]
        self.forward_pass = StaticForward(embeddings, {vocab[t] for t in SPECIAL_TOKENS if t in vocab})
        self.device = "cpu"
        self.identity = RuntimeIdentity(checkpoint_of(config.model_id or self.model_path.name), Runtime.TORCH)
        self.model_id = self.identity.model_id
        self._lock = threading.Lock()
        self.texts_encoded = 0


_TRANSFORMER = encoder_module.Encoder  # the class install() routes and uninstall() puts back


class RoutedEncoder(_TRANSFORMER):  # type: ignore[misc,valid-type]
    """`Encoder` as `shared_encoder` builds it while the plug-in is installed: a static directory gives a
    `StaticEncoder`, every other checkpoint the transformer (still an `Encoder` in every respect)."""

    def __new__(cls, config: EncoderConfig) -> Any:
        if is_static(config.model_path):
            return StaticEncoder(config)  # not an instance of cls: its own __init__ has run, cls's is not called
        return super().__new__(cls)


def install() -> None:
    """Route static model directories to `StaticEncoder` in this process (idempotent)."""
    encoder_module.Encoder = RoutedEncoder  # type: ignore[misc]


def uninstall() -> None:
    """Give `shared_encoder` the plain transformer class back (a test session must not keep the route)."""
    encoder_module.Encoder = _TRANSFORMER  # type: ignore[misc]


def prepare(model2vec_dir: Path, out: Path) -> Path:
    """A model2vec directory made loadable here: `hidden_size` in config.json, and [CLS] ... [SEP] around every
    text like the transformer's (model2vec drops both from its vocabulary; they come back as zero rows, left out of
    the mean and stripped from the token vectors as the product strips a transformer's)."""
    from safetensors.numpy import load_file, save_file

    out.mkdir(parents=True, exist_ok=True)
    embeddings = load_file(str(model2vec_dir / "model.safetensors"))["embeddings"]
    tokenizer = json.loads((model2vec_dir / "tokenizer.json").read_text())
    vocab = tokenizer["model"]["vocab"]
    for token in SPECIAL_TOKENS:
        if token not in vocab:
            vocab[token] = len(embeddings)
            embeddings = np.concatenate([embeddings, np.zeros((1, embeddings.shape[1]), embeddings.dtype)])
            tokenizer["added_tokens"].append({"id": vocab[token], "content": token, "single_word": False,
                                              "lstrip": False, "rstrip": False, "normalized": False, "special": True})
    save_file({"embeddings": embeddings}, str(out / "model.safetensors"))
    cls, sep = SPECIAL_TOKENS
    tokenizer["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": cls, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": sep, "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": cls, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": sep, "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                 {"SpecialToken": {"id": sep, "type_id": 1}}],
        "special_tokens": {t: {"id": t, "ids": [vocab[t]], "tokens": [t]} for t in SPECIAL_TOKENS},
    }
    (out / "tokenizer.json").write_text(json.dumps(tokenizer))
    config = json.loads((model2vec_dir / "config.json").read_text())
    config.update(model_type=STATIC_MODEL_TYPE, hidden_size=config["hidden_dim"])
    (out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    return out



def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="prepare a model2vec directory as a static chunk encoder")
    parser.add_argument("--model2vec", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    print(prepare(args.model2vec, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
