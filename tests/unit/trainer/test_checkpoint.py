"""Checkpoints load with plain transformers (merged for LoRA) and resume exactly."""

from __future__ import annotations

import asyncio
import gc
import shutil
import weakref

import pytest
import torch
from safetensors import safe_open
from transformers import AutoModelForCausalLM

from tests.unit.trainer.policy_helpers import (
    LORA,
    contrast_group,
    make_factory,
    make_policy,
    prompt_ids,
    train_settings,
)
from trainer import checkpoint
from trainer.checkpoint import read_trainer_state
from trainer.config import EngineConfig
from trainer.errors import CheckpointPathError, InsufficientDisk
from trainer.policy import TorchPolicyFactory
from trainer.types import OPTIMIZER_FILE, SamplingParams

GOOD, BAD = [1000, 2000, 3000], [5000, 6000, 7000]


@pytest.mark.parametrize("lora", [None, LORA], ids=["full", "lora"])
def test_a_checkpoint_loads_in_transformers_and_resumes_version_and_optimizer(lora, tmp_path):
    policy = make_policy(lora)
    prompt = prompt_ids(policy)
    settings = train_settings(lr=1e-2)
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


def _trained_policy(factory=None):
    policy = (factory or make_factory()).build(
        served_name="run/p", base_model="tiny", lora=None, seed=0
    )
    prompt = prompt_ids(policy)
    asyncio.run(
        policy.trainer.train_step([contrast_group(policy, prompt, GOOD, BAD)], train_settings())
    )
    return policy


def test_a_checkpoint_that_would_not_fit_writes_nothing_and_says_how_much_it_needs(
    tmp_path, monkeypatch
):
    policy = _trained_policy()
    try:
        free = 10 * 2**20
        monkeypatch.setattr(
            checkpoint.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**12, 0, free)
        )
        with pytest.raises(InsufficientDisk, match="GiB are free") as raised:
            asyncio.run(policy.trainer.save_checkpoint(str(tmp_path / "ckpt")))
        assert raised.value.free == free and raised.value.needed > free
        assert list(tmp_path.iterdir()) == []  # no checkpoint, no staging directory
    finally:
        policy.trainer.close()


def test_a_failed_write_removes_its_staging_directory(tmp_path, monkeypatch):
    policy = _trained_policy()
    try:

        def disk_full(obj, path):
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(checkpoint.torch, "save", disk_full)
        with pytest.raises(OSError, match="No space left"):
            asyncio.run(policy.trainer.save_checkpoint(str(tmp_path / "ckpt")))
        assert list(tmp_path.iterdir()) == []
    finally:
        policy.trainer.close()


def test_a_checkpoint_path_that_climbs_out_is_refused_before_any_write(tmp_path):
    policy = _trained_policy()
    try:
        target = tmp_path / "runs" / "r" / ".." / ".." / "escaped"
        with pytest.raises(CheckpointPathError):
            asyncio.run(policy.trainer.save_checkpoint(str(target)))
        assert not (tmp_path / "escaped").exists()
    finally:
        policy.trainer.close()


def test_an_export_checkpoint_holds_training_dtype_weights_only_and_resumes_fresh(tmp_path):
    factory = TorchPolicyFactory(
        EngineConfig(max_batch=8, initial_cache_tokens=64),
        engine_dtype="bfloat16",
        compute_dtype="bfloat16",
    )
    policy = _trained_policy(factory)
    resumable, export = tmp_path / "resumable", tmp_path / "export"
    try:
        asyncio.run(policy.trainer.save_checkpoint(str(resumable)))
        asyncio.run(policy.trainer.save_checkpoint(str(export), resumable=False))
    finally:
        policy.trainer.close()
    assert (resumable / OPTIMIZER_FILE).exists() and not (export / OPTIMIZER_FILE).exists()
    with (
        safe_open(resumable / "model.safetensors", "pt") as full,
        safe_open(export / "model.safetensors", "pt") as small,
    ):
        name = next(iter(full.keys()))
        assert full.get_tensor(name).dtype == torch.float32  # the masters a restart needs
        assert small.get_tensor(name).dtype == torch.bfloat16
    weights = lambda d: (d / "model.safetensors").stat().st_size  # noqa: E731
    assert weights(export) < 0.6 * weights(resumable)
    assert read_trainer_state(export)["resumable"] is False
    resumed = factory.build(
        served_name="run/p", base_model="tiny", lora=None, seed=0, resume_from=str(export)
    )
    try:
        assert resumed.trainer.version == 1 and not resumed.trainer.optimizer.state_dict()["state"]
    finally:
        resumed.trainer.close()


def test_releasing_the_training_state_drops_the_masters_and_keeps_the_engine_serving():
    policy = _trained_policy()
    master_model = weakref.ref(policy.trainer.master.model)
    policy.trainer.release_training()
    gc.collect()
    assert master_model() is None and policy.trainer.released
    prompt = prompt_ids(policy)
    completion = asyncio.run(
        policy.served.engine.generate(prompt, SamplingParams(max_tokens=2, temperature=0.0))
    )
    assert len(completion.token_ids) == 2
    policy.trainer.close()
