"""`WorkflowRunner` against the fake gateway: scheduling, failures, retries and stopping."""

from __future__ import annotations

import asyncio
import math
import time
from collections import defaultdict

import pytest

from swarm.runner import EpisodeSlots, Outcome
from tests.unit.swarm.conftest import run_inline
from tests.unit.swarm.fake_gateway import FakeGateway


async def one(task, episode) -> float:
    return 1.0


def test_each_group_shares_one_task_and_one_group_id_and_tasks_cycle(fake, captured):
    two_tasks = lambda split="train": [{"id": "a"}, {"id": "b"}]  # noqa: E731
    summary = asyncio.run(
        run_inline(fake, captured, one, two_tasks, group_size=3, max_episodes=12, concurrency=4)
    )
    assert summary.outcome is Outcome.COMPLETED and summary.exit_code == 0
    groups: dict[str, list[str]] = defaultdict(list)
    for episode in fake.episodes.values():
        groups[episode.group_id].append(episode.task_id)
    assert len(groups) == 4
    assert all(len(ids) == 3 and len(set(ids)) == 1 for ids in groups.values())
    assert sorted(ids[0] for ids in groups.values()) == ["a", "a", "b", "b"]  # re-iterated


def test_group_size_comes_from_the_run_settings_else_eight(captured):
    with_run = FakeGateway(group_size=5)
    asyncio.run(run_inline(with_run, captured, one, max_episodes=10))
    assert sorted(_group_sizes(with_run)) == [5, 5]

    no_run = FakeGateway(group_size=None)
    asyncio.run(run_inline(no_run, captured, one, max_episodes=16))
    assert sorted(_group_sizes(no_run)) == [8, 8]


def _group_sizes(fake: FakeGateway) -> list[int]:
    sizes: dict[str, int] = defaultdict(int)
    for episode in fake.episodes.values():
        sizes[episode.group_id] += 1
    return list(sizes.values())


def test_max_episodes_is_exact_even_mid_group(fake, captured):
    summary = asyncio.run(
        run_inline(fake, captured, one, group_size=3, max_episodes=7, concurrency=5)
    )
    assert len(fake.episodes) == 7 == summary.finished
    assert sorted(_group_sizes(fake)) == [1, 3, 3]
    assert all(e.status == "finished" and e.reward == 1.0 for e in fake.episodes.values())


def test_no_more_episodes_run_at_once_than_the_concurrency(fake, captured):
    async def slow(task, episode) -> float:
        await asyncio.sleep(0.02)
        return 0.5

    asyncio.run(run_inline(fake, captured, slow, concurrency=3, max_episodes=12, group_size=4))
    assert fake.max_open == 3


def test_a_rollout_that_raises_is_aborted_with_its_traceback_printed_at_once(fake, captured):
    printed_before_second: list[bool] = []

    async def flaky(task, episode) -> float:
        if not printed_before_second and "ZeroDivisionError" not in captured.text:
            printed_before_second.append(False)
            return 1 / 0
        printed_before_second.append("ZeroDivisionError" in captured.text)
        return 1.0

    summary = asyncio.run(run_inline(fake, captured, flaky, concurrency=1, max_episodes=2))
    assert printed_before_second == [False, True]
    (aborted,) = fake.with_status("aborted")
    assert "Traceback (most recent call last)" in aborted.reason
    assert "ZeroDivisionError: division by zero" in aborted.reason
    assert "in flaky" in captured.text
    assert summary.aborted == 1 and summary.finished == 1 and summary.exit_code == 0


def test_a_rollout_that_raises_after_closing_its_episode_itself_does_not_stop_the_client(
    fake, captured
):
    async def finishes_then_raises(task, episode) -> float:
        await episode.finish(1.0)
        raise ConnectionError("the gateway went away after finish")

    summary = asyncio.run(
        run_inline(fake, captured, finishes_then_raises, concurrency=1, max_episodes=3)
    )
    assert summary.exit_code == 0 and summary.aborted == 3
    assert len(fake.with_status("finished")) == 3  # closed once, by the rollout
    assert "ConnectionError: the gateway went away after finish" in captured.text


def test_a_repeated_failure_prints_its_traceback_once_then_one_line_each(fake, captured):
    async def broken(task, episode) -> float:
        raise ValueError(f"bad task {task['id']}")

    asyncio.run(run_inline(fake, captured, broken, concurrency=1, max_episodes=3))
    assert captured.text.count("Traceback") == 1
    assert "ValueError: bad task t0 (again at" in captured.text
    assert len(fake.with_status("aborted")) == 3


@pytest.mark.parametrize(
    ("returned", "named"),
    [
        ("1.0", "str"),
        (None, "NoneType"),
        (True, "bool"),
        ([1.0], "list"),
        (math.nan, "nan"),
        ({"policy": "x"}, "str"),
    ],
)
def test_a_return_value_that_is_not_a_reward_aborts_the_episode(fake, captured, returned, named):
    async def wrong(task, episode):
        return returned

    summary = asyncio.run(run_inline(fake, captured, wrong, concurrency=1, max_episodes=1))
    (aborted,) = fake.with_status("aborted")
    assert named in aborted.reason and "rollout returned" in aborted.reason
    assert named in captured.text
    assert summary.aborted == 1


