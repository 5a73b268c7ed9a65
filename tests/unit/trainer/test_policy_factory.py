"""`TorchPolicyFactory.create` builds a policy off the event loop, behind the interfaces."""

from __future__ import annotations

import asyncio

import pytest
import torch

from tests.unit.trainer.policy_helpers import LORA, make_factory
from trainer.types import PolicyTrainer, SamplingParams


@pytest.mark.slow
def test_create_returns_a_served_trainable_lora_policy_while_the_loop_keeps_running():
    async def go():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.001)
                ticks += 1

        task = asyncio.create_task(ticker())
        policy = await make_factory().create(
            served_name="run/p", base_model="tiny", lora=LORA, seed=0
        )
        task.cancel()
        prompt = policy.served.tokenizer.render_chat([{"role": "user", "content": "hi"}])
        completion = await policy.served.engine.generate(
            prompt.token_ids, SamplingParams(max_tokens=3, temperature=0)
        )
        return policy, ticks, completion

    policy, ticks, completion = asyncio.run(go())
    try:
        assert ticks > 0
        assert isinstance(policy.trainer, PolicyTrainer)
        assert policy.served.name == "run/p" and len(completion.token_ids) == 3
        trainable = policy.trainer.optimizer.param_groups[0]["params"]
        assert trainable and all(p.dtype == torch.float32 for p in trainable)
        assert sum(p.numel() for p in trainable) < sum(
            p.numel() for p in policy.trainer.master.model.parameters()
        )
    finally:
        policy.trainer.close()


@pytest.mark.slow
def test_load_engine_serves_an_export_as_the_trained_policy_served_it(tmp_path):
    """An ended run's policy is served again from its export checkpoint: the same tokens
    and logprobs at the same version, with no master or optimizer built."""
    from tests.unit.trainer.policy_helpers import (
        contrast_group,
        make_policy,
        prompt_ids,
        train_settings,
    )

    policy = make_policy()
    prompt = prompt_ids(policy)
    greedy = SamplingParams(max_tokens=6, temperature=0)

    before = asyncio.run(policy.served.engine.generate(prompt, greedy))
    group = contrast_group(policy, prompt, [1000, 2000], [5000, 6000])

    async def go():
        await policy.trainer.train_step([group], train_settings(lr=0.05))
        trained = await policy.served.engine.generate(prompt, greedy)
        await policy.trainer.save_checkpoint(str(tmp_path / "final"), resumable=False)
        engine = await make_factory().load_engine(
            str(tmp_path / "final"), policy.trainer.version, policy.served.tokenizer
        )
        try:
            return trained, await engine.generate(prompt, greedy), engine.version
        finally:
            engine.shutdown()

    try:
        trained, reloaded, version = asyncio.run(go())
    finally:
        policy.trainer.close()
    assert version == 1 and reloaded.versions == [1] * len(reloaded.token_ids)
    assert reloaded.token_ids == trained.token_ids
    assert reloaded.logprobs == [pytest.approx(lp, abs=1e-5) for lp in trained.logprobs]
    assert trained.logprobs != [pytest.approx(lp, abs=1e-3) for lp in before.logprobs]


def test_tokenizers_that_work_alike_share_a_fingerprint(tiny_tokenizer):
    from transformers import AutoTokenizer

    from trainer.model import bundled_tokenizer_dir
    from trainer.tokenizer import HFChatTokenizer

    again = HFChatTokenizer(AutoTokenizer.from_pretrained(bundled_tokenizer_dir()))
    again.hf.pad_token = again.hf.eos_token  # as load_model sets it
    assert again.fingerprint() == tiny_tokenizer.fingerprint()
    again.hf.chat_template = "{{ messages }}"
    assert again.fingerprint() != tiny_tokenizer.fingerprint()
