"""Log-probabilities of chosen tokens through the LM head, chunked over tokens, without
keeping N × V logits.

The plain way — logits = h·Wᵀ for N tokens, cast to float32, log-softmax, pick — makes
autograd keep the N × V float32 logits (N = 8k trained tokens × SmolLM2's 49k vocabulary
is 1.6 GB) and walk them many times in memory-bound elementwise passes; on a 2-core CPU
that cost as much as several decoder layers. `chunked_token_logprobs` is a fused
linear + log-softmax + pick (the "fused linear cross-entropy" of Liger / torchtune's
chunked CE), written as a `torch.autograd.Function`: the forward works chunk by chunk
(logits in float32 for one chunk at a time, so every elementwise pass stays in cache) and
keeps only each token's softmax row in the compute dtype — 2 bytes per logit under bf16
autocast instead of the ≥ 10 the plain path keeps — or, past `KEEP_PROBS_BYTES`, only
each token's log-sum-exp, recomputing the chunk's logits in the backward (one more
matmul, no N × V memory at all). The backward forms (onehot − softmax) · grad /
temperature per chunk. Matmuls run in the compute dtype (bf16 under autocast), the
softmax in float32, as before; bf16 softmax rows are as precise as the bf16 logit
gradients autocast's own backward uses. No gradient for W when W is frozen (LoRA).

Knows nothing of models: a hidden matrix, the head's weight, targets and temperatures in.
"""

from __future__ import annotations

import torch

CHUNK_TOKENS = 256
# keep the softmax rows (compute dtype) for the backward up to this size; recompute beyond
KEEP_PROBS_BYTES = 2 << 30


def _compute_dtype(tensor: torch.Tensor) -> torch.dtype:
    device_type = tensor.device.type
    if torch.is_autocast_enabled(device_type):
        return torch.get_autocast_dtype(device_type)
    return tensor.dtype


class _ChunkedTokenLogprobs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden_NH, weight_VH, targets_N, temperatures_N, chunk, compute_dtype, keep):
        h = hidden_NH.to(compute_dtype)
        w = weight_VH.to(compute_dtype)
        n = h.shape[0]
        out_N = torch.empty(n, dtype=torch.float32, device=h.device)
        lse_N = torch.empty(n, dtype=torch.float32, device=h.device)
        # softmax rows kept for the backward (compute dtype), unless they'd take too much room
        probs_NV = (
            torch.empty(n, w.shape[0], dtype=compute_dtype, device=h.device) if keep else None
        )
        for s in range(0, n, chunk):
            e = min(s + chunk, n)
            logits = (h[s:e] @ w.T).float()
            if temperatures_N is not None:
                logits /= temperatures_N[s:e, None]
            lse = torch.logsumexp(logits, dim=-1)
            lse_N[s:e] = lse
            out_N[s:e] = logits.gather(1, targets_N[s:e, None])[:, 0] - lse
            if keep:
                probs_NV[s:e] = torch.exp_(logits.sub_(lse[:, None]))
        ctx.save_for_backward(hidden_NH, weight_VH, targets_N, temperatures_N, lse_N, probs_NV)
        ctx.chunk, ctx.compute_dtype = chunk, compute_dtype
        return out_N

    @staticmethod
    def backward(ctx, grad_N):
        hidden_NH, weight_VH, targets_N, temperatures_N, lse_N, probs_NV = ctx.saved_tensors
        need_h, need_w = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        h = hidden_NH.to(ctx.compute_dtype)
        w = weight_VH.to(ctx.compute_dtype)
        n = h.shape[0]
        grad_N = grad_N.float()

        def logit_grads(s: int, e: int) -> torch.Tensor:
            """d out / d logits for rows s:e, times grad: (onehot − softmax)·grad/T."""
            if probs_NV is not None:
                probs = probs_NV[s:e].float()
            else:  # recompute this chunk's softmax
                probs = (h[s:e] @ w.T).float()
                if temperatures_N is not None:
                    probs /= temperatures_N[s:e, None]
                torch.exp_(probs.sub_(lse_N[s:e, None]))
            g = probs.mul_(-grad_N[s:e, None])
            g[torch.arange(e - s, device=g.device), targets_N[s:e]] += grad_N[s:e]
            if temperatures_N is not None:
                g /= temperatures_N[s:e, None]
            return g.to(ctx.compute_dtype)

        grad_h = grad_w = None
        if probs_NV is not None:
            # the kept rows become the logit gradients in place, then two whole matmuls
            assert not getattr(ctx, "consumed", False), "backward through this graph twice"
            ctx.consumed = True
            for s in range(0, n, ctx.chunk):
                e = min(s + ctx.chunk, n)
                probs_NV[s:e] = logit_grads(s, e)
            if need_h:
                grad_h = (probs_NV @ w).to(hidden_NH.dtype)
            if need_w:
                grad_w = (probs_NV.T @ h).to(weight_VH.dtype)
        else:
            grad_h = torch.empty_like(hidden_NH) if need_h else None
            acc_w = torch.zeros_like(weight_VH, dtype=torch.float32) if need_w else None
            for s in range(0, n, ctx.chunk):
                e = min(s + ctx.chunk, n)
                g = logit_grads(s, e)
                if need_h:
                    grad_h[s:e] = (g @ w).to(grad_h.dtype)
                if need_w:
                    acc_w += (g.T @ h[s:e]).float()
            grad_w = acc_w.to(weight_VH.dtype) if need_w else None
        return grad_h, grad_w, None, None, None, None, None


def chunked_token_logprobs(
    hidden_NH: torch.Tensor,
    weight_VH: torch.Tensor,
    targets_N: torch.Tensor,
    temperatures_N: torch.Tensor | None = None,
    chunk: int = CHUNK_TOKENS,
) -> torch.Tensor:
    """float32 log p(target | hidden) under logits = hidden·Wᵀ / temperature."""
    if temperatures_N is not None:
        temperatures_N = temperatures_N.float()
        if bool((temperatures_N == 1.0).all()):
            temperatures_N = None
    dtype = _compute_dtype(hidden_NH)
    keep = hidden_NH.shape[0] * weight_VH.shape[0] * dtype.itemsize <= KEEP_PROBS_BYTES
    return _ChunkedTokenLogprobs.apply(
        hidden_NH, weight_VH, targets_N, temperatures_N, chunk, dtype, keep
    )
