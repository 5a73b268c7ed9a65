"""The PPO-clip loss and the k3 KL on hand-computed tensors."""

from __future__ import annotations

import math

import pytest
import torch

from trainer.losses import k3_kl, ppo_clip_loss


def test_ppo_clip_loss_matches_a_hand_computation():
    logprobs = torch.log(torch.tensor([1.5, 0.5, 1.0]))
    out = ppo_clip_loss(logprobs, torch.zeros(3), torch.tensor([1.0, -1.0, 2.0]), clip_eps=0.2)
    # ratios 1.5, 0.5, 1.0 → clipped 1.2, 0.8, 1.0 → token losses -1.2, +0.8, -2.0
    assert float(out.loss) == pytest.approx(-2.4 / 3)
    assert out.clip_fraction == pytest.approx(2 / 3)
    assert out.ratio_mean == pytest.approx(1.0)
    assert out.tokens == 3


def test_the_gradient_at_ratio_one_is_the_token_mean_policy_gradient():
    torch.manual_seed(0)
    weight = torch.randn(5, 7, requires_grad=True)
    features = torch.randn(6, 7)
    targets = torch.tensor([0, 3, 1, 4, 4, 2])
    advantages = torch.tensor([1.0, 1.0, -0.5, -0.5, 2.0, 2.0])

    def logprobs():
        return torch.log_softmax(features @ weight.T, -1).gather(1, targets[:, None])[:, 0]

    lp = logprobs()
    # two micro-batches normalised by the batch's token count accumulate to the full batch
    for part in (slice(0, 4), slice(4, 6)):
        ppo_clip_loss(
            lp[part], lp[part].detach(), advantages[part], 0.2, normalizer=6
        ).loss.backward(retain_graph=True)
    ppo_grad = weight.grad.clone()
    weight.grad = None
    (-(advantages * logprobs()).mean()).backward()
    assert torch.allclose(ppo_grad, weight.grad, atol=1e-6)


def test_kl_is_zero_with_zero_gradient_when_policy_equals_reference():
    logprobs = torch.tensor([-1.0, -2.5, -0.1], requires_grad=True)
    out = ppo_clip_loss(
        logprobs,
        logprobs.detach(),
        torch.zeros(3),
        clip_eps=0.2,
        reference_logprobs_N=logprobs.detach().clone(),
        kl_coef=0.5,
    )
    assert out.kl == 0.0
    out.loss.backward()
    assert torch.count_nonzero(logprobs.grad) == 0


def test_k3_kl_is_positive_and_matches_its_formula():
    logp, ref = torch.tensor([-1.0]), torch.tensor([-2.0])
    expected = math.exp(-1.0) - (-1.0) - 1.0
    assert float(k3_kl(logp, ref)) == pytest.approx(expected)
    assert expected > 0
