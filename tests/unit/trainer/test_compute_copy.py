"""The bf16 compute copy (`FullMaster(compute_dtype=bf16)` + `TorchUpdate(compute_pairs)`)
trains the float32 masters as bf16 autocast does: the same per-token logprobs and
gradients as float32 within bf16 noise (stated below, measured on the tiny model: both
paths are off float32 by the same order), float32 gradient accumulation across
micro-batches, and after a step the copy and the served weights are the new masters.
"""

from __future__ import annotations

import asyncio
import copy

import pytest
import torch

from trainer.config import EngineConfig
from trainer.losses import ppo_clip_loss
from trainer.optim.torch import TorchUpdate
from trainer.policy import TorchPolicyFactory
from trainer.policy.batching import MicroBatch, TrainItem, build_micro_batches
from trainer.policy.logprobs import completion_logprobs
from trainer.policy.master import FullMaster
from trainer.policy.trainer import master_forward

from .policy_helpers import contrast_group, prompt_ids, train_settings

BF16 = torch.bfloat16


def micro_batches(seed: int, rows: int = 3, length: int = 24) -> list[MicroBatch]:
    """`rows` random sequences, one per micro-batch (so gradients accumulate)."""
    from trainer.types import Sample

    g = torch.Generator().manual_seed(seed)
    items = []
    for r in range(rows):
        tokens = torch.randint(3, 2000, (length,), generator=g).tolist()
        completion = tokens[8:]
        sample = Sample(f"e{r}", "p", tokens[:8], completion, [-3.0] * len(completion), 0)
        items.append(TrainItem(sample, advantage=1.0 if r % 2 else -0.7))
    return build_micro_batches(items, micro_batch_tokens=length, pad_id=0)


def loss_of(logprobs_N: torch.Tensor, batch: MicroBatch, total: int) -> torch.Tensor:
    return ppo_clip_loss(
        logprobs_N, batch.behaviour_logprobs_N, batch.advantages_N, 10.0, normalizer=total
    ).loss


def grads_and_logprobs(model, batches, autocast: bool) -> tuple[dict, torch.Tensor]:
    """float32 reference (autocast off) or bf16 autocast, on `model` itself."""
    model.zero_grad(set_to_none=True)
    total = sum(b.trained_tokens for b in batches)
    logprobs = []
    for batch in batches:
        with torch.autocast("cpu", dtype=BF16, enabled=autocast):
            lp = completion_logprobs(model, batch)
        loss_of(lp, batch, total).backward()
        logprobs.append(lp.detach())
    return {n: p.grad.clone() for n, p in model.named_parameters()}, torch.cat(logprobs)


def compute_copy_grads_and_logprobs(master: FullMaster, batches) -> tuple[dict, torch.Tensor]:
    backend = TorchUpdate(
        master.trainable_parameters(), master_forward(master), master.compute_pairs()
    )
    backend.zero_grad()
    total = sum(b.trained_tokens for b in batches)
    logprobs = []
    for batch in batches:
        lp, _ = backend.forward(batch, False)
        backend.backward(loss_of(lp, batch, total))
        logprobs.append(lp.detach())
    return {n: p.grad.clone() for n, p in master.model.named_parameters()}, torch.cat(logprobs)


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got - want).norm() / want.norm().clamp_min(1e-12))


@pytest.fixture
def master(tiny_loaded) -> FullMaster:
    return FullMaster(copy.deepcopy(tiny_loaded.model), lambda: None, compute_dtype=BF16)


def test_the_compute_copy_is_bf16_tied_like_the_master_and_pairs_every_parameter(master):
    model, copy_ = master.model, master.compute_model
    assert copy_ is not model
    assert {p.dtype for p in copy_.parameters()} == {BF16}
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    tied = model.get_input_embeddings().weight is model.get_output_embeddings().weight
    assert (copy_.get_input_embeddings().weight is copy_.get_output_embeddings().weight) == tied
    pairs = master.compute_pairs()
    assert [m for m, _ in pairs] == master.trainable_parameters()
    for m, c in pairs:
        assert torch.equal(c, m.to(BF16))


