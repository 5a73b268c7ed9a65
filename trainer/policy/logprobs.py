"""Per-token log-probabilities of trained completion tokens under a causal LM.

Runs the decoder over a right-padded micro-batch and applies the LM head only at the
positions that predict a trained token (N × V logits instead of B × T × V). No attention
mask is passed: under the causal mask a real token never attends to the padding after
it, so right padding changes nothing, and sdpa keeps its fast causal path.

Knows nothing of losses or optimizers.
"""

from __future__ import annotations

import torch

from trainer.policy.batching import MicroBatch


def completion_logprobs(model: torch.nn.Module, batch: MicroBatch) -> torch.Tensor:
    """float32 `logprobs_N` of `batch.targets_N` (with grad when grad is enabled)."""
    device = next(model.parameters()).device
    decoder = model.get_decoder()
    hidden_BTH = decoder(input_ids=batch.input_ids_BT.to(device), use_cache=False).last_hidden_state
    hidden_NH = hidden_BTH[batch.rows_N.to(device), batch.positions_N.to(device)]
    logits_NV = model.get_output_embeddings()(hidden_NH).float()
    # score under the distribution the engine sampled from, so ratios start at 1
    logits_NV = logits_NV / batch.temperatures_B.to(device)[batch.rows_N.to(device)][:, None]
    targets_N = batch.targets_N.to(device)
    picked_N = logits_NV.gather(1, targets_N[:, None])[:, 0]
    return picked_N - torch.logsumexp(logits_NV, dim=-1)
