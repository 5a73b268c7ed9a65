"""Per-token log-probabilities of trained completion tokens under a causal LM.

Runs the decoder over a micro-batch and applies the LM head only at the positions that
predict a trained token (N × V logits instead of B × T × V).

- Padded rows (`none`, `timeline` layouts): no attention mask is passed. Under the causal
  mask a real token never attends to the padding after it, so right padding changes
  nothing, and sdpa keeps its fast causal path.
- Tree rows: position ids are each node's depth and the attention mask lets a node see
  itself and its ancestors only (`tree_attention_mask`). The mask is the 4D *additive
  float* form (0 allowed, dtype-min elsewhere): transformers uses a 4D mask as given, and
  the float form is right under every attention implementation (a 4D boolean mask is
  silently wrong under `eager`).

Knows nothing of losses or optimizers.
"""

from __future__ import annotations

import torch

from trainer.policy.batching import MicroBatch


def tree_attention_mask(subtree_end_BT: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """B×1×T×T additive mask: node i attends node j iff j <= i < subtree_end[j]."""
    T = subtree_end_BT.shape[1]
    index = torch.arange(T, device=subtree_end_BT.device)
    allowed_BTT = (index[None, None, :] <= index[None, :, None]) & (
        index[None, :, None] < subtree_end_BT[:, None, :]
    )
    mask = torch.zeros(allowed_BTT.shape, dtype=dtype, device=subtree_end_BT.device)
    mask.masked_fill_(~allowed_BTT, torch.finfo(dtype).min)
    return mask[:, None]


def _attention_dtype(model: torch.nn.Module) -> torch.dtype:
    """The dtype attention scores are computed in (autocast's when it is on)."""
    device_type = next(model.parameters()).device.type
    if torch.is_autocast_enabled(device_type):
        return torch.get_autocast_dtype(device_type)
    return next(model.parameters()).dtype


def completion_logprobs(model: torch.nn.Module, batch: MicroBatch) -> torch.Tensor:
    """float32 `logprobs_N` of `batch.targets_N` (with grad when grad is enabled)."""
    device = next(model.parameters()).device
    decoder = model.get_decoder()
    kwargs = {}
    if batch.subtree_end_BT is not None:
        assert batch.position_ids_BT is not None
        kwargs["position_ids"] = batch.position_ids_BT.to(device)
        kwargs["attention_mask"] = tree_attention_mask(
            batch.subtree_end_BT.to(device), _attention_dtype(model)
        )
    hidden_BTH = decoder(
        input_ids=batch.input_ids_BT.to(device), use_cache=False, **kwargs
    ).last_hidden_state
    hidden_NH = hidden_BTH[batch.rows_N.to(device), batch.positions_N.to(device)]
    logits_NV = model.get_output_embeddings()(hidden_NH).float()
    # score under the distribution the engine sampled from, so ratios start at 1
    logits_NV = logits_NV / batch.temperatures_N.to(device)[:, None]
    targets_N = batch.targets_N.to(device)
    picked_N = logits_NV.gather(1, targets_N[:, None])[:, 0]
    return picked_N - torch.logsumexp(logits_NV, dim=-1)
