"""Checkpoint directories: written atomically, loadable by plain transformers / vLLM.

Layout of `<directory>/`:

    config.json, model.safetensors, generation_config.json   the policy's weights (for LoRA
                                                             the MERGED full model), in the
                                                             dtype the policy trains in
    tokenizer files                                          the tokenizer, saved alongside
    adapter/                                                 LoRA only: the peft adapter
    optimizer.pt                                             AdamW state (torch.save), in
                                                             torch's AdamW format whichever
                                                             backend wrote it (trainer.optim);
                                                             only in a RESUMABLE checkpoint
    master_weights.pt                                        the float32 master weights
                                                             (torch.save, the model's
                                                             state_dict names): only in a
                                                             resumable checkpoint whose
                                                             weights are narrower (bf16)
    trainer_state.json                                       version, steps, settings, base,
                                                             update backend (optimizer, zero)

Everything is written into a temp directory next to the target and renamed into place; an
existing checkpoint at the same path is moved aside first and removed after the rename, so
a reader sees the old checkpoint or the new one, never half of one. Before anything is
written, the target's filesystem must have room for the whole checkpoint plus a margin
(`InsufficientDisk` otherwise: nothing is written); a failed write removes its staging
directory. A target whose path climbs out with `..` (e.g. a policy name `"../../x"` that got past the
wire checks) is refused (`CheckpointPathError`), never written. Files and directories get
the modes any file the process creates gets (0644 / 0755 under the usual umask 022:
readable by the group; a checkpoint holds no secret), not the 0600 / 0700 that safetensors
and the staging directory would leave.

Weights are always saved in the dtype the policy trains in (bf16 under bf16 autocast; the
engine's when it serves wider), so `from_pretrained(directory)` gets what was trained and
served. A checkpoint is resumable (the default: plus the optimizer state and, where the
masters are wider than those weights, `master_weights.pt` — what a restart needs to continue
exactly) or weights only (`resumable=False`: serving, evaluation, sharing; loading it as
`resume_from` starts a fresh optimizer from the saved weights). A checkpoint written before
`master_weights.pt` existed holds float32 weights and resumes from them as before.

The caller snapshots the tensors (on the compute thread, between two steps) and hands them
over in a `CheckpointContents`, so writing can happen off the compute thread. This module
knows nothing of engines, samples or losses.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from trainer.errors import CheckpointPathError, InsufficientDisk
from trainer.types import MASTER_WEIGHTS_FILE, OPTIMIZER_FILE

ADAPTER_DIR = "adapter"
STATE_FILE = "trainer_state.json"


@dataclass
class CheckpointContents:
    weights: dict[str, torch.Tensor]  # plain-architecture names (merged for LoRA)
    hf_model: Any  # a transformers model whose config/save_pretrained describe `weights`
    tokenizer: Any  # a transformers tokenizer
    optimizer_state: dict[str, Any] | None  # None: weights only (not resumable)
    trainer_state: dict[str, Any]
    write_adapter: Callable[[Path], None] | None = None  # LoRA: writes the adapter dir
    # float32 masters when `weights` are narrower (a resumable checkpoint only)
    master_weights: dict[str, torch.Tensor] | None = None


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
        weights_dtype = _floating_dtype(contents.weights)  # save_pretrained empties the dict
        contents.hf_model.save_pretrained(staging, state_dict=contents.weights)
        _declare_weights_dtype(staging, weights_dtype)
        contents.tokenizer.save_pretrained(staging)
        if contents.write_adapter is not None:
            contents.write_adapter(staging / ADAPTER_DIR)
        if contents.optimizer_state is not None:
            torch.save(contents.optimizer_state, staging / OPTIMIZER_FILE)
        if contents.master_weights is not None:
            torch.save(contents.master_weights, staging / MASTER_WEIGHTS_FILE)
        (staging / STATE_FILE).write_text(json.dumps(contents.trainer_state, indent=2))
        _give_usual_modes(staging)
        _replace_dir(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _floating_dtype(weights: dict[str, torch.Tensor]) -> torch.dtype | None:
    return next((t.dtype for t in weights.values() if t.is_floating_point()), None)


def _declare_weights_dtype(directory: Path, dtype: torch.dtype | None) -> None:
    """config.json names the dtype of the saved weights, not the (float32) master model's,
    so `from_pretrained(dtype="auto")` and vLLM load them as saved."""
    config_path = directory / "config.json"
    if dtype is None or not config_path.is_file():
        return
    config = json.loads(config_path.read_text())
    name = str(dtype).removeprefix("torch.")
    for key in ("dtype", "torch_dtype"):  # transformers 5 / 4
        if key in config:
            config[key] = name
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


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
    """What the weights, the masters and the optimizer state will take on disk (tied
    tensors once)."""
    seen: set[int] = set()
    return (
        _tensor_bytes(contents.weights, seen)
        + _tensor_bytes(contents.master_weights, seen)
        + _tensor_bytes(contents.optimizer_state, seen)
    )


def _current_umask() -> int:
    """Read without setting it where Linux tells it (setting it, even back, races with
    other threads creating files)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _give_usual_modes(directory: Path) -> None:
    """The modes a plain `open`/`mkdir` would give (0644 / 0755 under umask 022) to every
    file and directory under `directory`, itself included."""
    mask = _current_umask()
    for root, _, files in os.walk(directory):
        Path(root).chmod(0o777 & ~mask)
        for name in files:
            path = Path(root, name)
            if not path.is_symlink():
                path.chmod(0o666 & ~mask)


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


def read_master_weights(directory: str | Path) -> dict[str, torch.Tensor] | None:
    """The float32 masters of a resumable checkpoint whose weights are narrower; None when
    its weights are the masters (float32 training, an older checkpoint) or it has none."""
    path = Path(directory) / MASTER_WEIGHTS_FILE
    if not path.is_file():
        return None
    return torch.load(path, map_location="cpu", weights_only=True)


def adapter_dir(directory: str | Path) -> Path:
    return Path(directory) / ADAPTER_DIR
