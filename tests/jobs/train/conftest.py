"""A tiny base model and a few pairs for the training tests: trains and encodes in seconds on CPU."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest
import torch

from jobs.train.pairs import PAIR_SCHEMA, Pair
from semantica.runtime.encoder import resolve_model_path

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


FUNCTIONS = {
    "Return the total price of all items in the cart": "def cart_total(items):\n    return sum(i.price for i in items)",
    "Count the items in the cart": "def cart_count(items):\n    return len(items)",
    "Parse a date string in ISO format": "def parse_date(text):\n    return datetime.fromisoformat(text)",
    "Send an email to the customer": "def send_email(to, body):\n    smtp.sendmail(SENDER, to, body)",
    "Read the configuration file from disk": "def read_config(path):\n    return yaml.safe_load(open(path))",
    "Hash a password with a random salt": "def hash_password(pw):\n    return bcrypt.hashpw(pw, bcrypt.gensalt())",
    "Resize an image to a thumbnail": "def thumbnail(image):\n    return image.resize((64, 64))",
    "Retry a network request on timeout": "def retry(fetch):\n    for _ in range(3):\n        try: return fetch()\n"
                                          "        except Timeout: pass",
}


@pytest.fixture(scope="module")
def pairs_dir(tmp_path_factory) -> Path:
    """Docstring pairs in `mine-pairs` output layout, each with the next function as its hard negative."""
    out = tmp_path_factory.mktemp("pairs")
    items = list(FUNCTIONS.items())
    rows = []
    for n, (query, code) in enumerate(items):
        negative = items[(n + 1) % len(items)][1]
        pair = Pair("docstring", "acme/shop", "c0ffee", "", "shop/util.py", code.split("(")[0][4:], query,
                    [f"shop/util.py::{n}"], [code], [f"shop/util.py::{n + 1}"], [negative])
        rows.append({**pair.__dict__, "dedup_key": pair.dedup_key()})
    (out / "acme+shop").mkdir()
    pl.DataFrame(rows, schema=PAIR_SCHEMA).write_parquet(out / "acme+shop" / "docstring.parquet")
    return out


def with_second_repo(pairs_dir: Path, tmp_path: Path) -> Path:
    """The fixture's pairs plus a copy of them under another repository."""
    both = tmp_path / "both"
    shutil.copytree(pairs_dir, both)
    frame = pl.read_parquet(pairs_dir / "acme+shop" / "docstring.parquet").with_columns(pl.lit("acme/cart").alias("repo"))
    (both / "acme+cart").mkdir()
    frame.write_parquet(both / "acme+cart" / "docstring.parquet")
    return both
