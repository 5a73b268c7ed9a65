"""`DeepSpeedUpdate`: the update step through a DeepSpeed engine, ZeRO stage 0-3, in this
one process (world size 1).

`gateway serve --optimizer deepspeed --zero N` builds one per policy. What it does:

- process group: the first one in the process starts `torch.distributed` itself, rank 0 of
  1, over an in-memory store (no port to pick): gloo on CPU, nccl where the master
  weights are on CUDA; one already started (e.g. by a launcher) is used as it is.
  `RANK`/`LOCAL_RANK`/`WORLD_SIZE` default to 0/0/1 (DeepSpeed reads `LOCAL_RANK`). On a
  CPU-only world of one, DeepSpeed's shared-memory all-reduce op is switched off: it
  would otherwise be compiled (a 74 s C++ build on first use here) to talk to no one.
- config (`deepspeed_config`), from the run's `TrainSettings`: ZeRO `stage`; fp32 model
  states (no `bf16`/`fp16` section: the trainer's bf16 autocast on fp32 master weights
  is the compute precision, exactly as with the torch backend); `gradient_clipping` =
  `max_grad_norm`; optimizer `AdamW` with `torch_adam` (torch's own AdamW, fused on
  CPU/CUDA — nothing to compile; DeepSpeed's FusedAdam / CPUAdam would need op builds);
  `managed_gradient_accumulation: false`, so our variable number of micro-batches per
  step accumulates until the one `engine.step()` that ends the step (each micro-batch's
  loss is already divided by the whole batch's token count: `backward(scale_wrt_gas=
  False)`), and N micro-batches give the same update as one batch (tested).
- live settings: before each step, lr / betas / weight decay go into the optimizer's
  param groups and `max_grad_norm` into the engine's clipping, so a PATCHed run applies
  at the next step like the torch backend.
- forward: the trainer's forward function runs inside the engine (`engine(batch, ...)`),
  wrapped in a module that owns the master model; under ZeRO-3 the output embedding's
  weight, which the chunked log-softmax reads outside the head's own forward, is
  registered as an external parameter of that module, so it is gathered for the forward
  and the backward.
- weights out (`full_weights`): under ZeRO-3 all master parameters are gathered
  (`deepspeed.zero.GatheredParameters`) while the served copy is refreshed and while a
  checkpoint snapshots them; stages 0-2 keep full parameters anyway.
- optimizer state: written as torch AdamW's `state_dict()` over the trainable
  parameters (stage 0 is torch's AdamW itself; ZeRO 1-3 assemble each parameter's
  `exp_avg`/`exp_avg_sq` with `deepspeed.utils.safe_get_full_optimizer_state`, and load
  with `safe_set_full_optimizer_state`), so `optimizer.pt` resumes under any backend and
  stage.
- one update at a time per process (a lock): every policy's engine shares the process
  group, and two policies must not interleave collectives on it.

Measured on a 2-core CPU box (no GPU; DeepSpeed 0.19.8, torch 2.13 CPU, gloo; the full
table is in docs/deepspeed.md): ZeRO stages 0, 1, 2 and 3 ALL ran real steps, tiny and
SmolLM2-135M, and match torch AdamW's update (tested). One SmolLM2 step of 8 x 256
tokens (bf16 autocast, shared box, ±20%): torch backend 7-8 s, ZeRO-0 9 s, ZeRO-1 11 s,
ZeRO-2 10 s, ZeRO-3 14-15 s; peak RSS 5.5 / 5.9 / 6.5 / 6.6 / 8.2 GB; tiny ~1.1 s at
every stage. At world size 1 ZeRO shards nothing: stages 1-3 only add DeepSpeed's own
fp32 copies, so here they cost more than stage 0; they pay off with several GPUs, which
this single-process backend does not drive. Not run here (no GPU): the nccl path,
DeepSpeed's bf16/fp16 model states, CPU/NVMe offload, FusedAdam/CPUAdam.

Knows nothing of samples, losses, engines or checkpoints' layout.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import math
import os
import threading
from typing import Any

import deepspeed
import deepspeed.ops
import torch
import torch.distributed as dist
from deepspeed.accelerator import get_accelerator
from deepspeed.utils import safe_get_full_optimizer_state, safe_set_full_optimizer_state

from trainer.config import TrainSettings
from trainer.optim import INITIAL_ADAMW, ForwardFn, adamw_hyperparameters
from trainer.optim.torch import load_adamw_state

log = logging.getLogger(__name__)

ADAM_STATE_KEYS = ("exp_avg", "exp_avg_sq")
# every DeepSpeed engine in the process shares the one process group: one update at a time
_UPDATE_LOCK = threading.RLock()
_GROUP_LOCK = threading.Lock()


def ensure_process_group(device: torch.device) -> str:
    """Start a world-of-one process group unless one exists; returns its backend."""
    with _GROUP_LOCK:
        if device.type == "cpu" and (not dist.is_initialized() or dist.get_world_size() == 1):
            # a world of one has no peer to share memory with; the op would be JIT-compiled
            deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False
        if dist.is_initialized():
            return str(dist.get_backend())
        for name, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1")):
            os.environ.setdefault(name, value)
        if os.environ["WORLD_SIZE"] != "1":
            raise RuntimeError(
                f"WORLD_SIZE={os.environ['WORLD_SIZE']} but no process group is started: "
                "the DeepSpeed backend trains in one process (world size 1)"
            )
        backend = "nccl" if device.type == "cuda" else "gloo"
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)
        log.info("started a %s process group of world size 1 for DeepSpeed", backend)
        return backend


def deepspeed_config(stage: int, settings: TrainSettings | None, fused: bool) -> dict[str, Any]:
    """The DeepSpeed config for one policy's engine (see the module docstring). `settings`
    None: the engine's first config, before any run's settings (each step applies its own
    before stepping, `_apply_settings`)."""
    adamw = adamw_hyperparameters(settings) if settings is not None else INITIAL_ADAMW
    return {
        "train_micro_batch_size_per_gpu": 1,  # bookkeeping only: we feed whole micro-batches
        "gradient_accumulation_steps": 1,
        "managed_gradient_accumulation": False,  # our engine.step() ends each accumulation
        # without settings any positive value: clipping on, each step sets its own
        "gradient_clipping": settings.max_grad_norm if settings is not None else 1.0,
        "zero_optimization": {"stage": stage},
        "optimizer": {
            "type": "AdamW",
            "params": {
                "lr": adamw["lr"],
                "betas": list(adamw["betas"]),
                "eps": 1e-8,
                "weight_decay": adamw["weight_decay"],
                "torch_adam": True,
                "fused": fused,
            },
        },
        "steps_per_print": 2**31 - 1,
        "wall_clock_breakdown": False,
    }


class _PolicyForward(torch.nn.Module):
    """The module DeepSpeed wraps: the master model, and the trainer's forward function."""

    def __init__(self, model: torch.nn.Module, forward: ForwardFn):
        super().__init__()
        self.model = model
        self._forward = forward

    def forward(self, batch: Any, use_reference: bool):
        return self._forward(batch, use_reference)


