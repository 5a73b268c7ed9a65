"""Checkpoint directories: written atomically, loadable by plain transformers / vLLM.

Layout of `<directory>/`:

    config.json, model.safetensors, generation_config.json   the policy's weights (for LoRA
                                                             the MERGED full model)
    tokenizer files                                          the tokenizer, saved alongside
    adapter/                                                 LoRA only: the peft adapter
    optimizer.pt                                             AdamW state (torch.save), in
                                                             torch's AdamW format whichever
                                                             backend wrote it (trainer.optim);
                                                             only in a RESUMABLE checkpoint
    trainer_state.json                                       version, steps, settings, base,
                                                             update backend (optimizer, zero)

Everything is written into a temp directory next to the target and renamed into place; an
existing checkpoint at the same path is moved aside first and removed after the rename, so
a reader sees the old checkpoint or the new one, never half of one. Before anything is
written, the target's filesystem must have room for the whole checkpoint plus a margin
(`InsufficientDisk` otherwise: nothing is written); a failed write removes its staging
directory. A target whose path climbs out with `..` (e.g. a policy name `"../../x"` that got past the
wire checks) is refused (`CheckpointPathError`), never written.

A checkpoint is resumable (the default: float32 master weights + optimizer state, what a
restart needs) or an export (`resumable=False`: weights only, in the dtype the policy
trains in — bf16 under bf16 autocast — for serving/evaluation; loading it as `resume_from`
starts a fresh optimizer).

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

from trainer.errors import CheckpointPathError, InsufficientDisk
from trainer.types import OPTIMIZER_FILE

ADAPTER_DIR = "adapter"
STATE_FILE = "trainer_state.json"


@dataclass
class CheckpointContents:
    weights: dict[str, torch.Tensor]  # plain-architecture names (merged for LoRA)
    hf_model: Any  # a transformers model whose config/save_pretrained describe `weights`
    tokenizer: Any  # a transformers tokenizer
    optimizer_state: dict[str, Any] | None  # None: an export checkpoint (weights only)
    trainer_state: dict[str, Any]
    write_adapter: Callable[[Path], None] | None = None  # LoRA: writes the adapter dir


# room left on the filesystem besides the checkpoint's own bytes: config, tokenizer and
# safetensors headers (a few MB), and not filling a disk others write to
DISK_MARGIN_BYTES = 256 * 2**20
DISK_MARGIN_FRACTION = 0.05


def write_checkpoint(directory: str | Path, contents: CheckpointContents) -> Path:
    target = contained_path(directory)
    target.parent.mkdir(parents=True, exist_ok=True)
    check_disk_space(target.parent, checkpoint_bytes(contents))
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        contents.hf_model.save_pretrained(staging, state_dict=contents.weights)
        contents.tokenizer.save_pretrained(staging)
        if contents.write_adapter is not None:
            contents.write_adapter(staging / ADAPTER_DIR)
        if contents.optimizer_state is not None:
            torch.save(contents.optimizer_state, staging / OPTIMIZER_FILE)
        (staging / STATE_FILE).write_text(json.dumps(contents.trainer_state, indent=2))
        _replace_dir(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def contained_path(directory: str | Path) -> Path:
    """The absolute target; refused when a `..` component takes it out of the directory its
    path names (a name must never choose where a checkpoint lands; the gateway also checks
    that the resolved path lies in its state directory)."""
    path = Path(directory).expanduser()
    if ".." in path.parts:
        raise CheckpointPathError(f"checkpoint path {str(directory)!r} climbs out with '..'")
    return path.resolve()


def _tensor_bytes(value: Any, seen: set[int]) -> int:
    if isinstance(value, torch.Tensor):
        key = value.untyped_storage().data_ptr()
        if key in seen:
            return 0
        seen.add(key)
        return value.untyped_storage().nbytes()
    if isinstance(value, dict):
        return sum(_tensor_bytes(v, seen) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(_tensor_bytes(v, seen) for v in value)
    return 0


def checkpoint_bytes(contents: CheckpointContents) -> int:
    """What the weights and the optimizer state will take on disk (tied tensors once)."""
    seen: set[int] = set()
    return _tensor_bytes(contents.weights, seen) + _tensor_bytes(contents.optimizer_state, seen)


def check_disk_space(directory: Path, needed: int) -> None:
    """Raise `InsufficientDisk` unless `directory`'s filesystem has room for `needed` bytes
    plus the margin."""
    want = int(needed * (1 + DISK_MARGIN_FRACTION)) + DISK_MARGIN_BYTES
    free = shutil.disk_usage(directory).free
    if free < want:
        raise InsufficientDisk(
            f"not enough disk space for a checkpoint in {directory}: it needs "
            f"{want / 2**30:.2f} GiB (with margin), {free / 2**30:.2f} GiB are free",
            needed=want,
            free=free,
        )


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


def has_optimizer_state(directory: str | Path) -> bool:
    return (Path(directory) / OPTIMIZER_FILE).is_file()


def read_optimizer_state(directory: str | Path) -> dict[str, Any]:
    return torch.load(Path(directory) / OPTIMIZER_FILE, map_location="cpu", weights_only=True)


def adapter_dir(directory: str | Path) -> Path:
    return Path(directory) / ADAPTER_DIR
