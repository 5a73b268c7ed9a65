"""`TorchPolicyTrainer` on the tiny random model: steps change the master and the served
weights together, drops are counted, and both full-parameter and LoRA training learn."""

from __future__ import annotations

import asyncio
import math

import pytest
import torch

from tests.unit.trainer.policy_helpers import (
    LORA,
    contrast_group,
    make_policy,
    prompt_ids,
    sample,
    served_logprobs,
    train_settings,
)
from trainer.types import EpisodeSamples, Group, SamplingParams

GOOD = [1000, 2000, 3000, 4000]
BAD = [5000, 6000, 7000, 8000]


@pytest.fixture
def policy():
    p = make_policy()
    yield p
    p.trainer.close()


def greedy_first_token(policy, prompt):
    c = asyncio.run(
        policy.served.engine.generate(prompt, SamplingParams(max_tokens=1, temperature=0))
    )
    return c.token_ids[0], c.logprobs[0]


@pytest.mark.slow
def test_a_step_changes_master_and_served_weights_and_bumps_the_version(policy):
    prompt = prompt_ids(policy)
    token, logprob_before = greedy_first_token(policy, prompt)
    master_before = policy.trainer.master.model.model.embed_tokens.weight.detach().clone()

    settings = train_settings(lr=3e-3)
    result = asyncio.run(
        policy.trainer.train_step([contrast_group(policy, prompt, GOOD, BAD)], settings)
    )

    assert result.version == policy.trainer.version == 1
    assert result.samples_trained == 2 and result.samples_dropped == {}
    assert not torch.equal(master_before, policy.trainer.master.model.model.embed_tokens.weight)
    token_after, logprob_after = greedy_first_token(policy, prompt)
    assert token_after != token or logprob_after != pytest.approx(logprob_before, abs=1e-6)
    # the engine serves exactly the master's weights
    assert served_logprobs(policy, prompt, GOOD) == pytest.approx(
        _master_logprobs(policy, prompt, GOOD), abs=1e-5
    )
    for key in ("loss", "kl", "grad_norm", "clip_fraction", "ratio/mean", "reward/mean"):
        assert key in result.metrics
    assert result.metrics["tokens"] == 8 and result.metrics["ratio/mean"] == pytest.approx(1.0)
    assert result.metrics["lr"] == 3e-3
    assert policy.trainer.optimizer.param_groups[0]["lr"] == 3e-3  # read from settings


def _master_logprobs(policy, prompt, completion):
    model = policy.trainer.master.model
    with torch.no_grad():
        logits = model(torch.tensor([prompt + completion])).logits[0]
    lp = torch.log_softmax(logits[len(prompt) - 1 : -1], -1)
    return lp.gather(1, torch.tensor(completion)[:, None])[:, 0].tolist()


@pytest.mark.slow
def test_stale_malformed_and_zero_variance_samples_are_dropped_and_counted(policy):
    prompt = prompt_ids(policy)
    live = contrast_group(policy, prompt, GOOD, BAD)
    live.episodes[0].samples.append(sample(policy, "good", prompt, GOOD, version=-2))  # stale
    broken = sample(policy, "bad", prompt, BAD)
    broken.behaviour_logprobs = broken.behaviour_logprobs[:-1]  # malformed
    live.episodes[1].samples.append(broken)
    flat = Group(
        "flat",
        [EpisodeSamples(f"f{i}", 1.0, [sample(policy, f"f{i}", prompt, GOOD)]) for i in range(3)],
    )

    result = asyncio.run(
        policy.trainer.train_step([live, flat], train_settings(lr=1e-3, max_staleness=1))
    )

    assert result.samples_trained == 2
    assert result.samples_dropped == {"zero_variance": 3, "stale": 1, "malformed": 1}
    assert result.version == 1


@pytest.mark.slow
def test_an_all_dropped_batch_is_a_no_op(policy):
    prompt = prompt_ids(policy)
    flat = Group(
        "flat",
        [EpisodeSamples(f"f{i}", 0.0, [sample(policy, f"f{i}", prompt, GOOD)]) for i in range(2)],
    )
    stale = contrast_group(policy, prompt, GOOD, BAD)
    for e in stale.episodes:
        e.samples[0].version = -5
    before = served_logprobs(policy, prompt, GOOD)

    result = asyncio.run(policy.trainer.train_step([flat, stale], train_settings(lr=1e-2)))

    assert result.version == policy.trainer.version == 0
    assert result.samples_trained == 0
    assert result.samples_dropped == {"zero_variance": 2, "stale": 2}
    assert served_logprobs(policy, prompt, GOOD) == before


@pytest.mark.slow
@pytest.mark.parametrize(("lora", "lr"), [(None, 2e-3), (LORA, 2e-2)], ids=["full", "lora"])
def test_training_raises_the_served_probability_of_the_rewarded_completion(lora, lr):
    policy = make_policy(lora)
    try:
        prompt = prompt_ids(policy)
        before = sum(served_logprobs(policy, prompt, GOOD))
        settings = train_settings(lr=lr, kl_coef=0.01)
        for _ in range(4):
            group = contrast_group(policy, prompt, GOOD, BAD)
            result = asyncio.run(policy.trainer.train_step([group], settings))
        after = sum(served_logprobs(policy, prompt, GOOD))
        assert result.version == 4
        assert after > before + 1.0, (before, after)
        assert result.metrics["kl"] > 0
    finally:
        policy.trainer.close()


@pytest.mark.slow
def test_a_nan_loss_skips_the_update_and_leaves_the_weights_finite_and_unchanged(policy):
    prompt = prompt_ids(policy)
    group = contrast_group(policy, prompt, GOOD, BAD)
    for episode in group.episodes:  # NaN behaviour logprobs: the PPO ratio, so the loss, is NaN
        for s in episode.samples:
            s.behaviour_logprobs = [float("nan")] * len(s.behaviour_logprobs)
    weights_before = {
        k: v.detach().clone() for k, v in policy.trainer.master.model.state_dict().items()
    }

    result = asyncio.run(policy.trainer.train_step([group], train_settings(lr=3e-3)))

    assert math.isnan(result.metrics["loss"]) and result.metrics["skipped_nonfinite"] == 1.0
    after = policy.trainer.master.model.state_dict()
    assert all(torch.equal(weights_before[k], after[k]) for k in weights_before)
    assert served_logprobs(policy, prompt, GOOD) == pytest.approx(
        _master_logprobs(policy, prompt, GOOD), abs=1e-5
    )
