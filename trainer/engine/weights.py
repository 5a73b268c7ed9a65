"""Moving trained weights into an engine's served copy, and the face a trainable engine shows
the trainer (`TrainableEngine`): serve tokens, run a function between two decode steps,
take new weights by name. `TorchEngine` and the vLLM engine both implement it.

Knows nothing of optimizers, masters or samples.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol, runtime_checkable

import torch

from trainer.types import InferenceEngine


@torch.no_grad()
def copy_weights_into(model: torch.nn.Module, named: Iterable[tuple[str, torch.Tensor]]) -> None:
    """Copy (and cast) each named tensor into the parameter of that name in `model`."""
    params = dict(model.named_parameters())
    for name, tensor in named:
        params[name].copy_(tensor)


@runtime_checkable
class TrainableEngine(InferenceEngine, Protocol):
    """An inference engine a trainer can update in place, without restarting it."""

    async def run_exclusive(self, fn: Callable[[], Any], bump_version: bool = True) -> Any:
        """Run `fn` while no decode step runs (e.g. an update, then `load_weights`), then
        bump the weights version so version and served weights change together."""
        ...

    def load_weights(self, named: Iterable[tuple[str, torch.Tensor]]) -> None:
        """New values for some or all weights, under plain-architecture (transformers)
        names. Called from inside a `run_exclusive` function."""
        ...

    def shutdown(self) -> None: ...
