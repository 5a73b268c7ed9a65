"""Checkpoints load with plain transformers (merged for LoRA) and resume exactly."""

from __future__ import annotations

import asyncio

import pytest
import torch
from transformers import AutoModelForCausalLM

from tests.unit.trainer.policy_helpers import LORA, contrast_group, make_policy, prompt_ids
from trainer.checkpoint import read_trainer_state
from trainer.config import TrainSettings

GOOD, BAD = [1000, 2000, 3000], [5000, 6000, 7000]


@pytest.mark.parametrize("lora", [None, LORA], ids=["full", "lora"])
def test_a_checkpoint_loads_in_transformers_and_resumes_version_and_optimizer(lora, tmp_path):
    policy = make_policy(lora)
    prompt = prompt_ids(policy)
    settings = TrainSettings(lr=1e-2)
    for _ in range(2):
        asyncio.run(
            policy.trainer.train_step([contrast_group(policy, prompt, GOOD, BAD)], settings)
        )
    directory = tmp_path / "ckpt"
    asyncio.run(policy.trainer.save_checkpoint(str(directory)))
    asyncio.run(policy.trainer.save_checkpoint(str(directory)))  # overwriting is atomic too

    ids = torch.tensor([prompt + GOOD])
    plain = AutoModelForCausalLM.from_pretrained(directory)
    with torch.no_grad():
        expected = policy.trainer.master.model(ids).logits
        assert torch.allclose(plain(ids).logits, expected, atol=1e-5)
    assert (directory / "adapter" / "adapter_config.json").exists() == (lora is not None)
    assert read_trainer_state(directory)["version"] == 2

    resumed = make_policy(lora, resume_from=str(directory))
    try:
        assert resumed.trainer.version == 2 and resumed.trainer.steps == 2
        with torch.no_grad():
            assert torch.allclose(resumed.served.engine.model(ids).logits, expected, atol=1e-5)
        old_state = policy.trainer.optimizer.state_dict()["state"]
        new_state = resumed.trainer.optimizer.state_dict()["state"]
        assert old_state.keys() == new_state.keys() and old_state
        for key in old_state:
            assert torch.equal(old_state[key]["exp_avg"], new_state[key]["exp_avg"])
            assert torch.equal(old_state[key]["step"], new_state[key]["step"])
    finally:
        resumed.trainer.close()
        policy.trainer.close()
