"""`TorchPolicyTrainer`: policy-gradient updates of one policy, on the engine's thread.

One `train_step`:
1. on the event loop (plain Python, cheap): advantages per episode, then the samples that
   train (`trainer.selection`) — zero-variance groups, stale (> `max_staleness` versions
   old) and malformed samples are dropped, each with its reason; then (off the loop) the
   surviving calls are merged into timelines per episode (`settings.merge`; calls longer
   than the training window are dropped as `too_long`). Nothing left: no step, the
   version stays. The `StepResult` says what became of every sample handed in.
2. in ONE `engine.run_exclusive` call (the engine's worker is the process's only torch
   compute thread; decoding pauses between two decode steps): micro-batches of at most
   `micro_batch_tokens` in the run's layout (padded rows or prefix-tree rows), per-token
   logprobs of the master model (where the hardware is fast at bf16: on the master's bf16
   compute copy, or under bf16 autocast on the float32 masters — LoRA, DeepSpeed),
   PPO-clip loss (token mean over the
   whole batch), backward and gradient accumulation, clip to `max_grad_norm`, one AdamW
   step with the lr / betas / weight decay read from this step's settings, then the new
   weights are copied into the engine's inference copy. `run_exclusive` bumps the version
   right after, so version and served weights change together.

Forward, backward, clipping and the step go through an update backend
(`trainer.optim`): torch's AdamW (the default) or a DeepSpeed ZeRO engine; the backend
also owns the optimizer state that checkpoints save.

Knows nothing of HTTP, the gateway's buffers or how samples were recorded.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from collections.abc import Sequence
from typing import Any

import torch

from trainer.advantages import compute_advantages
from trainer.checkpoint import CheckpointContents, write_checkpoint
from trainer.config import TrainSettings
from trainer.engine.weights import TrainableEngine
from trainer.losses import ppo_clip_loss
from trainer.memory import release_memory
from trainer.optim import UpdateBackend
from trainer.optim.torch import TorchUpdate
from trainer.policy.batching import MicroBatch, TrainItem, build_micro_batches, merge_calls
from trainer.policy.logprobs import completion_logprobs
from trainer.policy.master import FullMaster, LoraMaster, autocast_context
from trainer.policy.threads import single_threaded
from trainer.selection import select_samples
from trainer.types import Group, StepResult

Master = FullMaster | LoraMaster


def _std(values: Sequence[float]) -> float:
    return statistics.pstdev(values) if len(values) > 1 else 0.0


def _cast_floats(weights: dict[str, torch.Tensor], dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """Floating tensors cast to `dtype`, tied tensors staying tied (one cast per storage)."""
    casts: dict[int, torch.Tensor] = {}
    out = {}
    for name, tensor in weights.items():
        if not tensor.is_floating_point():
            out[name] = tensor
            continue
        key = tensor.data_ptr()
        if key not in casts:
            casts[key] = tensor.to(dtype)
        out[name] = casts[key]
    return out


def master_forward(master: Master):
    """The update's forward: the master's logprobs, and the reference's for the KL term."""

    def forward(batch: MicroBatch, use_reference: bool):
        logprobs_N = completion_logprobs(master.compute_model, batch)
        reference_N = master.reference_logprobs(batch) if use_reference else None
        return logprobs_N, reference_N

    return forward


