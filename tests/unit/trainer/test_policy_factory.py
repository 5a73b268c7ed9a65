"""`TorchPolicyFactory.create` builds a policy off the event loop, behind the interfaces."""

from __future__ import annotations

import asyncio

import torch

from tests.unit.trainer.policy_helpers import LORA, make_factory
from trainer.types import PolicyTrainer, SamplingParams


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