def test_rewards_per_policy_are_sent_as_a_dict(captured):
    fake = FakeGateway(policies=("solver", "critic"))

    async def per_policy(task, episode):
        assert episode.models == {"solver": "r/solver", "critic": "r/critic"}
        return {"solver": 1, "critic": 0.25}

    asyncio.run(run_inline(fake, captured, per_policy, max_episodes=2))
    assert [e.reward for e in fake.episodes.values()] == [{"solver": 1.0, "critic": 0.25}] * 2


def test_a_reward_the_gateway_refuses_aborts_the_episode_with_its_message(fake, captured):
    async def unknown_policy(task, episode):
        return {"nobody": 1.0}

    summary = asyncio.run(run_inline(fake, captured, unknown_policy, max_episodes=1))
    (aborted,) = fake.with_status("aborted")
    assert "refused the reward" in aborted.reason and "nobody" in aborted.reason
    assert summary.aborted == 1


def test_a_rollout_may_finish_its_episode_itself(fake, captured):
    async def finishes(task, episode):
        await episode.finish(0.5, metrics={"turns": 2})

    summary = asyncio.run(run_inline(fake, captured, finishes, max_episodes=2))
    assert summary.finished == 2 and summary.aborted == 0
    assert all(e.metrics == {"turns": 2.0} for e in fake.episodes.values())


def test_429_retry_after_is_waited_out(captured):
    fake = FakeGateway(throttle=[0.3])
    started = time.monotonic()
    summary = asyncio.run(run_inline(fake, captured, one, concurrency=1, max_episodes=1))
    assert time.monotonic() - started >= 0.3
    assert summary.finished == 1 and fake.creations == 1


def test_429_is_waited_out_longer_than_the_retry_budget(captured):
    fake = FakeGateway(throttle=[0.05] * 6)
    summary = asyncio.run(
        run_inline(fake, captured, one, max_episodes=1, client_options={"retry_for_s": 0.1})
    )
    assert summary.finished == 1


def test_connection_errors_and_503s_are_retried_until_the_gateway_is_back(captured):
    fake = FakeGateway(connection_errors=4, unavailable=2)
    summary = asyncio.run(run_inline(fake, captured, one, max_episodes=3))
    assert summary.outcome is Outcome.COMPLETED and summary.finished == 3
    assert fake.connection_errors == 0 and fake.unavailable == 0


def test_a_gateway_away_longer_than_the_retry_budget_ends_the_run_with_exit_1(captured):
    fake = FakeGateway(connection_errors=10**6)
    summary = asyncio.run(
        run_inline(fake, captured, one, max_episodes=3, client_options={"retry_for_s": 0.2})
    )
    assert summary.outcome is Outcome.GATEWAY_FAILED and summary.exit_code == 1
    assert "cannot register" in summary.message and "ConnectError" in summary.message


def test_409_on_creation_stops_cleanly_aborting_open_episodes_and_deregistering(captured):
    fake = FakeGateway(accept_episodes=5)

    async def slow(task, episode) -> float:
        await asyncio.sleep(0.2 if fake.creations >= 5 else 0)
        return 1.0

    summary = asyncio.run(run_inline(fake, captured, slow, concurrency=4))
    assert summary.outcome is Outcome.RUN_STOPPED and summary.exit_code == 0
    assert "takes no more episodes" in summary.message
    assert fake.open_now == 0 and len(fake.episodes) == 5
    assert all(client.status == "gone" for client in fake.clients.values())


def test_stop_aborts_the_open_episodes_and_deregisters(fake, captured):
    async def forever(task, episode) -> float:
        await asyncio.sleep(3600)
        return 1.0

    def stop_soon(runner):
        asyncio.get_running_loop().call_later(0.2, runner.stop, Outcome.INTERRUPTED, "Ctrl-C")

    started = time.monotonic()
    summary = asyncio.run(run_inline(fake, captured, forever, concurrency=3, on_runner=stop_soon))
    assert time.monotonic() - started < 30  # not the rollouts' hour
    assert summary.exit_code == 130
    assert len(fake.with_status("aborted")) == 3
    assert all(e.reason == "client stopped while the rollout ran" for e in fake.episodes.values())
    assert [c.status for c in fake.clients.values()] == ["gone"]


def test_the_client_is_deregistered_after_a_completed_run(fake, captured):
    asyncio.run(run_inline(fake, captured, one, max_episodes=2))
    (client,) = fake.clients.values()
    assert client.status == "gone" and client.name == "test"


def test_heartbeats_keep_the_lease_and_a_lapsed_client_registers_again(captured):
    fake = FakeGateway(lease_s=0.06)

    async def slow(task, episode) -> float:
        if len(fake.clients) == 1 and next(iter(fake.clients.values())).heartbeats >= 2:
            fake.forget_clients_on_heartbeat = True
        await asyncio.sleep(0.05)
        return 1.0

    asyncio.run(run_inline(fake, captured, slow, concurrency=1, max_episodes=10))
    first, second = fake.clients.values()
    assert first.heartbeats >= 2 and first.status == second.status == "gone"
    assert "registering again" in captured.text


