"""Rollout engines behind `trainer.types.InferenceEngine`: `TorchEngine` (continuous
batching on plain transformers models, the default) and `VllmEngine` (vLLM's AsyncLLM; the
module imports without vLLM, `build_vllm_engine` needs it and a CUDA GPU). What they share
lives in `streaming` (the bridge to the caller's loop, `stream`/`generate`) and
`completion` (prompt checks, text and stop strings, the `Completion` record)."""

from trainer.engine.torch_engine import TorchEngine
from trainer.engine.vllm_engine import VllmEngine

__all__ = ["TorchEngine", "VllmEngine"]
