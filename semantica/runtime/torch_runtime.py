"""The encoder's PyTorch forward pass (`encoder.runtime: torch`): the transformers checkpoint itself, fp32, on CPU or
a CUDA device (training and GPU workers); pooling on the model's device (semantica/runtime/pooling.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from semantica.config import EncoderConfig
from semantica.runtime.forward import EncoderLoadError, ForwardOutput
from semantica.runtime.pooling import torch_mean_pool


class TorchForward:
    """PyTorch (CPU or CUDA), fp32."""

    def __init__(self, config: EncoderConfig, model_path: Path, device: str) -> None:
        import torch
        from transformers import AutoModel
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # a per-load progress bar is noise in CLI and test output
        if config.torch_threads > 0:
            torch.set_num_threads(config.torch_threads)
        try:
            self.model = AutoModel.from_pretrained(str(model_path)).to(device).eval()
        except Exception as exc:  # transformers raises many types; all mean "cannot load"
            raise EncoderLoadError(f"cannot load encoder from {model_path}: {exc}") from exc
        self.device = device

    def __call__(self, inputs: dict[str, np.ndarray], keep_hidden: bool) -> ForwardOutput:
        """Pooled on the model's device: without token vectors only (batch, dim) floats leave a GPU."""
        import torch

        with torch.inference_mode():
            batch = {name: torch.from_numpy(array).to(self.device) for name, array in inputs.items()}
            hidden = self.model(**batch).last_hidden_state.float()
            pooled = torch_mean_pool(hidden, batch["attention_mask"]).cpu().numpy()
            return ForwardOutput(pooled, hidden.cpu().numpy() if keep_hidden else None)
