"""Typed configuration of the trainer's model and engine (pydantic, printed at start)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

DType = Literal["auto", "float32", "bfloat16", "float16"]


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
