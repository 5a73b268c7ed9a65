"""The trainer's master weights, and how they reach the engine's inference copy.

Two kinds, one face:

- `FullMaster`: every parameter trains, kept in float32 (bf16 master weights lose small
  AdamW updates: an update below ~1/256 of a weight rounds away). With a `compute_dtype`
  narrower than float32 (bf16 where the hardware is fast at it) it also keeps a
  *compute copy* in that dtype: forward and backward run on it with no autocast, so no
  weight is re-cast in every forward and the elementwise work between the matmuls runs
  in bf16 too; the update backend moves its gradients into the float32 masters after each
  backward (`compute_pairs`) and copies the stepped masters back into it. After a step
  each master parameter is copied (cast) into the served copy.
- `LoraMaster`: a peft LoRA model — float32 adapters on a frozen base. After a step each
  adapted layer's merged weight W + scale·B·A (`get_delta_weight`) is written into the
  served copy; the served model never carries LoRA modules, so decoding costs nothing extra.

Both give the reference policy for the KL term (LoRA: the same model with adapters
disabled; full: a frozen copy of the base, loaded only when first needed) and a snapshot
of the merged weights under plain-architecture names for checkpoints.

Knows nothing of samples, losses or the engine's internals (only its `nn.Module`).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator

import torch
from peft import PeftModel
from peft.tuners.lora import LoraLayer

from trainer.engine.weights import copy_weights_into
from trainer.policy.batching import MicroBatch
from trainer.policy.logprobs import completion_logprobs

_PEFT_PREFIX = "base_model.model."


def _snapshot(named: Iterator[tuple[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Detached clones, keeping tied tensors tied (one clone per storage)."""
    clones: dict[int, torch.Tensor] = {}
    out: dict[str, torch.Tensor] = {}
    for name, tensor in named:
        key = tensor.data_ptr()
        if key not in clones:
            clones[key] = tensor.detach().clone()
        out[name] = clones[key]
    return out


class FullMaster:
    """All parameters train (float32 masters), on a compute copy when `compute_dtype`
    is narrower than the masters'."""

    kind = "full"

    def __init__(
        self,
        model: torch.nn.Module,
        load_reference: Callable[[], torch.nn.Module],
        compute_dtype: torch.dtype | None = None,
    ):
        self.model = model
        self._load_reference = load_reference
        self._reference: torch.nn.Module | None = None
        for p in model.parameters():
            p.requires_grad_(True)
        master_dtype = next(model.parameters()).dtype
        self.compute_model = model  # what forward and backward run on
        if compute_dtype is not None and compute_dtype.itemsize < master_dtype.itemsize:
            # `.to` converts a tied parameter once: embeddings and LM head stay tied
            self.compute_model = copy.deepcopy(model).to(compute_dtype)

    def compute_pairs(self) -> list[tuple[torch.nn.Parameter, torch.nn.Parameter]]:
        """(master, compute copy) per trainable parameter, in `trainable_parameters`
        order; empty when forward and backward run on the masters themselves."""
        if self.compute_model is self.model:
            return []
        copies = dict(self.compute_model.named_parameters())
        return [(p, copies[name]) for name, p in self.model.named_parameters() if p.requires_grad]

    @property
    def hf_model(self) -> torch.nn.Module:
        """The transformers model to save (its config describes the saved weights)."""
        return self.model

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def engine_weights(self) -> Iterator[tuple[str, torch.Tensor]]:
        """What the served copy needs after a step, under plain-architecture names."""
        return ((name, p.detach()) for name, p in self.model.named_parameters())

    @torch.no_grad()
    def copy_into(self, served: torch.nn.Module) -> None:
        copy_weights_into(served, self.engine_weights())

    @torch.no_grad()
    def reference_logprobs(self, batch: MicroBatch) -> torch.Tensor:
        if self._reference is None:
            self._reference = self._load_reference()
            self._reference.eval().requires_grad_(False)
        return completion_logprobs(self._reference, batch)

    def merged_state_dict(self, share_frozen: bool = True) -> dict[str, torch.Tensor]:
        """Clones of every tensor (nothing here is frozen, so `share_frozen` changes nothing)."""
        return _snapshot((k, v) for k, v in self.model.state_dict().items())


class LoraMaster:
    """float32 LoRA adapters on a frozen base (a `peft.PeftModel`)."""

    kind = "lora"

    def __init__(self, peft_model: PeftModel, adapter: str = "default"):
        self.peft_model = peft_model
        self.model = peft_model.get_base_model()  # LoRA layers are injected in place
        self.compute_model = self.model  # autocast over the float32 adapters and base
        self.adapter = adapter

    def compute_pairs(self) -> list[tuple[torch.nn.Parameter, torch.nn.Parameter]]:
        return []

    @property
    def hf_model(self) -> torch.nn.Module:
        return self.model

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.peft_model.parameters() if p.requires_grad]

    def lora_layers(self) -> Iterator[tuple[str, LoraLayer]]:
        """(plain-architecture module name, LoRA layer) for every adapted layer."""
        for name, module in self.peft_model.named_modules():
            if isinstance(module, LoraLayer) and self.adapter in module.lora_A:
                yield name.removeprefix(_PEFT_PREFIX), module

    def _merged_weight(self, layer: LoraLayer) -> torch.Tensor:
        base = layer.get_base_layer().weight
        return base + layer.get_delta_weight(self.adapter).to(base.dtype)

    @torch.no_grad()
    def engine_weights(self) -> Iterator[tuple[str, torch.Tensor]]:
        """Only the adapted layers change: their merged weights (computed lazily)."""
        for name, layer in self.lora_layers():
            yield f"{name}.weight", self._merged_weight(layer).detach()

    @torch.no_grad()
    def copy_into(self, served: torch.nn.Module) -> None:
        copy_weights_into(served, self.engine_weights())

    @torch.no_grad()
    def reference_logprobs(self, batch: MicroBatch) -> torch.Tensor:
        with self.peft_model.disable_adapter():
            return completion_logprobs(self.model, batch)

    @torch.no_grad()
    def merged_state_dict(self, share_frozen: bool = True) -> dict[str, torch.Tensor]:
        """Plain-architecture names; frozen base tensors are shared (they never change)
        unless `share_frozen` is off (their storage may not outlive the call, e.g. ZeRO-3
        gathered parameters); adapted weights are merged fresh."""
        out: dict[str, torch.Tensor] = {}
        for name, tensor in self.model.state_dict().items():
            if ".lora_" in name:
                continue
            out[name.replace(".base_layer.", ".")] = (
                tensor.detach() if share_frozen else tensor.detach().clone()
            )
        for name, layer in self.lora_layers():
            out[f"{name}.weight"] = self._merged_weight(layer).detach().clone()
        return out


def autocast_context(device: torch.device, compute_dtype: torch.dtype, master_dtype: torch.dtype):
    """bf16/fp16 compute on float32 master weights through autocast; no-op when equal."""
    if compute_dtype == master_dtype:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=compute_dtype)
