"""Typed configuration of the trainer's model and engine (pydantic, printed at start)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

DType = Literal["auto", "float32", "bfloat16", "float16"]
EngineKind = Literal["torch", "vllm"]  # rollout engine (vllm: CUDA only)
OptimizerKind = Literal["torch", "deepspeed"]  # update backend


class ModelConfig(BaseModel):
    """Which model to load and how.

    `name` is `smollm2-135m` (the bundled GGUF), `tiny` (random weights, same architecture
    and tokenizer, for tests), a local Hugging Face directory, or a hub id already in the
    local cache. Hub downloads happen only with `allow_download`.
    """

    name: str = "smollm2-135m"
    dtype: DType = "auto"
    device: str = "cpu"
    allow_download: bool = False
    seed: int = 0  # initialisation seed of the `tiny` model


class EngineConfig(BaseModel):
    """The continuous-batching inference engine."""

    max_batch: int = Field(32, ge=1, description="Most sequences decoded together.")
    max_context: int | None = Field(
        None, ge=16, description="Prompt + completion limit; default: the model's (capped at 8192)."
    )
    prefill_token_budget: int = Field(
        4096, ge=64, description="Most (padded) prompt tokens prefilled in one forward pass."
    )
    initial_cache_tokens: int = Field(512, ge=16, description="KV columns allocated at start.")
    threads: int | None = Field(
        None, ge=1, description="torch threads of the engine's worker (default: torch's default)."
    )


class LoraConfig(BaseModel):
    r: int = Field(16, ge=1)
    alpha: int = Field(32, ge=1)
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    target_modules: list[str] | None = None  # None: every attention and MLP projection


class TrainSettings(BaseModel):
    """Hyper-parameters of a run's updates. Torch-free; the gateway stores them with the run
    and passes them to every `train_step`, so live edits (lr, kl_coef, ...) apply at once."""

    algorithm: Literal["grpo", "rloo", "reinforce"] = "grpo"
    lr: float = Field(1e-5, gt=0.0, le=1.0)
    weight_decay: float = Field(0.0, ge=0.0)
    adam_betas: tuple[float, float] = (0.9, 0.999)
    max_grad_norm: float = Field(1.0, gt=0.0)
    clip_eps: float = Field(0.2, gt=0.0, lt=1.0)  # PPO-clip range for importance ratios
    kl_coef: float = Field(
        0.0, ge=0.0
    )  # KL to the frozen base policy; 0 = off (no reference model kept)
    max_staleness: int = Field(1, ge=0)  # drop samples more than this many versions old
    zero_variance_groups: Literal["drop", "keep"] = "drop"
    micro_batch_tokens: int = Field(4096, ge=64)  # tokens per forward/backward chunk
    # how an episode's calls are laid out for the update (trainer.context): one sequence per
    # call, merged timelines, or timelines packed as prefix trees (fastest; see docs/context.md)
    merge: Literal["none", "timeline", "tree"] = "tree"
    # the longest call the update takes (None: the engine's context); longer calls are
    # dropped and counted as `too_long`, never cut
    max_sequence_tokens: int | None = Field(None, ge=16)
