"""A tiny base model for the training tests: trains and encodes in seconds on CPU."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from semantica.encoder import resolve_model_path

TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def make_tiny_bert(out: Path, seed: int) -> Path:
    """A 2-layer, 32-wide BERT with the MiniLM tokenizer, its weights drawn with `seed`."""
    from transformers import BertConfig, BertModel

    minilm = resolve_model_path("")
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512)
    BertModel(config).save_pretrained(str(out))
    for name in TOKENIZER_FILES:
        shutil.copy(minilm / name, out / name)
    return out


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    """A base model that trains in seconds."""
    return make_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), 0)
