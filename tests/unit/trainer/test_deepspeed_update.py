"""The DeepSpeed update backend, for real, on CPU (gloo, world size 1): every ZeRO stage
steps, serves the new weights, matches torch's AdamW, accumulates micro-batches exactly,
applies live settings and resumes from a checkpoint as if never stopped.

    .venv/bin/python -m pytest -q tests/unit/trainer/test_deepspeed_update.py
"""

from __future__ import annotations

import asyncio

import pytest
import torch

pytest.importorskip(
    "deepspeed", reason="DeepSpeed is not installed: pip install --no-build-isolation deepspeed"
)

from tests.unit.trainer.policy_helpers import (  # noqa: E402
    LORA,
    prompt_ids,
    sample,
    served_logprobs,
    train_settings,
)
from trainer.checkpoint import read_trainer_state  # noqa: E402
from trainer.config import EngineConfig, TrainSettings  # noqa: E402
from trainer.optim.deepspeed import DeepSpeedUpdate, deepspeed_config  # noqa: E402
from trainer.policy import TorchPolicyFactory  # noqa: E402
from trainer.types import EpisodeSamples, Group, Policy  # noqa: E402

STAGES = [0, 1, 2, 3]
GOOD = [1000, 2000, 3000, 4000]
BAD = [5000, 6000, 7000, 8000]
# no clipping hit (tiny's gradient norm is ~4), a visible step, weight decay on
SETTINGS = train_settings(lr=1e-3, weight_decay=0.01, adam_betas=(0.8, 0.99), max_grad_norm=1e3)


def make_policy(
    optimizer: str = "deepspeed",
    zero: int | None = 0,
    lora: dict | None = None,
    resume_from: str | None = None,
) -> Policy:
    factory = TorchPolicyFactory(
        EngineConfig(max_batch=8, initial_cache_tokens=64),
        engine_dtype="float32",
        compute_dtype="float32",
        optimizer=optimizer,
        zero_stage=zero if optimizer == "deepspeed" else None,
    )
    return factory.build(
        served_name="run/p", base_model="tiny", lora=lora, seed=0, resume_from=resume_from
    )


@pytest.fixture
def policies():
    """Build policies through `make`; all are closed after the test."""
    made: list[Policy] = []

    def make(*args, **kwargs) -> Policy:
        made.append(make_policy(*args, **kwargs))
        return made[-1]

    yield make
    for policy in made:
        policy.trainer.close()


