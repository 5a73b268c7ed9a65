"""Update backends: how a policy's gradients become new master weights.

One face (`UpdateBackend`), two implementations, picked by `build_update_backend`:

- `torch` (`trainer.optim.torch.TorchUpdate`, the default): `loss.backward()` per
  micro-batch, `clip_grad_norm_`, one fused `torch.optim.AdamW` step.
- `deepspeed` (`trainer.optim.deepspeed.DeepSpeedUpdate`): the same AdamW through a
  `deepspeed.initialize` engine with ZeRO stage 0-3, in this one process (world size 1).

The trainer (`trainer.policy.trainer`) drives a step the same way for both:

    with backend.exclusive():
        backend.zero_grad()
        for batch in micro_batches:
            logprobs_N, reference_N = backend.forward(batch, use_reference)
            backend.backward(loss)                 # loss already divided by the batch's tokens
        grad_norm = backend.clip_and_step(settings)  # steps only when grad_norm is finite
        with backend.full_weights():               # ZeRO-3: parameters gathered
            engine.load_weights(master.engine_weights())

`forward` runs the caller's `ForwardFn` (master logprobs, and the reference's when the KL
term is on); DeepSpeed runs it inside its engine so ZeRO-3 can gather parameters.

Optimizer state (`state_dict` / `load_state_dict`, written to a checkpoint's
`optimizer.pt`) has ONE format for both backends: torch's `AdamW.state_dict()` over the
trainable parameters in `parameters` order (per-parameter `step`, `exp_avg`,
`exp_avg_sq`). So a checkpoint written by either backend, or by any ZeRO stage,
resumes under any other.

Knows nothing of samples, losses, engines or checkpoints' layout.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

import torch

from trainer.config import OptimizerKind, TrainSettings

# (micro-batch, use_reference) -> (logprobs_N with grad, reference logprobs_N or None)
ForwardFn = Callable[[Any, bool], tuple[torch.Tensor, torch.Tensor | None]]


@runtime_checkable
class UpdateBackend(Protocol):
    kind: str  # "torch" | "deepspeed"
    zero_stage: int | None  # DeepSpeed's ZeRO stage (None: torch)
    parameters: list[torch.nn.Parameter]  # the trainable parameters, in state_dict order
    gathers_weights: bool  # full values only inside `full_weights()` (ZeRO-3)

    @property
    def optimizer(self) -> Any:
        """The optimizer whose `param_groups` carry lr / betas / weight decay."""
        ...

    def exclusive(self) -> AbstractContextManager[None]:
        """Held around a whole update (forward/backward/step/weight copy)."""
        ...

    def forward(
        self, batch: Any, use_reference: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None]: ...

    def backward(self, loss: torch.Tensor) -> None:
        """Accumulate `loss`'s gradients (no scaling: the loss is already normalised)."""
        ...

    def clip_and_step(self, settings: TrainSettings) -> float:
        """Clip to `settings.max_grad_norm`, apply lr / betas / weight decay from `settings`
        and step, unless the gradient norm (returned) is not finite: then nothing moves."""
        ...

    def zero_grad(self) -> None: ...

    def full_weights(self) -> AbstractContextManager[None]:
        """Within it the master parameters hold their full values (ZeRO-3 gathers them)."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """A detached copy of the optimizer state, in torch AdamW's format."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


def build_update_backend(
    kind: OptimizerKind,
    *,
    model: torch.nn.Module,
    parameters: list[torch.nn.Parameter],
    forward: ForwardFn,
    zero_stage: int | None = None,
    compute_pairs: list[tuple[torch.nn.Parameter, torch.nn.Parameter]] | None = None,
) -> UpdateBackend:
    """`kind` "torch" (no `zero_stage`) or "deepspeed" (ZeRO `zero_stage`, default 0).

    `model` owns every parameter the forward uses (DeepSpeed wraps it; ZeRO-3 partitions
    it); `parameters` are the trainable ones, in the order optimizer state is saved;
    `compute_pairs` (torch only): (master, compute copy) per parameter when `forward`
    runs on a narrower copy of the masters (`trainer.policy.master.FullMaster`)."""
    if kind == "torch":
        assert zero_stage is None, "ZeRO stages are DeepSpeed's"
        from trainer.optim.torch import TorchUpdate

        return TorchUpdate(parameters, forward, compute_pairs)
    assert not compute_pairs, "DeepSpeed trains its own parameters: no compute copy"
    if kind == "deepspeed":
        from trainer.optim.deepspeed import DeepSpeedUpdate  # imports deepspeed

        return DeepSpeedUpdate(model, parameters, forward, zero_stage=zero_stage or 0)
    raise ValueError(f"unknown optimizer backend {kind!r}")


# what an optimizer is built with before any settings arrive: every step applies its own
# (adamw_hyperparameters) before stepping, so these values never make an update (lr 0)
INITIAL_ADAMW: dict[str, Any] = {"lr": 0.0, "betas": (0.9, 0.999), "weight_decay": 0.0}


def adamw_hyperparameters(settings: TrainSettings) -> dict[str, Any]:
    """What a step reads from the live settings, as AdamW param-group keys."""
    return {
        "lr": settings.lr,
        "weight_decay": settings.weight_decay,
        "betas": tuple(settings.adam_betas),
    }
