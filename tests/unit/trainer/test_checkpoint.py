"""Checkpoints load with plain transformers (merged for LoRA) and resume exactly."""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import stat
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
from trainer.types import MASTER_WEIGHTS_FILE, OPTIMIZER_FILE, SamplingParams

GOOD, BAD = [1000, 2000, 3000], [5000, 6000, 7000]


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_checkpoint_path_that_climbs_out_is_refused_before_any_write(tmp_path):
    policy = _trained_policy()
    try:
        target = tmp_path / "runs" / "r" / ".." / ".." / "escaped"
        with pytest.raises(CheckpointPathError):
            asyncio.run(policy.trainer.save_checkpoint(str(target)))
        assert not (tmp_path / "escaped").exists()
    finally:
        policy.trainer.close()


@pytest.mark.slow
def test_weights_are_saved_in_the_training_dtype_and_a_resumable_one_keeps_the_masters(tmp_path):
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
        masters = {k: v.clone() for k, v in policy.trainer.master.model.state_dict().items()}
        served = {k: v.clone() for k, v in policy.served.engine.model.state_dict().items()}
    finally:
        policy.trainer.close()
    assert (resumable / OPTIMIZER_FILE).exists() and (resumable / MASTER_WEIGHTS_FILE).exists()
    assert not (export / OPTIMIZER_FILE).exists() and not (export / MASTER_WEIGHTS_FILE).exists()
    for directory in (resumable, export):
        with safe_open(directory / "model.safetensors", "pt") as weights:
            assert {weights.get_tensor(k).dtype for k in weights.keys()} == {torch.bfloat16}
        plain = AutoModelForCausalLM.from_pretrained(directory)  # config.json says bfloat16
        assert plain.dtype == torch.bfloat16
        for name, tensor in plain.state_dict().items():
            assert torch.equal(tensor, served[name]), name  # what the engine served
    weights = lambda d: (d / "model.safetensors").stat().st_size  # noqa: E731
    assert weights(export) == weights(resumable)
    assert read_trainer_state(export)["resumable"] is False

    again = factory.build(
        served_name="run/p", base_model="tiny", lora=None, seed=0, resume_from=str(resumable)
    )
    fresh = factory.build(
        served_name="run/p", base_model="tiny", lora=None, seed=0, resume_from=str(export)
    )
    try:
        restored = again.trainer.master.model.state_dict()
        assert all(torch.equal(restored[k], masters[k]) for k in masters)  # float32, exactly
        assert restored[next(iter(masters))].dtype == torch.float32
        assert again.trainer.optimizer.state_dict()["state"]
        assert fresh.trainer.version == 1 and not fresh.trainer.optimizer.state_dict()["state"]
    finally:
        again.trainer.close()
        fresh.trainer.close()


@pytest.mark.slow
def test_a_checkpoint_written_with_float32_weights_and_no_masters_file_resumes_from_them(
    tmp_path,
):
    """What the code before issue 20 wrote for a bf16-autocast run: float32 weights (the
    masters themselves) and the optimizer state, no `master_weights.pt`."""
    factory = TorchPolicyFactory(
        EngineConfig(max_batch=8, initial_cache_tokens=64),
        engine_dtype="bfloat16",
        compute_dtype="bfloat16",
    )
    policy = _trained_policy(factory)
    old = tmp_path / "old"
    try:
        asyncio.run(policy.trainer.save_checkpoint(str(old)))
        masters = {k: v.clone() for k, v in policy.trainer.master.model.state_dict().items()}
        policy.trainer.master.model.save_pretrained(old)  # float32, as before
    finally:
        policy.trainer.close()
    (old / MASTER_WEIGHTS_FILE).unlink()
    resumed = factory.build(
        served_name="run/p", base_model="tiny", lora=None, seed=0, resume_from=str(old)
    )
    try:
        restored = resumed.trainer.master.model.state_dict()
        assert all(torch.equal(restored[k], masters[k]) for k in masters)
        assert resumed.trainer.version == 1 and resumed.trainer.optimizer.state_dict()["state"]
    finally:
        resumed.trainer.close()


@pytest.mark.slow
def test_checkpoint_files_get_the_usual_modes_not_safetensors_0600(tmp_path):
    policy = _trained_policy()
    before = os.umask(0o022)
    try:
        asyncio.run(policy.trainer.save_checkpoint(str(tmp_path / "ckpt")))
    finally:
        os.umask(before)
        policy.trainer.close()
    directory = tmp_path / "ckpt"
    assert stat.S_IMODE(directory.stat().st_mode) == 0o755  # not mkdtemp's 0700
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in directory.iterdir()}
    assert "model.safetensors" in modes and set(modes.values()) == {0o644}


@pytest.mark.slow
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