def batch(policy: Policy, completions: int = 2) -> list[Group]:
    """One group: the first half of the completions rewarded 1, the rest 0 (deterministic:
    the same on every policy built from the same weights)."""
    prompt = prompt_ids(policy)
    episodes = []
    for i in range(completions):
        tokens = (GOOD if i < completions // 2 else BAD) + [100 + i] * (i * 3)
        episodes.append(
            EpisodeSamples(
                f"e{i}", float(i < completions // 2), [sample(policy, f"e{i}", prompt, tokens)]
            )
        )
    return [Group("g", episodes)]


def step(policy: Policy, settings: TrainSettings = SETTINGS, groups: list[Group] | None = None):
    return asyncio.run(policy.trainer.train_step(groups or batch(policy), settings))


def master_weights(policy: Policy) -> dict[str, torch.Tensor]:
    trainer = policy.trainer
    with trainer.backend.full_weights():
        return {k: v.detach().clone() for k, v in trainer.master.model.named_parameters()}


def assert_same_weights(a: Policy, b: Policy, atol: float = 1e-5) -> None:
    """Equal up to float summation order (ZeRO reduces gradients in its own buckets: after
    two steps at lr 3e-3 the largest difference seen was 2.5e-6)."""
    wa, wb = master_weights(a), master_weights(b)
    assert wa.keys() == wb.keys()
    worst = max((wa[k] - wb[k]).abs().max().item() for k in wa)
    assert worst <= atol, worst


# The Adam moments are running sums of gradients. ZeRO computes the same gradients through
# other buffers and kernels (ZeRO-3 gathers partitioned parameters), so its fp32 sums run in
# another order, and a reordered sum of n terms moves by about sqrt(n)*u of the terms' scale
# (u = 2**-24; at most n*u). The longest sums in tiny's backward pass run over its 49,152-entry
# vocabulary: sqrt(n)*u = 1.3e-5 of a tensor's largest moment. Elementwise relative
# tolerances are wrong here: an element near zero carries the absolute error of its whole
# tensor. Measured (ZeRO-3 vs torch, 2 steps): 3.6e-6. A first step 1% off in lr moves the
# moments by 1.6e-2 (test_the_moment_tolerance_catches_a_one_percent_lr_error).
MOMENT_RTOL = 1e-4


def moment_gap(a: dict, b: dict) -> float:
    """The largest difference between two optimizer states' Adam moments, in float64, as a
    fraction of the largest magnitude of the tensor it is in; the step counts must match."""
    assert a["state"].keys() == b["state"].keys() and a["state"]
    gap = 0.0
    for key, entry in a["state"].items():
        other = b["state"][key]
        assert float(entry["step"]) == float(other["step"]), key
        for name in ("exp_avg", "exp_avg_sq"):
            mine, theirs = entry[name].double(), other[name].double()
            scale = max(mine.abs().max().item(), theirs.abs().max().item())
            if scale:
                gap = max(gap, (mine - theirs).abs().max().item() / scale)
    return gap


def assert_same_state(a: dict, b: dict, rtol: float = MOMENT_RTOL) -> None:
    gap = moment_gap(a, b)
    assert gap <= rtol, f"Adam moments differ by {gap:.3g} of their scale (tolerance {rtol:g})"


@pytest.mark.slow
@pytest.mark.parametrize("zero", STAGES)
def test_a_zero_step_changes_the_master_and_the_engine_serves_it(policies, zero):
    policy = policies(zero=zero)
    assert isinstance(policy.trainer.backend, DeepSpeedUpdate)
    prompt = prompt_ids(policy)
    before = served_logprobs(policy, prompt, GOOD)

    result = step(policy)

    assert result.version == policy.trainer.version == 1 and result.samples_trained == 2
    assert result.metrics["grad_norm"] > 0 and result.metrics["skipped_nonfinite"] == 0
    after = served_logprobs(policy, prompt, GOOD)
    assert after != pytest.approx(before, abs=1e-4)
    with torch.no_grad(), policy.trainer.backend.full_weights():
        logits = policy.trainer.master.model(torch.tensor([prompt + GOOD])).logits[0]
    lp = torch.log_softmax(logits[len(prompt) - 1 : -1], -1)
    master = lp.gather(1, torch.tensor(GOOD)[:, None])[:, 0].tolist()
    assert after == pytest.approx(master, abs=1e-5)  # the engine serves the master's weights


@pytest.mark.slow
@pytest.mark.parametrize("zero", STAGES)
def test_the_deepspeed_update_is_torch_adamws_update(policies, zero):
    torch_policy, ds_policy = policies("torch"), policies(zero=zero)
    for settings in (SETTINGS, SETTINGS.model_copy(update={"lr": 3e-3})):  # 2nd: moments
        expected = step(torch_policy, settings, batch(torch_policy))
        got = step(ds_policy, settings, batch(ds_policy))
        assert got.metrics["grad_norm"] == pytest.approx(expected.metrics["grad_norm"], rel=1e-5)
        assert got.metrics["loss"] == pytest.approx(expected.metrics["loss"], abs=1e-6)
    assert_same_weights(torch_policy, ds_policy)
    assert_same_state(
        torch_policy.trainer.backend.state_dict(), ds_policy.trainer.backend.state_dict()
    )


@pytest.mark.slow
def test_the_moment_tolerance_catches_a_one_percent_lr_error(policies):
    """MOMENT_RTOL is loose enough for summation order and still fails on real differences."""
    right, wrong = policies("torch"), policies("torch")
    for lr in (1e-3, 3e-3):
        step(right, SETTINGS.model_copy(update={"lr": lr}), batch(right))
    for lr in (1.01e-3, 3e-3):
        step(wrong, SETTINGS.model_copy(update={"lr": lr}), batch(wrong))
    right_state, wrong_state = (
        right.trainer.backend.state_dict(),
        wrong.trainer.backend.state_dict(),
    )
    assert moment_gap(right_state, right_state) == 0
    assert moment_gap(right_state, wrong_state) > 10 * MOMENT_RTOL
    with pytest.raises(AssertionError, match="Adam moments differ"):
        assert_same_state(right_state, wrong_state)
    step(wrong, groups=batch(wrong))  # one step more: the counts differ
    with pytest.raises(AssertionError):
        assert_same_state(right_state, wrong.trainer.backend.state_dict())


@pytest.mark.slow
@pytest.mark.parametrize("zero", STAGES)
def test_several_micro_batches_give_the_update_of_one_batch(policies, zero):
    whole, split = policies(zero=zero), policies(zero=zero)
    rows = SETTINGS.model_copy(update={"merge": "none"})  # one padded row per sample
    one = step(whole, rows.model_copy(update={"micro_batch_tokens": 4096}), batch(whole, 6))
    many = step(split, rows.model_copy(update={"micro_batch_tokens": 64}), batch(split, 6))
    assert one.metrics["micro_batches"] == 1 and many.metrics["micro_batches"] >= 3
    assert many.metrics["grad_norm"] == pytest.approx(one.metrics["grad_norm"], rel=1e-5)
    assert_same_weights(whole, split)


@pytest.mark.slow
@pytest.mark.parametrize("zero", STAGES)
def test_an_update_that_fails_midway_leaves_no_gradient_behind(policies, zero, monkeypatch):
    failed, clean = policies(zero=zero), policies(zero=zero)

    def fail(settings):
        raise RuntimeError("failed after the backward passes")

    with monkeypatch.context() as m:
        m.setattr(failed.trainer.backend, "clip_and_step", fail)
        with pytest.raises(RuntimeError, match="after the backward"):
            step(failed)
    step(failed, groups=batch(failed))
    step(clean, groups=batch(clean))
    assert_same_weights(failed, clean, atol=1e-7)


@pytest.mark.slow
@pytest.mark.parametrize("zero", [0, 2])
def test_live_lr_and_clipping_changes_apply_at_the_next_step(policies, zero):
    torch_policy, ds_policy = policies("torch"), policies(zero=zero)
    first = SETTINGS
    edited = SETTINGS.model_copy(update={"lr": 2e-2, "max_grad_norm": 0.5, "weight_decay": 0.1})
    for settings in (first, edited):
        step(torch_policy, settings, batch(torch_policy))
        result = step(ds_policy, settings, batch(ds_policy))
    assert result.metrics["lr"] == 2e-2
    assert all(g["lr"] == 2e-2 for g in ds_policy.trainer.optimizer.param_groups)
    assert result.metrics["grad_norm"] > 0.5  # the clipping was hit
    assert_same_weights(torch_policy, ds_policy)


@pytest.mark.slow
@pytest.mark.parametrize("zero", STAGES)
def test_a_checkpoint_resumes_weights_steps_and_optimizer_state(policies, zero, tmp_path):
    uninterrupted = policies(zero=zero)
    for _ in range(2):
        step(uninterrupted)
    directory = tmp_path / "ckpt"
    asyncio.run(uninterrupted.trainer.save_checkpoint(str(directory)))

    written_by = read_trainer_state(directory)
    assert (written_by["optimizer"], written_by["zero_stage"]) == ("deepspeed", zero)

    resumed = policies(zero=zero, resume_from=str(directory))
    assert resumed.trainer.version == 2 and resumed.trainer.steps == 2
    assert_same_weights(uninterrupted, resumed, atol=0)
    assert_same_state(
        uninterrupted.trainer.backend.state_dict(), resumed.trainer.backend.state_dict()
    )
    # the next step is the one the uninterrupted trainer takes
    step(uninterrupted, groups=batch(uninterrupted))
    step(resumed, groups=batch(resumed))
    assert_same_weights(uninterrupted, resumed, atol=1e-7)


@pytest.mark.slow
def test_two_deepspeed_policies_in_one_process_train_at_the_same_time(policies):
    """Both share the process group; each engine thread updates its own policy."""
    a, b, alone = policies(zero=1), policies(zero=3), policies(zero=1)
    groups_a, groups_b = batch(a), batch(b)

    async def both():
        return await asyncio.gather(
            a.trainer.train_step(groups_a, SETTINGS), b.trainer.train_step(groups_b, SETTINGS)
        )

    results = asyncio.run(both())
    assert [r.version for r in results] == [1, 1]
    step(alone, groups=batch(alone))
    assert_same_weights(a, alone, atol=0)
    assert_same_weights(b, alone)


@pytest.mark.slow
def test_optimizer_state_moves_between_backends_and_stages(policies, tmp_path):
    """optimizer.pt has one format: a torch checkpoint resumes under ZeRO-1, and a ZeRO-3
    checkpoint under torch, each continuing exactly."""
    torch_run = policies("torch")
    step(torch_run)
    asyncio.run(torch_run.trainer.save_checkpoint(str(tmp_path / "torch")))
    on_zero1 = policies(zero=1, resume_from=str(tmp_path / "torch"))
    step(torch_run, groups=batch(torch_run))
    step(on_zero1, groups=batch(on_zero1))
    assert_same_weights(torch_run, on_zero1)

    asyncio.run(on_zero1.trainer.save_checkpoint(str(tmp_path / "zero1")))
    back_on_torch = policies("torch", resume_from=str(tmp_path / "zero1"))
    assert back_on_torch.trainer.optimizer.param_groups[0]["fused"]  # the fast kernel stays
    step(on_zero1, groups=batch(on_zero1))
    step(back_on_torch, groups=batch(back_on_torch))
    assert_same_weights(on_zero1, back_on_torch)


@pytest.mark.slow
@pytest.mark.parametrize("zero", [1, 3])
def test_lora_trains_under_zero_and_its_checkpoint_resumes(policies, zero, tmp_path):
    policy = policies(zero=zero, lora=LORA)
    prompt = prompt_ids(policy)
    before = served_logprobs(policy, prompt, GOOD)
    step(policy, SETTINGS.model_copy(update={"lr": 2e-2, "kl_coef": 0.01}))
    assert served_logprobs(policy, prompt, GOOD) != pytest.approx(before, abs=1e-4)
    asyncio.run(policy.trainer.save_checkpoint(str(tmp_path / "lora")))
    resumed = policies(zero=zero, lora=LORA, resume_from=str(tmp_path / "lora"))
    assert served_logprobs(resumed, prompt, GOOD) == pytest.approx(
        served_logprobs(policy, prompt, GOOD), abs=1e-5
    )
    assert_same_state(policy.trainer.backend.state_dict(), resumed.trainer.backend.state_dict())


def test_the_config_maps_the_run_settings():
    config = deepspeed_config(2, SETTINGS, fused=True)
    assert config["zero_optimization"] == {"stage": 2}
    assert config["gradient_clipping"] == SETTINGS.max_grad_norm
    assert config["managed_gradient_accumulation"] is False
    params = config["optimizer"]["params"]
    assert config["optimizer"]["type"] == "AdamW" and params["torch_adam"] is True
    assert (params["lr"], tuple(params["betas"]), params["weight_decay"]) == (
        1e-3,
        (0.8, 0.99),
        0.01,
    )
    assert "bf16" not in config and "fp16" not in config  # fp32 states; autocast computes


@pytest.mark.slow
def test_the_real_smollm2_takes_a_zero1_step_on_cpu():
    factory = TorchPolicyFactory(
        EngineConfig(max_batch=2, initial_cache_tokens=128),
        engine_dtype="float32",
        compute_dtype="float32",
        optimizer="deepspeed",
        zero_stage=1,
    )
    policy = factory.build(served_name="run/p", base_model="smollm2-135m", lora=None, seed=0)
    try:
        prompt = prompt_ids(policy, "Name a fruit.")
        good, bad = list(range(1000, 1064 - len(prompt))), list(range(2000, 2064 - len(prompt)))
        group = Group(
            "g",
            [
                EpisodeSamples("good", 1.0, [sample(policy, "good", prompt, good)]),
                EpisodeSamples("bad", 0.0, [sample(policy, "bad", prompt, bad)]),
            ],
        )
        before = served_logprobs(policy, prompt, good[:4])
        result = step(policy, train_settings(lr=1e-5), [group])
        assert result.version == 1 and result.metrics["tokens"] == len(good) + len(bad)
        assert 0 < result.metrics["grad_norm"] < float("inf")
        assert served_logprobs(policy, prompt, good[:4]) != pytest.approx(before, abs=1e-6)
    finally:
        policy.trainer.close()