def test_a_superseded_client_stops_with_exit_1_instead_of_registering_again(captured):
    fake = FakeGateway(lease_s=0.06)

    async def slow(task, episode) -> float:
        fake.supersede_clients_on_heartbeat = True
        await asyncio.sleep(0.05)
        return 1.0

    summary = asyncio.run(run_inline(fake, captured, slow, concurrency=1, max_episodes=50))
    assert summary.outcome is Outcome.GATEWAY_FAILED and summary.exit_code == 1
    assert "superseded" in summary.message
    assert len(fake.clients) == 1  # it did not take the name back
    assert len(fake.episodes) < 50


def test_tasks_that_are_not_dicts_with_ids_fail_the_run_with_exit_2_before_registering(
    fake, captured
):
    summary = asyncio.run(run_inline(fake, captured, one, lambda split="train": ["q1", "q2"]))
    assert summary.outcome is Outcome.WORKFLOW_FAILED and summary.exit_code == 2
    assert "each task must be a dict" in summary.message
    assert fake.clients == {}


def test_the_task_family_is_sent_with_each_episode(fake, captured):
    tasks = lambda split="train": [{"id": 7, "family": "arithmetic"}]  # noqa: E731
    asyncio.run(run_inline(fake, captured, one, tasks, max_episodes=2))
    assert {(e.task_id, e.task_family) for e in fake.episodes.values()} == {("7", "arithmetic")}


def test_the_resolved_settings_and_the_policy_version_are_shown(fake, captured):
    asyncio.run(run_inline(fake, captured, one, max_episodes=2))
    assert "group_size=4 (run 'r')" in captured.text and "model=r/policy" in captured.text
    assert "2/2 done" in captured.text and "reward 1.000 (last 2)" in captured.text
    assert "policy v3" in captured.text and "0 aborted" in captured.text


def test_episode_slots_hand_out_groups_and_stop_at_the_maximum():
    slots = EpisodeSlots(iter([{"id": "a"}, {"id": "b"}]), group_size=2, max_episodes=3)
    handed = [slots.next() for _ in range(4)]
    assert [slot[0]["id"] for slot in handed[:3]] == ["a", "a", "b"]
    assert handed[0][1] == handed[1][1] != handed[2][1]
    assert handed[3] is None


def test_a_client_forgotten_by_the_gateway_registers_again_and_goes_on(fake, captured):
    async def lapses_once(task, episode) -> float:
        if len(fake.clients) == 1 and len(fake.episodes) == 3:
            fake.lapse_clients()  # aborts this open episode; the next creation gets a 404
        return 1.0

    summary = asyncio.run(run_inline(fake, captured, lapses_once, concurrency=1, max_episodes=6))
    assert summary.outcome is Outcome.COMPLETED and len(fake.episodes) == 6
    assert (summary.finished, summary.aborted) == (5, 1)
    assert len(fake.clients) == 2 and "registering again" in captured.text
    assert "closed by the gateway before finish" in captured.text


def test_stop_while_the_gateway_is_away_does_not_wait_out_the_retries(captured):
    fake = FakeGateway(connection_errors=10**6)

    def stop_soon(runner):
        asyncio.get_running_loop().call_later(0.2, runner.stop, Outcome.INTERRUPTED, "Ctrl-C")

    started = time.monotonic()
    summary = asyncio.run(
        run_inline(fake, captured, one, on_runner=stop_soon, client_options={"retry_for_s": 60})
    )
    assert time.monotonic() - started < 30  # not the 60 s of retries
    assert summary.outcome is Outcome.INTERRUPTED and summary.exit_code == 130


def test_a_rollout_past_the_episode_timeout_is_cancelled_and_aborted_with_the_reason(
    fake, captured
):
    async def hangs_on_t1(task, episode) -> float:
        if task["id"] == "t1":
            await asyncio.sleep(60)
        return 1.0

    started = time.monotonic()
    summary = asyncio.run(
        run_inline(
            fake,
            captured,
            hangs_on_t1,
            concurrency=1,
            max_episodes=2,
            group_size=1,
            episode_timeout_s=0.2,
        )
    )
    assert time.monotonic() - started < 30 and summary.exit_code == 0  # not the 60 s sleep
    (aborted,) = fake.with_status("aborted")
    assert aborted.task_id == "t1" and "--episode-timeout 0.2 s" in aborted.reason
    assert len(fake.with_status("finished")) == 1


def test_a_timeout_raised_by_the_rollout_itself_is_an_ordinary_failure(fake, captured):
    async def times_out(task, episode) -> float:
        raise TimeoutError("the tool did not answer")

    asyncio.run(
        run_inline(fake, captured, times_out, max_episodes=1, group_size=1, episode_timeout_s=30)
    )
    (aborted,) = fake.with_status("aborted")
    assert "the tool did not answer" in aborted.reason and "--episode-timeout" not in aborted.reason
