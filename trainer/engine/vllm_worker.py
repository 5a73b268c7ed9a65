"""`WeightLoadingExtension`: the methods swarmrl adds to each vLLM GPU worker, so the trainer
can push new weights into a running vLLM engine without restarting it.

vLLM mixes this class into its worker class when the engine is started with
`worker_extension_cls="trainer.engine.vllm_worker.WeightLoadingExtension"` (the pattern of
vLLM's RLHF examples, `examples/offline_inference/rlhf_utils.py`), and
`AsyncLLM.collective_rpc("<method>", args=...)` runs a method on every worker. The weights
travel as safetensors files (the engine writes them, see `trainer.engine.vllm_engine`): a
file path is the only argument that crosses the RPC, so nothing depends on how vLLM
serialises tensors between its processes. Inside the worker the tensors go through vLLM's
own loader, `model.load_weights`, which knows each architecture's fused and sharded layout
(q/k/v into `qkv_proj`, tensor-parallel slices, tied embeddings).

Imported inside vLLM's worker processes: it must stay light and must not start anything.
`self.model_runner`, `self.device` and `self.model_config` are attributes of vLLM's worker.
"""

from __future__ import annotations

from typing import Any


class WeightLoadingExtension:
    """Mixed into vLLM's worker by `worker_extension_cls`; called by `collective_rpc`."""

    model_runner: Any
    device: Any
    model_config: Any

    def swarmrl_load_weights_file(self, path: str) -> int:
        """Load every tensor of one safetensors file into the served model; returns how
        many tensors it held."""
        from safetensors.torch import load_file

        weights = load_file(path, device=str(self.device))
        self.model_runner.model.load_weights(weights=weights.items())
        count = len(weights)
        del weights
        return count

    def swarmrl_finish_weight_update(self) -> None:
        """After the last file of an update: let vLLM post-process the loaded weights (a
        no-op for plain bf16/fp16 layers, a repack for quantized ones), as vLLM's
        colocated RLHF example does, and wait for the copies to land."""
        import torch
        from vllm.model_executor.model_loader.utils import process_weights_after_loading

        process_weights_after_loading(self.model_runner.model, self.model_config, self.device)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