def test_no_compute_copy_when_the_compute_dtype_is_the_masters(tiny_loaded):
    same = FullMaster(copy.deepcopy(tiny_loaded.model), lambda: None, compute_dtype=torch.float32)
    assert same.compute_model is same.model and same.compute_pairs() == []


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_compute_copy_logprobs_and_gradients_match_float32_within_bf16_noise(master, seed):
    batches = micro_batches(seed)
    fp32_grads, fp32_lp = grads_and_logprobs(copy.deepcopy(master.model), batches, False)
    auto_grads, auto_lp = grads_and_logprobs(copy.deepcopy(master.model), batches, True)
    copy_grads, copy_lp = compute_copy_grads_and_logprobs(master, batches)

    # per-token logprobs: bf16 noise of the same order as autocast's, far below a nat
    auto_error = float((auto_lp - fp32_lp).abs().max())
    copy_error = float((copy_lp - fp32_lp).abs().max())
    assert 0 < copy_error < 0.1, copy_error
    assert copy_error < 4 * auto_error + 0.02, (copy_error, auto_error)
    # gradients: float32 on the masters, within a few percent of float32 (norm-relative)
    # for every parameter, and as close as autocast's are
    for name, want in fp32_grads.items():
        got = copy_grads[name]
        assert got.dtype == torch.float32
        error, auto = relative_error(got, want), relative_error(auto_grads[name], want)
        assert error < 0.05 and error < 3 * auto + 0.01, (name, error, auto)


@pytest.mark.slow
def test_gradients_of_micro_batches_accumulate_in_float32_on_the_masters(master):
    """Each backward's bf16 gradients are added into the masters' float32 `.grad` and the
    copy's are cleared: the sum is exactly the float32 sum of the per-batch bf16 grads."""
    batches = micro_batches(3)
    pairs = master.compute_pairs()
    backend = TorchUpdate(master.trainable_parameters(), master_forward(master), pairs)
    backend.zero_grad()
    total = sum(b.trained_tokens for b in batches)
    expected: dict[int, torch.Tensor] = {}
    for batch in batches:
        # the fused LM head's backward runs once per graph: a second forward for the probe
        lp, _ = backend.forward(batch, False)
        bf16_grads = torch.autograd.grad(loss_of(lp, batch, total), [c for _, c in pairs])
        for i, g in enumerate(bf16_grads):
            expected[i] = expected[i] + g.float() if i in expected else g.float()
        lp, _ = backend.forward(batch, False)
        backend.backward(loss_of(lp, batch, total))
        assert all(c.grad is None for _, c in pairs)
    for i, (m, _) in enumerate(pairs):
        assert torch.equal(m.grad, expected[i]), i


@pytest.mark.slow
def test_a_bf16_step_moves_the_float32_masters_and_refreshes_copy_and_served_weights():
    factory = TorchPolicyFactory(
        EngineConfig(max_batch=8, initial_cache_tokens=64),
        engine_dtype="bfloat16",
        compute_dtype="bfloat16",
    )
    policy = factory.build(served_name="run/p", base_model="tiny", lora=None, seed=0)
    try:
        master = policy.trainer.master
        assert master.compute_model is not master.model
        before = {n: p.detach().clone() for n, p in master.model.named_parameters()}
        prompt = prompt_ids(policy)
        group = contrast_group(policy, prompt, [10, 11, 12], [20, 21, 22])
        result = asyncio.run(policy.trainer.train_step([group], train_settings(lr=1e-3)))
        assert result.metrics["grad_norm"] > 0
        moved = [n for n, p in master.model.named_parameters() if not torch.equal(p, before[n])]
        assert moved, "the float32 masters did not change"
        assert {p.dtype for p in master.model.parameters()} == {torch.float32}
        served = dict(policy.served.engine.model.named_parameters())
        for name, p in master.model.named_parameters():
            assert torch.equal(dict(master.compute_model.named_parameters())[name], p.to(BF16))
            assert torch.equal(served[name], p.to(BF16)), name
    finally:
        policy.trainer.close()


@pytest.mark.slow
def test_compute_copy_false_keeps_autocast_over_the_masters():
    factory = TorchPolicyFactory(
        EngineConfig(max_batch=8, initial_cache_tokens=64),
        compute_dtype="bfloat16",
        compute_copy=False,
    )
    policy = factory.build(served_name="run/p", base_model="tiny", lora=None, seed=0)
    try:
        master = policy.trainer.master
        assert master.compute_model is master.model and master.compute_pairs() == []
    finally:
        policy.trainer.close()
