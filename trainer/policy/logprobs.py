"""Per-token log-probabilities of trained completion tokens under a causal LM.

Runs the decoder over a micro-batch and applies the LM head only at the positions that
predict a trained token (N × V logits instead of B × T × V), chunked and fused with the
log-softmax (`trainer.policy.lm_head`) so the N × V logits are never kept.

- Padded rows (`none`, `timeline` layouts): no attention mask is passed. Under the causal
  mask a real token never attends to the padding after it, so right padding changes
  nothing, and sdpa keeps its fast causal path.
- Tree rows: position ids are each node's depth, and a node sees itself and its
  ancestors only. That runs as segment-batched SDPA (`trainer.policy.tree_attention`),
  which computes what the dense mask `tree_attention_mask` describes without its T×T
  work; the dense mask stays as the reference the tests compare against. (Its form, if
  you pass it to a model yourself: 4D *additive float*, 0 allowed and dtype-min elsewhere
  — a 4D boolean mask is silently wrong under `eager`.)

Knows nothing of losses or optimizers.
"""

from __future__ import annotations

import torch

from trainer.policy.batching import MicroBatch
from trainer.policy.lm_head import chunked_token_logprobs
from trainer.policy.tree_attention import build_plan, tree_attention


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


def completion_logprobs(model: torch.nn.Module, batch: MicroBatch) -> torch.Tensor:
    """float32 `logprobs_N` of `batch.targets_N` (with grad when grad is enabled)."""
    device = next(model.parameters()).device
    decoder = model.get_decoder()
    input_ids_BT = batch.input_ids_BT.to(device)
    if batch.subtree_end_BT is None:
        hidden_BTH = decoder(input_ids=input_ids_BT, use_cache=False).last_hidden_state
    else:
        assert batch.position_ids_BT is not None
        plan = build_plan(
            batch.subtree_end_BT[0].tolist(), batch.position_ids_BT[0].tolist(), device
        )
        with tree_attention(model):
            hidden_BTH = decoder(
                input_ids=input_ids_BT,
                position_ids=batch.position_ids_BT.to(device),
                use_cache=False,
                tree_plan=plan,
            ).last_hidden_state
    hidden_NH = hidden_BTH[batch.rows_N.to(device), batch.positions_N.to(device)]
    head = model.get_output_embeddings()
    # score under the distribution the engine sampled from, so ratios start at 1
    temperatures_N = batch.temperatures_N.to(device)
    targets_N = batch.targets_N.to(device)
    if type(head) is torch.nn.Linear and head.bias is None:
        return chunked_token_logprobs(hidden_NH, head.weight, targets_N, temperatures_N)
    logits_NV = head(hidden_NH).float() / temperatures_N[:, None]  # e.g. a LoRA-wrapped head
    picked_N = logits_NV.gather(1, targets_N[:, None])[:, 0]
    return picked_N - torch.logsumexp(logits_NV, dim=-1)