class TorchPolicyTrainer:
    """Implements `trainer.types.PolicyTrainer` with torch on one process; the update
    backend (`trainer.optim`) is torch's AdamW unless the factory passes another."""

    def __init__(
        self,
        *,
        master: Master,
        engine: TrainableEngine,
        hf_tokenizer: Any,
        compute_dtype: torch.dtype,
        identity: dict[str, Any] | None = None,
        steps: int = 0,
        optimizer_state: dict[str, Any] | None = None,
        backend: UpdateBackend | None = None,
    ):
        self.master = master
        self.engine = engine
        self.hf_tokenizer = hf_tokenizer
        self.compute_dtype = compute_dtype
        self.identity = identity or {}  # base model, lora, seed: saved with checkpoints
        self.steps = steps
        self.last_settings: TrainSettings | None = None
        self.backend = backend or TorchUpdate(
            master.trainable_parameters(), master_forward(master), master.compute_pairs()
        )
        self._params = self.backend.parameters
        self.master_dtype = self._params[0].dtype
        # autocast only where forward runs on the float32 masters themselves
        self._forward_dtype = next(master.compute_model.parameters()).dtype
        self.device = self._params[0].device
        if optimizer_state is not None:
            self.backend.load_state_dict(optimizer_state)
        self._pad_id = hf_tokenizer.pad_token_id if hf_tokenizer.pad_token_id is not None else 0
        self._vocab_size = master.model.get_input_embeddings().num_embeddings
        self._lock = asyncio.Lock()

    @property
    def version(self) -> int:
        return self.engine.version

    @property
    def optimizer(self) -> Any:
        """The backend's optimizer (its `param_groups` show the lr in use)."""
        return self.backend.optimizer

    # -- PolicyTrainer --------------------------------------------------------------------
    async def train_step(self, groups: Sequence[Group], settings: Any) -> StepResult:
        settings = TrainSettings.model_validate(settings, from_attributes=True)
        async with self._lock:
            scored = compute_advantages(
                groups, settings.algorithm, settings.zero_variance_groups, settings.scale_rewards
            )
            selection = select_samples(scored, self.engine.version, settings.max_staleness)
            rewards = [e.reward for g in groups for e in g.episodes]
            metrics = {
                "reward/mean": statistics.fmean(rewards) if rewards else 0.0,
                "reward/std": _std(rewards),
                "advantage/mean": statistics.fmean(selection.advantages)
                if selection.advantages
                else 0.0,
                "advantage/std": _std(selection.advantages),
                "samples": float(len(selection.items)),
                "lr": settings.lr,
            }
            # calls → timelines (plain Python, off the event loop and off the engine thread)
            window = settings.max_sequence_tokens or self.engine.max_context
            merged = await asyncio.to_thread(
                merge_calls, selection.items, settings.merge, window, self._vocab_size
            )
            metrics |= {f"context/{name}": float(v) for name, v in merged.counts.items()}
            if merged.items:
                metrics |= await self.engine.run_exclusive(
                    lambda: self._update(merged.items, settings)
                )
            return StepResult(
                version=self.engine.version,
                metrics=metrics,
                outcomes=selection.outcomes(merged.left_out),
            )

    async def save_checkpoint(self, directory: str, *, resumable: bool = True) -> None:
        """Weights in the training dtype (`trainer.checkpoint`); `resumable` adds the
        optimizer state and, when the masters are wider, the float32 masters (what a
        restart needs to continue exactly); else weights only (serving, evaluation)."""
        async with self._lock:
            contents = await self.engine.run_exclusive(
                lambda: self._snapshot(resumable), bump_version=False
            )
        await asyncio.to_thread(single_threaded, write_checkpoint, directory, contents)

    @property
    def released(self) -> bool:
        return self.backend is None

    def release_training(self) -> None:
        """The run ended: free the master weights, their gradients, the optimizer state and
        the reference model at once (the engine keeps serving its own copy); the trainer
        trains and saves no more."""
        if self.backend is None:
            return
        self.backend.close()
        self.backend = None  # type: ignore[assignment]
        self.master = None  # type: ignore[assignment]
        self._params = []
        release_cache = getattr(self.engine, "release_cache", None)
        if release_cache is not None:
            release_cache()  # the KV cache grown for rollouts: evaluation needs little
        release_memory()

    def close(self) -> None:
        self.engine.shutdown()
        self.release_training()

    # -- on the engine's worker thread ------------------------------------------------------
    def _update(self, items: list[TrainItem], settings: TrainSettings) -> dict[str, float]:
        started = time.perf_counter()
        batches = build_micro_batches(
            items, settings.micro_batch_tokens, self._pad_id, settings.merge
        )
        total_tokens = sum(b.trained_tokens for b in batches)
        model = self.master.compute_model
        backend = self.backend
        with backend.exclusive():
            model.train()
            backend.zero_grad()
            try:
                grad_norm, sums = self._accumulate_and_step(batches, settings, total_tokens)
            finally:
                backend.zero_grad()
                model.eval()
        loss, clip_fraction, ratio_mean, kl = sums
        self.steps += 1
        self.last_settings = settings
        seconds = time.perf_counter() - started
        return {
            "loss": loss,
            "kl": kl,
            "grad_norm": grad_norm,
            "clip_fraction": clip_fraction,
            "ratio/mean": ratio_mean,
            "tokens": float(total_tokens),
            "tokens/padded": float(sum(b.padded_tokens for b in batches)),
            "micro_batches": float(len(batches)),
            "step_seconds": seconds,
            "tokens_per_second": total_tokens / seconds if seconds > 0 else 0.0,
            "skipped_nonfinite": 0.0 if math.isfinite(grad_norm) else 1.0,
        }

    def _accumulate_and_step(
        self, batches: list[MicroBatch], settings: TrainSettings, total_tokens: int
    ) -> tuple[float, tuple[float, float, float, float]]:
        """Backward over every micro-batch, then one step; the new weights go to the engine.
        Returns the gradient norm and the (loss, clip fraction, ratio mean, kl) sums."""
        backend = self.backend
        use_reference = settings.kl_coef > 0
        loss = clip_fraction = ratio_mean = kl = 0.0
        with torch.enable_grad():
            for batch in batches:
                with autocast_context(self.device, self.compute_dtype, self._forward_dtype):
                    logprobs_N, reference_N = backend.forward(batch, use_reference)
                out = ppo_clip_loss(
                    logprobs_N,
                    batch.behaviour_logprobs_N.to(self.device),
                    batch.advantages_N.to(self.device),
                    clip_eps=settings.clip_eps,
                    reference_logprobs_N=reference_N,
                    kl_coef=settings.kl_coef,
                    normalizer=total_tokens,
                )
                backend.backward(out.loss)
                share = out.tokens / total_tokens
                loss += float(out.loss.detach())
                clip_fraction += out.clip_fraction * share
                ratio_mean += out.ratio_mean * share
                kl += out.kl * share
        grad_norm = backend.clip_and_step(settings)
        if math.isfinite(grad_norm):
            with backend.full_weights():
                self.engine.load_weights(self.master.engine_weights())
        return grad_norm, (loss, clip_fraction, ratio_mean, kl)

    def _snapshot(self, resumable: bool = True) -> CheckpointContents:
        if self.backend is None:
            raise RuntimeError("this policy's training state was released (its run ended)")
        write_adapter = None
        with self.backend.exclusive(), self.backend.full_weights():
            # ZeRO-3 partitions the parameters again on leaving: copies, not views, then
            weights = self.master.merged_state_dict(share_frozen=not self.backend.gathers_weights)
            if isinstance(self.master, LoraMaster):
                peft_model = self.master.peft_model
                adapter_state = {
                    k: v.detach().clone()
                    for k, v in peft_model.state_dict().items()
                    if "lora_" in k
                }

                def write_adapter(path, peft_model=peft_model, state=adapter_state):
                    peft_model.save_pretrained(str(path), state_dict=state)

            optimizer_state = self.backend.state_dict() if resumable else None
        # the training dtype, or the engine's when it serves wider (an ended run's policy
        # is served again from the saved weights: they must be what the engine served)
        engine_dtype = getattr(self.engine, "dtype", self.compute_dtype)
        saved_dtype = max(self.compute_dtype, engine_dtype, key=lambda d: d.itemsize)
        master_weights = None
        if saved_dtype.itemsize < self.master_dtype.itemsize:
            if resumable and isinstance(self.master, FullMaster):
                master_weights = weights  # LoRA's masters are its adapter (float32)
            weights = _cast_floats(weights, saved_dtype)
        return CheckpointContents(
            weights=weights,
            hf_model=self.master.hf_model,
            tokenizer=self.hf_tokenizer,
            optimizer_state=optimizer_state,
            master_weights=master_weights,
            trainer_state={
                "version": self.engine.version,
                "steps": self.steps,
                "master": self.master.kind,
                "optimizer": self.backend.kind,
                "zero_stage": self.backend.zero_stage,
                "resumable": resumable,
                "settings": self.last_settings.model_dump(mode="json")
                if self.last_settings
                else None,
                **self.identity,
            },
            write_adapter=write_adapter,
        )
