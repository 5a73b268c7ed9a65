"""Samples taken at a temperature are scored at that temperature: ratios start at 1."""

from __future__ import annotations

import asyncio

import torch

from trainer.engine import TorchEngine
from trainer.policy.batching import TrainItem, to_micro_batch
from trainer.policy.logprobs import completion_logprobs
from trainer.types import Sample, SamplingParams


def test_trainer_logprobs_match_the_engines_behaviour_logprobs_at_the_sampling_temperature(
    tiny_loaded, tiny_tokenizer
):
    engine = TorchEngine(tiny_loaded.model, tiny_tokenizer)
    prompt = tiny_tokenizer.render_chat([{"role": "user", "content": "hello there"}]).token_ids
    try:
        done = asyncio.run(
            engine.generate(
                prompt, SamplingParams(max_tokens=10, temperature=0.6, seed=1, ignore_eos=True)
            )
        )
    finally:
        engine.shutdown()
    assert done.temperature == 0.6
    sample = Sample(
        episode_id="e",
        policy="p",
        prompt_token_ids=prompt,
        completion_token_ids=done.token_ids,
        behaviour_logprobs=done.logprobs,
        version=0,
        temperature=done.temperature,
    )
    batch = to_micro_batch([TrainItem(sample=sample, advantage=1.0)], pad_id=0)
    with torch.no_grad():
        ours = completion_logprobs(tiny_loaded.model, batch)
    assert torch.allclose(ours, torch.tensor(done.logprobs), atol=1e-4)
    cold = Sample(**{**sample.__dict__, "temperature": 1.0})
    with torch.no_grad():
        at_one = completion_logprobs(
            tiny_loaded.model, to_micro_batch([TrainItem(sample=cold, advantage=1.0)], pad_id=0)
        )
    assert not torch.allclose(at_one, torch.tensor(done.logprobs), atol=1e-3)
