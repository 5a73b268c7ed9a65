"""`SwarmClient` and `Episode` as a library: the `async with` contract, rewards, errors."""

from __future__ import annotations

import asyncio
import math

import httpx
import pytest

from swarm import Episode, SwarmClient
from swarm.client import _error_details
from swarm.episode import NOT_FINISHED_REASON, truncate_reason, validate_reward
from swarm.errors import EpisodeStateError, InvalidReward, RunNotAccepting, Unauthorized
from tests.unit.swarm.conftest import fast_client
from tests.unit.swarm.fake_gateway import FakeGateway


def test_swarm_exports_the_client_and_the_episode():
    assert SwarmClient.__module__ == "swarm.client" and Episode.__module__ == "swarm.episode"


def test_an_episode_block_that_raises_aborts_with_the_traceback_and_reraises(fake):
    async def main():
        async with fast_client(fake) as client:
            await client.register()
            with pytest.raises(KeyError):
                async with client.episode("r", "t1", group_id="g") as episode:
                    {}["missing"]
            return episode

    episode = asyncio.run(main())
    (aborted,) = fake.with_status("aborted")
    assert episode.status == "aborted" and aborted.episode_id == episode.episode_id
    assert "Traceback" in aborted.reason and "KeyError: 'missing'" in aborted.reason
    assert aborted.client_id is not None and aborted.group_id == "g"


def test_an_episode_block_that_returns_without_finishing_is_aborted(fake):
    async def main():
        async with fast_client(fake) as client:
            async with client.episode("r", "t1") as episode:
                assert episode.is_open

    asyncio.run(main())
    (aborted,) = fake.with_status("aborted")
    assert aborted.reason == NOT_FINISHED_REASON


def test_a_finished_episode_is_not_aborted_and_cannot_finish_twice(fake):
    async def main():
        async with fast_client(fake) as client:
            async with client.episode("r", "t1", task_family="math") as episode:
                result = await episode.finish(0.75, metrics={"turns": 3})
                with pytest.raises(EpisodeStateError, match="already finished"):
                    await episode.finish(1.0)
            return result

    result = asyncio.run(main())
    (finished,) = fake.episodes.values()
    assert (
        finished.status == "finished" and finished.reward == 0.75 and finished.task_family == "math"
    )
    assert result.rewards == {"policy": 0.75}


def test_an_episode_tells_an_agent_where_to_send_its_calls(fake):
    async def main():
        async with fast_client(fake) as client:
            async with client.episode("r", "t1") as episode:
                llm = episode.openai()
                assert episode.openai() is llm
                await episode.finish(1.0)
            return episode, llm

    episode, llm = asyncio.run(main())
    created = next(iter(fake.episodes.values()))
    assert episode.base_url == "http://fake-gateway/v1" == str(llm.base_url).rstrip("/")
    assert episode.api_key == created.api_key == llm.api_key
    assert episode.env() == {"OPENAI_BASE_URL": episode.base_url, "OPENAI_API_KEY": created.api_key}
    assert episode.model == "r/policy" and episode.models == {"policy": "r/policy"}
    assert episode.policy_versions == {"policy": 3}
    assert llm.is_closed()


def test_an_episode_read_before_it_is_opened_says_so(fake):
    async def main():
        async with fast_client(fake) as client:
            episode = client.episode("r", "t1")
            with pytest.raises(EpisodeStateError, match="not open yet"):
                episode.base_url  # noqa: B018
            with pytest.raises(EpisodeStateError, match="never opened"):
                await episode.finish(1.0)

    asyncio.run(main())
    assert fake.episodes == {}


def test_creating_an_episode_of_a_stopped_run_raises_run_not_accepting():
    fake = FakeGateway(accept_episodes=0)

    async def main():
        async with fast_client(fake) as client:
            await client.episode("r", "t1").open()

    with pytest.raises(RunNotAccepting, match="stopped"):
        asyncio.run(main())


def test_a_refused_key_is_unauthorized_and_not_retried():
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.headers.get("authorization"))
        return httpx.Response(
            401, json={"error": {"message": "bad key", "code": "invalid_api_key"}}
        )

    async def main():
        async with SwarmClient(
            "http://g", api_key="k", transport=httpx.MockTransport(handler)
        ) as client:
            await client.register()

    with pytest.raises(Unauthorized, match="bad key"):
        asyncio.run(main())
    assert calls == ["Bearer k"]


def test_close_deregisters_the_client(fake):
    async def main():
        async with fast_client(fake) as client:
            await client.register()
            await client.heartbeat()

    asyncio.run(main())
    (client,) = fake.clients.values()
    assert client.status == "gone" and client.heartbeats == 1


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, 1.0),
        (0.25, 0.25),
        (-2, -2.0),
        ({"a": 1, "b": 0.5}, {"a": 1.0, "b": 0.5}),
        (1e6, 1e6),
    ],
)
def test_valid_rewards_become_floats(value, expected):
    assert validate_reward(value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1", "returned str"),
        (None, "returned NoneType"),
        (False, "use float(...) for a bool"),
        (math.inf, "must be finite"),
        (1e160, "between -1000000 and 1000000"),
        ({"a": -1e7}, "between -1000000 and 1000000"),
        ({}, "empty dict"),
        ({1: 1.0}, "keyed by int"),
        ({"a": [1]}, "list"),
        ((1.0, 2.0), "returned tuple"),
    ],
)
def test_invalid_rewards_are_refused_with_a_message_naming_the_type(value, message):
    with pytest.raises(InvalidReward, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate_reward(value)


def test_a_long_reason_keeps_its_end():
    reason = "x" * 10_000 + "ValueError: the real error"
    kept = truncate_reason(reason)
    assert (
        len(kept) == 4000 and kept.endswith("ValueError: the real error") and kept.startswith("…")
    )


@pytest.mark.parametrize(
    ("headers", "body", "wait_s"),
    [
        ({"Retry-After": "2"}, {"error": {"message": "slow down"}}, 2.0),
        ({}, {"error": {"message": "slow down"}, "retry_after": 1.5}, 1.5),
        ({}, {"error": {"message": "slow down", "retry_after": 0.5}}, 0.5),
        ({}, {"error": {"message": "slow down"}}, 1.0),
        ({"Retry-After": "1"}, {"error": {"message": "slow down", "retry_after": 0.3}}, 0.3),
    ],
)
def test_retry_after_is_read_from_the_header_or_the_body(headers, body, wait_s):
    message, _, retry_after = _error_details(httpx.Response(429, json=body, headers=headers))
    assert message == "slow down" and retry_after == wait_s
