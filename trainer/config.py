"""Typed configuration of the trainer's model and engine (pydantic, printed at start)."""

from __future__ import annotations

from typing import Annotated, Literal

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


# Bounds of the run settings the gateway passes through: the same as swarm.protocol's
# RunSettings declares for these fields (swarm may not import the trainer, nor the trainer
# swarm; tests/security/test_run_settings.py checks that they agree).
MAX_COUNT = 1_000_000_000
MAX_TOKENS = 1 << 20


def _real(**bounds: float) -> object:
    return Field(allow_inf_nan=False, **bounds)


Beta = Annotated[float, _real(ge=0.0, lt=1.0)]


class TrainSettings(BaseModel):
    """Hyper-parameters of a run's updates. Torch-free; the gateway stores them with the run
    and passes them to every `train_step`, so live edits (lr, kl_coef, ...) apply at once.
    Every float is finite and bounded: a setting can never write inf/NaN into the weights."""

    algorithm: Literal["grpo", "rloo", "reinforce"] = "grpo"
    lr: Annotated[float, _real(gt=0.0, le=1.0)] = 1e-5
    weight_decay: Annotated[float, _real(ge=0.0, le=1.0)] = 0.0
    adam_betas: tuple[Beta, Beta] = (0.9, 0.999)
    max_grad_norm: Annotated[float, _real(gt=0.0, le=1e6)] = 1.0
    # PPO-clip range for importance ratios
    clip_eps: Annotated[float, _real(gt=0.0, lt=1.0)] = 0.2
    # KL to the frozen base policy; 0 = off (no reference model kept)
    kl_coef: Annotated[float, _real(ge=0.0, le=1e3)] = 0.0
    # drop samples more than this many versions old
    max_staleness: Annotated[int, Field(ge=0, le=MAX_COUNT)] = 1
    zero_variance_groups: Literal["drop", "keep"] = "drop"
    # tokens per forward/backward chunk
    micro_batch_tokens: Annotated[int, Field(ge=64, le=MAX_TOKENS)] = 4096
    # how an episode's calls are laid out for the update (trainer.context): one sequence per
    # call, merged timelines, or timelines packed as prefix trees (fastest; see docs/context.md)
    merge: Literal["none", "timeline", "tree"] = "tree"
    # the longest call the update takes (None: the engine's context); longer calls are
    # dropped and counted as `too_long`, never cut
    max_sequence_tokens: Annotated[int, Field(ge=16, le=MAX_TOKENS)] | None = None