class DeepSpeedUpdate:
    """Implements `trainer.optim.UpdateBackend` with a DeepSpeed engine (ZeRO `zero_stage`)."""

    kind = "deepspeed"

    def __init__(
        self,
        model: torch.nn.Module,
        parameters: list[torch.nn.Parameter],
        forward: ForwardFn,
        zero_stage: int = 0,
    ):
        assert 0 <= zero_stage <= 3, zero_stage
        self.zero_stage = zero_stage
        self.gathers_weights = zero_stage == 3
        self._accumulating = False  # gradients since the last step or zero_grad
        self.parameters = parameters
        device = parameters[0].device
        accelerator = get_accelerator().device_name()
        if device.type != accelerator:
            raise ValueError(
                f"DeepSpeed runs on {accelerator} here but the master weights are on "
                f"{device.type}: pass --device {accelerator}"
            )
        self.process_group_backend = ensure_process_group(device)
        self.module = _PolicyForward(model, forward)
        if zero_stage == 3:
            head = model.get_output_embeddings()
            if head is not None and isinstance(getattr(head, "weight", None), torch.nn.Parameter):
                deepspeed.zero.register_external_parameter(self.module, head.weight)
        self.config = deepspeed_config(zero_stage, None, fused=device.type in ("cpu", "cuda"))
        logging.getLogger("DeepSpeed").setLevel(logging.WARNING)  # its config dump is INFO
        self.engine, *_ = deepspeed.initialize(
            model=self.module, model_parameters=parameters, config=self.config
        )
        log.info(
            "DeepSpeed engine: ZeRO stage %d, %s, %d trainable tensors",
            zero_stage,
            self.process_group_backend,
            len(parameters),
        )

    # -- the update -------------------------------------------------------------------------
    @property
    def optimizer(self) -> Any:
        return self.engine.optimizer

    def exclusive(self) -> contextlib.AbstractContextManager[Any]:
        return _UPDATE_LOCK

    def forward(self, batch: Any, use_reference: bool):
        return self.engine(batch, use_reference)

    def backward(self, loss: torch.Tensor) -> None:
        self._accumulating = True
        self.engine.backward(loss, scale_wrt_gas=False)

    def clip_and_step(self, settings: TrainSettings) -> float:
        self._apply_settings(settings)
        if self.zero_stage == 0:
            # a plain torch optimizer: no overflow check inside, so look before stepping
            grads = [p.grad for p in self.parameters if p.grad is not None]
            grad_norm = float(torch.nn.utils.get_total_norm(grads)) if grads else 0.0
            if not math.isfinite(grad_norm):
                self.zero_grad()
                return grad_norm
            self.engine.step()
            self._accumulating = False
            return grad_norm
        self.engine.step()  # ZeRO skips a step whose gradient norm is not finite
        self._accumulating = False
        norm = self.engine.get_global_grad_norm()
        return float(norm) if norm is not None else math.nan

    def _apply_settings(self, settings: TrainSettings) -> None:
        hyper = adamw_hyperparameters(settings)
        for group in self.engine.optimizer.param_groups:
            group.update(hyper)
        # clipping is read from the engine's config (stage 0) or the ZeRO optimizer (1-3)
        self.engine._config.gradient_clipping = settings.max_grad_norm
        if hasattr(self.engine.optimizer, "clip_grad"):
            self.engine.optimizer.clip_grad = settings.max_grad_norm

    def zero_grad(self) -> None:
        if self._accumulating and self.zero_stage in (1, 2):
            self._discard_accumulated()
        if self.zero_stage == 0:
            self.engine.zero_grad()
        else:
            self.engine.optimizer.zero_grad(set_to_none=True)
        self._accumulating = False

    def _discard_accumulated(self) -> None:
        """An update that failed between its first backward and its step: ZeRO 1/2 keep the
        gradients reduced so far in buffers of their own, which `zero_grad` leaves (they
        would leak into the next step; tested). Their overflow path is the one public way
        to drop them: a non-finite gradient makes `step()` skip and clear everything."""
        with torch.enable_grad():
            poison = torch.stack([(p * math.nan).sum() for p in self.parameters]).sum()
            self.engine.backward(poison, scale_wrt_gas=False)
        self.engine.step()
        assert not self.engine.was_step_applied(), "a poisoned step must be skipped"

    def full_weights(self) -> contextlib.AbstractContextManager[Any]:
        if self.zero_stage < 3:
            return contextlib.nullcontext()
        return deepspeed.zero.GatheredParameters(list(self.module.parameters()), modifier_rank=None)

    # -- optimizer state, in torch AdamW's format -------------------------------------------
    def _inner(self) -> torch.optim.Optimizer:
        """The torch AdamW that steps (ZeRO 1-3: over flat fp32 partitions)."""
        return self.engine.optimizer if self.zero_stage == 0 else self.engine.optimizer.optimizer

    def state_dict(self) -> dict[str, Any]:
        if self.zero_stage == 0:
            return copy.deepcopy(self.engine.optimizer.state_dict())
        inner = self._inner()
        groups = [{k: v for k, v in g.items() if k != "params"} for g in inner.param_groups[:1]]
        groups[0]["params"] = list(range(len(self.parameters)))
        steps = [s["step"] for s in inner.state.values() if "step" in s]
        if not steps:  # no step yet: AdamW's state is empty until its first step
            return {"state": {}, "param_groups": groups}
        step = float(steps[0])
        state = {}
        for index, param in enumerate(self.parameters):
            entry = {"step": torch.tensor(step, dtype=torch.float32)}
            for key in ADAM_STATE_KEYS:
                full = safe_get_full_optimizer_state(param, key)
                entry[key] = full.detach().clone().view(param_shape(param))
            state[index] = entry
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self.zero_stage == 0:
            load_adamw_state(self.engine.optimizer, state)
            return
        saved = state["state"]
        if not saved:
            return
        for index, entry in saved.items():
            param = self.parameters[int(index)]
            if entry["exp_avg"].numel() != param_numel(param):
                raise ValueError(
                    f"optimizer state does not fit this model: tensor {index} holds "
                    f"{entry['exp_avg'].numel()} values, the parameter {param_numel(param)}"
                )
        step = float(next(iter(saved.values()))["step"])
        inner = self._inner()
        group = inner.param_groups[0]
        on_device = bool(group.get("fused") or group.get("capturable"))
        zero = self.engine.optimizer
        # the flat fp32 partitions the inner AdamW steps (stage 3 hands them to its param
        # groups only while stepping)
        flats = (
            zero.fp32_partitioned_groups_flat
            if self.zero_stage == 3
            else zero.single_partition_of_fp32_groups
        )
        for flat in flats:
            inner.state[flat] = {
                "step": torch.tensor(
                    step, dtype=torch.float32, device=flat.device if on_device else "cpu"
                ),
                "exp_avg": torch.zeros_like(flat),
                "exp_avg_sq": torch.zeros_like(flat),
            }
        # ZeRO 1/2 link each parameter to its slice of the state after their first step;
        # the state now exists, so link it now
        link = getattr(self.engine.optimizer, "_lazy_init_hp_params_optimizer_state", None)
        if link is not None:
            self.engine.optimizer._hp_optimizer_states_linked = False
            link()
        for index, entry in saved.items():
            param = self.parameters[int(index)]
            for key in ADAM_STATE_KEYS:
                safe_set_full_optimizer_state(param, entry[key].flatten(), key)

    def close(self) -> None:
        with _UPDATE_LOCK:
            self.engine.destroy()


def param_numel(param: torch.nn.Parameter) -> int:
    return int(getattr(param, "ds_numel", param.numel()))


def param_shape(param: torch.nn.Parameter) -> torch.Size:
    return getattr(param, "ds_shape", param.shape)
