"""Checkpoint directories: written atomically, loadable by plain transformers / vLLM.

Layout of `<directory>/`:

    config.json, model.safetensors, generation_config.json   the policy's weights (for LoRA
                                                             the MERGED full model)
    tokenizer files                                          the tokenizer, saved alongside
    adapter/                                                 LoRA only: the peft adapter
    optimizer.pt                                             AdamW state (torch.save), in
                                                             torch's AdamW format whichever
                                                             backend wrote it (trainer.optim)
    trainer_state.json                                       version, steps, settings, base,
                                                             update backend (optimizer, zero)

Everything is written into a temp directory next to the target and renamed into place; an
existing checkpoint at the same path is moved aside first and removed after the rename, so
a reader sees the old checkpoint or the new one, never half of one.

The caller snapshots the tensors (on the compute thread, between two steps) and hands them
over in a `CheckpointContents`, so writing can happen off the compute thread. This module
knows nothing of engines, samples or losses.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

ADAPTER_DIR = "adapter"
OPTIMIZER_FILE = "optimizer.pt"
STATE_FILE = "trainer_state.json"


@dataclass
class CheckpointContents:
    weights: dict[str, torch.Tensor]  # plain-architecture names (merged for LoRA)
    hf_model: Any  # a transformers model whose config/save_pretrained describe `weights`
    tokenizer: Any  # a transformers tokenizer
    optimizer_state: dict[str, Any]
    trainer_state: dict[str, Any]
    write_adapter: Callable[[Path], None] | None = None  # LoRA: writes the adapter dir


def write_checkpoint(directory: str | Path, contents: CheckpointContents) -> Path:
    target = Path(directory).expanduser().resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        contents.hf_model.save_pretrained(staging, state_dict=contents.weights)
        contents.tokenizer.save_pretrained(staging)
        if contents.write_adapter is not None:
            contents.write_adapter(staging / ADAPTER_DIR)
        torch.save(contents.optimizer_state, staging / OPTIMIZER_FILE)
        (staging / STATE_FILE).write_text(json.dumps(contents.trainer_state, indent=2))
        _replace_dir(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _replace_dir(staging: Path, target: Path) -> None:
    if not target.exists():
        staging.rename(target)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    old.rmdir()
    target.rename(old)
    staging.rename(target)
    shutil.rmtree(old, ignore_errors=True)


def is_checkpoint(directory: str | Path) -> bool:
    return (Path(directory) / STATE_FILE).is_file()


def read_trainer_state(directory: str | Path) -> dict[str, Any]:
    return json.loads((Path(directory) / STATE_FILE).read_text())


def read_optimizer_state(directory: str | Path) -> dict[str, Any]:
    return torch.load(Path(directory) / OPTIMIZER_FILE, map_location="cpu", weights_only=True)


def adapter_dir(directory: str | Path) -> Path:
    return Path(directory) / ADAPTER_DIR
