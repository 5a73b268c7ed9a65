"""One failing request fails alone: the torch engine isolates it whatever the stage
(seeding, prefill, sampling), every other request finishes, and the worker survives."""

from __future__ import annotations

import asyncio

import pytest

from trainer.config import EngineConfig
from trainer.engine import TorchEngine
from trainer.errors import EngineFailure, EngineStopped
from trainer.types import SamplingParams

POISON = 7  # a prompt holding this token id makes the patched prefill raise


@pytest.fixture
def engine(tiny_loaded, tiny_tokenizer):
    eng = TorchEngine(
        tiny_loaded.model, tiny_tokenizer, EngineConfig(max_batch=8, initial_cache_tokens=16)
    )
    yield eng
    eng.shutdown()


def prompt(tokenizer, i: int = 0) -> list[int]:
    text = f"question number {i} " * (1 + i)
    return tokenizer.render_chat([{"role": "user", "content": text}]).token_ids


WAIT_S = 60  # generous: a hang, not slowness, is the failure
LONG = SamplingParams(max_tokens=40, ignore_eos=True)


async def bad_request_among_good_ones(engine, tokenizer, bad_prompt, bad_params):
    """Three good requests start decoding; then the bad one arrives while they are live."""
    good = [asyncio.create_task(engine.generate(prompt(tokenizer, i), LONG)) for i in range(3)]
    while engine.steps < 2:  # the good ones are in flight
        await asyncio.sleep(0.005)
    bad = await asyncio.gather(
        asyncio.wait_for(engine.generate(bad_prompt, bad_params), WAIT_S), return_exceptions=True
    )
    return bad[0], await asyncio.wait_for(asyncio.gather(*good, return_exceptions=True), WAIT_S)


def assert_only_the_bad_one_failed(bad, good, engine, tokenizer):
    assert isinstance(bad, EngineFailure), bad
    assert all(not isinstance(g, BaseException) for g in good), good
    assert [len(g.token_ids) for g in good] == [40, 40, 40]
    after = asyncio.run(engine.generate(prompt(tokenizer), SamplingParams(max_tokens=3)))
    assert after.token_ids  # the worker thread survived and still serves


@pytest.mark.parametrize("seed", [2**64, -(2**63) - 1, 2**70])
def test_a_seed_torch_cannot_take_fails_only_its_request(engine, tiny_tokenizer, seed):
    bad, good = asyncio.run(
        bad_request_among_good_ones(
            engine,
            tiny_tokenizer,
            prompt(tiny_tokenizer, 5),
            SamplingParams(max_tokens=4, seed=seed),
        )
    )
    assert_only_the_bad_one_failed(bad, good, engine, tiny_tokenizer)


def test_a_failing_prefill_fails_only_its_request(engine, tiny_tokenizer, monkeypatch):
    forward = engine._forward

    def poisoned(ids, positions, mask):
        if ids.shape[1] > 1 and (ids == POISON).any(dim=1).any():
            raise RuntimeError("prefill exploded")
        return forward(ids, positions, mask)

    monkeypatch.setattr(engine, "_forward", poisoned)
    bad, good = asyncio.run(
        bad_request_among_good_ones(
            engine,
            tiny_tokenizer,
            [*prompt(tiny_tokenizer, 4), POISON],
            SamplingParams(max_tokens=4),
        )
    )
    assert_only_the_bad_one_failed(bad, good, engine, tiny_tokenizer)


def test_a_request_whose_sampling_fails_fails_alone(engine, tiny_tokenizer):
    # more alternatives than the vocabulary has: torch.topk raises for that row only
    too_many = SamplingParams(max_tokens=4, top_logprobs=10**6)
    bad, good = asyncio.run(
        bad_request_among_good_ones(engine, tiny_tokenizer, prompt(tiny_tokenizer, 6), too_many)
    )
    assert_only_the_bad_one_failed(bad, good, engine, tiny_tokenizer)


def test_shutdown_fails_every_live_waiting_and_queued_request(tiny_loaded, tiny_tokenizer):
    eng = TorchEngine(tiny_loaded.model, tiny_tokenizer, EngineConfig(max_batch=2))
    long = SamplingParams(max_tokens=10_000, ignore_eos=True)

    async def go():
        tasks = [
            asyncio.create_task(eng.generate(prompt(tiny_tokenizer, i), long)) for i in range(5)
        ]
        while eng.steps < 2:
            await asyncio.sleep(0.005)
        await asyncio.to_thread(eng.shutdown)
        return await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)

    results = asyncio.run(go())
    assert all(isinstance(r, EngineStopped) for r in results), results
