"""`semantica train-encoder`: contrastive fine-tuning of the bi-encoder on mined pairs (`semantica mine-pairs`).

InfoNCE over each batch: a query's positive against every other query's positive (in-batch negatives)
and the mined BM25 hard negatives, on mean-pooled, L2-normalised embeddings (`semantica.runtime.pooling.torch_mean_pool`,
the pooling `semantica.runtime.encoder.Encoder` serves with). CUDA with bf16 autocast when torch sees a GPU, else CPU.
Resumable: `OUT/checkpoints/last.pt` holds model, optimizer, step and RNG state; a re-run with the same
pairs continues from it and reaches the same weights as an uninterrupted run (the batch order is a
function of seed and epoch alone). `OUT` ends as a `from_pretrained` model directory plus
`train_card.json`, so `--set encoder.model_path=OUT` serves it.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from jobs.benchmark_repos import is_benchmark_repo
from jobs.train.pair_parts import PairsError, read_pair_rows
from semantica.config import Config, TrainEncoderConfig
from semantica.runtime.encoder import EncoderLoadError, choose_device, resolve_model_path
from semantica.runtime.pooling import torch_mean_pool

CHECKPOINT_DIR = "checkpoints"
CHECKPOINT_FILE = "last.pt"
CARD_FILE = "train_card.json"
PAIR_COLUMNS = ("repo", "kind", "query", "positive_documents", "negative_documents")


class TrainEncoderError(ValueError):
    """The pairs, base model or output directory cannot be trained with; the message says why."""


@dataclass(frozen=True)
class TrainingPair:
    """One query with its first positive document and up to `hard_negatives` mined negatives."""

    query: str
    positive: str
    negatives: tuple[str, ...]
    repo: str = ""


def pairs_hash(pairs_dir: Path, holdout: Sequence[str] = ()) -> str:
    """sha256 over the pairs' Parquet parts (names and bytes) and the held-out repositories: a checkpoint only
    resumes on the same training pairs."""
    digest = hashlib.sha256(json.dumps(sorted(holdout)).encode() if holdout else b"")
    for part in sorted(pairs_dir.glob("*/*.parquet")):
        digest.update(str(part.relative_to(pairs_dir)).encode())
        digest.update(part.read_bytes())
    return digest.hexdigest()


def read_pairs(pairs_dir: Path, kinds: Sequence[str], hard_negatives: int,
               holdout: Sequence[str] = ()) -> list[TrainingPair]:
    """The mined rows of the wanted kinds that have a query and a positive, in the files' order, less the held-out
    repositories' rows; refused when any row comes from a SWE-bench repository (the dev split measures on them)."""
    if not pairs_dir.is_dir():
        raise TrainEncoderError(f"--pairs {pairs_dir} is not a directory (run `semantica mine-pairs --out DIR` first)")
    try:
        rows = read_pair_rows(pairs_dir, PAIR_COLUMNS)
    except PairsError as exc:
        raise TrainEncoderError(str(exc)) from None
    banned = sorted({row["repo"] for row in rows if is_benchmark_repo(row["repo"])})
    if banned:
        raise TrainEncoderError(f"pairs from SWE-bench repositories must not train a shipped model: {', '.join(banned)}")
    held = set(holdout)
    unknown = sorted(held - {row["repo"] for row in rows})
    if unknown:
        raise TrainEncoderError(f"train_encoder.holdout_repos names repositories without pairs: {', '.join(unknown)}")
    out = []
    for row in rows:
        positives = row["positive_documents"] or []
        if row["kind"] in kinds and row["repo"] not in held and row["query"].strip() and positives:
            out.append(TrainingPair(row["query"], positives[0], tuple((row["negative_documents"] or [])[:hard_negatives]),
                                    row["repo"]))
    if not out:
        raise TrainEncoderError(f"no {'/'.join(kinds)} pairs with a query and a positive under {pairs_dir}")
    return out


