"""`PolicyHost.stream_chunks` (what a Ray-hosted policy streams to the gateway) carries
exactly `stream`'s tokens, the first one alone, and far fewer items than tokens."""

from __future__ import annotations

import asyncio

import pytest

from trainer import hosting
from trainer.hosting import PolicyHost
from trainer.types import GeneratedToken, SamplingParams, StreamEnd


@pytest.fixture(scope="module")
def host():
    built = PolicyHost(factory={}, model={"name": "tiny"})
    yield built
    built.close()


async def _chunks(host: PolicyHost, params: SamplingParams) -> list[list]:
    return [chunk async for chunk in host.stream_chunks([1, 2, 3], params)]


def test_chunks_join_to_the_same_tokens_as_a_seeded_stream(host):
    params = SamplingParams(max_tokens=24, temperature=1.0, seed=7, ignore_eos=True)
    chunks = asyncio.run(_chunks(host, params))
    items = [item for chunk in chunks for item in chunk]
    reference = asyncio.run(host.generate([1, 2, 3], params))
    tokens = [item.token_id for item in items if isinstance(item, GeneratedToken)]
    assert tokens == reference.token_ids
    assert isinstance(items[-1], StreamEnd)
    assert items[-1].completion.token_ids == reference.token_ids
    assert len(chunks[0]) == 1, "the first token goes alone (time to first token)"


def test_a_long_window_puts_everything_after_the_first_token_in_one_chunk(host, monkeypatch):
    monkeypatch.setattr(hosting, "STREAM_CHUNK_S", 3600.0)
    params = SamplingParams(max_tokens=16, temperature=0.0, ignore_eos=True)
    chunks = asyncio.run(_chunks(host, params))
    assert [len(chunk) for chunk in chunks] == [1, 16]  # 15 tokens + the StreamEnd


def test_a_zero_window_sends_every_item_alone(host, monkeypatch):
    monkeypatch.setattr(hosting, "STREAM_CHUNK_S", 0.0)
    params = SamplingParams(max_tokens=5, temperature=0.0, ignore_eos=True)
    chunks = asyncio.run(_chunks(host, params))
    assert [len(chunk) for chunk in chunks] == [1] * 6
