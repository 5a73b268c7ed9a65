"""Rollout engines. `TorchEngine` (continuous batching on plain transformers models) is the
default; a vLLM engine joins behind the same `trainer.types.InferenceEngine` interface."""

from trainer.engine.torch_engine import TorchEngine

__all__ = ["TorchEngine"]
