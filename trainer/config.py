"""Typed configuration of the trainer's model and engine (pydantic, printed at start), and
`TrainSettings`: what an update reads from its run's settings."""

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


FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]


class TrainSettings(BaseModel):
    """What one update reads from its run's settings: names and types, no defaults, no bounds.

    Torch-free. Their defaults and bounds are declared once, by the run settings of the wire
    (`swarm.protocol.RunSettings`, which clients and the researcher read too: the trainer may
    not import swarm, nor swarm the trainer); the gateway validates every `POST /runs` and
    `PATCH` against them and hands the run's settings to each `train_step`, so live edits (lr,
    kl_coef, ...) apply at once. `train_step` validates what it is given into this model (a
    dict over Ray, or any object with these attributes): a float is always finite, so a
    setting can never write inf/NaN into the weights; the choices are what the trainer
    implements (tests/unit/gateway/test_run_settings_reach.py checks the wire offers the same).
    """

    algorithm: Literal["grpo", "rloo", "reinforce"]
    lr: FiniteFloat
    weight_decay: FiniteFloat
    adam_betas: tuple[FiniteFloat, FiniteFloat]
    max_grad_norm: FiniteFloat
    clip_eps: FiniteFloat  # PPO-clip range for importance ratios
    kl_coef: FiniteFloat  # KL to the frozen base policy; 0 = off (no reference model kept)
    max_staleness: int  # drop samples more than this many versions old
    zero_variance_groups: Literal["drop", "keep"]
    # grpo only: divide the group-centred reward by the group's std ("group") or not ("none")
    scale_rewards: Literal["group", "none"]
    micro_batch_tokens: int  # tokens per forward/backward chunk
    # how an episode's calls are laid out for the update (trainer.context): one sequence per
    # call, merged timelines, or timelines packed as prefix trees (fastest; see docs/context.md)
    merge: Literal["none", "timeline", "tree"]
    # the longest call the update takes (None: the engine's context); longer calls are
    # dropped and counted as `too_long`, never cut
    max_sequence_tokens: int | None