def embed_batch(model: Any, tokenizer: Any, device: str, texts: Sequence[str], max_length: int) -> Any:
    """One batch's mean-pooled, L2-normalised vectors (bf16 autocast on CUDA): what training and the held-out
    measure (`lab.train.encoder_eval`) both encode with."""
    import torch

    batch = tokenizer(list(texts), padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    batch = {name: tensor.to(device) for name, tensor in batch.items()}
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.startswith("cuda")):
        hidden = model(**batch).last_hidden_state
    return torch_mean_pool(hidden, batch["attention_mask"])


class EncoderTrainer:
    """Trains one base checkpoint on one pairs directory into one output directory."""

    def __init__(self, config: Config, settings: TrainEncoderConfig, pairs_dir: str | Path, out: str | Path,
                 command: str = "", log: Callable[[str], None] = print) -> None:
        self.settings = settings
        self.pairs_dir = Path(pairs_dir)
        self.out = Path(out)
        if self.out.exists() and not self.out.is_dir():
            raise TrainEncoderError(f"--out {out} exists and is not a directory")
        self.command = command
        self.log = log
        self.pairs = read_pairs(self.pairs_dir, self.settings.kinds, self.settings.hard_negatives,
                                self.settings.holdout_repos)
        self.pairs_sha = pairs_hash(self.pairs_dir, self.settings.holdout_repos)
        try:
            self.base = resolve_model_path(self.settings.base_model or config.encoder.model_path)
            self.device = choose_device(self.settings.device)
        except EncoderLoadError as exc:
            raise TrainEncoderError(str(exc)) from None
        self._load()

    def _load(self) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        torch.manual_seed(self.settings.seed)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(self.base))
            self.model = AutoModel.from_pretrained(str(self.base)).to(self.device)
        except Exception as exc:  # transformers raises many types; all mean "cannot load"
            raise TrainEncoderError(f"cannot load the base model {self.base}: {exc}") from None
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=self.settings.learning_rate)
        self.step = 0
        self.start_loss: float | None = None

    # -- the loss -----------------------------------------------------------------------------------

    def _embed(self, texts: Sequence[str], max_length: int) -> Any:
        return embed_batch(self.model, self.tokenizer, self.device, texts, max_length)

    def loss(self, batch: Sequence[TrainingPair]) -> Any:
        """InfoNCE: each query against all positives of the batch (its own is the label) and all hard negatives."""
        import torch

        queries = self._embed([p.query for p in batch], self.settings.query_max_length)
        documents = [p.positive for p in batch] + [n for p in batch for n in p.negatives]
        scores = queries @ self._embed(documents, self.settings.max_length).T / self.settings.temperature
        return torch.nn.functional.cross_entropy(scores, torch.arange(len(batch), device=scores.device))

    def measure(self) -> float:
        """Mean loss over the first `eval_pairs` pairs in batches, without dropout or gradients."""
        import torch

        held = self.pairs[: max(1, self.settings.eval_pairs)]
        size = self.settings.batch_size
        self.model.eval()
        with torch.no_grad():
            losses = [float(self.loss(held[s: s + size])) * len(held[s: s + size]) for s in range(0, len(held), size)]
        self.model.train()
        return sum(losses) / len(held)

    # -- the schedule -------------------------------------------------------------------------------

    @property
    def steps_per_epoch(self) -> int:
        return max(1, len(self.pairs) // self.settings.batch_size)  # a last partial batch is left for the next epoch

    @property
    def total_steps(self) -> int:
        """`max_steps` when set (epochs continue past the first as needed), else `epochs` passes over the pairs."""
        return self.settings.max_steps if self.settings.max_steps > 0 else self.steps_per_epoch * max(1, self.settings.epochs)

    def batch_at(self, step: int) -> list[TrainingPair]:
        """The pairs of one step: a permutation seeded by (seed, epoch), so a resumed run sees the same batches."""
        import torch

        epoch, offset = divmod(step, self.steps_per_epoch)
        generator = torch.Generator().manual_seed(self.settings.seed * 1_000_003 + epoch)
        order = torch.randperm(len(self.pairs), generator=generator).tolist()
        size = min(self.settings.batch_size, len(self.pairs))
        return [self.pairs[i] for i in order[offset * size: offset * size + size]]

    # -- checkpoints --------------------------------------------------------------------------------

    @property
    def checkpoint_path(self) -> Path:
        return self.out / CHECKPOINT_DIR / CHECKPOINT_FILE

    def save_checkpoint(self) -> None:
        """Model, optimizer, step and RNG state, written to a temporary file and renamed (never half written)."""
        import torch

        state = {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(), "step": self.step,
                 "pairs_sha": self.pairs_sha, "start_loss": self.start_loss, "cpu_rng": torch.get_rng_state(),
                 "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []}
        self.checkpoint_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.checkpoint_path.with_suffix(".tmp")
        torch.save(state, tmp)
        os.replace(tmp, self.checkpoint_path)

    def resume(self) -> bool:
        """Continue from `OUT/checkpoints/last.pt` when there is one (refused when it was trained on other pairs)."""
        import torch

        if not self.checkpoint_path.is_file():
            return False
        state = torch.load(self.checkpoint_path, map_location=self.device, weights_only=False)
        if state["pairs_sha"] != self.pairs_sha:
            raise TrainEncoderError(f"{self.checkpoint_path} was trained on other pairs than {self.pairs_dir}: "
                                    "give a new --out or delete the checkpoint")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.step, self.start_loss = int(state["step"]), state["start_loss"]
        torch.set_rng_state(state["cpu_rng"])
        if state["cuda_rng"] and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        return True

    # -- the run ------------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        """Train to `total_steps` (from the last checkpoint when there is one); write the model and its card."""
        if self.resume():
            self.log(f"resumed from {self.checkpoint_path} at step {self.step}")
        if self.start_loss is None:
            self.start_loss = self.measure()
        self.model.train()
        total, settings = self.total_steps, self.settings
        self.log(f"training {self.base.name} on {len(self.pairs)} pairs, {self.device}, steps {self.step}->{total}")
        seen, since = 0, time.perf_counter()
        while self.step < total:
            batch = self.batch_at(self.step)
            loss = self.loss(batch)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.step += 1
            seen += len(batch)
            if self.step % max(1, settings.log_every) == 0 or self.step == total:
                rate = seen / max(time.perf_counter() - since, 1e-9)
                self.log(f"step {self.step}/{total} loss {float(loss.detach()):.4f} {rate:.1f} pairs/s")
                seen, since = 0, time.perf_counter()
            if settings.checkpoint_every > 0 and self.step % settings.checkpoint_every == 0:
                self.save_checkpoint()
        self.save_checkpoint()
        return self.save_model()

    def repo_counts(self) -> dict[str, int]:
        """Training pairs per repository (the card's corpus list)."""
        return dict(sorted(Counter(p.repo for p in self.pairs).items()))

    def save_model(self) -> dict[str, Any]:
        """`save_pretrained` of model and tokenizer into OUT, plus `train_card.json`."""
        self.model.save_pretrained(str(self.out))
        self.tokenizer.save_pretrained(str(self.out))
        card = {"base_model": str(self.base), "pairs_dir": str(self.pairs_dir), "pairs_sha256": self.pairs_sha,
                "pairs": len(self.pairs), "holdout_repos": list(self.settings.holdout_repos),
                "repos": self.repo_counts(), "hard_negatives": sum(len(p.negatives) for p in self.pairs),
                "command": self.command, "seed": self.settings.seed, "steps": self.step, "device": self.device,
                "start_loss": self.start_loss, "final_loss": self.measure(), "settings": asdict(self.settings)}
        (self.out / CARD_FILE).write_text(json.dumps(card, indent=2) + "\n")
        return card
